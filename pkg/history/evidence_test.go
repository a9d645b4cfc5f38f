package history

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// rawStore holds the samples of two instances scraped every second (one
// at whole seconds, one half a second later), as a store answers a
// range-vector query: the samples in (start, end].
type rawStore struct {
	series  []Series
	queries []string
}

func (r *rawStore) RawSamples(_ context.Context, selector string, start, end time.Time) ([]Series, error) {
	r.queries = append(r.queries, selector)
	var out []Series
	for _, s := range r.series {
		name := s.Labels["__name__"]
		if !strings.HasPrefix(selector, name+"{") && !(strings.HasPrefix(selector, "{__name__=~") && strings.Contains(selector, name)) {
			continue
		}
		if !strings.Contains(selector, `cluster="prod"`) {
			return nil, fmt.Errorf("selector %s lacks the query's matchers", selector)
		}
		c := Series{Labels: s.Labels}
		for _, p := range s.Points {
			if p.T.After(start) && !p.T.After(end) {
				c.Points = append(c.Points, p)
			}
		}
		if len(c.Points) > 0 {
			out = append(out, c)
		}
	}
	return out, nil
}

// TestEvidence reads the CPU evidence of a window from a store's raw
// samples: for each instance the scrape at or before its start and the one
// at or after its end, and the widest pair inside it, with every family of
// the evidence (the process's CPU, GOMAXPROCS, the garbage collector's
// counters, APF's dispatched requests, the scheduler's latency histogram
// and the sums and counts of APF's execution histogram by level), which
// metrics.CPUUseBetween, GCActivityBetween and ExecutionsBetween read as
// they read a bundle's scrapes; the time each scrape took; and the
// instance's scrape interval.
func TestEvidence(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &rawStore{}
	for i, inst := range []string{"10.0.0.1:6443", "10.0.0.2:6443"} {
		offset := time.Duration(i) * 500 * time.Millisecond
		add := func(name string, extra map[string]string, v func(k int) float64) {
			l := map[string]string{"__name__": name, "instance": inst, "cluster": "prod", "job": "apiserver"}
			for k, x := range extra {
				l[k] = x
			}
			s := Series{Labels: l}
			for k := 0; k <= 120; k++ {
				s.Points = append(s.Points, Point{T: t0.Add(time.Duration(k)*time.Second + offset), V: v(k)})
			}
			st.series = append(st.series, s)
		}
		add(metrics.FamilyProcessCPU, nil, func(k int) float64 { return 0.5 * float64(k) }) // half a core
		add(metrics.FamilyGOMAXPROCS, nil, func(int) float64 { return 2 })
		add(metrics.FamilyGCCycles, nil, func(k int) float64 { return float64(k / 10) })
		for _, f := range []string{metrics.FamilyGCMarkAssistCPU, metrics.FamilyGCMarkDedicated, metrics.FamilyGCMarkIdleCPU} {
			add(f, nil, func(k int) float64 { return 0.01 * float64(k) })
		}
		// the store's own series of each scrape: the k-th took k ms
		add("scrape_duration_seconds", nil, func(k int) float64 { return 0.001 * float64(k) })
		add(metrics.DispatchedRequestsTotal, map[string]string{"priority_level": "a"}, func(k int) float64 { return 10 * float64(k) })
		add(metrics.DispatchedRequestsTotal, map[string]string{"priority_level": "b"}, func(k int) float64 { return 5 * float64(k) })
		// runnable goroutines waited 2 ms each, 100 a second
		add(metrics.FamilySchedLatencies+"_bucket", map[string]string{"le": "0.001"}, func(int) float64 { return 0 })
		add(metrics.FamilySchedLatencies+"_bucket", map[string]string{"le": "0.01"}, func(k int) float64 { return 100 * float64(k) })
		add(metrics.FamilySchedLatencies+"_bucket", map[string]string{"le": "+Inf"}, func(k int) float64 { return 100 * float64(k) })
		add(metrics.FamilySchedLatencies+"_count", nil, func(k int) float64 { return 100 * float64(k) })
		add(metrics.FamilySchedLatencies+"_sum", nil, func(k int) float64 { return 0.2 * float64(k) })
		// APF's executions: level a 4 a second of 25 ms each, from two
		// flow schemas, and a watch's initialisation beside them; level
		// b's first execution ends at 40 s
		for _, fs := range []string{"fs-1", "fs-2"} {
			l := map[string]string{"priority_level": "a", "flow_schema": fs, "type": "regular"}
			add(metrics.RequestExecutionSeconds+"_count", l, func(k int) float64 { return 2 * float64(k) })
			add(metrics.RequestExecutionSeconds+"_sum", l, func(k int) float64 { return 0.05 * float64(k) })
			add(metrics.RequestExecutionSeconds+"_bucket", map[string]string{"priority_level": "a", "flow_schema": fs, "type": "regular", "le": "+Inf"}, func(k int) float64 { return 2 * float64(k) })
		}
		w := map[string]string{"priority_level": "a", "flow_schema": "fs-1", "type": "watch"}
		add(metrics.RequestExecutionSeconds+"_count", w, func(k int) float64 { return float64(k) })
		add(metrics.RequestExecutionSeconds+"_sum", w, func(k int) float64 { return float64(k) })
		b := Series{Labels: map[string]string{"__name__": metrics.RequestExecutionSeconds + "_count", "instance": inst, "cluster": "prod", "job": "apiserver", "priority_level": "b", "flow_schema": "fs-b", "type": "regular"}}
		bs := Series{Labels: map[string]string{"__name__": metrics.RequestExecutionSeconds + "_sum", "instance": inst, "cluster": "prod", "job": "apiserver", "priority_level": "b", "flow_schema": "fs-b", "type": "regular"}}
		for k := 40; k <= 120; k++ {
			b.Points = append(b.Points, Point{T: t0.Add(time.Duration(k)*time.Second + offset), V: float64(k - 39)})
			bs.Points = append(bs.Points, Point{T: t0.Add(time.Duration(k)*time.Second + offset), V: 0.01 * float64(k-39)})
		}
		st.series = append(st.series, b, bs)
	}
	q := Query{Selector: `cluster="prod"`, InstanceLabel: "instance", PerInstance: true}
	from, to := t0.Add(30*time.Second+200*time.Millisecond), t0.Add(75*time.Second+700*time.Millisecond)
	got, err := Evidence(context.Background(), st, q, from, to, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d instances, want 2", len(got))
	}
	for i, ev := range got {
		offset := time.Duration(i) * 500 * time.Millisecond
		wantFrom, wantTo := t0.Add(30*time.Second+offset), t0.Add(76*time.Second+offset)
		if i == 1 {
			wantFrom = t0.Add(29*time.Second + offset) // 30.5 s is after the start
		}
		// and the widest pair inside the window
		inFrom, inTo := wantFrom.Add(time.Second), wantTo.Add(-time.Second)
		if len(ev.Scrapes) != 4 || !ev.Scrapes[0].Time.Equal(wantFrom) || !ev.Scrapes[1].Time.Equal(inFrom) || !ev.Scrapes[2].Time.Equal(inTo) || !ev.Scrapes[3].Time.Equal(wantTo) {
			t.Fatalf("%s: scrapes %v, want at %v, %v, %v and %v", ev.Instance, ev.Scrapes, wantFrom, inFrom, inTo, wantTo)
		}
		for _, sc := range ev.Scrapes {
			k := sc.Time.Sub(t0.Add(offset)).Round(time.Second) / time.Second
			if sc.Took != time.Duration(k)*time.Millisecond || sc.Families["scrape_duration_seconds"] != nil {
				t.Errorf("%s: the scrape at %v took %v (a family of it: %v), want %dms from scrape_duration_seconds, not a family", ev.Instance, sc.Time, sc.Took, sc.Families["scrape_duration_seconds"] != nil, k)
			}
		}
		if ev.Interval != time.Second {
			t.Errorf("%s: interval %v, want 1s", ev.Instance, ev.Interval)
		}
		if in := metrics.ExecutionsBetween(ev.Scrapes[1], ev.Scrapes[2]); in["a"].Count != int64(4*inTo.Sub(inFrom).Seconds()) {
			t.Errorf("%s: executions inside the window %+v, want level a's %v", ev.Instance, in, 4*inTo.Sub(inFrom).Seconds())
		}
		u, ok := metrics.CPUUseBetween(ev.Scrapes[0], ev.Scrapes[3])
		if !ok || u.GOMAXPROCS != 2 || u.Cores() != 0.5 || !u.HasRunnableWait || u.RunnableWait != 2*time.Millisecond {
			t.Errorf("%s: CPU use %+v (ok %v), want half a core, GOMAXPROCS 2, a 2ms runnable wait", ev.Instance, u, ok)
		}
		a, ok := metrics.GCActivityBetween(ev.Scrapes[0], ev.Scrapes[3])
		span := wantTo.Sub(wantFrom).Seconds()
		if !ok || a.Dispatched != 15*span || a.GOMAXPROCS != 2 {
			t.Errorf("%s: GC activity %+v (ok %v), want %v dispatched", ev.Instance, a, ok, 15*span)
		}
		// level b had no series at the first scrape: its executions are
		// all those up to the second
		ex := metrics.ExecutionsBetween(ev.Scrapes[0], ev.Scrapes[3])
		wantA := metrics.Executions{Count: int64(4 * span), Sum: time.Duration(0.1 * span * float64(time.Second))}
		wantB := metrics.Executions{Count: int64(wantTo.Sub(t0.Add(39*time.Second + offset)).Seconds()), Sum: time.Duration(0.01 * wantTo.Sub(t0.Add(39*time.Second+offset)).Seconds() * float64(time.Second))}
		near := func(a, b time.Duration) bool { return (a - b).Abs() < time.Microsecond }
		if len(ex) != 2 || ex["a"].Count != wantA.Count || !near(ex["a"].Sum, wantA.Sum) || ex["b"].Count != wantB.Count || !near(ex["b"].Sum, wantB.Sum) {
			t.Errorf("%s: executions %+v, want a %+v (the watch left out) and b %+v", ev.Instance, ex, wantA, wantB)
		}
	}
	// one query for the scrape times, then one per scrape time (four
	// each, the instances half a second apart)
	if len(st.queries) != 9 {
		t.Errorf("%d queries, want 9: %q", len(st.queries), st.queries)
	}
}
