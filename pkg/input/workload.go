package input

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// twoStrings returns a and b as two strings cut from one (one allocation,
// not two), built in buf: a request's URI and audit ID, each unique to it.
func twoStrings(buf *[]byte, a, b []byte) (string, string) {
	*buf = append(append((*buf)[:0], a...), b...)
	s := string(*buf)
	return s[:len(a)], s[len(a):]
}

// Options tune the readers.
type Options struct {
	// Year completes klog text timestamps, which have none. OpenFiles takes
	// it from the first audit event when an audit log is given; otherwise
	// the default is FallbackYear, or 2000 without it (only differences
	// between times matter to the replay). A log that spans New Year's Eve
	// is not supported.
	Year int
	// FallbackYear stands in for Year where neither it nor an audit log
	// gives one (logs.Spec.Year: the year the metrics given with the log
	// were read).
	FallbackYear int
	// Location of klog text timestamps (default UTC).
	Location *time.Location
	// ReorderWindow is how far back in time a completed request may have
	// arrived and still be put in arrival order (default 2 minutes). Requests
	// that arrived earlier than that (long watches) are clamped to the
	// window's edge and counted in Stats.Clamped.
	ReorderWindow time.Duration
	// MaxHeld bounds the requests held to restore arrival order (default
	// 65,536), so that memory does not grow with the request rate either:
	// when more requests than that completed within ReorderWindow, the
	// window is as long as the last MaxHeld requests span (at 2,000
	// requests a second, 33 s), and requests that arrived before it are
	// clamped to its edge like those before ReorderWindow.
	MaxHeld int
	// MaxLineBytes bounds one line (default 16 MiB).
	MaxLineBytes int
	// Lenient skips a line that cannot be read as a request (malformed, or
	// cut short before the fields its format promises) instead of failing:
	// it is counted in Stats.Malformed, with the first few in
	// Stats.FirstMalformed. Real logs interleave other components' lines.
	Lenient bool
	// Instances say which apiserver instance served each input's requests
	// (OpenFiles; instances.go).
	Instances workload.InstanceOptions
	// Headerless also reads an httplog line that starts with "HTTP", as
	// lines are published without their klog header: its time is unknown
	// (Request.TimeUnknown). For a line given alone, not for a log, whose
	// requests need their times.
	Headerless bool
	// tuning are the ways of reading the tests compare with the readers'
	// own; its zero value is how the readers run.
	tuning tuning
}

// tuning are ways of reading that give the same requests as the readers'
// own, which the tests set to compare the two (Options.tuning).
type tuning struct {
	// decode says whether the audit and httplog readers decode in
	// parallel chunks: decodeAuto where there is more than one processor
	// to run on, else decodeSerial or decodeParallel
	decode int
	// chunkLines is how many lines a chunk holds at most (0:
	// defaultChunkLines); the tests cut inputs into many chunks
	chunkLines int
	// chunksInline decodes every chunk in the reader's goroutine, as it
	// does a chunk whose goroutine has not begun, rather than each in a
	// goroutine of its own
	chunksInline bool
	// unescapedFirst decodes a wrapped event once unescaped, rather than
	// where it stands (escEvent)
	unescapedFirst bool
	// mergedInline parses the inputs OpenFiles merges together in the
	// goroutine that merges them, rather than each in a goroutine of its
	// own
	mergedInline bool
}

// The ways of tuning.decode.
const (
	decodeAuto = iota
	decodeSerial
	decodeParallel
)

// parallel reports whether the readers decode in parallel chunks.
func (t tuning) parallel() bool {
	switch t.decode {
	case decodeSerial:
		return false
	case decodeParallel:
		return true
	}
	return runtime.GOMAXPROCS(0) > 1
}

// lines is how many lines a chunk holds at most.
func (t tuning) lines() int {
	if t.chunkLines > 0 {
		return t.chunkLines
	}
	return defaultChunkLines
}

