package calibrate

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

const ms = time.Millisecond

// TestThrottledServerRunsOnlyAtPeriodStartsWhileMarking follows one replay's
// server under a model of 100 ms periods starting at 0, 10 ms of running
// per period while a collection marks for 300 ms, and a collection every
// 4 dispatches. The first phase of CPUPhases starts the first collection
// at the first dispatch.
func TestThrottledServerRunsOnlyAtPeriodStartsWhileMarking(t *testing.T) {
	m := &CPUModel{Period: Duration(100 * ms), RunPerPeriod: Duration(10 * ms), ExecutionsPerCollection: 4, Mark: Duration(300 * ms)}
	cpu := m.Server(0)
	steps := []struct {
		name         string
		start, hold  time.Duration
		end          time.Duration
		newCollected bool
	}{
		{"fits in the period's running time", 5 * ms, 2 * ms, 7 * ms, true},
		{"throttled at 10 ms, the rest after the boundary", 8 * ms, 5 * ms, 103 * ms, false},
		{"dispatched while throttled: waits for the boundary", 50 * ms, 1 * ms, 101 * ms, false},
		{"spans two throttled periods", 205 * ms, 12 * ms, 307 * ms, false},
		// the 5th dispatch starts the second collection at 400 ms
		{"the second collection", 400 * ms, 15 * ms, 505 * ms, true},
		{"after both marks ended", 800 * ms, 15 * ms, 815 * ms, false},
	}
	for _, s := range steps {
		if got := cpu.End(s.start, s.hold, s.hold); got != s.end {
			t.Errorf("%s: dispatched at %v for %v ends at %v, want %v", s.name, s.start, s.hold, got, s.end)
		}
	}
	// a mark that starts later does not touch an execution before it
	cpu = m.Server(params.CPUPhases - 1) // first collection after 3.75 dispatches
	for i, want := range []time.Duration{2 * ms, 12 * ms, 22 * ms, 100*ms + 2*ms} {
		start := time.Duration(i) * 10 * ms
		if i == 3 {
			start = 35 * ms // the 4th dispatch starts a mark, throttled from 10 ms
		}
		if got := cpu.End(start, 2*ms, 2*ms); got != want {
			t.Errorf("dispatch %d at %v ends at %v, want %v", i+1, start, got, want)
		}
	}
}

// TestServerAtSpeed: on a server twice as fast, the 300 ms mark of
// TestThrottledServerRunsOnlyAtPeriodStartsWhileMarking lasts 150 ms, so a
// dispatch at 205 ms runs unthrottled; a mark never gets shorter than a
// period; speed 1 is the recorded server.
func TestServerAtSpeed(t *testing.T) {
	m := &CPUModel{Period: Duration(100 * ms), RunPerPeriod: Duration(10 * ms), ExecutionsPerCollection: 4, Mark: Duration(300 * ms)}
	for _, c := range []struct {
		speed float64
		end   time.Duration // of 12 ms from 205 ms, after a mark from 5 ms
	}{{1, 307 * ms}, {0, 307 * ms}, {2, 217 * ms}, {0.5, 307 * ms}, {100, 217 * ms}} {
		cpu := (&Result{Report: Report{CPU: m}}).ServerAt(0, c.speed)
		cpu.End(5*ms, 2*ms, 2*ms) // the first collection starts
		if got := cpu.End(205*ms, 12*ms, 12*ms); got != c.end {
			t.Errorf("speed %g: 12 ms dispatched at 205 ms ends at %v, want %v", c.speed, got, c.end)
		}
	}
	// at speed 100 the mark lasts one period, not 3 ms: 30 ms dispatched
	// at 5 ms, as the mark starts, runs 5 ms in the first period and 10
	// in the second (a period the mark was in stays throttled), and the
	// last 15 from 200 ms; with the recorded 300 ms mark, 10 ms in the third
	// and the last 5 ms from 300 ms
	for _, c := range []struct {
		speed float64
		end   time.Duration
	}{{100, 215 * ms}, {1, 305 * ms}} {
		if got := (&Result{Report: Report{CPU: m}}).ServerAt(0, c.speed).End(5*ms, 30*ms, 30*ms); got != c.end {
			t.Errorf("speed %g: 30 ms dispatched at 5 ms ends at %v, want %v", c.speed, got, c.end)
		}
	}
	if m.Mark != Duration(300*ms) {
		t.Errorf("ServerAt changed the model's mark to %v", m.Mark)
	}
	// the rest of the server's work outside the marks is CPU work too
	withBackground := *m
	withBackground.Background = 0.1
	if th, ok := (&Result{Report: Report{CPU: &withBackground}}).ServerAt(0, 2).(*throttled); !ok || th.m.Background != 0.05 {
		t.Errorf("at speed 2, a background of 0.1 cores: got %+v, want 0.05 cores", th)
	}
}

