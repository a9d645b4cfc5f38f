package workload

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
)

// Request is one recorded request.
type Request struct {
	// Arrival is when the server received the request.
	Arrival time.Time
	// AuditID is the audit ID, if recorded.
	AuditID string
	// User and Groups identify the requester when UserKnown.
	User   string
	Groups []string
	// Method is the HTTP method (GET, POST, PUT, PATCH, DELETE, ...) and
	// Verb the verb as recorded (httplog's LIST, WATCH, APPLY; an audit or
	// JSONL Kubernetes verb).
	Method string
	Verb   string
	// URI is the path with its query.
	URI string
	// UserAgent as recorded.
	UserAgent string
	// SourceIP is the client address as recorded: httplog's srcIP (with the
	// port of the connection), or the audit event's first sourceIPs entry.
	SourceIP string
	// Latency is the whole time the server spent on the request, when
	// recorded.
	Latency time.Duration
	// ServiceTime is the execution time once dispatched (apf_execution_time),
	// valid when HasServiceTime.
	ServiceTime time.Duration
	// InitialSeats, FinalSeats and AdditionalLatency are the recorded work
	// estimate, valid when HasSeats.
	InitialSeats, FinalSeats uint64
	AdditionalLatency        time.Duration
	// FlowSchema and PriorityLevel are the recorded classification (apf_fs,
	// apf_pl), if any.
	FlowSchema, PriorityLevel string
	// FlowDistinguisher is the flow distinguisher the server logged
	// (apf_fd, which some releases' httplog lines carry, at most 64
	// bytes), valid when HasFlowDistinguisher.
	FlowDistinguisher string
	// Status is the HTTP status answered, 0 if unknown.
	Status int
	// QueueWait is the audit annotation apiserver.latency.k8s.io/apf-queue-wait
	// (the time in an APF queue until the request's handler ran), valid when
	// HasQueueWait. The apiserver annotates only requests slower than 500 ms
	// (endpoints/filters/audit.go:writeLatencyToAnnotation).
	QueueWait time.Duration
	// PreAPF is the time the filters ahead of APF recorded in the same
	// annotations (apiserver.latency.k8s.io/authentication and
	// .../impersonation), valid when HasLatencyAnnotations; TotalLatency is
	// .../total.
	PreAPF       time.Duration
	TotalLatency time.Duration
	// QueuedOverhead is not read from any input: a calibration (package
	// calibrate) sets it to the extra time the recorded server held a seat
	// for a request dispatched from a queue.
	QueuedOverhead time.Duration
	// Instance names the apiserver instance that served the request, when
	// the input tells it (a log pipeline's stream, pod or host, or the file
	// it was read from); "" when unknown. Each instance has its own APF: its
	// own share of the server limit and its own queues.
	Instance string
	// Source names the input and line, for error messages.
	Source Where

	// The flags, together at the end: a bool between wider fields takes a
	// word of its own, and the readers copy each request a few times (into
	// and out of the reorder ring and the prefetch batches), so the fewer
	// bytes the better. UserKnown tells that User and Groups are known; the
	// others tell which of the fields above hold a recorded figure.
	UserKnown, HasServiceTime, HasSeats, HasFlowDistinguisher bool
	// TimeUnknown is true for a line read without its klog header
	// (Options.Headerless): Arrival is zero, when it was logged unknown.
	TimeUnknown                         bool
	HasQueueWait, HasLatencyAnnotations bool
}

// Where names where a request was read: a line of an input (Line > 0), or
// what Name alone says. Its String is "name:line": a reader keeps the
// input's name, shared by all its requests, and the line's number, rather
// than a string of the two for each request.
type Where struct {
	Name string
	Line int64
}

// At is the Where of a label, without a line.
func At(label string) Where { return Where{Name: label} }

func (w Where) String() string {
	if w.Line <= 0 {
		return w.Name
	}
	var n [20]byte
	return w.Name + ":" + string(strconv.AppendInt(n[:0], w.Line, 10))
}

// twoStrings returns a and b as two strings cut from one (one allocation,
// not two), built in buf: a request's URI and audit ID, each unique to it.
func twoStrings(buf *[]byte, a, b []byte) (string, string) {
	*buf = append(append((*buf)[:0], a...), b...)
	s := string(*buf)
	return s[:len(a)], s[len(a):]
}

// Reader yields requests. Next fills r and returns io.EOF at the end.
type Reader interface {
	Next(r *Request) error
}

// Options tune the readers.
type Options struct {
	// Year completes klog text timestamps, which have none. OpenFiles takes
	// it from the first audit event when an audit log is given; otherwise
	// the default is 2000 (only differences between times matter to the
	// replay). A log that spans New Year's Eve is not supported.
	Year int
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
	Instances InstanceOptions
	// Headerless also reads an httplog line that starts with "HTTP", as
	// lines are published without their klog header: its time is unknown
	// (Request.TimeUnknown). For a line given alone, not for a log, whose
	// requests need their times.
	Headerless bool
}