func (o *Options) defaults() {
	if o.Year == 0 {
		o.Year = o.FallbackYear
	}
	if o.Year == 0 {
		o.Year = 2000
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	if o.ReorderWindow == 0 {
		o.ReorderWindow = 2 * time.Minute
	}
	if o.MaxHeld <= 0 {
		o.MaxHeld = DefaultMaxHeld
	}
	if o.MaxLineBytes == 0 {
		o.MaxLineBytes = 16 << 20
	}
}

// DefaultMaxHeld is the default of Options.MaxHeld.
const DefaultMaxHeld = 1 << 16

// reasonError is the error of a malformed line with its Reason; its text
// is the error's.
type reasonError struct {
	reason workload.Reason
	error
}

func (e reasonError) Unwrap() error { return e.error }

// because gives err the reason a malformed line is counted under.
func because(noun, problem string, err error) error {
	return reasonError{workload.Reason{Noun: noun, Problem: problem}, err}
}

// malformed handles a line that is not a readable request: with lenient it
// is counted under its reason (def when err carries none) and nil is
// returned (the caller reads on), otherwise err is.
func malformed(s *workload.Stats, lenient bool, def workload.Reason, err error) error {
	if !lenient {
		return err
	}
	s.Malformed++
	if len(s.FirstMalformed) < workload.MaxFirstMalformed {
		s.FirstMalformed = append(s.FirstMalformed, err.Error())
	}
	reason := def
	var re reasonError
	if errors.As(err, &re) {
		reason = re.reason
	}
	if s.MalformedBy == nil {
		s.MalformedBy = map[workload.Reason]int64{}
	}
	s.MalformedBy[reason]++
	return nil
}

// lineScanner reads lines of up to max bytes.
type lineScanner struct {
	sc   *bufio.Scanner
	name string
	line int64
}

func newLineScanner(r io.Reader, name string, maxBytes int) *lineScanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxBytes)
	return &lineScanner{sc: sc, name: name}
}

func (l *lineScanner) next() ([]byte, error) {
	if !l.sc.Scan() {
		if err := l.sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				return nil, fmt.Errorf("%s:%d: line longer than the limit: %w", l.name, l.line+1, err)
			}
			return nil, fmt.Errorf("reading %s: %w", l.name, err)
		}
		return nil, io.EOF
	}
	l.line++
	return bytes.TrimRight(l.sc.Bytes(), "\r"), nil
}

// where is the line read last.
func (l *lineScanner) where() workload.Where { return workload.Where{Name: l.name, Line: l.line} }

// reorder puts requests that are logged at completion back in arrival
// order, holding only those within the window. Requests of equal arrival
// keep the order of the log.
type reorder struct {
	src     func(*workload.Request) (completed time.Time, err error)
	window  time.Duration
	q       arrivalQueue
	horizon time.Time // latest completion seen
	emitted time.Time // arrival of the last request returned
	done    bool
	stats   *workload.Stats
}

func (ro *reorder) Next(out *workload.Request) error {
	for {
		if ro.q.len() > 0 && (ro.done || ro.q.len() > ro.q.maxHeld || ro.q.first().Before(ro.horizon.Add(-ro.window))) {
			ro.q.pop(out)
			ro.emitted = out.Arrival
			ro.stats.Records++
			return nil
		}
		if ro.done {
			// drained: the ring's slots (MaxHeld requests' worth) would
			// otherwise stay allocated as long as the reader is kept,
			// through the passes that read the tape
			ro.q.slots, ro.q.keys, ro.q.head, ro.q.spare, ro.q.free = nil, nil, 0, nil, nil
			return io.EOF
		}
		r := ro.q.next()
		completed, err := ro.src(r)
		if errors.Is(err, io.EOF) {
			ro.done = true
			continue
		}
		if err != nil {
			return err
		}
		if completed.After(ro.horizon) {
			ro.horizon = completed
		}
		if !ro.emitted.IsZero() && r.Arrival.Before(ro.emitted) {
			r.Arrival = ro.emitted
			ro.stats.Clamped++
		}
		ro.q.push()
		ro.stats.PeakHeld = max(ro.stats.PeakHeld, ro.q.len())
	}
}

// arrivalQueue holds requests sorted by arrival, stable: a ring of slots
// whose order is kept by insertion. Requests are logged at completion, so
// a new one usually belongs at or near the back (a binary search finds its
// place and the few later ones move up); the slots are reused, so holding
// requests allocates only when the window grows. The search reads the
// arrivals from keys, a ring beside the slots, not through the slots'
// pointers, which scatter its reads over the heap.
type arrivalQueue struct {
	slots   []*workload.Request // ring storage; slots[(head+i)%len] is the i-th
	keys    []arrivalKey
	head    int
	n       int
	maxHeld int
	spare   []workload.Request // allocated, not yet a slot
	// free are the requests popped, for the next slots: a ring grown
	// to hold more requests then allocates none for its new slots until
	// it holds more than ever before, rather than one for each
	free []*workload.Request
}

// arrivalKey orders arrivals as time.Time's Before does on times without
// a monotonic reading (parsed ones).
type arrivalKey struct {
	sec  int64
	nsec int32
}

func arrivalKeyOf(t time.Time) arrivalKey { return arrivalKey{t.Unix(), int32(t.Nanosecond())} }

func (a arrivalKey) before(b arrivalKey) bool {
	return a.sec < b.sec || a.sec == b.sec && a.nsec < b.nsec
}

func (q *arrivalQueue) len() int { return q.n }