// TestThrottledServerSpendsTheQuotaOutsideMarks follows one replay's
// server held to 0.2 CPU (a quota of 20 ms per 100 ms period) on which no
// collection marks: executions spend the period's quota as they run, and
// whatever runs when it is spent waits for the next boundary; an
// execution spends its work (not the overhead of a dispatch from a
// queue), times CPUPerWork; one recorded longer than the quota lets a
// goroutine run is charged what the quota gave it.
func TestThrottledServerSpendsTheQuotaOutsideMarks(t *testing.T) {
	m := &CPUModel{Period: Duration(100 * ms), RunPerPeriod: Duration(10 * ms), GOMAXPROCS: 2, Quota: Duration(20 * ms), ExecutionsPerCollection: 1e9, Mark: Duration(300 * ms)}
	cpu := m.Server(params.CPUPhases - 1)
	for _, s := range []struct {
		name                   string
		start, hold, work, end time.Duration
	}{
		{"within the quota", 0, 15 * ms, 15 * ms, 15 * ms},
		{"spends the last 5 ms, the rest after the boundary", 15 * ms, 10 * ms, 10 * ms, 105 * ms},
		// (it runs beside the one before, each on a P of its own)
		{"dispatched once the quota is spent: waits for the boundary", 50 * ms, 2 * ms, 2 * ms, 102 * ms},
		// period 1 has 7 ms spent: the overhead of 10 ms holds the seat
		// without spending the quota
		{"half of it overhead", 110 * ms, 20 * ms, 10 * ms, 130 * ms},
		{"spends the 3 ms left in 6, the rest in the next period", 130 * ms, 30 * ms, 15 * ms, 224 * ms},
		{"two at once share a period's quota", 400 * ms, 15 * ms, 15 * ms, 415 * ms},
		{"the second gets the 5 ms left", 405 * ms, 10 * ms, 10 * ms, 505 * ms},
	} {
		if got := cpu.End(s.start, s.hold, s.work); got != s.end {
			t.Errorf("%s: %v (%v of work) dispatched at %v ends at %v, want %v", s.name, s.hold, s.work, s.start, got, s.end)
		}
	}

	// the executions spend half their work, and the rest of the server
	// 0.1 cores: 10 ms from 0 spends 6 ms of the quota, 40 ms from 10 ms
	// the 14 ms left in 23.3 ms, and the rest after the boundary
	m2 := *m
	m2.CPUPerWork, m2.Background = 0.5, 0.1
	cpu = m2.Server(params.CPUPhases - 1)
	if got, want := cpu.End(0, 10*ms, 10*ms), 10*ms; got != want {
		t.Errorf("at half a core per work, 10 ms from 0 ends at %v, want %v", got, want)
	}
	if got := cpu.End(10*ms, 40*ms, 40*ms); got < 116*ms || got > 117*ms {
		t.Errorf("at half a core per work, 40 ms from 10 ms ends at %v, want about 116.7 ms (23.3 ms of it before the quota is spent)", got)
	}

	// 990 ms of work recorded in one execution ran under the quota
	// itself: charged at most 20 ms + 0.2 of its time, it runs about 91 ms
	// of each period (it ends in the 11th, at about 2.08 s), not 20 ms of
	// each (in the 50th)
	cpu = m.Server(params.CPUPhases - 1)
	if got := cpu.End(1000*ms, 990*ms, 990*ms); got < 2000*ms || got > 2100*ms {
		t.Errorf("990 ms dispatched at 1 s ends at %v, want about 2.08 s", got)
	}

	// a model without a quota (one made before it was known) leaves the
	// executions outside marks alone
	m3 := *m
	m3.Quota = 0
	if got := m3.Server(params.CPUPhases-1).End(0, 50*ms, 50*ms); got != 50*ms {
		t.Errorf("without a quota, 50 ms from 0 ends at %v, want 50ms", got)
	}
}

