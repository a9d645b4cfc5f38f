package logs

import (
	"fmt"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// ObjectCounts are the object counts of the state's latest metrics (of its
// first snapshot): the estimate of the seats of the LISTs whose log records
// none. source names where the state was read from, for the error that
// says there are none.
func ObjectCounts(st *state.State, source string) (engine.ObjectCounts, error) {
	if len(st.Snapshots) == 0 {
		return nil, fmt.Errorf("%s gave no metrics", source)
	}
	_, cur := st.Snapshots[0].LatestMetrics()
	out := CountsOf(cur)
	if out == nil {
		return nil, fmt.Errorf("the metrics of %s have neither %s nor %s: LISTs that record no seats get 1", source, metrics.FamilyResourceObjects, metrics.FamilyStorageObjects)
	}
	return out, nil
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