// pos is the ring position of the i-th request.
func (q *arrivalQueue) pos(i int) int {
	j := q.head + i
	if j >= len(q.slots) {
		j -= len(q.slots)
	}
	return j
}

func (q *arrivalQueue) at(i int) *workload.Request { return q.slots[q.pos(i)] }

func (q *arrivalQueue) first() time.Time { return q.at(0).Arrival }

// next returns the slot to read the next request into; push then inserts
// it in order.
func (q *arrivalQueue) next() *workload.Request {
	if q.n == len(q.slots) {
		// the queue holds at most maxHeld+1 requests: the ring need not
		// be larger (every slot gets a request of its own)
		size := min(max(2*len(q.slots), 64), max(q.maxHeld+1, len(q.slots)+1))
		grown, keys := make([]*workload.Request, size), make([]arrivalKey, size)
		for i := range q.n {
			grown[i], keys[i] = q.at(i), q.keys[q.pos(i)]
		}
		q.slots, q.keys, q.head = grown, keys, 0
	}
	i := q.pos(q.n)
	if q.slots[i] == nil && len(q.free) > 0 {
		q.slots[i], q.free = q.free[len(q.free)-1], q.free[:len(q.free)-1]
	} else if q.slots[i] == nil {
		// the slots are allocated in runs of adjacent requests, in ring
		// order: the ring is then read (pop) and written (the source)
		// mostly in address order, which the processor's prefetch
		// follows, where requests allocated one by one lie apart
		if len(q.spare) == 0 {
			q.spare = make([]workload.Request, min(slotRun, max(len(q.slots)-q.n, 1)))
		}
		q.slots[i], q.spare = &q.spare[0], q.spare[1:]
	}
	return q.slots[i]
}

// slotRun is how many ring slots are allocated together.
const slotRun = 256

func (q *arrivalQueue) push() {
	r := q.at(q.n)
	if r.Arrival.Round(0) != r.Arrival {
		// a monotonic reading, which Before compares instead (never one
		// of a parsed time): search through the slots
		q.pushSlow(r)
		return
	}
	k := arrivalKeyOf(r.Arrival)
	// the first position whose arrival is after r's
	lo, hi := 0, q.n
	if hi > 0 && !k.before(q.keys[q.pos(hi-1)]) {
		lo = hi
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if k.before(q.keys[q.pos(m)]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	q.insert(lo, r, k)
}

// pushSlow is push comparing the requests' times.
func (q *arrivalQueue) pushSlow(r *workload.Request) {
	lo, hi := 0, q.n
	if hi > 0 && !r.Arrival.Before(q.at(hi-1).Arrival) {
		lo = hi
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.Arrival.Before(q.at(m).Arrival) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	q.insert(lo, r, arrivalKeyOf(r.Arrival))
}

// insert puts r (the slot after the last) at position lo, moving the
// requests of lo..n-1 up by one.
func (q *arrivalQueue) insert(lo int, r *workload.Request, k arrivalKey) {
	from, to := q.head+lo, q.head+q.n // ring positions, unwrapped
	shiftUp(q.slots, from, to)
	shiftUp(q.keys, from, to)
	i := q.pos(lo)
	q.slots[i], q.keys[i] = r, k
	q.n++
}

// shiftUp moves the ring positions from..to-1 of s (unwrapped: at most
// 2*len(s)-1) up by one, by runs that do not wrap.
func shiftUp[T any](s []T, from, to int) {
	size := len(s)
	switch {
	case from == to:
	case to < size:
		copy(s[from+1:to+1], s[from:to])
	case from >= size:
		copy(s[from-size+1:to-size+1], s[from-size:to-size])
	default:
		copy(s[1:to-size+1], s[:to-size])
		s[0] = s[size-1]
		copy(s[from+1:size], s[from:size-1])
	}
}

// pop copies the first request to out; its slot is reused.
func (q *arrivalQueue) pop(out *workload.Request) {
	r := q.slots[q.head]
	*out = *r
	*r = workload.Request{}
	q.slots[q.head], q.free = nil, append(q.free, r)
	q.head = (q.head + 1) % len(q.slots)
	q.n--
}

// methodOf maps a recorded verb to the HTTP method that produces it.
func methodOf(verb string) string {
	switch verb {
	case "GET", "LIST", "WATCH", "WATCHLIST", "get", "list", "watch", "proxy":
		return "GET"
	case "POST", "create", "CREATE":
		return "POST"
	case "PUT", "update", "UPDATE":
		return "PUT"
	case "PATCH", "APPLY", "patch":
		return "PATCH"
	case "DELETE", "DELETECOLLECTION", "delete", "deletecollection":
		return "DELETE"
	case "HEAD", "head":
		return "HEAD"
	case "OPTIONS", "CONNECT", "TRACE":
		return verb
	}
	return ""
}
