package workload

import (
	"cmp"
	"fmt"
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
	// AuditLatency, valid when HasAuditLatency, is the time from Arrival to
	// the ResponseComplete stage of the request's audit event, which a join
	// of an httplog line with its audit event sets (package input's Join).
	// The audit filter stamps that stage as its inner handler, APF's among
	// them, returns: nearer the seat's release than httplog's latency, which
	// the filters outside the audit filter lengthen (the audit event's own
	// write among them; DefaultBuildHandlerChain).
	AuditLatency time.Duration
	// QueuedOverhead is not read from any input: a calibration (package
	// calibrate) sets it to the extra time the recorded server held a seat
	// for a request dispatched from a queue.
	QueuedOverhead time.Duration
	// RecordedStretch is not read from any input either: a calibration
	// sets it to the stretch the record's execution ran under in the
	// recording by the CPU evidence's model of the cores the executions
	// shared (package calibrate, Headroom.Shared), for a replay on that
	// model to take it back to its time alone (fairqueue.ReplayConfig's
	// Unstretch). 0 or 1 is none.
	RecordedStretch float64
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
	HasAuditLatency                     bool
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

// Reader yields requests. Next fills r and returns io.EOF at the end.
type Reader interface {
	Next(r *Request) error
}

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

// twoStrings returns a and b as two strings cut from one (one allocation,
// not two), built in buf: a request's URI and audit ID, each unique to it.
func twoStrings(buf *[]byte, a, b []byte) (string, string) {
	*buf = append(append((*buf)[:0], a...), b...)
	s := string(*buf)
	return s[:len(a)], s[len(a):]
}

// SkippedReasons says, most frequent first, how many lines were skipped
// as not requests for each reason counted ("12 audit events of another
// stage than ResponseComplete and Panic").
func (s *Stats) SkippedReasons() []string {
	t := Stats{MalformedBy: s.SkippedBy}
	return t.MalformedReasons()
}
