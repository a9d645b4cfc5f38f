package recording

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

func TestRebalancingStart(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "kube-apiserver.log")
	body := "I0314 09:26:53.589793   12345 apf_controller.go:377] \"Starting API Priority and Fairness config controller\"\n" +
		"I0314 09:26:53.689793   12345 apf_controller.go:385] \"" + apfRebalancing + "\"\n"
	if err := os.WriteFile(log, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := rebalancingStart(log)
	if err != nil {
		t.Fatal(err)
	}
	if got.Month() != time.March || got.Day() != 14 || got.Hour() != 9 || got.Minute() != 26 || got.Second() != 53 || got.Nanosecond() != 689793000 {
		t.Errorf("got %s, want March 14 09:26:53.689793", got)
	}
	if err := os.WriteFile(log, []byte("I0314 09:26:53.589793   12345 other.go:1] \"nothing\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := rebalancingStart(log); err == nil {
		t.Error("a log without the rebalancing line gave no error")
	}
}

func TestAlignedStart(t *testing.T) {
	since := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		now   time.Duration // after since
		first time.Duration
		want  time.Duration // the first request's arrival after since
		k     int
	}{
		{now: 0, first: 0, want: 10*time.Second + 20*time.Millisecond, k: 1},
		{now: 8500 * time.Millisecond, first: 300 * time.Millisecond, want: 10*time.Second + 20*time.Millisecond, k: 1},
		{now: 8800 * time.Millisecond, first: 300 * time.Millisecond, want: 20*time.Second + 20*time.Millisecond, k: 2},
		{now: 95 * time.Second, first: 2 * time.Second, want: 100*time.Second + 20*time.Millisecond, k: 10},
	} {
		start, k := alignedStart(since, since.Add(c.now), c.first)
		if got := start.Add(c.first).Sub(since); got != c.want || k != c.k {
			t.Errorf("now %s, first %s: first request at %s after adjustment %d, want %s after %d", c.now, c.first, got, k, c.want, c.k)
		}
		if start.Before(since.Add(c.now)) {
			t.Errorf("now %s, first %s: start %s is in the past", c.now, c.first, start.Sub(since))
		}
	}
}

func TestWhatIfAgrees(t *testing.T) {
	for _, c := range []struct {
		pred, real int64
		want       bool
	}{
		{100, 100, true}, {125, 100, true}, {126, 100, false}, {75, 100, true}, {74, 100, false},
		{20, 0, false}, {0, 20, false}, {10, 0, true}, {19, 8, false}, {18, 8, true}, {0, 0, true},
	} {
		if got := WhatIfAgrees(c.pred, c.real); got != c.want {
			t.Errorf("WhatIfAgrees(%d, %d) = %v, want %v", c.pred, c.real, got, c.want)
		}
	}
}

// TestScenarioSeats computes the nominal limits of every scenario's levels,
// and of every what-if's, on the scenario's server (the defaults, loadgen's
// levels, the scenario's and the change's, at max-requests-inflight +
// max-mutating-requests-inflight) with the engine, and checks the seats
// the scenarios expect (which each session reads back from the server),
// those recorded fresh alone (Unrecorded) too.
func TestScenarioSeats(t *testing.T) {
	for _, sc := range All() {
		for i, w := range sc.WhatIfs() {
			for _, ch := range []*Change{nil, &w.Change} {
				if ch == nil && i > 0 {
					continue
				}
				pls, _ := loadgen.SetupObjects(sc.setupOptions())
				byName := map[string]*flowcontrolv1.PriorityLevelConfiguration{}
				var order []string
				for _, group := range [][]*flowcontrolv1.PriorityLevelConfiguration{engine.DefaultPriorityLevels(), pls, sc.Levels, changeLevels(ch)} {
					for _, pl := range group {
						if byName[pl.Name] == nil {
							order = append(order, pl.Name)
						}
						byName[pl.Name] = pl
					}
				}
				var all []*flowcontrolv1.PriorityLevelConfiguration
				for _, n := range order {
					all = append(all, byName[n])
				}
				got := map[string]int{}
				for _, l := range engine.ComputeLimits(all, sc.Inflight+sc.Mutating) {
					got[l.Name] = l.NominalCL
				}
				want := map[string]int{}
				for l, n := range sc.Seats {
					want[l] = n
				}
				what := sc.Name
				if ch != nil {
					what += " after " + ch.About
					for l, n := range ch.Seats {
						want[l] = n
					}
				}
				for l, n := range want {
					if got[l] != n {
						t.Errorf("%s: %s has %d seats, the scenario expects %d", what, l, got[l], n)
					}
				}
			}
		}
	}
}

func changeLevels(ch *Change) []*flowcontrolv1.PriorityLevelConfiguration {
	if ch == nil {
		return nil
	}
	return ch.Levels
}

