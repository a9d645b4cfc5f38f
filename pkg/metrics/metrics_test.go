package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "metrics", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustScrape(t testing.TB, name string, at time.Time) *Scrape {
	t.Helper()
	s, _, err := ParseAPF(bytes.NewReader(readFixture(t, name)), at)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var t0 = time.Date(2026, 11, 21, 15, 0, 0, 0, time.UTC)

func TestFilterKeepsOnlyAPF(t *testing.T) {
	s := mustScrape(t, "modern-a.txt", t0)
	for _, f := range []string{"apiserver_request_duration_seconds", "go_goroutines"} {
		if s.Has(f) {
			t.Errorf("family %s was kept", f)
		}
	}
	for _, f := range []string{NominalLimitSeats, RequestWaitDurationSecond, FamilyRequestTotal} {
		if !s.Has(f) {
			t.Errorf("family %s was dropped", f)
		}
	}
	rt := s.Samples(FamilyRequestTotal)
	if len(rt) != 1 || rt[0].Labels["code"] != "429" || rt[0].Value != 12 {
		t.Errorf("apiserver_request_total samples = %+v, want only the code=429 one", rt)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 || (math.IsNaN(a) && math.IsNaN(b)) }

func TestLevels(t *testing.T) {
	a := mustScrape(t, "modern-a.txt", t0)
	b := mustScrape(t, "modern-b.txt", t0.Add(10*time.Second))
	old := mustScrape(t, "v1.20-shape.txt", t0)
	tests := []struct {
		name      string
		prev, cur *Scrape
		level     string
		want      LevelStats
	}{
		{"rates between two scrapes", a, b, "apf-load", LevelStats{NominalLimit: 1, CurrentLimit: 1, SeatsInUse: 1, Utilisation: 1,
			WaitingRequests: 4, WaitingSeats: 6, HasRates: true, DispatchedPerSec: 6, RejectedPerSec: map[string]float64{"queue-full": 3, "time-out": 0},
			// 100 waits in the interval, 10 under 0.1 s, 20 under 1 s: p99 is
			// in +Inf, reported as the highest finite bound.
			WaitP99: 1}},
		{"zero limit gives NaN utilisation", a, b, "exempt", LevelStats{SeatsInUse: 2, Utilisation: math.NaN(), HasRates: true, WaitP99: math.NaN()}},
		{"borrowing: current above nominal", nil, a, "global-default", LevelStats{NominalLimit: 2, CurrentLimit: 3, Utilisation: 0, WaitP99: math.NaN()}},
		// The scrape has no current_inqueue_requests: how many wait is
		// unknown, not 0.
		{"1.20 names: request_concurrency_limit and executing requests", nil, old, "global-default",
			LevelStats{NominalLimit: 49, CurrentLimit: 49, SeatsInUse: 2, Utilisation: 2.0 / 49, WaitingRequests: math.NaN(), WaitingSeats: math.NaN(), WaitP99: math.NaN()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *LevelStats
			for _, l := range Levels(tt.prev, tt.cur) {
				if l.Name == tt.level {
					l := l
					got = &l
				}
			}
			if got == nil {
				t.Fatalf("level %s missing", tt.level)
			}
			w := tt.want
			if !near(got.NominalLimit, w.NominalLimit) || !near(got.CurrentLimit, w.CurrentLimit) || !near(got.SeatsInUse, w.SeatsInUse) ||
				!near(got.Utilisation, w.Utilisation) || !near(got.WaitingRequests, w.WaitingRequests) || !near(got.WaitingSeats, w.WaitingSeats) ||
				got.HasRates != w.HasRates || !near(got.DispatchedPerSec, w.DispatchedPerSec) || !near(got.WaitP99, w.WaitP99) {
				t.Errorf("got %+v\nwant %+v", *got, w)
			}
			for k, v := range w.RejectedPerSec {
				if !near(got.RejectedPerSec[k], v) {
					t.Errorf("rejected[%s] = %v, want %v", k, got.RejectedPerSec[k], v)
				}
			}
		})
	}
}

func TestQuantile(t *testing.T) {
	h := &Histogram{Buckets: []Bucket{{0.1, 50}, {1, 90}}, Count: 100}
	tests := []struct {
		q, want float64
	}{
		{0.5, 0.1},   // rank 50 at the top of the first bucket
		{0.25, 0.05}, // interpolated from 0
		{0.7, 0.55},  // 0.1 + 0.9*(70-50)/40
		{0.95, 1},    // in +Inf: highest finite bound
	}
	for _, tt := range tests {
		if got := h.Quantile(tt.q); !near(got, tt.want) {
			t.Errorf("Quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if got := (&Histogram{}).Quantile(0.99); !math.IsNaN(got) {
		t.Errorf("empty histogram quantile = %v, want NaN", got)
	}
	// A counter reset (apiserver restart) between scrapes keeps the new counts.
	reset := (&Histogram{Buckets: []Bucket{{1, 3}}, Count: 3}).Sub(h)
	if reset.Count != 3 {
		t.Errorf("Sub after reset: count %v, want 3", reset.Count)
	}
}

func TestRate(t *testing.T) {
	if got := Rate(10, 40, 10*time.Second); got != 3 {
		t.Errorf("Rate = %v, want 3", got)
	}
	if got := Rate(100, 5, 5*time.Second); got != 1 {
		t.Errorf("Rate across a reset = %v, want 1", got)
	}
	if got := Rate(1, 2, 0); !math.IsNaN(got) {
		t.Errorf("Rate over zero interval = %v, want NaN", got)
	}
}

func TestFilterErrors(t *testing.T) {
	tests := []struct {
		name, body, wantErr string
	}{
		{"html", "<html>\n<body>forbidden</body>\n", `metrics line 1: "<html>"`},
		{"json", `{"kind":"Status"}`, `metrics line 1`},
		{"too long", strings.Repeat("a", maxLine+10), "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FilterAPF(strings.NewReader(tt.body))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrNotMetrics) {
				t.Errorf("err = %v, want %q wrapping ErrNotMetrics", err, tt.wantErr)
			}
		})
	}
	// A broken APF line is caught by expfmt after filtering.
	_, _, err := ParseAPF(strings.NewReader("apiserver_flowcontrol_nominal_limit_seats{priority_level=\"x\" 1\n"), t0)
	if err == nil || !strings.Contains(err.Error(), "parsing metrics") {
		t.Errorf("err = %v, want a parse error", err)
	}
}

// TestRealCaptures computes the level statistics of scrapes captured from
// real kube-apiservers 1.29 to 1.37 (testdata/metrics/VERSION-{idle,load}.txt,
// written by the e2e with -capture-fixtures): the deprecated families are
// exported exactly in the releases upstream shows them in
// (pkg/util/flowcontrol/metrics/metrics.go: request_concurrency_limit
// deprecated in 1.30, so hidden from 1.31; request_concurrency_in_use
// deprecated in 1.31, hidden from 1.32; both removed in 1.37), and the
// statistics come out the same whichever families a release has.
func TestRealCaptures(t *testing.T) {
	idles, _ := filepath.Glob("../../testdata/metrics/v1.*-idle.txt")
	if len(idles) < 5 {
		t.Fatalf("only %d real idle captures: %v", len(idles), idles)
	}
	for _, idleFile := range idles {
		version := strings.TrimSuffix(filepath.Base(idleFile), "-idle.txt")
		t.Run(version, func(t *testing.T) {
			var minor int
			if _, err := fmt.Sscanf(version, "v1.%d.", &minor); err != nil {
				t.Fatal(err)
			}
			idle := mustScrape(t, version+"-idle.txt", t0)
			load := mustScrape(t, version+"-load.txt", t0.Add(30*time.Second))
			for family, shown := range map[string]bool{RequestConcurrencyLimit: minor <= 30, RequestConcurrencyInUse: minor <= 31} {
				if load.Has(family) != shown {
					t.Errorf("%s exported = %v, want %v in 1.%d", family, load.Has(family), shown, minor)
				}
			}
			for _, family := range []string{NominalLimitSeats, CurrentExecutingSeats} {
				if !load.Has(family) {
					t.Errorf("%s is missing", family)
				}
			}
			byName := map[string]LevelStats{}
			for _, l := range Levels(idle, load) {
				byName[l.Name] = l
			}
			// apf-load is the load generator's one-seat level (internal/testharness/loadgen).
			l, ok := byName["apf-load"]
			if !ok || l.NominalLimit != 1 || l.CurrentLimit != 1 || !l.HasRates || l.RejectedPerSec["queue-full"] <= 0 {
				t.Errorf("apf-load = %+v", l)
			}
			// exempt has a nominal limit of 0 (nominalConcurrencyShares 0).
			if e := byName["exempt"]; e.NominalLimit != 0 {
				t.Errorf("exempt = %+v", e)
			}
			// The limits of the limited levels add up to the server's
			// concurrency limit (max-requests-inflight +
			// max-mutating-requests-inflight = 15 in the test cluster).
			sum := 0.0
			for _, l := range byName {
				sum += l.NominalLimit
			}
			if sum < 15 {
				t.Errorf("nominal limits sum to %v", sum)
			}
		})
	}
}

func TestThrottled429PerSec(t *testing.T) {
	a := mustScrape(t, "modern-a.txt", t0)
	b := mustScrape(t, "modern-b.txt", t0.Add(10*time.Second))
	// 12 then 42 LIST 429s, 10 s apart.
	if got := Throttled429PerSec(a, b); len(got) != 1 || got["LIST"] != 3 {
		t.Errorf("429/s = %v, want LIST: 3", got)
	}
	if got := Throttled429PerSec(nil, b); got != nil {
		t.Errorf("one scrape gave rates %v", got)
	}
}

// TestSeatUtilization reads priority_level_seat_utilization from a real
// 1.37 scrape under load (issue 47). apf-load has one seat, so its ratio is
// 0 or 1 and the mean equals the time above 0.99: by hand from the file,
// sum/count = 17146306523/20332834185 = 0.8433 and 1 - the 0.99 bucket /
// count = 1 - 3186527662/20332834185 = 0.8433. workload-low was idle (sum
// 0). A 1.20-shaped scrape has no such family: NaN, never 0.
func TestSeatUtilization(t *testing.T) {
	cur := mustScrape(t, "v1.37.1-load.txt", t0)
	by := map[string]LevelStats{}
	for _, l := range Levels(nil, cur) {
		by[l.Name] = l
	}
	near := func(what string, got, want float64) {
		if math.Abs(got-want) > 1e-4 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	near("apf-load mean", by["apf-load"].MeanUtilisation, 17146306523.0/20332834185)
	near("apf-load full", by["apf-load"].FullFraction, 1-3186527662.0/20332834185)
	near("workload-low mean", by["workload-low"].MeanUtilisation, 0)
	near("workload-low full", by["workload-low"].FullFraction, 0)
	if e := by["exempt"]; !math.IsNaN(e.MeanUtilisation) {
		t.Errorf("exempt mean %v, want NaN (never limited)", e.MeanUtilisation)
	}
	for _, l := range Levels(nil, mustScrape(t, "v1.20-shape.txt", t0)) {
		if !math.IsNaN(l.MeanUtilisation) || !math.IsNaN(l.FullFraction) {
			t.Errorf("%s: %v %v from a scrape without the family", l.Name, l.MeanUtilisation, l.FullFraction)
		}
	}
	// Over an interval: the difference of two scrapes' histograms.
	prev := parseBody(t, `apiserver_flowcontrol_priority_level_seat_utilization_bucket{phase="executing",priority_level="a",le="0.99"} 100
apiserver_flowcontrol_priority_level_seat_utilization_bucket{phase="executing",priority_level="a",le="+Inf"} 100
apiserver_flowcontrol_priority_level_seat_utilization_sum{phase="executing",priority_level="a"} 10
apiserver_flowcontrol_priority_level_seat_utilization_count{phase="executing",priority_level="a"} 100
apiserver_flowcontrol_nominal_limit_seats{priority_level="a"} 4
`, t0)
	curText := `apiserver_flowcontrol_priority_level_seat_utilization_bucket{phase="executing",priority_level="a",le="0.99"} 150
apiserver_flowcontrol_priority_level_seat_utilization_bucket{phase="executing",priority_level="a",le="+Inf"} 200
apiserver_flowcontrol_priority_level_seat_utilization_sum{phase="executing",priority_level="a"} 85
apiserver_flowcontrol_priority_level_seat_utilization_count{phase="executing",priority_level="a"} 200
apiserver_flowcontrol_nominal_limit_seats{priority_level="a"} 4
`
	l := Levels(prev, parseBody(t, curText, t0.Add(10*time.Second)))[0]
	near("interval mean", l.MeanUtilisation, 75.0/100)
	near("interval full", l.FullFraction, 1-50.0/100)
}

// TestLevelsOfAnyFamily: a level is named by any family that has a
// priority_level label, and a figure its family does not give is NaN, not
// 0: a grep of upper_limit_seats names three levels whose limits, seats
// and waiting requests are unknown; beside the limits of one of them, only
// that one has a limit (S3 of issue 58).
func TestLevelsOfAnyFamily(t *testing.T) {
	upper := `apiserver_flowcontrol_upper_limit_seats{priority_level="catch-all"} 613
apiserver_flowcontrol_upper_limit_seats{priority_level="exempt"} 600
apiserver_flowcontrol_upper_limit_seats{priority_level="global-default"} 649
`
	ls := Levels(nil, parseBody(t, upper, t0))
	if len(ls) != 3 || ls[0].Name != "catch-all" || ls[2].Name != "global-default" {
		t.Fatalf("levels %+v", ls)
	}
	for _, l := range ls {
		for what, v := range map[string]float64{"nominal": l.NominalLimit, "current": l.CurrentLimit, "seats": l.SeatsInUse, "waiting": l.WaitingRequests, "waiting seats": l.WaitingSeats} {
			if !math.IsNaN(v) {
				t.Errorf("%s: %s %v from upper_limit_seats alone", l.Name, what, v)
			}
		}
	}
	ls = Levels(nil, parseBody(t, upper+`apiserver_flowcontrol_nominal_limit_seats{priority_level="catch-all"} 13
`, t0))
	if ls[0].NominalLimit != 13 || ls[0].CurrentLimit != 13 || !math.IsNaN(ls[1].NominalLimit) || !math.IsNaN(ls[1].CurrentLimit) {
		t.Errorf("limits %+v", ls)
	}
}
