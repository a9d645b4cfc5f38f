package input

import (
	"bytes"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// The audit reader decodes its lines in parallel: the goroutine that reads
// (and re-orders) the requests scans the lines into chunks and hands each
// chunk to a goroutine of its own, which decodes the chunk's lines into
// requests; the reader then takes the chunks' outcomes in the order of the
// lines. A line's outcome depends on that line alone, so the requests,
// their order, the Stats and the errors are those of reading line by line
// (auditReader.read): the counts and the lenient handling of a malformed
// line are done in order, by the reader, and a line the reader never
// reaches (after an error) is decoded but not counted. Memory: at most
// chunksAhead chunks of tuning.lines lines (or chunkBytes bytes).

const (
	chunkBytes  = 1 << 20
	chunksAhead = 4
)

// defaultChunkLines is how many lines a chunk holds at most
// (tuning.chunkLines): a thousand lines (with chunkBytes, a megabyte)
// launch a quarter of the goroutines 256 did, and read a million lines
// 2–4% faster (BenchmarkReconstruct).
const defaultChunkLines = 1024

// The outcomes of an audit line.
const (
	auditLineOK = iota
	auditLineBlank
	auditLineOtherStage
	auditLineBad
)

type auditLineOut struct {
	r         workload.Request
	completed time.Time
	kind      uint8
	bad       error
}

// auditChunk is a run of lines, decoded by a goroutine of its own.
type auditChunk struct {
	buf   []byte
	ends  []int // the end of each line in buf
	first int64 // the line number of the first line
	// err is the scanner's error after the lines (io.EOF at the end), nil
	// when more lines follow
	err error
	out []auditLineOut
	job *chunkJob
	dec *auditDecoder
}

// auditDecoder is what a goroutine decoding a chunk holds: it decodes one
// chunk at a time.
type auditDecoder struct {
	in *interner
	ev auditEvent
}

// auditPar is an audit reader's parallel decoding.
type auditPar = chunks[auditChunk, auditDecoder]

// readParallel is read, the lines decoded in parallel.
func (a *auditReader) readParallel(r *workload.Request) (time.Time, error) {
	p := a.par
	for {
		if p.cur == nil || p.pos == len(p.cur.out) {
			if p.cur != nil && p.cur.err != nil {
				return time.Time{}, p.cur.err
			}
			p.advance(a.launch, func(c *auditChunk) *chunkJob { return c.job })
			continue
		}
		o := &p.cur.out[p.pos]
		p.pos++
		a.stats.Lines++
		switch o.kind {
		case auditLineBlank:
			a.stats.Skipped++
		case auditLineOtherStage:
			skip(a.stats, reasonOtherStage)
		case auditLineBad:
			if err := malformed(a.stats, a.lenient, workload.Reason{Noun: auditEventNoun, Problem: "that could not be read"}, o.bad); err != nil {
				return time.Time{}, err
			}
		default:
			*r = o.r
			return o.completed, nil
		}
	}
}

// launch scans the next chunk and starts its decoding.
func (a *auditReader) launch() {
	p := a.par
	c := p.reuse()
	c.buf, c.ends, c.err = c.buf[:0], c.ends[:0], nil
	c.first = a.ls.line + 1
	for len(c.ends) < p.lines && len(c.buf) < chunkBytes {
		line, err := a.ls.next()
		if err != nil {
			c.err, p.ended = err, true
			break
		}
		c.buf = append(c.buf, line...)
		c.ends = append(c.ends, len(c.buf))
	}
	c.dec = p.decoder(func() *auditDecoder { return &auditDecoder{in: newInterner()} })
	name, noSource := a.ls.name, a.noSource
	c.job = p.launched(c, func() { c.decode(name, noSource) })
}

// decode decodes the chunk's lines into their outcomes, as read does.
func (c *auditChunk) decode(name string, noSource bool) {
	c.out = c.out[:0]
	ev, start := &c.dec.ev, 0
	for i, end := range c.ends {
		line := c.buf[start:end]
		start = end
		c.out = append(c.out, auditLineOut{})
		o := &c.out[len(c.out)-1]
		if len(bytes.TrimSpace(line)) == 0 {
			o.kind = auditLineBlank
			continue
		}
		n := c.first + int64(i)
		switch err := decodeAuditEventAs(line, ev, c.dec.in, noSource); {
		case err != nil:
			o.bad = because("line", "that could not be decoded as an audit event", fmt.Errorf("%s: not an audit event: %w", workload.Where{Name: name, Line: n}, err))
		case ev.Kind != "Event" || !strings.HasPrefix(ev.APIVersion, "audit.k8s.io/"):
			o.bad = because("JSON line", "of another kind than audit.k8s.io Event", fmt.Errorf("%s: kind %q apiVersion %q is not an audit.k8s.io Event", workload.Where{Name: name, Line: n}, ev.Kind, ev.APIVersion))
		case ev.Stage != "ResponseComplete" && ev.Stage != "Panic":
			o.kind = auditLineOtherStage
			continue
		default:
			if err := auditToRequest(ev, &o.r); err != nil {
				o.bad = fmt.Errorf("%s: %w", workload.Where{Name: name, Line: n}, err)
			}
		}
		if o.bad != nil {
			o.kind = auditLineBad
			continue
		}
		if !noSource {
			o.r.Source = workload.Where{Name: name, Line: n}
		}
		o.completed = ev.StageTimestamp
	}
	// the event's strings are the requests' now; the decoder keeps none
	*ev = auditEvent{}
}

// chunks is a reader's parallel decoding: the chunks C launched, in line
// order, those free to reuse, the decoders D the chunks take in turn (one
// chunk at a time each), and the chunk being read.
type chunks[C, D any] struct {
	queue []*C // launched, in line order
	free  []*C
	decs  [chunksAhead]*D
	next  int // the decoder of the next chunk
	cur   *C
	pos   int
	ended bool // the scanner returned an error: no chunk follows
	// lines is how many lines a chunk holds at most, and inline whether
	// the reader decodes every chunk itself (tuning)
	lines  int
	inline bool
}

// reuse returns a chunk to scan into: a free one, or a new one.
func (p *chunks[C, D]) reuse() *C {
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free = p.free[:n-1]
		return c
	}
	return new(C)
}

