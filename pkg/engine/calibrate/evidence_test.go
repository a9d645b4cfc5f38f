package calibrate

import (
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// TestCoverEvidence: the metrics' CPU evidence is used only when the
// window between their two scrapes covers the workload's arrivals (to
// within the clocks' slack at each end); otherwise both figures are
// dropped and Uncovered names both windows.
func TestCoverEvidence(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	load := TimeRange{From: t0, To: t0.Add(90 * time.Second)}
	use := &metrics.CPUUse{Span: 5 * time.Second, ProcessCPU: 100 * time.Millisecond, GOMAXPROCS: 2}
	for _, tt := range []struct {
		name    string
		metrics TimeRange
		used    bool
	}{
		{"scrapes around the load", TimeRange{From: t0.Add(-time.Second), To: t0.Add(95 * time.Second)}, true},
		{"scrapes within the clocks' slack", TimeRange{From: t0.Add(500 * time.Millisecond), To: t0.Add(89500 * time.Millisecond)}, true},
		{"a bundle captured before the load", TimeRange{From: t0.Add(-time.Minute), To: t0.Add(-55 * time.Second)}, false},
		{"a bundle captured after the load", TimeRange{From: t0.Add(2 * time.Minute), To: t0.Add(125 * time.Second)}, false},
		{"scrapes over half the load", TimeRange{From: t0.Add(-time.Second), To: t0.Add(45 * time.Second)}, false},
		{"no window known", TimeRange{}, true},
	} {
		opts, u := coverEvidence(&params, Options{Evidence: Evidence{CPUUse: use, Runtime: runtime8, MetricsWindow: tt.metrics}}, load, everySecond(tt.metrics, nil, load))
		if got := opts.CPUUse != nil && opts.Runtime != nil; got != tt.used {
			t.Errorf("%s: evidence used %v, want %v", tt.name, got, tt.used)
		}
		if (u == nil) != tt.used {
			t.Errorf("%s: uncovered %v, want one: %v", tt.name, u, !tt.used)
		}
		if u != nil && (!strings.Contains(u.Why(), tt.metrics.String()) || !strings.Contains(u.Why(), load.String())) {
			t.Errorf("%s: %q does not name both windows (%v, %v)", tt.name, u.Why(), tt.metrics, load)
		}
	}
	if _, u := coverEvidence(&params, Options{Evidence: Evidence{CPUUse: use, MetricsWindow: TimeRange{From: t0.Add(-time.Minute), To: t0.Add(-55 * time.Second)}}}, TimeRange{}, arrivalCount{}); u != nil {
		t.Errorf("a workload without times is refused its evidence: %v", u)
	}
}

// everySecond counts, against the metrics' window, an arrival at extra's
// times and one each second of load.
func everySecond(metrics TimeRange, extra []time.Time, load TimeRange) arrivalCount {
	var a arrivalCount
	for _, at := range extra {
		a.add(metrics, at, params.ClockSlack)
	}
	for at := load.From; !at.After(load.To); at = at.Add(time.Second) {
		a.add(metrics, at, params.ClockSlack)
	}
	return a
}

// TestCoverEvidenceStrayArrivals: scrapes around the load are evidence of
// it even when a few requests came before or after them (a lease renewed
// before the load, a bundle's own reads after it: the workload's window
// then starts or ends outside the scrapes), and are not when a sixth of
// the load fell outside them.
func TestCoverEvidenceStrayArrivals(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	load := TimeRange{From: t0, To: t0.Add(90 * time.Second)}
	use := &metrics.CPUUse{Span: 5 * time.Second, ProcessCPU: 100 * time.Millisecond, GOMAXPROCS: 2}
	around := TimeRange{From: t0.Add(-time.Second), To: t0.Add(91 * time.Second)}
	for _, tt := range []struct {
		name     string
		metrics  TimeRange
		workload TimeRange
		extra    []time.Time
		used     bool
	}{
		{"a lease renewed 20 s before the load", around, TimeRange{From: t0.Add(-20 * time.Second), To: load.To}, []time.Time{t0.Add(-20 * time.Second)}, true},
		{"a bundle's reads 5 s after the load", around, TimeRange{From: t0, To: t0.Add(95 * time.Second)}, []time.Time{t0.Add(95 * time.Second), t0.Add(95 * time.Second)}, true},
		{"the load's first 15 s before the scrapes", TimeRange{From: t0.Add(15 * time.Second), To: t0.Add(91 * time.Second)}, load, nil, false},
	} {
		opts, u := coverEvidence(&params, Options{Evidence: Evidence{CPUUse: use, Runtime: runtime8, MetricsWindow: tt.metrics}}, tt.workload, everySecond(tt.metrics, tt.extra, load))
		if got := opts.CPUUse != nil && opts.Runtime != nil; got != tt.used {
			t.Errorf("%s: evidence used %v, want %v (uncovered %v)", tt.name, got, tt.used, u)
		}
		if u != nil && !strings.Contains(u.Why(), "% of its arrivals between the scrapes") {
			t.Errorf("%s: %q does not say how many arrivals the scrapes hold", tt.name, u.Why())
		}
	}
}

// TestDeriveRefusesMetricsBeforeTheLoad: the recording of a level a CPU
// limit throttled gets the CFS model from the Go runtime's counters when
// the scrapes span the load, and none, saying why and what would give it,
// when they were taken before it; the shared-CPU model then reports no
// process CPU either.
func TestDeriveRefusesMetricsBeforeTheLoad(t *testing.T) {
	cfg := config(t, 1)
	reqs := stallRecording(1000, 40, 90*ms, endsAtBoundary)
	first, last := reqs[0].Arrival, reqs[len(reqs)-1].Arrival
	use := &metrics.CPUUse{Span: 5 * time.Second, ProcessCPU: 100 * time.Millisecond, GOMAXPROCS: 2}
	around := TimeRange{From: first.Add(-time.Second), To: last.Add(time.Second)}
	before := TimeRange{From: first.Add(-10 * time.Second), To: first.Add(-5 * time.Second)}
	res, err := Derive(&sliceReader{reqs: reqs}, Options{Config: cfg, ServerConcurrencyLimit: 6, Evidence: Evidence{Runtime: runtime8, CPUUse: use, CPULimit: 0.2, MetricsWindow: around}})
	if err != nil {
		t.Fatal(err)
	}
	if res.CPU == nil || res.Uncovered != nil {
		t.Fatalf("scrapes around the load: model %v, uncovered %v (%s)", res.CPU, res.Uncovered, res.CPUWhy)
	}
	res, err = Derive(&sliceReader{reqs: reqs}, Options{Config: cfg, ServerConcurrencyLimit: 6, Evidence: Evidence{Runtime: runtime8, CPUUse: use, CPULimit: 0.2, MetricsWindow: before}})
	if err != nil {
		t.Fatal(err)
	}
	if res.CPU != nil || res.Uncovered == nil || res.CPUNeeds != NeedCoveringScrapes || !strings.Contains(res.CPUWhy, before.String()) {
		t.Errorf("scrapes before the load: model %v, uncovered %v, needs %q, why %q", res.CPU, res.Uncovered, res.CPUNeeds, res.CPUWhy)
	}
	if res.Shared != nil && res.Shared.Used != nil {
		t.Errorf("the shared-CPU model reports the process CPU of scrapes before the load: %v", *res.Shared.Used)
	}
	if got := res.Workload; !got.From.Equal(first) || !got.To.Equal(last) {
		t.Errorf("workload window %v, want %v–%v", got, first, last)
	}
}
