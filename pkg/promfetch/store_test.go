package promfetch_test

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testprom"
	"github.com/kubectl-apf/kubectl-apf/pkg/history"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
	"github.com/kubectl-apf/kubectl-apf/pkg/promfetch"
)

// TestAgainstRealPrometheus loads a fleet with known rejections into a real
// Prometheus (promtool backfill) and checks what the history queries
// answer: two apiservers, one of them older than 1.28 (the renamed
// families), rejections whose series appear mid-window, and 429s APF did
// not give. The client goes through a proxy that accepts only GETs with the
// tenant header and bearer token.
func TestAgainstRealPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Prometheus and promtool")
	}
	start := time.Now().Add(-3 * time.Hour).Truncate(time.Minute).UTC()
	iv := 15 * time.Second
	fleet := &testprom.Fleet{
		Instances: 2,
		OldNames:  func(i int) bool { return i == 1 },
		Levels:    []string{"workload-low", "global-default"},
		Start:     start, End: start.Add(2 * time.Hour), Interval: iv,
		Incidents: []testprom.Incident{
			{Level: "workload-low", FlowSchema: "fs-a", Reason: "queue-full", Instances: []int{0},
				Start: start.Add(30*time.Minute + 7*time.Second), End: start.Add(40 * time.Minute), PerSecond: 10},
			// Its series appears with 28 rejections already counted.
			{Level: "workload-low", FlowSchema: "fs-b", Reason: "time-out", Instances: []int{1},
				Start: start.Add(35*time.Minute + 1*time.Second), End: start.Add(38 * time.Minute), PerSecond: 2},
		},
		Other429: []testprom.Incident{{Instances: []int{0}, Start: start.Add(80 * time.Minute), End: start.Add(85 * time.Minute), PerSecond: 3}},
		// For two minutes of the first incident, each scrape reads the 429
		// counter 5 behind APF's rejections (responses still being
		// written): not 429s of another cause when it catches up.
		Unanswered: []testprom.Lag{{Instance: 0, From: start.Add(31*time.Minute + 15*time.Second), To: start.Add(33*time.Minute + 15*time.Second), N: 5}},
	}
	// The new instance's seat utilization sees half a seat more than its
	// gauge reads at each scrape outside an incident: requests that run
	// between two scrapes.
	fleet.SeatUtilization = func(l string, i int, t time.Time) float64 {
		if fleet.Busy(l, i, t) {
			return 1
		}
		return 0.25
	}
	dir := t.TempDir()
	ctx := context.Background()
	if _, err := fleet.CreateBlocks(ctx, dir, filepath.Join(dir, "data")); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	prom := testprom.StartT(t, testprom.Options{Dir: dir})

	// A gateway like Mimir's: a tenant header and a token, GETs only.
	var posts, gets atomic.Int64
	target, _ := url.Parse(prom.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			posts.Add(1)
			http.Error(w, "read-only", http.StatusMethodNotAllowed)
			return
		}
		if r.Header.Get("X-Scope-OrgID") != "tenant-1" || r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "no tenant", http.StatusUnauthorized)
			return
		}
		gets.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	defer gw.Close()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := promfetch.New(promfetch.Options{URL: gw.URL, BearerTokenFile: tokenFile, Headers: map[string]string{"X-Scope-OrgID": "tenant-1"}})
	if err != nil {
		t.Fatal(err)
	}
	q := history.Query{Selector: `job="apiserver"`}
	w := history.Window{Start: fleet.Start, End: fleet.End, Step: history.AutoStep(fleet.End.Sub(fleet.Start), iv)}

	// The store started with this test: a window that began before it is
	// the window of a young store, not one without APF (issue 47).
	t.Run("young store", func(t *testing.T) {
		st, err := c.StartTime(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Before(started.Add(-time.Second)) {
			t.Fatalf("start time %v is before the store was started (%v)", st, started)
		}
		young := history.Window{Start: st.Add(-30 * time.Minute), End: st.Add(time.Minute)}
		if err := history.NoSeriesError(ctx, c, c.Describe(), young); !strings.Contains(err.Error(), "has no APF series matching the selector yet: the history fills in as it scrapes") {
			t.Errorf("young store: %v", err)
		}
		later := history.Window{Start: st.Add(time.Second), End: st.Add(time.Minute)}
		if err := history.NoSeriesError(ctx, c, c.Describe(), later); !strings.Contains(err.Error(), "holds no APF series from") {
			t.Errorf("a window after the store started: %v", err)
		}
	})

	t.Run("incidents", func(t *testing.T) {
		rep, err := history.FindIncidents(ctx, c, history.IncidentOptions{Query: q, Window: w, ScrapeInterval: iv, WaitLimit: 15 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Incidents) != 1 {
			t.Fatalf("want 1 incident, got %d: %+v", len(rep.Incidents), rep.Incidents)
		}
		inc := rep.Incidents[0]
		truth := fleet.Rejected("workload-low", fleet.Start, fleet.End)
		if inc.Level != "workload-low" || math.Abs(inc.Rejected-truth) > 0.02*truth {
			t.Errorf("incident %s with %v rejections; want workload-low with %v", inc.Level, inc.Rejected, truth)
		}
		within(t, "start", inc.Start, fleet.Incidents[0].Start, 2*iv)
		within(t, "end", inc.End, fleet.Incidents[0].End, 2*iv)
		qf, to := fleet.Incidents[0], fleet.Incidents[1]
		wantQF := math.Floor(qf.PerSecond * qf.End.Sub(qf.Start).Seconds())
		wantTO := math.Floor(to.PerSecond * to.End.Sub(to.Start).Seconds())
		if got := inc.Reasons["queue-full"]; math.Abs(got-wantQF) > 0.02*wantQF {
			t.Errorf("queue-full: %v, want %v", got, wantQF)
		}
		if got := inc.Reasons["time-out"]; math.Abs(got-wantTO) > 0.05*wantTO {
			t.Errorf("time-out: %v, want %v (the series appeared with 28 counted)", got, wantTO)
		}
		if len(inc.FlowSchemas) != 2 || inc.FlowSchemas[0].FlowSchema != "fs-a" || inc.FlowSchemas[1].FlowSchema != "fs-b" {
			t.Errorf("FlowSchemas: %+v", inc.FlowSchemas)
		}
		if len(inc.Instances) != 2 || inc.Instances[0].Instance != testprom.InstanceName(0) {
			t.Errorf("instances: %+v", inc.Instances)
		}
		if got := inc.State.Peaks[history.StateSeats]; got != 20 {
			t.Errorf("seats in use peaked at %v, want 20 (10 on each instance, one of them through request_concurrency_in_use)", got)
		}
		if got := rep.Rejected["workload-low"]; math.Abs(got-truth) > 0.02*truth {
			t.Errorf("window total %v, want %v", got, truth)
		}
		if math.Abs(rep.Other429-900) > 18 || len(rep.Other429Bursts) != 1 {
			t.Errorf("other 429s: %v in %d bursts, want 900 in one: %+v", rep.Other429, len(rep.Other429Bursts), rep.Other429Bursts)
		} else {
			within(t, "non-APF burst start", rep.Other429Bursts[0].Start, fleet.Other429[0].Start, 2*w.Step)
			within(t, "non-APF burst end", rep.Other429Bursts[0].End, fleet.Other429[0].End, 2*w.Step)
			if c := rep.Other429Bursts[0].Count; math.Abs(c-900) > 18 {
				t.Errorf("the non-APF burst counts %v, want 900 (the series' steps sum to what the counters grew)", c)
			}
		}
	})

	t.Run("table at a moment", func(t *testing.T) {
		// Both incidents span the two minutes of the rates.
		at := start.Add(37*time.Minute + 30*time.Second)
		for _, per := range []bool{false, true} {
			qq := q
			qq.PerInstance = per
			got, err := history.Scrapes(ctx, c, qq, at, at, w.Step, 2*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			want := 1
			if per {
				want = 2
			}
			if len(got) != want {
				t.Fatalf("PerInstance %v: %d instances, want %d", per, len(got), want)
			}
			for _, is := range got {
				ls := metrics.Levels(is.Pairs[0][0], is.Pairs[0][1])
				var wl *metrics.LevelStats
				for i := range ls {
					if ls[i].Name == "workload-low" {
						wl = &ls[i]
					}
				}
				if wl == nil {
					t.Fatalf("%s: no workload-low in %+v", is.Instance, ls)
				}
				nominal := 10.0 * float64(3-want) // 20 summed, 10 each
				if wl.NominalLimit != nominal || wl.SeatsInUse != nominal {
					t.Errorf("%s: nominal %v, seats %v; want %v (old and new names)", is.Instance, wl.NominalLimit, wl.SeatsInUse, nominal)
				}
				wantRate := map[string]float64{"queue-full": 10, "time-out": 2}
				for r, v := range wantRate {
					if is.Instance == testprom.InstanceName(0) && r == "time-out" || is.Instance == testprom.InstanceName(1) && r == "queue-full" {
						v = 0
					}
					if math.Abs(wl.RejectedPerSec[r]-v) > 0.1*v+0.01 {
						t.Errorf("%s: %s %v/s, want %v/s", is.Instance, r, wl.RejectedPerSec[r], v)
					}
				}
				if !(wl.WaitP99 > 1 && wl.WaitP99 <= 2) {
					t.Errorf("%s: wait p99 %v, want between 1 and 2 s during the incident", is.Instance, wl.WaitP99)
				}
				// the seat utilization over the rate window: the new
				// instance's, full in its incident; the old one exports none
				wantUtil := 1.0
				if is.Instance == testprom.InstanceName(1) {
					wantUtil = math.NaN()
				}
				if got := wl.MeanUtilisation; math.IsNaN(wantUtil) != math.IsNaN(got) || !math.IsNaN(got) && math.Abs(got-wantUtil) > 0.01 {
					t.Errorf("%s: mean utilisation %v, want %v", is.Instance, got, wantUtil)
				}
				// full all the rate window: the time below 99% is none
				if got := wl.FullFraction; math.IsNaN(wantUtil) != math.IsNaN(got) || !math.IsNaN(got) && math.Abs(got-1) > 0.01 {
					t.Errorf("%s: full %v of the time, want all of it", is.Instance, got)
				}
			}
		}
	})

	t.Run("levels over the window", func(t *testing.T) {
		rows, err := history.LevelsOverWindow(ctx, c, q, w)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 || rows[0].Name != "workload-low" || rows[1].RejectedTotal != 0 {
			t.Fatalf("rows: %+v", rows)
		}
		truth := fleet.Rejected("workload-low", fleet.Start, fleet.End)
		if math.Abs(rows[0].RejectedTotal-truth) > 0.02*truth || rows[0].SeatsInUseMax != 20 {
			t.Errorf("workload-low: %+v; want %v rejections and 20 seats at most", rows[0], truth)
		}
		// the mean seats: the new instance's from its seat utilization,
		// the old one's from its gauge (it exports no utilization)
		for _, r := range rows {
			want := fleet.MeanSeats(r.Name, w.Start, w.End)
			if got := float64(r.SeatsInUseAvg); math.Abs(got-want) > 0.02*want {
				t.Errorf("%s: mean seats %v, want %v", r.Name, got, want)
			}
		}
	})
	if posts.Load() != 0 || gets.Load() == 0 || c.Stats.Queries.Load() != gets.Load() || c.Stats.Bytes.Load() == 0 {
		t.Errorf("requests: %d POST, %d GET; the client counted %d queries, %d bytes", posts.Load(), gets.Load(), c.Stats.Queries.Load(), c.Stats.Bytes.Load())
	}
}

func within(t *testing.T, what string, got, want time.Time, d time.Duration) {
	t.Helper()
	if diff := got.Sub(want); diff < -d || diff > d {
		t.Errorf("%s %s, want %s (±%s)", what, got.Format(time.RFC3339), want.Format(time.RFC3339), d)
	}
}
