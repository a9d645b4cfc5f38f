package explain

import (
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// BenchmarkExplain measures a full explanation (trace, limits, seats,
// hand, verdict against live metrics and dumps, advice) next to the engine's
// classification with trace alone, its naive lower bound: the difference
// is the cost of the join. Run with
//
//	go test ./pkg/explain -run XXX -bench . -benchmem -count=1
func BenchmarkExplain(b *testing.B) {
	cfg := defaultsConfig(b)
	r := mustRequest(b, "list", "/api/v1/namespaces/default/events", engine.NewServiceAccountIdentity("team-a", "operator"))
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	hand := Explain(Input{Config: cfg}, r, nil).Queues.Hand
	var rows []dump.QueueRow
	for i, q := range hand {
		rows = append(rows, dump.QueueRow{PriorityLevel: "workload-low", Index: q.Index, PendingRequests: i, MaxSeatsSum: i, TotalWorkSum: float64(i) * 0.003})
	}
	live := &dump.Snapshot{Instance: "a", PriorityLevelDump: []dump.PriorityLevelRow{{Name: "workload-low"}}, QueueDump: rows,
		Metrics: []*metrics.Scrape{scrape(b, at, levelMetricsText("workload-low", 245, 245, 100, 50*time.Millisecond))}}
	b.Run("engine.ClassifyWithTrace", func(b *testing.B) {
		for b.Loop() {
			_ = cfg.ClassifyWithTrace(r)
		}
	})
	b.Run("Explain/no-live-state", func(b *testing.B) {
		for b.Loop() {
			_ = Explain(Input{Config: cfg}, r, nil)
		}
	})
	b.Run("Explain/live-state", func(b *testing.B) {
		for b.Loop() {
			_ = Explain(Input{Config: cfg, Live: live}, r, nil)
		}
	})
}
