package input

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// The httplog reader decodes its lines in parallel as the audit reader
// does (auditpar.go): the reader scans the lines into chunks of records,
// each decoded by a goroutine of its own, and takes the records' outcomes
// in line order. A record is a line, and the lines of a multi-line value
// that follow it (an httplog line ending in "=<", whose value klog closes
// with a line " >"): the reader finds them as it scans, as readLine
// skips them, and the goroutine decodes the record's first line alone.

// The outcomes of an httplog record.
const (
	httpRecordOK = iota
	httpRecordSkipped
	httpRecordBad
	// the scanner's error came within the record's multi-line value: the
	// chunk's err is returned once its lines are counted
	httpRecordFatal
)

// httpRecord is a record of a chunk: its first line, its extent and its
// outcome.
type httpRecord struct {
	end   int   // the end of its first line in the chunk's buf
	n     int64 // the line number of its first line
	lines int64 // the lines it holds
	// unclosed is the line number where its multi-line value was found
	// not closed (at the end of the input), 0 for none
	unclosed int64
	fatal    bool
	// the outcome, filled by the decoding goroutine
	kind uint8
	ts   time.Time
	r    workload.Request
	bad  error
}

type httpChunk struct {
	buf  []byte
	recs []httpRecord
	err  error // the scanner's error after the records, nil if more follow
	job  *chunkJob
	dec  *httpDecoder
}

// httpPar is an httplog reader's parallel decoding.
type httpPar = chunks[httpChunk, httpDecoder]

// readParallel is read, the lines decoded in parallel.
func (h *httpLogReader) readParallel(r *workload.Request) (time.Time, error) {
	p := h.par
	for {
		if p.cur == nil || p.pos == len(p.cur.recs) {
			if p.cur != nil && p.cur.err != nil {
				return time.Time{}, p.cur.err
			}
			p.advance(h.launch, func(c *httpChunk) *chunkJob { return c.job })
			continue
		}
		o := &p.cur.recs[p.pos]
		p.pos++
		h.stats.Lines += o.lines
		switch o.kind {
		case httpRecordSkipped:
			h.stats.Skipped++
		case httpRecordBad:
			if err := malformed(h.stats, h.opts.Lenient, workload.Reason{Noun: httplogLine, Problem: "that could not be read"}, o.bad); err != nil {
				return time.Time{}, err
			}
		case httpRecordFatal:
			p.pos = len(p.cur.recs)
			return time.Time{}, p.cur.err
		default:
			*r = o.r
			return o.ts, nil
		}
	}
}

// launch scans the next chunk of records and starts its decoding.
func (h *httpLogReader) launch() {
	p := h.par
	c := p.reuse()
	c.buf, c.recs, c.err = c.buf[:0], c.recs[:0], nil
	for len(c.recs) < p.lines && len(c.buf) < chunkBytes && c.err == nil {
		line, err := h.ls.next()
		if err != nil {
			c.err = err
			break
		}
		c.buf = append(c.buf, line...)
		c.recs = append(c.recs, httpRecord{end: len(c.buf), n: h.ls.line, lines: 1})
		rec := &c.recs[len(c.recs)-1]
		if !bytes.HasSuffix(line, []byte("=<")) {
			continue
		}
		if rest, _, err := httpHead(line, &h.opts); rest == nil || err != nil || !bytes.HasSuffix(rest, []byte("=<")) {
			continue
		}
		// a multi-line value: its lines, up to " >", are the record's
		for {
			line, err := h.ls.next()
			if errors.Is(err, io.EOF) {
				rec.unclosed = h.ls.line
				c.err = err
				break
			}
			if err != nil {
				rec.fatal = true
				c.err = err
				break
			}
			rec.lines++
			if bytes.Equal(line, []byte(" >")) {
				break
			}
		}
	}
	p.ended = c.err != nil
	c.dec = p.decoder(func() *httpDecoder { return &httpDecoder{opts: h.opts, in: newInterner()} })
	name := h.ls.name
	c.job = p.launched(c, func() { c.decode(name) })
}

// decode decodes the chunk's records, as readLine does.
func (c *httpChunk) decode(name string) {
	d, start := c.dec, 0
	for i := range c.recs {
		o := &c.recs[i]
		line := c.buf[start:o.end]
		start = o.end
		o.kind, o.bad = httpRecordOK, nil
		if o.fatal {
			o.kind = httpRecordFatal
			continue
		}
		var ok bool
		var err error
		if rest, ts, herr := httpHead(line, &d.opts); rest != nil {
			where := workload.Where{Name: name, Line: o.n}
			switch {
			case herr != nil:
				err = lineError{fmt.Errorf("%s: %w", where, herr)}
			case o.unclosed != 0:
				err = lineError{because(httplogLine, "with a multi-line value not closed", fmt.Errorf("%s: multi-line value not closed by a line \" >\"", workload.Where{Name: name, Line: o.unclosed}))}
			default:
				o.ts, ok, err = d.request(&o.r, rest, ts, where)
			}
		} else {
			o.ts, ok, err = d.other(&o.r, line, func() workload.Where { return workload.Where{Name: name, Line: o.n} })
		}
		switch {
		case err != nil:
			o.kind, o.bad = httpRecordBad, err
		case !ok:
			o.kind = httpRecordSkipped
		}
	}
}