// decoder returns the decoder of the next chunk, made by newDec the first
// time.
func (p *chunks[C, D]) decoder(newDec func() *D) *D {
	if p.decs[p.next] == nil {
		p.decs[p.next] = newDec()
	}
	d := p.decs[p.next]
	p.next = (p.next + 1) % chunksAhead
	return d
}

// launched queues c, scanned, and starts its decoding in a goroutine of
// its own; it returns the job the reader waits on.
func (p *chunks[C, D]) launched(c *C, decode func()) *chunkJob {
	j := &chunkJob{done: make(chan struct{}), decode: decode}
	p.queue = append(p.queue, c)
	if !p.inline {
		go func() {
			if j.claim() {
				j.decode()
				close(j.done)
			}
		}()
	}
	return j
}

// advance moves past the current chunk (freed for reuse): it launches
// chunks up to chunksAhead ahead (unless the scanner has ended), takes
// the first, and has it decoded: by the reader, where its goroutine has
// not begun, else by waiting for that goroutine.
func (p *chunks[C, D]) advance(launch func(), job func(*C) *chunkJob) {
	if p.cur != nil {
		p.free = append(p.free, p.cur)
		p.cur = nil
	}
	for len(p.queue) < chunksAhead && !p.ended {
		launch()
	}
	p.cur, p.queue, p.pos = p.queue[0], p.queue[1:], 0
	if j := job(p.cur); j.claim() {
		j.decode()
	} else {
		<-j.done
	}
}

// chunkJob is the decoding of a chunk, done once: by the goroutine started
// for it, or by the reader itself when it needs the chunk before that
// goroutine has begun (on a busy machine a goroutine may wait long for a
// processor; the reader then does not wait on it, and reads at worst as
// fast as line by line). The goroutine that finds the chunk claimed leaves
// it alone.
type chunkJob struct {
	claimed atomic.Bool
	done    chan struct{} // closed when the goroutine has decoded it
	decode  func()
}

// claim reports whether the caller is the one to decode the chunk.
func (j *chunkJob) claim() bool { return j.claimed.CompareAndSwap(false, true) }
