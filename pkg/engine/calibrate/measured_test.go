package calibrate

import (
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// TestMeasuredExecutions: the audit log alone of a one-seat level, whose
// server spent 1 ms in the filters around APF, beside the executions APF
// measured. With scrapes around the whole load the check counts every
// execution and sets the estimates beside APF's time: the estimates from
// the level's ends hold each run's first execution with its filters, so
// they hold more than APF measured, by at most a millisecond a run. With
// scrapes around the first half of the load but APF's figures of the
// whole, the counts differ and nothing is compared; with no figure of
// APF's, no check.
func TestMeasuredExecutions(t *testing.T) {
	reqs, execs, rc := auditOnlyBusy(t, 3, 1, 100, time.Millisecond)
	var (
		n        int64
		sum      time.Duration
		first    = reqs[0].Arrival
		last     time.Time
		halfEnds int64
	)
	half := first.Add(10 * time.Second)
	for i, r := range reqs {
		if r.Status == 429 {
			continue
		}
		n++
		sum += execs[i]
		end := r.Arrival.Add(r.Latency)
		if end.After(last) {
			last = end
		}
		if !end.After(half) {
			halfEnds++
		}
	}
	open := func() (workload.Reader, error) { return &sliceReader{reqs: reqs}, nil }
	run := func(ex map[string]metrics.Executions, to time.Time) *Level {
		t.Helper()
		opts := Options{Config: rc.Config, ServerConcurrencyLimit: rc.ServerConcurrencyLimit}
		opts.Executions, opts.MetricsWindow = ex, TimeRange{From: first.Add(-time.Second), To: to}
		res, err := Calibrate(open, rc, opts, 10)
		if err != nil {
			t.Fatal(err)
		}
		if !res.AuditOnly {
			t.Fatal("the workload is an audit log's: no execution times")
		}
		return res.level("slow")
	}
	apf := map[string]metrics.Executions{"slow": {Count: n, Sum: sum}}

	m := run(apf, last.Add(time.Second)).Measured
	if m == nil || m.Ratio == 0 {
		t.Fatalf("scrapes around the load: measured %+v, want a ratio", m)
	}
	t.Logf("%d executions of %v; the estimates give them %v (%.3f)", n, sum, time.Duration(m.Estimated), m.Ratio)
	if m.Executions != n || m.Logged != n || time.Duration(m.Time) != sum || m.Recorded != 0 {
		t.Errorf("measured %+v, want %d executions of %v, all logged, none recorded", m, n, sum)
	}
	if want := float64(m.Estimated) / float64(sum); m.Ratio != want {
		t.Errorf("ratio %v, want estimated / measured %v", m.Ratio, want)
	}
	if m.Estimated < Duration(sum) || m.Estimated > Duration(sum)+Duration(n)*Duration(time.Millisecond) {
		t.Errorf("the estimates hold %v, want from APF's %v to a millisecond more per execution", time.Duration(m.Estimated), sum)
	}

	m = run(apf, half).Measured
	if m == nil || m.Ratio != 0 || m.Logged != halfEnds || !strings.Contains(m.Why, "not the same requests") || m.Replay == nil || !m.Replay.From.Equal(first.Add(-time.Second)) || !m.Replay.To.Equal(half) {
		t.Errorf("scrapes around the first half, APF's figures of the whole: measured %+v, want %d logged and no ratio", m, halfEnds)
	}

	if m := run(nil, last.Add(time.Second)).Measured; m != nil {
		t.Errorf("no figure of APF's: measured %+v", m)
	}
}
