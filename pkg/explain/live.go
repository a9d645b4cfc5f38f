package explain

import (
	"math"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

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

// levelMetricsOf returns the metrics of a level in the newest two scrapes
// of l.
func levelMetricsOf(l *dump.Snapshot, name string) levelMetrics {
	var out levelMetrics
	if l == nil {
		return out
	}
	prev, cur := l.LatestMetrics()
	if cur == nil {
		return out
	}
	for _, st := range metrics.Levels(prev, cur) {
		if st.Name == name {
			out.stats, out.found = st, true
		}
	}
	if ch := cur.HistogramsBy(requestExecutionSeconds, "priority_level", nil)[name]; ch != nil {
		h := ch
		if prev != nil {
			if p := prev.HistogramsBy(requestExecutionSeconds, "priority_level", nil)[name]; p != nil && ch.Count > p.Count {
				h = ch.Sub(p)
			}
		}
		if h.Count > 0 && !math.IsNaN(h.Sum) && h.Sum >= 0 {
			out.meanExec = time.Duration(h.Sum / h.Count * float64(time.Second))
		}
	}
	return out
}

// queuesOf returns the dump_queues rows of a level by index (a pre-1.28
// "<none>" placeholder row is no queue).
func queuesOf(l *dump.Snapshot, name string) map[int]dump.QueueRow {
	out := map[int]dump.QueueRow{}
	if l == nil {
		return out
	}
	for _, q := range l.QueueDump {
		if q.PriorityLevel == name && !q.Placeholder {
			out[q.Index] = q
		}
	}
	return out
}

// hasDumps reports whether the dumps were read.
func hasDumps(l *dump.Snapshot) bool { return l != nil && l.PriorityLevelDump != nil }

// requestsOnly is what a dump_requests read without dump_priority_levels
// (a paste from an issue) tells of one level: since 1.28 it lists every
// waiting and executing request of every level (apf_controller_debug.go,
// dumpRequests), so the level's waiting requests per queue and the seats
// its requests execute with are known, while its current limit and its
// queues' work are not; a layout before 1.28 lists the waiting requests
// alone (inUseKnown false). ok is false where there is no such dump: none
// read, the dumps of the levels read beside it (the full answer), or no
// row at all.
type requestsOnly struct {
	byQueue    map[int]int
	waiting    int
	inUse      int
	inUseKnown bool
	// widest is the most seats a waiting request asks for
	widest int
}

// hasRequestsOnly reports whether l's state is a dump_requests without
// the dumps of the levels.
func hasRequestsOnly(l *dump.Snapshot) bool {
	return l != nil && !hasDumps(l) && len(l.RequestDump) > 0
}

func requestsOnlyOf(l *dump.Snapshot, level string) (requestsOnly, bool) {
	if !hasRequestsOnly(l) {
		return requestsOnly{}, false
	}
	ro := requestsOnly{byQueue: map[int]int{}, inUseKnown: !l.RequestsWaitingOnly()}
	for _, r := range l.RequestDump {
		switch {
		case r.PriorityLevel != level:
		case r.Executing():
			ro.inUse += r.Seats()
		default:
			ro.byQueue[r.QueueIndex]++
			ro.waiting++
			ro.widest = max(ro.widest, r.Seats())
		}
	}
	return ro, true
}