// TestCPUSpentFromTheProcessCPU: a process that used 6 s of CPU over the
// metrics' minute, whose 8 collections marked for 300 ms each at its
// 0.2-CPU quota (0.48 s), spent 0.092 cores outside the marks; over the
// 50 s the workload ran that is 4.6 s: 4 s of work spent all of it (a
// goroutine runs on one core at a time), and the rest of the server
// 0.6 s (0.012 cores); 6 s of work spent 0.77 of it. A workload longer
// than the metrics' span counts the span's time only; without the
// process's CPU there is no figure.
func TestCPUSpentFromTheProcessCPU(t *testing.T) {
	m := &CPUModel{Period: Duration(100 * ms), Quota: Duration(20 * ms), Collections: 8, Mark: Duration(300 * ms), MetricsSpan: Duration(time.Minute)}
	u := &metrics.CPUUse{Span: time.Minute, ProcessCPU: 6 * time.Second, GOMAXPROCS: 2}
	for _, c := range []struct {
		u                 *metrics.CPUUse
		work, span        time.Duration
		requests          int
		cost              time.Duration
		perWork, backgrnd float64
		requestCost       time.Duration
	}{
		{u, 4 * time.Second, 50 * time.Second, 0, 0, 1, 0.012, 0},
		{u, 6 * time.Second, 50 * time.Second, 0, 0, 4.6 / 6, 0, 0},
		{u, 4 * time.Second, 2 * time.Minute, 0, 0, 1, (0.092*60 - 4) / 60, 0},
		{nil, 4 * time.Second, 50 * time.Second, 0, 0, 0, 0, 0},
		{u, 0, 50 * time.Second, 0, 0, 0, 0, 0},
		// 1,000 requests at 200 µs before APF: 0.2 s of the rest's 0.6 s
		// spent at their arrivals, 0.4 s (0.008 cores) at an even pace
		{u, 4 * time.Second, 50 * time.Second, 1000, 200 * time.Microsecond, 1, 0.008, 200 * time.Microsecond},
		// at 1 ms each they would cost more than the rest: the rest is
		// theirs, 0.6 ms each
		{u, 4 * time.Second, 50 * time.Second, 1000, time.Millisecond, 1, 0, 600 * time.Microsecond},
		// no rest: nothing to spend at the arrivals
		{u, 6 * time.Second, 50 * time.Second, 1000, 200 * time.Microsecond, 4.6 / 6, 0, 0},
	} {
		m.setCPUSpent(c.u, c.work, c.span, c.requests, c.cost)
		if math.Abs(m.CPUPerWork-c.perWork) > 1e-9 || math.Abs(m.Background-c.backgrnd) > 1e-9 || (time.Duration(m.RequestCost)-c.requestCost).Abs() > time.Microsecond {
			t.Errorf("work %v over %v, %d requests at %v: CPU per work %g, background %g cores and %v a request, want %g, %g and %v", c.work, c.span, c.requests, c.cost, m.CPUPerWork, m.Background, time.Duration(m.RequestCost), c.perWork, c.backgrnd, c.requestCost)
		}
		if time.Duration(m.RejectedLatency) != c.cost {
			t.Errorf("work %v over %v, %d requests at %v: the 429s' latency kept as %v (the most fitCost raises the cost to)", c.work, c.span, c.requests, c.cost, time.Duration(m.RejectedLatency))
		}
	}
}