func (o *Options) defaults() {
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

// Stats counts what a reader skipped.
type Stats struct {
	// Lines read, Records returned.
	Lines, Records int64
	// Skipped counts lines that are not requests (other log lines, audit
	// stages other than ResponseComplete and Panic).
	Skipped int64
	// Clamped counts requests whose arrival fell before the re-ordering
	// window (ReorderWindow, or the span of the last MaxHeld requests) and
	// was moved to its edge.
	Clamped int64
	// PeakHeld is the most requests held at once to restore arrival order:
	// what the reader's memory grows with (not the input's length).
	PeakHeld int
	// Malformed counts the lines skipped because they could not be read as
	// a request (only with Options.Lenient; otherwise the first is an
	// error). FirstMalformed holds the first MaxFirstMalformed of them,
	// as "file:line: reason".
	Malformed      int64
	FirstMalformed []string
	// MalformedBy counts the malformed lines by reason.
	MalformedBy map[Reason]int64
	// SkippedBy counts the Skipped lines by reason, where the reader
	// tells it (audit events of other stages, a wrapper's records of
	// other categories).
	SkippedBy map[Reason]int64
}

// MaxFirstMalformed is how many malformed lines Stats keeps for a report.
const MaxFirstMalformed = 5

// Reason is why a line could not be read as a request: the kind of line
// (Noun: "httplog line", "audit event") and what was wrong with it
// (Problem: "without a timestamp").
type Reason struct{ Noun, Problem string }

// Count says n lines of the reason: "3 httplog lines without a timestamp".
func (r Reason) Count(n int64) string {
	noun := r.Noun
	if n != 1 {
		noun += "s"
	}
	return fmt.Sprintf("%d %s %s", n, noun, r.Problem)
}

// MalformedReasons says, most frequent first, how many malformed lines each
// reason counted: "3 httplog lines without a timestamp".
func (s *Stats) MalformedReasons() []string {
	reasons := make([]Reason, 0, len(s.MalformedBy))
	for r := range s.MalformedBy {
		reasons = append(reasons, r)
	}
	slices.SortFunc(reasons, func(a, b Reason) int {
		if c := cmp.Compare(s.MalformedBy[b], s.MalformedBy[a]); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Noun, b.Noun), cmp.Compare(a.Problem, b.Problem))
	})
	out := make([]string, len(reasons))
	for i, r := range reasons {
		out[i] = r.Count(s.MalformedBy[r])
	}
	return out
}

// reasonError is the error of a malformed line with its Reason; its text
// is the error's.
type reasonError struct {
	reason Reason
	error
}

func (e reasonError) Unwrap() error { return e.error }

// because gives err the reason a malformed line is counted under.
func because(noun, problem string, err error) error {
	return reasonError{Reason{noun, problem}, err}
}

// malformed handles a line that is not a readable request: with lenient it
// is counted under its reason (def when err carries none) and nil is
// returned (the caller reads on), otherwise err is.
func (s *Stats) malformed(lenient bool, def Reason, err error) error {
	if !lenient {
		return err
	}
	s.Malformed++
	if len(s.FirstMalformed) < MaxFirstMalformed {
		s.FirstMalformed = append(s.FirstMalformed, err.Error())
	}
	reason := def
	var re reasonError
	if errors.As(err, &re) {
		reason = re.reason
	}
	if s.MalformedBy == nil {
		s.MalformedBy = map[Reason]int64{}
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
func (l *lineScanner) where() Where { return Where{l.name, l.line} }

// reorder puts requests that are logged at completion back in arrival
// order, holding only those within the window. Requests of equal arrival
// keep the order of the log.
type reorder struct {
	src     func(*Request) (completed time.Time, err error)
	window  time.Duration
	q       arrivalQueue
	horizon time.Time // latest completion seen
	emitted time.Time // arrival of the last request returned
	done    bool
	stats   *Stats
}

func (ro *reorder) Next(out *Request) error {
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
	slots   []*Request // ring storage; slots[(head+i)%len] is the i-th
	keys    []arrivalKey
	head    int
	n       int
	maxHeld int
	spare   []Request // allocated, not yet a slot
	// free are the requests popped, for the next slots: a ring grown
	// to hold more requests then allocates none for its new slots until
	// it holds more than ever before, rather than one for each
	free []*Request
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

func (q *arrivalQueue) at(i int) *Request { return q.slots[q.pos(i)] }

func (q *arrivalQueue) first() time.Time { return q.at(0).Arrival }

// next returns the slot to read the next request into; push then inserts
// it in order.
func (q *arrivalQueue) next() *Request {
	if q.n == len(q.slots) {
		// the queue holds at most maxHeld+1 requests: the ring need not
		// be larger (every slot gets a request of its own)
		size := min(max(2*len(q.slots), 64), max(q.maxHeld+1, len(q.slots)+1))
		grown, keys := make([]*Request, size), make([]arrivalKey, size)
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
			q.spare = make([]Request, min(slotRun, max(len(q.slots)-q.n, 1)))
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
func (q *arrivalQueue) pushSlow(r *Request) {
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
func (q *arrivalQueue) insert(lo int, r *Request, k arrivalKey) {
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
func (q *arrivalQueue) pop(out *Request) {
	r := q.slots[q.head]
	*out = *r
	*r = Request{}
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