// TestSameServer holds a re-run of the recorded configuration to the
// recorded run: the 429s of every level under WhatIfAgrees and the server's
// CPU within 0.8–1.25. The figures are quiet's from two full runs: a
// recording made on a machine slowed by other work (74 429s, 0.38 cores)
// against a re-run at the usual pace (48, 0.31).
func TestSameServer(t *testing.T) {
	run := func(r429 map[string]int, cores float64) Run {
		return Run{Rejected429: r429, APIServerCPU: cores}
	}
	usual := run(map[string]int{"apf-load": 48, "apf-load-reject": 43}, 0.31)
	for _, c := range []struct {
		name         string
		rec, control Run
		want         string
	}{
		{"the same", usual, run(map[string]int{"apf-load": 51, "apf-load-reject": 43}, 0.33), ""},
		{"recorded slow", run(map[string]int{"apf-load": 74, "apf-load-reject": 43}, 0.38), usual, "apf-load got 48 429s, the recorded run 74"},
		{"a level only in the control", run(map[string]int{"apf-load-reject": 43}, 0.31), usual, "apf-load got 48 429s, the recorded run 0"},
		{"a server slower, as many 429s", usual, run(map[string]int{"apf-load": 48, "apf-load-reject": 43}, 0.40), "kube-apiserver used 0.400 cores, in the recorded run 0.310"},
		{"no CPU figure", run(usual.Rejected429, 0), usual, ""},
	} {
		err := SameServer(c.rec, c.control)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

func TestCollectorBetween(t *testing.T) {
	body := func(cycles, assist, dedicated, idle, dispatched float64) string {
		return fmt.Sprintf(`# TYPE go_gc_cycles_total_gc_cycles_total counter
go_gc_cycles_total_gc_cycles_total %g
# TYPE go_cpu_classes_gc_mark_assist_cpu_seconds_total counter
go_cpu_classes_gc_mark_assist_cpu_seconds_total %g
# TYPE go_cpu_classes_gc_mark_dedicated_cpu_seconds_total counter
go_cpu_classes_gc_mark_dedicated_cpu_seconds_total %g
# TYPE go_cpu_classes_gc_mark_idle_cpu_seconds_total counter
go_cpu_classes_gc_mark_idle_cpu_seconds_total %g
# TYPE go_sched_gomaxprocs_threads gauge
go_sched_gomaxprocs_threads 2
# TYPE apiserver_flowcontrol_dispatched_requests_total counter
apiserver_flowcontrol_dispatched_requests_total{flow_schema="a",priority_level="a"} %g
`, cycles, assist, dedicated, idle, dispatched)
	}
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	// 4 collections; the workers held Ps for 0.1 + 0.8 + 1.6 s, over 2 Ps
	c := collectorBetween(body(10, 0.1, 1.0, 2.0, 100), t0, body(14, 0.2, 1.8, 3.6, 700), t0.Add(40*time.Second))
	if c == nil || c.Collections != 4 || c.MarkWorkers != 312500*time.Microsecond {
		t.Errorf("got %+v, want 4 collections of 312.5ms", c)
	}
	if c := collectorBetween(body(10, 0.1, 1.0, 2.0, 100), t0, body(10, 0.1, 1.0, 2.0, 700), t0.Add(time.Second)); c != nil {
		t.Errorf("no collection in between: got %+v, want nil", c)
	}
	if c := collectorBetween("garbage{", t0, body(14, 0.2, 1.8, 3.6, 700), t0.Add(time.Second)); c != nil {
		t.Errorf("a garbled scrape: got %+v, want nil", c)
	}
}

// TestWhatIfAgreesRuns: a prediction is held to the mean of the re-runs,
// and to what they measured only where they disagree among themselves
// under the band.
func TestWhatIfAgreesRuns(t *testing.T) {
	for _, c := range []struct {
		pred  int64
		reals []int64
		noisy bool
		want  bool
	}{
		{100, []int64{100}, false, true},
		{70, []int64{100}, false, false},
		{70, []int64{100, 101, 99}, false, false}, // the re-runs agree: the band holds
		{70, []int64{60, 100, 140}, true, true},   // 60 against 120, 140 against 80: noisier than the band, 70 measured
		{50, []int64{60, 100, 140}, true, false},  // below every re-run, and outside the band of the mean
		{160, []int64{60, 100, 140}, true, false}, // above every re-run
		{120, []int64{60, 100, 140}, true, true},  // within the band of the mean too
		{70, []int64{60, 140}, false, false},      // two re-runs tell no spread
		{5, []int64{0, 12, 3}, false, true},       // small counts: within 10 of the mean 5
		{0, nil, false, false},
	} {
		if got := NoisierThanTheBand(c.reals); got != c.noisy {
			t.Errorf("NoisierThanTheBand(%v) = %v, want %v", c.reals, got, c.noisy)
		}
		if got := WhatIfAgreesRuns(c.pred, c.reals); got != c.want {
			t.Errorf("WhatIfAgreesRuns(%d, %v) = %v, want %v", c.pred, c.reals, got, c.want)
		}
	}
}

// TestWhatIfBoundHolds: a bound holds where every re-run lies within it,
// its ends included, and nowhere else: a re-run just outside fails it
// however close (the old verdict took any real within 0.75–1.25 of either
// end).
func TestWhatIfBoundHolds(t *testing.T) {
	for _, c := range []struct {
		lo, hi int64
		reals  []int64
		want   bool
	}{
		{100, 200, []int64{150}, true},
		{100, 200, []int64{100, 200}, true},
		{100, 200, []int64{150, 210}, false}, // within 1.25 of the high end, yet outside
		{100, 200, []int64{90, 150}, false},  // within 0.75 of the low end, yet outside
		{0, 0, []int64{0, 0, 0}, true},
		{0, 0, []int64{1}, false},
		{100, 200, nil, false},
	} {
		if got := WhatIfBoundHolds(c.lo, c.hi, c.reals); got != c.want {
			t.Errorf("WhatIfBoundHolds(%d, %d, %v) = %v, want %v", c.lo, c.hi, c.reals, got, c.want)
		}
	}
}
