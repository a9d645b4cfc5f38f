package recording

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// httplogLine is a kube-apiserver httplog line of the quiet recording
// (testdata/simulate/recordings/quiet/apiserver.log.gz), completed at end
// (seconds after 21:17:58) after latency, executed for exec, in level.
func httplogLine(end float64, verb, level string, latency, exec time.Duration, status int) string {
	ts := time.Date(2026, 11, 23, 21, 17, 58, 0, time.UTC).Add(time.Duration(end * float64(time.Second)))
	return fmt.Sprintf(`I1123 %s   14870 httplog.go:135] "HTTP" verb=%q URI="/api/v1/namespaces/apf-load/configmaps" latency="%s" userAgent="Go-http-client/2.0" contentType="" audit-ID="4a04f089-1f26-4555-b1c8-5e828f14b5e8" srcIP="127.0.0.1:38542" apf_pl=%q apf_fs=%q apf_iseats=1 apf_fseats=0 apf_additionalLatency="0s" apf_execution_time="%s" resp=%d`,
		ts.Format("15:04:05.000000"), verb, latency, level, level, exec, status) + "\n"
}

func TestExecutions(t *testing.T) {
	ms := time.Millisecond
	first := httplogLine(1.000, "LIST", "apf-load", 12*ms, 10*ms, 200) // 0.990–1.000, alone
	lines := []string{
		first,
		// 2.000–2.010 and 2.004–2.014 overlap: neither is alone
		httplogLine(2.010, "LIST", "apf-load", 10*ms, 10*ms, 200),
		httplogLine(2.014, "LIST", "apf-load", 30*ms, 10*ms, 200),
		// alone: the exempt request beside it, the 429 and the watch
		// over it do not count
		httplogLine(3.020, "LIST", "apf-load", 40*ms, 20*ms, 200),
		httplogLine(3.010, "GET", "exempt", 20*ms, 20*ms, 200),
		httplogLine(3.012, "LIST", "apf-load", 1*ms, 0, 429),
		httplogLine(3.500, "WATCH", "apf-load", 2*time.Second, 2*time.Second, 200),
		// alone, another level
		httplogLine(4.000, "LIST", "apf-other", 5*ms, 5*ms, 200),
		// alone: it starts where the one before ended
		httplogLine(5.000, "LIST", "apf-load", 30*ms, 30*ms, 200),
		httplogLine(5.030, "LIST", "apf-other", 30*ms, 30*ms, 200),
	}
	log := filepath.Join(t.TempDir(), "apiserver.log")
	if err := os.WriteFile(log, []byte("I1123 21:17:50.000000   14870 other.go:1] \"not a request\"\n"+strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	var r Run
	if err := r.ReadExecutions(log, 0); err != nil {
		t.Fatal(err)
	}
	got, served := r.Alone, r.Served
	want := map[string]Alone{"apf-load": {Median: 20 * ms, N: 3}, "apf-other": {Median: 30 * ms, N: 2}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// from the offset of the second request's line on
	from := int64(len("I1123 21:17:50.000000   14870 other.go:1] \"not a request\"\n") + len(first))
	var second Run
	if err := second.ReadExecutions(log, from); err != nil {
		t.Fatal(err)
	}
	if a := second.Alone["apf-load"]; a.N != 2 || a.Median != 30*ms {
		t.Errorf("from the second line: got %v, want 2 executions alone with a median of 30ms", a)
	}
	if err := new(Run).ReadExecutions(filepath.Join(t.TempDir(), "missing.log"), 0); err == nil {
		t.Error("a missing log gave no error")
	}
	// every execution served, counted by hand from the lines above:
	// apf-load's five from 0.990 to 5.000 (10 + 10 + 10 + 20 + 30 ms),
	// apf-other's two from 3.995 to 5.030 (5 + 30 ms)
	wantServed := map[string]Served{
		"apf-load":  {N: 5, Span: 4010 * ms, Busy: 80 * ms},
		"apf-other": {N: 2, Span: 1035 * ms, Busy: 35 * ms},
	}
	if fmt.Sprint(served) != fmt.Sprint(wantServed) {
		t.Errorf("Executions: served %v, want %v", served, wantServed)
	}
	// by kind and number at once, by hand: the two of 2.000–2.014 each
	// overlap the other for 6 of its 10 ms (1.6 at once, rounded to 2);
	// the other five (10, 20, 5, 30 and 30 ms, both levels: the level is
	// not in the kind) ran one at once, the exempt GET beside 3.000–3.020
	// not counted
	const kind = "LIST /api/v1/namespaces/apf-load/configmaps"
	wantAtOnce := map[string]Alone{kind + " @1": {Median: 20 * ms, N: 5}, kind + " @2": {Median: 10 * ms, N: 2}}
	if fmt.Sprint(r.AtOnce) != fmt.Sprint(wantAtOnce) {
		t.Errorf("Executions: at once %v, want %v", r.AtOnce, wantAtOnce)
	}
}

func TestKindOf(t *testing.T) {
	for _, c := range []struct{ verb, uri, want string }{
		{"LIST", "/api/v1/namespaces/apf-load/configmaps?limit=60", "LIST /api/v1/namespaces/apf-load/configmaps?limit=60"},
		// a page of a LIST is the LIST's kind, whatever its token
		{"LIST", "/api/v1/namespaces/x/configmaps?continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTJ9&limit=50", "LIST /api/v1/namespaces/x/configmaps?continue=%2A&limit=50"},
		{"LIST", "/api/v1/namespaces/x/configmaps?limit=50&continue=other", "LIST /api/v1/namespaces/x/configmaps?continue=%2A&limit=50"},
		{"GET", "/api/v1/namespaces/x/configmaps/a", "GET /api/v1/namespaces/x/configmaps/a"},
		{"GET", "%zz", "GET %zz"},
	} {
		if got := kindOf(c.verb, c.uri); got != c.want {
			t.Errorf("kindOf(%q, %q) = %q, want %q", c.verb, c.uri, got, c.want)
		}
	}
}

// TestSpeedAtOnce: the executions at each number at once stand for the
// executions alone where a change runs more at once, and a server held to
// a quota gets no speed from them (RerunSpeed).
func TestSpeedAtOnce(t *testing.T) {
	ms := time.Millisecond
	const list = "LIST /api/v1/namespaces/apf-load/configmaps?limit=60"
	// the recording ran one seat of tiny beside wide: mostly 3 and 4 at once
	rec := Run{AtOnce: map[string]Alone{list + " @1": {Median: 12 * ms, N: 400}, list + " @3": {Median: 22 * ms, N: 540}, list + " @4": {Median: 30 * ms, N: 180}}}
	// its re-run with 3 seats, on a machine 20% faster: 3 at once take
	// 22/1.2 ms; 6 at once, which the recording never ran, do not count
	rerun := Run{AtOnce: map[string]Alone{list + " @1": {Median: 10 * ms, N: 20}, list + " @3": {Median: 22 * ms * 10 / 12, N: 900}, list + " @6": {Median: 45 * ms, N: 500}}}
	if got, ok := SpeedAtOnce(rec, []Run{rerun}); !ok || math.Abs(got-1.2) > 1e-6 {
		t.Errorf("SpeedAtOnce = %g, %v; want 1.2, true", got, ok)
	}
	// a bucket both hold with enough: weighted by the fewer count
	rerun.AtOnce[list+" @4"] = Alone{Median: 30 * ms, N: 60}
	want := math.Exp((540*math.Log(1.2) + 60*math.Log(1)) / 600)
	if got, _ := SpeedAtOnce(rec, []Run{rerun}); math.Abs(got-want) > 1e-6 {
		t.Errorf("SpeedAtOnce with a bucket at the same speed = %g, want %g", got, want)
	}
	if _, ok := SpeedAtOnce(rec, []Run{{Alone: rec.AtOnce}}); ok {
		t.Error("SpeedAtOnce of a run without AtOnce (a recording before it) gave a speed")
	}

	crowded, ok := ByName("crowded-30")
	if !ok || crowded.CPU.APIServer != 0 || KeepsConcurrency(crowded, crowded.WhatIf) {
		t.Fatalf("the test needs crowded-30 without a quota, its first what-if adding seats: %+v", crowded.CPU)
	}
	seats := WhatIf{Change: crowded.WhatIf}
	rerun.AtOnce[list+" @4"] = Alone{Median: 25 * ms, N: 60}
	if sp, how, ok := RerunSpeed(crowded, seats, rec, []Run{rerun}); !ok || math.Abs(sp-1.2) > 1e-6 || !strings.Contains(how, "SpeedAtOnce") {
		t.Errorf("RerunSpeed of more seats on a server without a quota = %g, %q, %v; want 1.2 at once", sp, how, ok)
	}
	quota := crowded
	quota.CPU.APIServer = 1
	if _, _, ok := RerunSpeed(quota, seats, rec, []Run{rerun}); ok {
		t.Error("RerunSpeed of more seats on a server held to a quota gave a speed")
	}
	// a change that keeps the concurrency is read from the executions
	// alone, where the runs have them, on either server
	queues := crowded.MoreWhatIfs[len(crowded.MoreWhatIfs)-1]
	if !KeepsConcurrency(crowded, queues.Change) {
		t.Fatalf("the test needs crowded-30's last what-if to keep the concurrency: %s", queues.Change.About)
	}
	rec.Alone = map[string]Alone{"tiny": {Median: 10 * ms, N: 400}}
	rerun.Alone = map[string]Alone{"tiny": {Median: 8 * ms, N: 400}}
	for _, sc := range []Scenario{crowded, quota} {
		if sp, how, ok := RerunSpeed(sc, queues, rec, []Run{rerun}); !ok || math.Abs(sp-1.25) > 1e-9 || !strings.Contains(how, "alone") {
			t.Errorf("RerunSpeed of longer queues (quota %v) = %g, %q, %v; want 1.25 from the executions alone", sc.CPU.APIServer, sp, how, ok)
		}
	}
	// without executions alone, the executions at once where there is
	// no quota
	rerun.Alone = nil
	if sp, _, ok := RerunSpeed(crowded, queues, rec, []Run{rerun}); !ok || math.Abs(sp-1.2) > 1e-6 {
		t.Errorf("RerunSpeed of longer queues without executions alone = %g, %v; want 1.2 at once", sp, ok)
	}
	if _, _, ok := RerunSpeed(quota, queues, rec, []Run{rerun}); ok {
		t.Error("RerunSpeed of longer queues under a quota without executions alone gave a speed")
	}
}

func TestServedString(t *testing.T) {
	for _, c := range []struct {
		s    Served
		want string
	}{
		{Served{N: 180, Span: time.Second, Busy: 2760 * time.Millisecond}, "180/s, 2.76 at once, 15.3ms each"},
		{Served{N: 3615, Span: 20100 * time.Millisecond, Busy: 55500 * time.Millisecond}, "180/s, 2.76 at once, 15.4ms each"},
		{Served{}, "-"},
		{Served{N: 1, Busy: time.Millisecond}, "-"},
	} {
		if got := c.s.String(); got != c.want {
			t.Errorf("%#v: got %q, want %q", c.s, got, c.want)
		}
	}
}

// TestSameSpeed holds quiet's executions alone in a recording made while
// the machine was slow (13.28 ms, full run Q) to a re-run of it made
// minutes later (9.40 ms): the machine ran 29% faster.
func TestSameSpeed(t *testing.T) {
	ms := time.Millisecond
	rec := Run{Alone: map[string]Alone{"apf-load": {Median: 13280 * time.Microsecond, N: 1110}, "apf-load-reject": {Median: 12 * ms, N: 18}}}
	for _, c := range []struct {
		name string
		run  map[string]Alone
		same bool
	}{
		{"faster", map[string]Alone{"apf-load": {Median: 9400 * time.Microsecond, N: 34}}, false},
		{"slower", map[string]Alone{"apf-load": {Median: 17 * ms, N: 900}}, false},
		{"within the band", map[string]Alone{"apf-load": {Median: 11 * ms, N: 40}}, true},
		{"too few alone to tell", map[string]Alone{"apf-load": {Median: 9 * ms, N: MinAlone - 1}}, true},
		// apf-load-reject's 18 in the recorded run are too few
		{"a level with too few in the recorded run", map[string]Alone{"apf-load": {Median: 13 * ms, N: 40}, "apf-load-reject": {Median: 30 * ms, N: 40}}, true},
		{"nothing alone", nil, true},
	} {
		err := SameSpeed(rec, Run{Alone: c.run})
		if (err == nil) != c.same {
			t.Errorf("%s: SameSpeed says %v, want the same speed %v", c.name, err, c.same)
		}
	}
	// a control that met the recorded run's 429s and CPU but not its speed
	// did not meet its server
	rec.Rejected429, rec.APIServerCPU = map[string]int{"apf-load": 92}, 0.44
	ctl := Run{Rejected429: map[string]int{"apf-load": 90}, APIServerCPU: 0.43, Alone: map[string]Alone{"apf-load": {Median: 9400 * time.Microsecond, N: 1000}}}
	if err := SameServer(rec, ctl); err == nil || !strings.Contains(err.Error(), "executing alone") {
		t.Errorf("SameServer with another speed: got %v, want the speed's difference", err)
	}
	ctl.Alone["apf-load"] = Alone{Median: 13 * ms, N: 1000}
	if err := SameServer(rec, ctl); err != nil {
		t.Errorf("SameServer with the same speed: %v", err)
	}
}

// TestSpeedComparable: a re-run is held to the recorded run's speed on a
// server of a core or more, or none; under less than one core, only where
// the change leaves every level's concurrency as recorded: starved's
// longer queues, not its 3 seats.
func TestSpeedComparable(t *testing.T) {
	byName := map[string]Scenario{}
	for _, sc := range Scenarios() {
		byName[sc.Name] = sc
	}
	starved, quiet := byName["starved"], byName["quiet"]
	if starved.CPU.APIServer >= 1 || len(starved.MoreWhatIfs) == 0 {
		t.Fatalf("the test needs starved under a core, with more than one what-if: %+v", starved.CPU)
	}
	queues, seats := WhatIf{Change: starved.WhatIf}, starved.MoreWhatIfs[0]
	if !SpeedComparable(starved, queues) {
		t.Errorf("starved's %q leaves its seats: comparable", queues.Change.About)
	}
	if SpeedComparable(starved, seats) {
		t.Errorf("starved's %q adds seats under 0.2 CPU: not comparable", seats.Change.About)
	}
	for _, w := range append([]WhatIf{{Change: quiet.WhatIf}}, quiet.MoreWhatIfs...) {
		if !SpeedComparable(quiet, w) {
			t.Errorf("quiet's %q on a 1-CPU server: comparable", w.Change.About)
		}
	}
	// quiet's level is the load's own (loadgen.SetupObjects): its
	// queues 1 long keep it, its 3 seats do not
	if !KeepsConcurrency(quiet, quiet.WhatIf) {
		t.Errorf("quiet's %q keeps the concurrency of the load's own level", quiet.WhatIf.About)
	}
	if KeepsConcurrency(quiet, quiet.MoreWhatIfs[0].Change) {
		t.Errorf("quiet's %q adds seats", quiet.MoreWhatIfs[0].Change.About)
	}
	// a FlowSchema, or a level the scenario does not configure, may
	// change what runs at once
	if KeepsConcurrency(starved, Change{Levels: starved.WhatIf.Levels, Schemas: []*flowcontrolv1.FlowSchema{{}}}) {
		t.Error("a change with a FlowSchema keeps the concurrency")
	}
	if KeepsConcurrency(starved, Change{Levels: []*flowcontrolv1.PriorityLevelConfiguration{queuingLevel("another", 1, 0, 0, 4, 2, 2)}}) {
		t.Error("a change of a level the scenario does not set keeps the concurrency")
	}
}

// TestSpeed: the speed of re-runs against the recorded run is the
// recorded median over theirs, levels weighted by the fewer executions
// alone, runs by their geometric mean; a level with too few alone in
// either is left out.
func TestSpeed(t *testing.T) {
	ms := time.Millisecond
	rec := Run{Alone: map[string]Alone{"tiny": {Median: 10 * ms, N: 300}, "wide": {Median: 20 * ms, N: 100}, "few": {Median: 5 * ms, N: MinAlone - 1}}}
	run := func(tiny, wide time.Duration, n int) Run {
		return Run{Alone: map[string]Alone{"tiny": {Median: tiny, N: n}, "wide": {Median: wide, N: n}, "few": {Median: 50 * ms, N: 500}}}
	}
	for _, c := range []struct {
		name string
		runs []Run
		want float64
		ok   bool
	}{
		{"the same speed", []Run{run(10*ms, 20*ms, 400)}, 1, true},
		{"twice as fast", []Run{run(5*ms, 10*ms, 400)}, 2, true},
		// tiny weighs 300, wide 100: exp((300 ln 1.25 + 100 ln 1) / 400)
		{"levels by the executions alone", []Run{run(8*ms, 20*ms, 400)}, math.Exp(0.75 * math.Log(1.25)), true},
		// tiny weighs 40, wide 40
		{"the fewer count", []Run{run(8*ms, 20*ms, 40)}, math.Sqrt(1.25), true},
		{"runs by their geometric mean", []Run{run(5*ms, 10*ms, 400), run(20*ms, 40*ms, 400)}, 1, true},
		{"too few alone", []Run{run(5*ms, 10*ms, MinAlone-1)}, 1, false},
		{"nothing alone", []Run{{}}, 1, false},
	} {
		got, ok := Speed(rec, c.runs)
		if ok != c.ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: Speed = %g, %v; want %g, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
