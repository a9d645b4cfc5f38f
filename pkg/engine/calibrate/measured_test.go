package calibrate

import (
	"math"
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
	run := func(ex map[string]metrics.Executions, to time.Time, took ...time.Duration) *Level {
		t.Helper()
		opts := Options{Config: rc.Config, ServerConcurrencyLimit: rc.ServerConcurrencyLimit}
		opts.Executions, opts.MetricsWindow = ex, TimeRange{From: first.Add(-time.Second), To: to}
		copy(opts.ExecutionsGathering[:], took)
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
	if m.Gathering != nil {
		t.Errorf("scrapes that do not tell how long they took: gathering %v, want none (not 0)", *m.Gathering)
	}
	if m.Executions != n || m.Logged != n || time.Duration(m.Time) != sum || m.Recorded != 0 {
		t.Errorf("measured %+v, want %d executions of %v, all logged, none recorded", m, n, sum)
	}
	if want := float64(m.Estimated) / float64(sum); math.Abs(m.Ratio-want) > 1e-12 {
		t.Errorf("ratio %v, want estimated / measured %v", m.Ratio, want)
	}
	if m.Estimated < Duration(sum) || m.Estimated > Duration(sum)+Duration(n)*Duration(time.Millisecond) {
		t.Errorf("the estimates hold %v, want from APF's %v to a millisecond more per execution", time.Duration(m.Estimated), sum)
	}

	m = run(apf, half).Measured
	if m == nil || m.Ratio != 0 || m.Logged != halfEnds || !strings.Contains(m.Why, "not the same requests") || m.Replay == nil || !m.Replay.From.Equal(first.Add(-time.Second)) || !m.Replay.To.Equal(half) {
		t.Errorf("scrapes around the first half, APF's figures of the whole: measured %+v, want %d logged and no ratio", m, halfEnds)
	}

	// a store's scrapes, stamped when they started, around the first
	// half: the last one took 500ms and the server counted the
	// executions 300ms into it, so APF's count holds those that ended in
	// the 300ms after the half too, more than MeasuredCountTolerance of
	// them. Told how long the scrapes took, the check sets the estimates
	// beside APF's time; not told, it cannot tell them from another
	// log's
	gathered := half.Add(300 * time.Millisecond)
	var late apfTally
	for i, r := range reqs {
		if end := r.Arrival.Add(r.Latency); r.Status != 429 && !end.After(gathered) {
			late.add(execs[i], end.After(half))
		}
	}
	if float64(late.after) <= DefaultParams().MeasuredCountTolerance*float64(late.n) {
		t.Fatalf("%d executions ended in the 300ms after the half, of %d: the case needs more than the count's tolerance", late.after, late.n)
	}
	gatheredEx := map[string]metrics.Executions{"slow": {Count: late.n, Sum: late.sum}}
	if m := run(gatheredEx, half).Measured; m == nil || m.Ratio != 0 || !strings.Contains(m.Why, "not the same requests") {
		t.Errorf("the last scrape counted 300ms after its time, not told how long it took: measured %+v, want no ratio", m)
	}
	m = run(gatheredEx, half, 0, 500*time.Millisecond).Measured
	if m == nil || m.Ratio == 0 || m.Logged != halfEnds || m.Gathering == nil || m.Gathering[1] < late.after || m.Gathering[0] != 0 {
		t.Errorf("the last scrape took 500ms and counted 300ms into it: measured %+v, want a ratio, %d logged and at least %d gathering at the last scrape", m, halfEnds, late.after)
	} else {
		t.Logf("APF counted %d executions, %d of them in the 300ms after the half; the workload holds %d, and %d while the last scrape gathered: ratio %.3f", late.n, late.after, m.Logged, m.Gathering[1], m.Ratio)
	}
	// more executions than the scrape's gathering can hold: refused
	if m == nil || m.Gathering == nil {
		t.FailNow()
	}
	tooMany := map[string]metrics.Executions{"slow": {Count: late.n + m.Gathering[1] + 10, Sum: late.sum}}
	if m := run(tooMany, half, 0, 500*time.Millisecond).Measured; m == nil || m.Ratio != 0 || !strings.Contains(m.Why, "while the last did") {
		t.Errorf("APF counted more than the workload holds with every execution the last scrape's gathering may hold: measured %+v, want no ratio and the gathering said", m)
	}

	if m := run(nil, last.Add(time.Second)).Measured; m != nil {
		t.Errorf("no figure of APF's: measured %+v", m)
	}
}

// apfTally counts executions as APF's histogram would, and those of them
// after a moment.
type apfTally struct {
	n, after int64
	sum      time.Duration
}

func (a *apfTally) add(exec time.Duration, after bool) {
	a.n++
	a.sum += exec
	if after {
		a.after++
	}
}