// TestArrivalsSpendTheQuota: a request's cost before APF is spent from
// the quota of the period it arrives in, and from the next one's where
// that is spent; an execution after a burst of arrivals then runs on what
// they left of the period.
func TestArrivalsSpendTheQuota(t *testing.T) {
	m := &CPUModel{Period: Duration(100 * ms), Quota: Duration(20 * ms), RunPerPeriod: Duration(10 * ms), ExecutionsPerCollection: 1e9, Mark: Duration(100 * ms), CPUPerWork: 1, RequestCost: Duration(ms)}
	srv := m.Server(0).(*throttled)
	for range 15 {
		srv.Arrive(10 * ms)
	}
	if srv.spent[0] != 15*ms {
		t.Fatalf("15 arrivals at 1 ms spent %v of the period's quota, want 15ms", srv.spent[0])
	}
	// 5 ms of quota left: an execution of 8 ms of work runs 5 ms, waits
	// for the next period (at 100 ms) and runs its last 3 ms there
	if end := srv.End(20*ms, 8*ms, 8*ms); end != 103*ms {
		t.Errorf("an execution of 8 ms after the arrivals ends at %v, want 103ms", end)
	}
	// 20 more arrivals in the second period spend its 17 ms left and 3 ms
	// of the third's
	for range 20 {
		srv.Arrive(150 * ms)
	}
	if srv.spent[1] != 20*ms || srv.spent[2] != 3*ms {
		t.Errorf("the second and third periods spent %v and %v, want 20ms and 3ms", srv.spent[1], srv.spent[2])
	}
	// without a cost, nothing is spent
	idle := (&CPUModel{Period: Duration(100 * ms), Quota: Duration(20 * ms), ExecutionsPerCollection: 1e9}).Server(0).(*throttled)
	idle.Arrive(10 * ms)
	if len(idle.spent) != 0 {
		t.Errorf("an arrival without a cost spent %v", idle.spent)
	}
}

