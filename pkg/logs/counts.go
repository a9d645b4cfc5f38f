package logs

import (
	"fmt"
	"slices"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// ObjectCounts are the object counts of the state's metrics (of its first
// snapshot's scrapes, each at its time; engine.CountsSeries): the estimate
// of the seats of the LISTs whose log records none, each from the scrape
// before it. source names where the state was read from, for the error
// that says there are none.
func ObjectCounts(st *state.State, source string) (engine.CountsSeries, error) {
	if len(st.Snapshots) == 0 {
		return nil, fmt.Errorf("%s gave no metrics", source)
	}
	out := SeriesOf(st.Snapshots[0].Metrics)
	if out == nil {
		return nil, fmt.Errorf("the metrics of %s have neither %s nor %s: LISTs that record no seats get 1", source, metrics.FamilyResourceObjects, metrics.FamilyStorageObjects)
	}
	return out, nil
}

// SeriesOf are the object counts of the scrapes that have them, oldest
// first; nil where none has.
func SeriesOf(scrapes []*metrics.Scrape) engine.CountsSeries {
	var out engine.CountsSeries
	for _, sc := range scrapes {
		if c := CountsOf(sc); c != nil {
			out = append(out, engine.TimedCounts{At: sc.Time, Counts: c})
		}
	}
	slices.SortStableFunc(out, func(a, b engine.TimedCounts) int { return a.At.Compare(b.At) })
	return out
}

// CountsOf are the object counts of one scrape, nil where it has none.
func CountsOf(sc *metrics.Scrape) engine.ObjectCounts {
	oc := metrics.ObjectCounts(sc)
	if oc == nil {
		return nil
	}
	out := engine.ObjectCounts{}
	for k, c := range oc {
		out[k] = engine.ObjectStats{Count: int64(c.Count), AvgSize: c.AverageSize()}
	}
	return out
}

// FallbackYear is the year of the times of a log whose klog headers carry
// none (Spec.Year): the year of the window's absolute bound, which says
// when the log is (--since/--until), else the year the state's metrics were
// read (MetricsYear); 0 without either.
func FallbackYear(w Window, st *state.State) int {
	if y := w.Year(); y > 0 {
		return y
	}
	return MetricsYear(st)
}

// MetricsYear is the year the state's metrics were read (its first
// snapshot's latest scrape), for the times of a log whose klog headers
// carry none (Spec.Year); 0 without metrics.
func MetricsYear(st *state.State) int {
	if st == nil || len(st.Snapshots) == 0 {
		return 0
	}
	if _, cur := st.Snapshots[0].LatestMetrics(); cur != nil && !cur.Time.IsZero() {
		return cur.Time.Year()
	}
	return 0
}
