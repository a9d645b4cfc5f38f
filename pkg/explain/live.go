package explain

import (
	"math"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// Live is the APF state of one apiserver instance at one time: the three
// debug dumps and the APF metrics. The caller converts package dump's
// snapshot into it (this package stays free of client libraries).
type Live struct {
	// Instance names the apiserver.
	Instance string
	// At is when the state was read.
	At time.Time
	// Levels are the rows of dump_priority_levels by level name.
	Levels map[string]LevelRow
	// Queues are the rows of dump_queues.
	Queues []QueueRow
	// Requests are the rows of dump_requests (waiting and, since 1.28,
	// executing requests).
	Requests []RequestRow
	// Prev and Cur are two scrapes of /metrics (Prev may be nil: no rates).
	Prev, Cur *metrics.Scrape
}

// LevelRow is one row of dump_priority_levels.
type LevelRow struct {
	Name                                 string
	ActiveQueues                         int
	WaitingRequests, ExecutingRequests   int
	DispatchedRequests, RejectedRequests int
	TimedoutRequests, CancelledRequests  int
}

// QueueRow is one row of dump_queues.
type QueueRow struct {
	PriorityLevel     string
	Index             int
	PendingRequests   int
	ExecutingRequests int
	SeatsInUse        int
	// MaxSeatsSum and TotalWorkSum (seat-seconds) cover the waiting requests.
	MaxSeatsSum  int
	TotalWorkSum float64
}

// RequestRow is one row of dump_requests.
type RequestRow struct {
	PriorityLevel     string
	FlowSchema        string
	QueueIndex        int
	IndexInQueue      int // -1 while executing
	FlowDistinguisher string
	ArriveTime        time.Time
	InitialSeats      int
	FinalSeats        int
	UserName          string
	Verb              string
	Path              string
}

// Executing reports whether the request was executing when dumped.
func (r RequestRow) Executing() bool { return r.IndexInQueue < 0 }

// levelMetrics is what the metrics say about one level.
type levelMetrics struct {
	stats metrics.LevelStats
	found bool
	// meanExec is the mean execution time over the scrape interval (or
	// since start), 0 when unknown.
	meanExec time.Duration
}

// requestExecutionSeconds is the histogram of execution times per level
// (k8s.io/apiserver/pkg/util/flowcontrol/metrics/metrics.go:apiserverRequestExecutionSeconds).
const requestExecutionSeconds = metrics.FlowcontrolPrefix + "request_execution_seconds"

// levelMetricsOf returns the metrics of a level.
func (l *Live) levelMetricsOf(name string) levelMetrics {
	var out levelMetrics
	if l == nil || l.Cur == nil {
		return out
	}
	for _, st := range metrics.Levels(l.Prev, l.Cur) {
		if st.Name == name {
			out.stats, out.found = st, true
		}
	}
	cur := l.Cur.HistogramsBy(requestExecutionSeconds, "priority_level", nil)[name]
	if cur != nil {
		h := cur
		if l.Prev != nil {
			if p := l.Prev.HistogramsBy(requestExecutionSeconds, "priority_level", nil)[name]; p != nil && cur.Count > p.Count {
				h = cur.Sub(p)
			}
		}
		if h.Count > 0 && !math.IsNaN(h.Sum) && h.Sum >= 0 {
			out.meanExec = time.Duration(h.Sum / h.Count * float64(time.Second))
		}
	}
	return out
}

// queuesOf returns the dump_queues rows of a level by index.
func (l *Live) queuesOf(name string) map[int]QueueRow {
	out := map[int]QueueRow{}
	if l == nil {
		return out
	}
	for _, q := range l.Queues {
		if q.PriorityLevel == name {
			out[q.Index] = q
		}
	}
	return out
}

// hasDumps reports whether the dumps were read.
func (l *Live) hasDumps() bool { return l != nil && l.Levels != nil }