// TestReplayedRunSpendsTheProcessCPU: the CPU model of a synthetic
// recording, once DeriveShared has read its workload, spends what the
// process's CPU says the server spent outside the marks over the time the
// workload ran: its executions' work (as the replay takes it, stalls
// given the median) at CPUPerWork, and the rest at Background.
func TestReplayedRunSpendsTheProcessCPU(t *testing.T) {
	reqs := stallRecording(1000, 40, 90*ms, endsAtBoundary)
	for _, processCPU := range []time.Duration{6 * time.Second, 3 * time.Second} {
		u := &metrics.CPUUse{Span: time.Minute, ProcessCPU: processCPU, GOMAXPROCS: 2}
		res, err := Derive(&sliceReader{reqs: reqs}, Options{Config: config(t, 1), ServerConcurrencyLimit: 6, Evidence: Evidence{Runtime: runtime8, CPUUse: u}})
		if err != nil {
			t.Fatal(err)
		}
		if err := res.DeriveShared(&sliceReader{reqs: reqs}); err != nil {
			t.Fatal(err)
		}
		m := res.CPU
		if m == nil {
			t.Fatalf("no CPU model: %s", res.CPUWhy)
		}
		var work time.Duration
		src := res.Apply(&sliceReader{reqs: reqs})
		var w workload.Request
		for src.Next(&w) == nil {
			work += w.ServiceTime
		}
		first, last := reqs[0].Arrival, reqs[0].Arrival
		for _, r := range reqs {
			last = later(last, r.Arrival.Add(r.Latency))
		}
		span := last.Sub(first).Seconds()
		marks := 8 * time.Duration(m.Mark).Seconds() * float64(m.Quota) / float64(m.Period) / 60
		want := (processCPU.Seconds()/60 - marks) * span
		got := m.CPUPerWork*work.Seconds() + m.Background*span
		t.Logf("process CPU %v: %.0f%% of %v of work, background %.4f cores over %.1f s; %.3f s against %.3f s", processCPU, 100*m.CPUPerWork, work, m.Background, span, got, want)
		if m.CPUPerWork <= 0 || m.CPUPerWork > 1 || m.Background < 0 || math.Abs(got-want) > 1e-6 {
			t.Errorf("process CPU %v: the replay spends %.3f s (%.2f of %v of work, %.4f cores besides), the process %.3f s outside the marks", processCPU, got, m.CPUPerWork, work, m.Background, want)
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// runtime8 is a recorded server that collected 8 times for 1,200
// dispatches, its mark workers taking 6.4 s of CPU on 2 Ps.
var runtime8 = &Runtime{Span: time.Minute, GCCycles: 8, MarkCPU: 6400 * ms, Dispatched: 1200, GOMAXPROCS: 2}

// endsAtBoundary ends the i-th stall 70–72 ms into a CFS period (170 ms
// and up to 2 ms to wake after the period of its 37 ms slot).
func endsAtBoundary(i int, rng *rand.Rand) time.Duration {
	return time.Duration(i)*37*ms/params.CFSPeriod*params.CFSPeriod + 170*ms + time.Duration(rng.IntN(2000))*time.Microsecond
}

// TestCPUModelFromStallsAndRuntime derives the model from a synthetic
// recording whose 40 stalls of 90 ms end at phase 70 ms of the period
// (plus up to 2 ms to wake), among 2–3 ms executions: the server ran
// 100 + median − 90 ms per period, a collection came every 150 dispatches
// and marked for (6.4 s + the stalls' time) / 8 / 2. Without the runtime's counters,
// or with stalls that are not a quota's, there is no model.
func TestCPUModelFromStallsAndRuntime(t *testing.T) {
	cfg := config(t, 1)
	anywhere := func(i int, rng *rand.Rand) time.Duration {
		return time.Duration(i)*37*ms + 100*ms + time.Duration(rng.IntN(100_000))*time.Microsecond
	}
	reqs := stallRecording(1000, 40, 90*ms, endsAtBoundary)
	res, err := Derive(&sliceReader{reqs: reqs}, Options{Config: cfg, ServerConcurrencyLimit: 6, Evidence: Evidence{Runtime: runtime8}})
	if err != nil {
		t.Fatal(err)
	}
	m := res.CPU
	if m == nil {
		t.Fatalf("no CPU model: %s", res.CPUWhy)
	}
	med := time.Duration(slowLevel(t, res).MedianExecution)
	t.Logf("median %v; model %+v", med, *m)
	if m.Level != "slow" || m.FullPeriodStalls != 40 {
		t.Errorf("model from level %q with %d full-period stalls, want slow and 40", m.Level, m.FullPeriodStalls)
	}
	if got, want := time.Duration(m.RunPerPeriod), 10*ms+med; got < want-2*ms || got > want+2*ms {
		t.Errorf("runs %v per period, want about %v", got, want)
	}
	// the stalls end 70–72 ms into the period, 0–2 ms after the boundary;
	// the phase counts from the workload's first arrival
	first := reqs[0].Arrival.Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	want := ((70*ms-first)%params.CFSPeriod+params.CFSPeriod)%params.CFSPeriod - med
	if got := time.Duration(m.Phase); got < want-ms || got > want+3*ms {
		t.Errorf("periods start at %v, want about %v (the boundary less the median)", got, want)
	}
	// the marks: 6.4 s of the workers' CPU and the 40 stalls' 90 ms − the
	// median, over 8 collections and 2 Ps
	stalled := 40 * (90*ms - med)
	if m.ExecutionsPerCollection != 150 || time.Duration(m.Stalled) != stalled || time.Duration(m.Mark) != (6400*ms+stalled)/16 {
		t.Errorf("a collection every %.0f dispatches marking for %v (stalled %v), want 150 and %v (stalled %v)", m.ExecutionsPerCollection, time.Duration(m.Mark), time.Duration(m.Stalled), (6400*ms+stalled)/16, stalled)
	}

	// Apply gives the stalled executions the median
	var replaced, long int
	src := res.Apply(&sliceReader{reqs: reqs})
	var w workload.Request
	for src.Next(&w) == nil {
		if w.ServiceTime == med {
			replaced++
		}
		if w.ServiceTime >= 20*ms {
			long++
		}
	}
	if long != 0 || replaced < 40 || res.Estimated.StallsReplaced != 40 {
		t.Errorf("after Apply: %d executions of 20 ms or more, %d of the median, %d counted replaced; want 0, at least 40, 40", long, replaced, res.Estimated.StallsReplaced)
	}

	for _, tt := range []struct {
		name    string
		reqs    []workload.Request
		rt      *Runtime
		wantWhy bool
	}{
		{"no runtime counters", reqs, nil, true},
		{"one collection", reqs, &Runtime{Span: 5 * time.Second, GCCycles: 1, MarkCPU: 800 * ms, Dispatched: 150, GOMAXPROCS: 2}, true},
		{"stalls not at a period boundary", stallRecording(1000, 40, 90*ms, anywhere), runtime8, false},
		{"no stall of about a period", stallRecording(1000, 40, 40*ms, endsAtBoundary), runtime8, true},
	} {
		res, err := Derive(&sliceReader{reqs: tt.reqs}, Options{Config: cfg, ServerConcurrencyLimit: 6, Evidence: Evidence{Runtime: tt.rt}})
		if err != nil {
			t.Fatal(err)
		}
		if res.CPU != nil || (res.CPUWhy != "") != tt.wantWhy {
			t.Errorf("%s: model %v, why %q; want none, with a reason: %v", tt.name, res.CPU, res.CPUWhy, tt.wantWhy)
		}
	}
}

// TestCPUModelFromTheCPULimit: with the server's CPU limit known, the
// running time per period is the time GOMAXPROCS busy Ps take to burn the
// quota, whatever the stalls' lengths, and stalls shorter than a period
// are enough; a limit no quota could throttle at is refused with a reason.
func TestCPUModelFromTheCPULimit(t *testing.T) {
	cfg := config(t, 1)
	for _, tt := range []struct {
		name    string
		stall   time.Duration
		limit   float64
		wantRun time.Duration
	}{
		// 0.2 cores × 100 ms over 2 Ps, not the 10 ms + median the stalls say
		{"full-period stalls", 90 * ms, 0.2, 10 * ms},
		{"no stall of about a period", 40 * ms, 0.5, 25 * ms},
		{"a limit above GOMAXPROCS", 90 * ms, 2.5, 0},
	} {
		res, err := Derive(&sliceReader{reqs: stallRecording(1000, 40, tt.stall, endsAtBoundary)}, Options{Config: cfg, ServerConcurrencyLimit: 6, Evidence: Evidence{Runtime: runtime8, CPULimit: tt.limit}})
		if err != nil {
			t.Fatal(err)
		}
		if tt.wantRun == 0 {
			if res.CPU != nil || !strings.Contains(res.CPUWhy, "CPU limit of 2.5 cores") {
				t.Errorf("%s: model %v, why %q; want none, naming the limit", tt.name, res.CPU, res.CPUWhy)
			}
			continue
		}
		if res.CPU == nil {
			t.Fatalf("%s: no CPU model: %s", tt.name, res.CPUWhy)
		}
		if got := time.Duration(res.CPU.RunPerPeriod); got != tt.wantRun || res.CPU.CPULimit != tt.limit {
			t.Errorf("%s: runs %v per period from a limit of %g, want %v from %g", tt.name, got, res.CPU.CPULimit, tt.wantRun, tt.limit)
		}
	}
}

// TestCPUModelRunFromTheMarksStalls: of 40 stalls of about a period, 16
// are the marks' (the quota ran out 10 ms into the period, every P
// busy: 90 ms + the execution) and 24 fall outside them (one P burned
// it, 12 to 47 ms in): the model reads the 10 ms from the longest half,
// where the middle of them all reads an outside one's. Of a handful of
// 6, three the marks', one outside (30 ms in) and two of executions 7 ms
// longer than the median, it reads the 10 ms from the middle of the 8
// longest (all 6), where the longest half's middle reads 3 ms.
func TestCPUModelRunFromTheMarksStalls(t *testing.T) {
	cfg := config(t, 1)
	const work = 2500 * time.Microsecond // the executions' median, about
	stall := func(q, longer time.Duration) time.Duration { return params.CFSPeriod - q + work + longer }
	var many []time.Duration
	for j := range 40 {
		q := 10 * ms
		if j%5 < 3 {
			q = 12*ms + time.Duration(j%8)*5*ms
		}
		many = append(many, stall(q, 0))
	}
	handful := []time.Duration{stall(10*ms, 0), stall(30*ms, 0), stall(10*ms, 7*ms), stall(10*ms, 0), stall(10*ms, 7*ms), stall(10*ms, 0)}
	for _, tt := range []struct {
		name     string
		longs    []time.Duration
		share    float64
		atLeast  int
		min, max time.Duration
	}{
		{"40, the longest half", many, DefaultParams().RunStallShare, DefaultParams().RunStallsAtLeast, 9 * ms, 11 * ms},
		{"40, the middle of them all", many, 1, 0, 12 * ms, 50 * ms},
		{"6, at least the 8 longest", handful, DefaultParams().RunStallShare, DefaultParams().RunStallsAtLeast, 9 * ms, 11 * ms},
		{"6, the longest half", handful, DefaultParams().RunStallShare, 0, 0, 4 * ms},
	} {
		p := DefaultParams()
		p.RunStallShare, p.RunStallsAtLeast = tt.share, tt.atLeast
		res, err := Derive(&sliceReader{reqs: stallsRecording(1000, tt.longs, endsAtBoundary)}, Options{Config: cfg, ServerConcurrencyLimit: 6, Params: &p, Evidence: Evidence{Runtime: runtime8}})
		if err != nil {
			t.Fatal(err)
		}
		if res.CPU == nil {
			t.Fatalf("%s: no CPU model: %s", tt.name, res.CPUWhy)
		}
		if got := time.Duration(res.CPU.RunPerPeriod); res.CPU.FullPeriodStalls != len(tt.longs) || got < tt.min || got > tt.max {
			t.Errorf("%s: runs %v per period from %d stalls, want %v to %v from %d", tt.name, got, res.CPU.FullPeriodStalls, tt.min, tt.max, len(tt.longs))
		}
	}
}

// TestPerWorkFitMeetsTheDispatches: where the replay of the recorded
// configuration dispatches the CPU model's level more than
// CFSDispatchTolerance beyond the server at the CPU per work the process's
// CPU read, the dispatch check raises it to 1, and, where the replay at 1
// dispatches fewer than the server, to the figure between the two where a
// line through the two replays meets the server's dispatches; then it
// stops. The rest of the server, which the figure read left, goes with it.
func TestPerWorkFitMeetsTheDispatches(t *testing.T) {
	calibration := func(perWork float64, without Rule) *Result {
		p := DefaultParams()
		p.Without = without
		return &Result{params: &p, Report: Report{Enabled: true,
			Levels: []Level{{Level: "load", Source: SourceSaturated}, {Level: "other", Source: SourceSaturated}},
			CPU:    &CPUModel{Level: "load", CPUPerWork: perWork, Background: 0.01, RequestCost: Duration(time.Millisecond)}}}
	}
	// the server dispatched 1000 of 2000 requests of each level
	fit := func(level string, dispatched int64) []LevelFit {
		return []LevelFit{{Level: level, Requests: 2000, Recorded: 1000, Predicted: 2000 - dispatched}}
	}
	type step struct {
		dispatched int64
		changed    bool
		perWork    float64
	}
	for _, c := range []struct {
		name    string
		perWork float64
		without Rule
		level   string
		steps   []step
		read    float64
	}{
		{name: "met between the two", perWork: 0.8, level: "load", read: 0.8,
			steps: []step{{1050, true, 1}, {980, true, 0.8 + 0.2*0.05/0.07}, {1001, false, 0.8 + 0.2*0.05/0.07}}},
		{name: "more even at 1", perWork: 0.8, level: "load", read: 0.8,
			steps: []step{{1050, true, 1}, {1010, false, 1}}},
		{name: "met at 1", perWork: 0.8, level: "load", read: 0.8,
			steps: []step{{1050, true, 1}, {1000, false, 1}}},
		{name: "within the tolerance", perWork: 0.8, level: "load",
			steps: []step{{1005, false, 0.8}, {1050, false, 0.8}}},
		{name: "fewer", perWork: 0.8, level: "load",
			steps: []step{{950, false, 0.8}}},
		{name: "read at 1", perWork: 1, level: "load",
			steps: []step{{1100, false, 1}}},
		{name: "the process's CPU not known", perWork: 0, level: "load",
			steps: []step{{1100, false, 0}}},
		{name: "another level", perWork: 0.8, level: "other",
			steps: []step{{1050, false, 0.8}}},
		{name: "the rule off", perWork: 0.8, without: RulePerWorkFit, level: "load",
			steps: []step{{1050, false, 0.8}}},
	} {
		r := calibration(c.perWork, c.without)
		for i, s := range c.steps {
			changed := r.CheckDispatches(fit(c.level, s.dispatched), true)
			if changed != s.changed || math.Abs(r.CPU.CPUPerWork-s.perWork) > 1e-9 {
				t.Errorf("%s, replay %d dispatching %d of the server's 1000: changed %v, CPU per work %g; want %v, %g", c.name, i+1, s.dispatched, changed, r.CPU.CPUPerWork, s.changed, s.perWork)
			}
		}
		if r.CPU.CPUPerWorkRead != c.read {
			t.Errorf("%s: CPU per work read %g, want %g", c.name, r.CPU.CPUPerWorkRead, c.read)
		}
		if raised := c.read > 0; raised != (r.CPU.PerWorkDispatches[0] == float64(c.steps[0].dispatched-1000)/1000) {
			t.Errorf("%s: the replays' dispatches beyond the server's kept as %v", c.name, r.CPU.PerWorkDispatches)
		}
		if raised := c.read > 0; raised != (r.CPU.Background == 0 && r.CPU.RequestCost == 0) {
			t.Errorf("%s: background %g cores and %v a request left where the figure was raised: %v", c.name, r.CPU.Background, time.Duration(r.CPU.RequestCost), raised)
		}
	}
}

// TestCostFitMeetsTheDispatches: where the process's CPU read an
// execution's CPU per work at 1 and the replay of the recorded
// configuration dispatches the CPU model's level more than
// CFSDispatchTolerance beyond the server at the arrivals' cost the rest of
// the process's CPU held, the dispatch check raises the cost to the median
// latency of the recorded 429s, and, where the replay at that cost
// dispatches fewer than the server, to the cost between the two where a
// line through the two replays meets the server's dispatches; then it
// stops. Where the CPU per work was fitted (the executions took all the
// process's CPU), the cost stays as it is.
func TestCostFitMeetsTheDispatches(t *testing.T) {
	const us = time.Microsecond
	calibration := func(perWork float64, cost time.Duration, without Rule) *Result {
		p := DefaultParams()
		p.Without = without
		return &Result{params: &p, Report: Report{Enabled: true,
			Levels: []Level{{Level: "load", Source: SourceSaturated}, {Level: "other", Source: SourceSaturated}},
			CPU:    &CPUModel{Level: "load", CPUPerWork: perWork, RequestCost: Duration(cost), RejectedLatency: Duration(250 * us)}}}
	}
	// the server dispatched 1000 of 2000 requests of each level
	fit := func(level string, dispatched int64) []LevelFit {
		return []LevelFit{{Level: level, Requests: 2000, Recorded: 1000, Predicted: 2000 - dispatched}}
	}
	type step struct {
		dispatched int64
		changed    bool
		cost       time.Duration
	}
	ratio := 0.05 / 0.07
	between := 100*us + time.Duration(150*float64(us)*ratio)
	for _, c := range []struct {
		name    string
		perWork float64
		cost    time.Duration
		without Rule
		level   string
		steps   []step
		read    time.Duration
	}{
		{name: "met between the two", perWork: 1, cost: 100 * us, level: "load", read: 100 * us,
			steps: []step{{1050, true, 250 * us}, {980, true, between}, {1001, false, between}}},
		{name: "more even at the 429s' latency", perWork: 1, cost: 100 * us, level: "load", read: 100 * us,
			steps: []step{{1050, true, 250 * us}, {1010, false, 250 * us}}},
		{name: "within the tolerance", perWork: 1, cost: 100 * us, level: "load",
			steps: []step{{1005, false, 100 * us}, {1050, false, 100 * us}}},
		{name: "fewer", perWork: 1, cost: 100 * us, level: "load",
			steps: []step{{950, false, 100 * us}}},
		{name: "not cut", perWork: 1, cost: 250 * us, level: "load",
			steps: []step{{1100, false, 250 * us}}},
		{name: "CPU per work fitted", perWork: 0.8, cost: 0, level: "load",
			steps: []step{{1050, true, 0}, {1050, false, 0}, {1050, false, 0}}},
		{name: "another level", perWork: 1, cost: 100 * us, level: "other",
			steps: []step{{1050, false, 100 * us}}},
		{name: "the rule off", perWork: 1, cost: 100 * us, without: RuleCostFit, level: "load",
			steps: []step{{1050, false, 100 * us}}},
		{name: "the arrivals' cost off", perWork: 1, cost: 100 * us, without: RuleArrivals, level: "load",
			steps: []step{{1050, false, 100 * us}}},
	} {
		r := calibration(c.perWork, c.cost, c.without)
		for i, s := range c.steps {
			changed := r.CheckDispatches(fit(c.level, s.dispatched), true)
			if got := time.Duration(r.CPU.RequestCost); changed != s.changed || (got-s.cost).Abs() > time.Nanosecond {
				t.Errorf("%s, replay %d dispatching %d of the server's 1000: changed %v, cost %v; want %v, %v", c.name, i+1, s.dispatched, changed, got, s.changed, s.cost)
			}
		}
		if time.Duration(r.CPU.RequestCostRead) != c.read {
			t.Errorf("%s: cost read %v, want %v", c.name, time.Duration(r.CPU.RequestCostRead), c.read)
		}
		if raised := c.read > 0; raised != (r.CPU.CostDispatches[0] == float64(c.steps[0].dispatched-1000)/1000) {
			t.Errorf("%s: the replays' dispatches beyond the server's kept as %v", c.name, r.CPU.CostDispatches)
		}
	}
}
