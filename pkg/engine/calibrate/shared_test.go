package calibrate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// partlySharedRecording records a level of seats seats on a server of
// capacity cores shared by the executing requests, fed by Poisson
// arrivals of two kinds of LIST (2 and 6 ms alone) at a mean rate per
// second for span (alternating seconds at 1.5 and 0.5 times it), queued
// first come first served without limit. A request first computes (share
// of its time alone, at min(1, capacity / the requests computing):
// processor sharing), then spends the rest off the CPU (writing its
// response) at its own pace; share 1 is pure processor sharing. It is
// simulated here exactly, event by event, independently of the model it
// tests.
func partlySharedRecording(seed uint64, seats int, capacity, share, rate float64, span time.Duration) []workload.Request {
	return recordingOf(seed, seats, capacity, share, rate, span, false)
}

func recordingOf(seed uint64, seats int, capacity, share, rate float64, span time.Duration, paced bool) []workload.Request {
	rng := rand.New(rand.NewPCG(seed, 5))
	type req struct {
		at, start, end time.Duration
		work           float64 // ns of CPU left
		io             float64 // ns off the CPU left after it
		kind           int
	}
	var rs []*req
	for at := time.Duration(0); at < span; {
		// bursts: one second at 1.5 times the rate, the next at half of it
		r := rate * []float64{1.5, 0.5}[int(at/time.Second)%2]
		at += time.Duration(rng.ExpFloat64() / r * float64(time.Second))
		k := rng.IntN(2)
		d := float64([]time.Duration{2 * time.Millisecond, 6 * time.Millisecond}[k]) * (0.8 + 0.4*rng.Float64())
		if paced {
			rs = append(rs, &req{at: at, kind: k, work: d})
			continue
		}
		rs = append(rs, &req{at: at, kind: k, work: share * d, io: (1 - share) * d})
	}
	var (
		now     float64
		next    int
		waiting []*req
		running []*req
	)
	for next < len(rs) || len(waiting) > 0 || len(running) > 0 {
		for len(running) < seats && len(waiting) > 0 {
			r := waiting[0]
			waiting = waiting[1:]
			r.start = time.Duration(now)
			running = append(running, r)
		}
		computing := 0
		for _, r := range running {
			if r.work > 1 {
				computing++
			}
		}
		speed := min(1, capacity/float64(max(computing, 1)))
		if paced {
			speed = 1 / stretch(float64(len(running)), capacity, share)
		}
		// the next request to finish its computing or its whole execution
		tDone := math.Inf(1)
		for _, r := range running {
			if r.work > 1 {
				tDone = min(tDone, now+r.work/speed)
			} else {
				tDone = min(tDone, now+r.io)
			}
		}
		tArr := math.Inf(1)
		if next < len(rs) {
			tArr = float64(rs[next].at)
		}
		t := min(tDone, tArr)
		for _, r := range running {
			if r.work > 1 {
				r.work -= (t - now) * speed
			} else {
				r.io -= t - now
			}
		}
		now = t
		if t == tArr {
			waiting = append(waiting, rs[next])
			next++
		}
		kept := running[:0]
		for _, r := range running {
			if r.work <= 1 && r.io <= 1 {
				r.end = time.Duration(now)
				continue
			}
			kept = append(kept, r)
		}
		running = kept
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var reqs []workload.Request
	for _, r := range rs {
		reqs = append(reqs, workload.Request{Arrival: start.Add(r.at), User: []string{"alice", "bob", "carol", "dave"}[rng.IntN(4)], Groups: []string{"load", "system:authenticated"}, UserKnown: true,
			Method: "GET", Verb: "list", URI: []string{"/api/v1/namespaces/ns/configmaps?limit=5", "/api/v1/namespaces/ns/secrets"}[r.kind],
			ServiceTime: r.end - r.start, HasServiceTime: true, InitialSeats: 1, HasSeats: true, Status: 200, Latency: r.end - r.at})
	}
	return reqs
}

// TestSharedCPURecoversTheCapacity: on a server that shares one core among
// the level's executing requests, the fit finds about one core, and on
// one that has as many cores as seats (nothing stretches), it keeps no
// model and says why.
func TestSharedCPURecoversTheCapacity(t *testing.T) {
	cfg := config(t, 3)
	const scl = 12
	seats := slowSeats(t, cfg, scl, 3)
	for _, tc := range []struct {
		capacity, share float64
		want            bool
	}{{1, 1, true}, {1.5, 1, true}, {1, 0.5, true}, {float64(seats), 1, false}} {
		// a load about what the capacity serves, so that the level is busy
		reqs := partlySharedRecording(1, seats, tc.capacity, tc.share, 0.9*tc.capacity/0.004/tc.share, 20*time.Second)
		// the metrics of such a server: as many Ps as cores, and a
		// process that computed the executions' share of their time alone
		procs := int(math.Ceil(tc.capacity))
		cpu := time.Duration(cpuSeconds(reqs, tc.share) * float64(time.Second))
		res := deriveShared(t, reqs, Options{Config: cfg, ServerConcurrencyLimit: scl, Evidence: Evidence{CPUUse: &metrics.CPUUse{Span: 20 * time.Second, ProcessCPU: cpu, GOMAXPROCS: procs}}})
		m := res.Shared
		if !tc.want {
			// nothing to fit: no model, and the recorded execution
			// times are the prediction
			if m != nil {
				t.Errorf("capacity %g (as many cores as seats): a model of %.0f%% on %.2f cores from the %s", tc.capacity, 100*m.Share, m.Capacity, m.From)
			}
			continue
		}
		if m == nil {
			t.Errorf("capacity %g: no model: %s", tc.capacity, res.SharedWhy)
			continue
		}
		t.Logf("capacity %g, share %g: fitted %.2f cores, share %.2f, from %d executions (%d kinds, up to %d in flight, %.0f%% stretched; spread %.3f against %.3f)", tc.capacity, tc.share, m.Capacity, m.Share, m.Executions, m.Kinds, m.MaxInFlight, 100*m.Stretched, m.Spread, m.SpreadRecorded)
		// a request off the CPU counts in flight too, so a part off the
		// CPU shows as a smaller share on more cores: the parameters
		// are those of the truth only where every execution computes
		switch {
		case tc.share == 1 && (m.Capacity < 0.8*tc.capacity || m.Capacity > 1.25*tc.capacity || m.Share < 0.85):
			t.Errorf("capacity %g, share %g: fitted %.2f cores, share %.2f", tc.capacity, tc.share, m.Capacity, m.Share)
		case tc.share < 1 && m.Share > 0.8:
			t.Errorf("capacity %g, share %g: fitted share %.2f: the part off the CPU was not told", tc.capacity, tc.share, m.Share)
		}
		if want := cpuSeconds(reqs, tc.share) / 20; m.Used == nil || math.Abs(*m.Used-want) > 1e-6 || m.Cores != float64(procs) || m.CoresFrom != "GOMAXPROCS" || m.From != "executions" {
			t.Errorf("the metrics' evidence: used %v (want %g), cores %g from %q; from the %s", m.Used, want, m.Cores, m.CoresFrom, m.From)
		}
	}
}

// TestSharedCPUMoreSeatsBuyNoThroughput: the recording of a level of 3
// shares (5 seats) on one shared core, under bursts of more load than the
// core serves and lulls that drain them (queues long enough that nothing
// is rejected), replayed with 9 shares (8 seats). The exact simulation of the same server with the
// added seats says what really happens: the executions stretch, and the
// requests wait about as long as before. With the shared-CPU model the
// replay's median wait is within 0.75–1.25 of it; with the recorded
// execution times the replay predicts the waits all but gone.
func TestSharedCPUMoreSeatsBuyNoThroughput(t *testing.T) {
	before, after := configQueues(t, 3, 1000), configQueues(t, 9, 1000)
	seats := levelLimits(Options{Config: before, ServerConcurrencyLimit: 12})["slow"].NominalCL
	more := levelLimits(Options{Config: after, ServerConcurrencyLimit: 12})["slow"].NominalCL
	for _, share := range []float64{1, 0.5} {
		t.Run(fmt.Sprintf("share %g", share), func(t *testing.T) { moreSeats(t, before, after, seats, more, share) })
	}
}

// moreSeats is TestSharedCPUMoreSeatsBuyNoThroughput on a server where
// share of each execution computes.
func moreSeats(t *testing.T, before, after *engine.Config, seats, more int, share float64) {
	const scl = 12
	opts := Options{Config: before, ServerConcurrencyLimit: scl}
	// bursts of 1.4 times what one core serves, lulls of half
	rate := 0.95 / 0.004 / share
	reqs := partlySharedRecording(2, seats, 1, share, rate, 10*time.Second)
	truth := partlySharedRecording(2, more, 1, share, rate, 10*time.Second)
	res := deriveShared(t, reqs, opts)
	if res.Shared == nil {
		t.Fatalf("no model: %s", res.SharedWhy)
	}
	real := medianWait(truth)
	wb, wa := medianWaits(t, res, reqs, before, after, scl)
	nb, na := medianWaits(t, res.WithoutCPU(), reqs, before, after, scl)
	t.Logf("%d requests, %d seats → %d on %.2f fitted cores, share %.2f; median wait with %d seats: exact %.3fs, predicted with the model %.3fs (recorded configuration %.3fs), without it %.3fs (%.3fs)",
		len(reqs), seats, more, res.Shared.Capacity, res.Shared.Share, more, real, wa, wb, na, nb)
	// The model counts every execution in flight as sharing the CPU;
	// where half of each is spent off it, the added seats are counted
	// as more contention than they bring, and the waits come out about
	// a quarter short (0.74 of the exact server's when this test was
	// written): that case is held to a wider band, the known limit of
	// the model (docs/simulate.md).
	lo := 0.75
	if share < 1 {
		lo = 0.6
	}
	if wa < lo*real || wa > 1.25*real {
		t.Errorf("with the shared CPU the median wait after %d → %d seats is predicted %.3fs; the exact server waits %.3fs", seats, more, wa, real)
	}
	if na > 0.5*real {
		t.Errorf("without the model the added seats should all but end the waits (%.3fs predicted, %.3fs real): the recording does not saturate the core", na, real)
	}
}

// medianWait is the median time the recorded requests waited for a seat
// (latency − execution), in seconds.
func medianWait(reqs []workload.Request) float64 {
	var waits []time.Duration
	for _, w := range reqs {
		waits = append(waits, w.Latency-w.ServiceTime)
	}
	slices.Sort(waits)
	return waits[len(waits)/2].Seconds()
}

// medianWaits replays reqs, prepared by cal, on before and after (without
// borrowing, on the calibration's CPU) and returns the level slow's median
// wait in each, in seconds.
func medianWaits(t *testing.T, cal *Result, reqs []workload.Request, before, after *engine.Config, scl int) (b, a float64) {
	t.Helper()
	rc := fairqueue.ReplayConfig{Config: before, ServerConcurrencyLimit: scl, NoBorrowing: true, CPU: cal.Server(0)}
	ac := fairqueue.ReplayConfig{Config: after, ServerConcurrencyLimit: scl, NoBorrowing: true, CPU: cal.Server(0)}
	rep, err := fairqueue.Replay(cal.Apply(&sliceReader{reqs: reqs}), rc, &ac, fairqueue.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return levelOf(rep.Levels, "slow").WaitP50Seconds, levelOf(rep.After.Levels, "slow").WaitP50Seconds
}

func levelOf(ls []fairqueue.LevelResult, name string) fairqueue.LevelResult {
	for _, l := range ls {
		if l.Name == name {
			return l
		}
	}
	return fairqueue.LevelResult{}
}

// cpuSeconds is the CPU, in seconds, of share of each execution.
func cpuSeconds(reqs []workload.Request, share float64) float64 {
	var cpu time.Duration
	for _, w := range reqs {
		cpu += time.Duration(share * float64(w.ServiceTime))
	}
	return cpu.Seconds()
}

// deriveShared calibrates reqs under opts, with the shared-CPU model.
func deriveShared(t *testing.T, reqs []workload.Request, opts Options) *Result {
	t.Helper()
	res, err := Derive(&sliceReader{reqs: reqs}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.DeriveShared(&sliceReader{reqs: reqs}); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestInFlightCapsALevel: estimated executions of a one-seat level that
// overlap each other (an audit record's execution is placed back from its
// end by an estimate) count as one in flight, while another level's
// execution beside them counts in full.
func TestInFlightCapsALevel(t *testing.T) {
	ms := time.Millisecond
	execs := []execution{
		{start: 0, end: 10 * ms, level: 0},
		{start: 5 * ms, end: 15 * ms, level: 0}, // overlaps the first: one seat
		{start: 0, end: 10 * ms, level: 1},
	}
	fl := inFlight(execs, []int{1, 0})
	want := []float64{2, 1.5, 2} // level 0 counts once; level 1 has no cap
	// on one core, all of an execution shared: the second ran half its
	// time at pace 1/2 and half at pace 1, so 4/3 of its time alone,
	// not the 1.5 its mean in flight says
	stretches := []float64{2, 4.0 / 3, 2}
	for i := range want {
		if math.Abs(fl.mean[i]-want[i]) > 1e-9 {
			t.Errorf("execution %d: %.2f in flight, want %.2f", i, fl.mean[i], want[i])
		}
		if got := fl.stretchOf(i, 1, 1); math.Abs(got-stretches[i]) > 1e-6 {
			t.Errorf("execution %d: stretched %.3f on one core, want %.3f", i, got, stretches[i])
		}
	}
	if uncapped := inFlight(execs, nil); uncapped.mean[1] != 2 {
		t.Errorf("without caps the second execution has %.2f in flight, want 2", uncapped.mean[1])
	}
}

// TestInFlightPresentCountsFromArrival: a level of two seats whose
// executions an audit log only estimates (starts too late: at 8 ms of
// requests that arrived at 0 and 2 ms and ended at 10 and 12) is counted,
// when present, from its requests' arrivals up to its seats: the one seat
// of the other level executing from 1 to 11 ms had 2 of them with it
// from 2 ms on, 1 before; counted from the estimated starts, none before
// 8 ms.
func TestInFlightPresentCountsFromArrival(t *testing.T) {
	ms := time.Millisecond
	execs := []execution{
		{arrival: 0, start: 8 * ms, end: 10 * ms, level: 0},
		{arrival: 2 * ms, start: 8 * ms, end: 12 * ms, level: 0},
		{arrival: 1 * ms, start: 1 * ms, end: 11 * ms, level: 1},
	}
	caps := []int{2, 1}
	// 1–2 ms: 1 + 1; 2–10 ms: 2 + 1; 10–11 ms: 1 + 1, over 10 ms
	if got, want := inFlightPresent(execs, caps, []bool{true, false}).mean[2], (2*1.0+3*8.0+2*1.0)/10; math.Abs(got-want) > 1e-9 {
		t.Errorf("counted from arrival: %.2f in flight, want %.2f", got, want)
	}
	// from the starts: 1–8 ms alone, 8–10 ms 3, 10–11 ms 2
	if got, want := inFlight(execs, caps).mean[2], (1*7.0+3*2.0+2*1.0)/10; math.Abs(got-want) > 1e-9 {
		t.Errorf("counted from the starts: %.2f in flight, want %.2f", got, want)
	}
}

// TestOneSeatExecutionsFromTheEnds: the audit-only executions of a level
// of one seat start when they arrived or when the one before them ended,
// and are fitted on; those of a level of two seats, or of a level whose
// execution times are recorded, keep their estimates.
func TestOneSeatExecutionsFromTheEnds(t *testing.T) {
	ms := time.Millisecond
	execs := []execution{
		// level 0, one seat: arrived at 0, 1 and 20 ms, ended at 10, 15, 30
		{arrival: 0, start: 8 * ms, end: 10 * ms, level: 0, estimated: true},
		{arrival: 1 * ms, start: 12 * ms, end: 15 * ms, level: 0, estimated: true},
		{arrival: 20 * ms, start: 25 * ms, end: 30 * ms, level: 0, estimated: true},
		// level 1, two seats
		{arrival: 0, start: 5 * ms, end: 10 * ms, level: 1, estimated: true},
		// level 2, one seat, its times recorded
		{arrival: 0, start: 5 * ms, end: 10 * ms, level: 2},
	}
	n := oneSeatExecutions(execs, []int{1, 2, 1}, []bool{false, false, true})
	want := []struct {
		start     time.Duration
		estimated bool
	}{{0, false}, {10 * ms, false}, {20 * ms, false}, {5 * ms, true}, {5 * ms, false}}
	for i, w := range want {
		if execs[i].start != w.start || execs[i].estimated != w.estimated {
			t.Errorf("execution %d: start %v, estimated %v; want %v, %v", i, execs[i].start, execs[i].estimated, w.start, w.estimated)
		}
	}
	if n != 3 {
		t.Errorf("%d estimated executions placed, want 3", n)
	}
}

// TestSharedCPUSaturated: a server that other processes leave half a core
// (every execution on the CPU) runs its one seat's executions twice as long
// as alone; with three seats, three share that half core, and the level
// serves no more. The metrics show its goroutines waiting for a CPU: the
// model reads the capacity from the process's CPU over the time the
// executions were in flight, and the waits with more seats are the exact
// server's, where the replay without it has them all but gone. Below the
// runnable wait that tells a saturated CPU, or without it, the model is not
// this one; the requests' cost before APF, the median latency of their
// 429s, comes out of the capacity.
func TestSharedCPUSaturated(t *testing.T) {
	before, after := configQueues(t, 1, 1000), configQueues(t, 3, 1000)
	const scl = 6
	seats := levelLimits(Options{Config: before, ServerConcurrencyLimit: scl})["slow"].NominalCL
	more := levelLimits(Options{Config: after, ServerConcurrencyLimit: scl})["slow"].NominalCL
	if seats != 1 || more < 2 {
		t.Fatalf("seats %d → %d: the test needs 1 → more", seats, more)
	}
	const capacity = 0.5
	const rate = 0.9 * capacity / 0.004 // bursts of 1.35 times what the half core serves
	reqs := partlySharedRecording(4, seats, capacity, 1, rate, 10*time.Second)
	truth := partlySharedRecording(4, more, capacity, 1, rate, 10*time.Second)
	// one seat: the executions never overlapped, each on the half core
	// for all of its time
	cpu := time.Duration(capacity * cpuSeconds(reqs, 1) * float64(time.Second))
	derive := func(use metrics.CPUUse) *Result {
		t.Helper()
		return deriveShared(t, reqs, Options{Config: before, ServerConcurrencyLimit: scl, Evidence: Evidence{CPUUse: &use}})
	}
	res := derive(metrics.CPUUse{Span: 12 * time.Second, ProcessCPU: cpu, GOMAXPROCS: 2, RunnableWait: 2 * time.Millisecond, HasRunnableWait: true})
	m := res.Shared
	if m == nil || m.From != SharedFromSaturated || m.Saturated == nil {
		t.Fatalf("no model from a saturated CPU: %+v, %s", m, res.SharedWhy)
	}
	if m.Share != 1 || m.Capacity < 0.45 || m.Capacity > 0.55 {
		t.Errorf("the executions shared %.3f cores (share %.2f), the server had %g", m.Capacity, m.Share, capacity)
	}
	real := medianWait(truth)
	_, with := medianWaits(t, res, reqs, before, after, scl)
	_, without := medianWaits(t, res.WithoutCPU(), reqs, before, after, scl)
	t.Logf("%d requests, 1 → %d seats on %.2f cores; the model's %.3f cores; median wait: exact %.3fs, with the model %.3fs, without %.3fs", len(reqs), more, capacity, m.Capacity, real, with, without)
	if with < 0.75*real || with > 1.25*real {
		t.Errorf("with the saturated CPU the median wait is predicted %.3fs; the exact server waits %.3fs", with, real)
	}
	if without > 0.5*real {
		t.Errorf("without the model the added seats should all but end the waits (%.3fs predicted, %.3fs real)", without, real)
	}
	// goroutines that hardly waited for a CPU, or a runtime that does not
	// say: not this model
	for _, use := range []metrics.CPUUse{
		{Span: 12 * time.Second, ProcessCPU: cpu, GOMAXPROCS: 2, RunnableWait: 100 * time.Microsecond, HasRunnableWait: true},
		{Span: 12 * time.Second, ProcessCPU: cpu, GOMAXPROCS: 2},
	} {
		if g := derive(use).Shared; g != nil && g.From == SharedFromSaturated {
			t.Errorf("runnable wait %v (known: %v) read as a saturated CPU", use.RunnableWait, use.HasRunnableWait)
		}
	}
}

// TestSaturatedSharedTakesOutTheRequestsCost: 1,000 requests whose 429s
// took 1 ms (the median; the slowest do not move it) cost 1 s of the
// process's 8 s of CPU over the 10 s the executions were in flight: they
// shared 0.7 cores. Where the requests' cost takes all of it, there is no
// model.
func TestSaturatedSharedTakesOutTheRequestsCost(t *testing.T) {
	execs := []execution{
		{start: 0, end: 4 * time.Second},
		{start: 2 * time.Second, end: 6 * time.Second},
		{start: 7 * time.Second, end: 13 * time.Second},
	}
	smp := sampleOf(execs, inFlight(execs, nil))
	rej := []time.Duration{time.Millisecond, time.Millisecond, 900 * time.Microsecond, time.Second, 2 * time.Second}
	use := &metrics.CPUUse{Span: 20 * time.Second, ProcessCPU: 8 * time.Second, GOMAXPROCS: 2, RunnableWait: time.Millisecond, HasRunnableWait: true}
	if got := busyTime(&params, execs); got != 12*time.Second {
		t.Fatalf("busy %v, want 12s (0–6 s and 7–13 s)", got)
	}
	m, ok := saturatedShared(&params, execs, func() sample { return smp }, 1000, rejectedOf(rej), Options{Evidence: Evidence{CPUUse: use}})
	if !ok {
		t.Fatal("no model")
	}
	// (8 s − 1,000 × 1 ms) / 12 s
	if want := 7.0 / 12; math.Abs(m.Capacity-want) > 1e-9 || m.Saturated.RequestCost != Duration(time.Millisecond) || m.Saturated.Busy != Duration(12*time.Second) {
		t.Errorf("capacity %v (want %v), cost %v, busy %v", m.Capacity, want, time.Duration(m.Saturated.RequestCost), time.Duration(m.Saturated.Busy))
	}
	// the metrics' span bounds the busy time
	short := *use
	short.Span = 10 * time.Second
	if m, ok := saturatedShared(&params, execs, func() sample { return smp }, 1000, rejectedOf(rej), Options{Evidence: Evidence{CPUUse: &short}}); !ok || math.Abs(m.Capacity-0.7) > 1e-9 {
		t.Errorf("over a 10 s span: %+v, %v", m, ok)
	}
	if m, ok := saturatedShared(&params, execs, func() sample { return smp }, 8000, rejectedOf(rej), Options{Evidence: Evidence{CPUUse: use}}); ok {
		t.Errorf("8,000 requests of 1 ms in 8 s of CPU left the executions %v cores", m.Capacity)
	}
}

// TestSharedCPUCapacityIsTheCoresAtOnce: a CPU limit is a CFS quota, CPU
// time over each 100 ms period, not a number of cores: a server held to
// one CPU whose Go runtime runs two Ps executes on two cores at once
// until the period's quota is spent. Executions that stretch as if they
// shared two cores are then the server's CPU, and the fit keeps its
// model, bounded by GOMAXPROCS. Where the metrics do not give GOMAXPROCS,
// the CPU limit is all that is known of the cores, and a fit above it is
// refused as before.
func TestSharedCPUCapacityIsTheCoresAtOnce(t *testing.T) {
	cfg := config(t, 3)
	const scl = 12
	seats := slowSeats(t, cfg, scl, 4)
	reqs := partlySharedRecording(3, seats, 2, 1, 0.9*2/0.004, 20*time.Second)
	cpu := time.Duration(cpuSeconds(reqs, 1) * float64(time.Second))
	use := &metrics.CPUUse{Span: 20 * time.Second, ProcessCPU: cpu, GOMAXPROCS: 2}

	res := deriveShared(t, reqs, Options{Config: cfg, ServerConcurrencyLimit: scl, Evidence: Evidence{CPUUse: use, CPULimit: 1}})
	m := res.Shared
	if m == nil {
		t.Fatalf("GOMAXPROCS 2 and a CPU limit of 1: no model: %s", res.SharedWhy)
	}
	if m.Capacity < 1.6 || m.Capacity > 2.5 || m.Cores != 2 || m.CoresFrom != CoresGOMAXPROCS {
		t.Errorf("GOMAXPROCS 2 and a CPU limit of 1: fitted %.2f cores (want about 2), bounded by %g from %q (want 2 from GOMAXPROCS)", m.Capacity, m.Cores, m.CoresFrom)
	}

	res = deriveShared(t, reqs, Options{Config: cfg, ServerConcurrencyLimit: scl, Evidence: Evidence{CPULimit: 1}})
	if res.Shared != nil {
		t.Errorf("a CPU limit of 1 and no GOMAXPROCS: a model of %.0f%% on %.2f cores, above the one core known", 100*res.Shared.Share, res.Shared.Capacity)
	}
	if !strings.Contains(res.SharedWhy, "the CPU limit given") {
		t.Errorf("a CPU limit of 1 and no GOMAXPROCS: the refusal does not name the limit: %q", res.SharedWhy)
	}
}

// slowSeats is the nominal seats of cfg's level slow on a server of scl
// seats; the test needs at least need of them.
func slowSeats(t *testing.T, cfg *engine.Config, scl, need int) int {
	t.Helper()
	seats := levelLimits(Options{Config: cfg, ServerConcurrencyLimit: scl})["slow"].NominalCL
	if seats < need {
		t.Fatalf("the level has %d seats; the test needs %d or more", seats, need)
	}
	return seats
}

// TestHeadroomOf: the CPU each execution in flight needed is the process's
// cores over the executions in flight on average (4.5 s of CPU over 10 s,
// 5 s of executions over the same 10 s: 0.9 of a core each), at most one
// core; the cores are the smaller of the CPU limit and GOMAXPROCS, and
// without process CPU, executions or cores there is no headroom.
func TestHeadroomOf(t *testing.T) {
	use := &metrics.CPUUse{Span: 10 * time.Second, ProcessCPU: 4500 * time.Millisecond, GOMAXPROCS: 2}
	h := headroomOf(Options{Evidence: Evidence{CPUUse: use, CPULimit: 1}}, 5*time.Second, 10*time.Second)
	if h == nil || math.Abs(h.PerExecution-0.9) > 1e-9 || h.Cores != 1 || math.Abs(h.Used-0.45) > 1e-9 || math.Abs(h.InFlight-0.5) > 1e-9 {
		t.Fatalf("headroom %+v, want 0.45 cores used, 0.5 in flight, 0.9 each, 1 core (the CPU limit)", h)
	}
	if h := headroomOf(Options{Evidence: Evidence{CPUUse: use}}, 5*time.Second, 10*time.Second); h == nil || h.Cores != 2 {
		t.Errorf("without a CPU limit: %+v, want GOMAXPROCS's 2 cores", h)
	}
	if h := headroomOf(Options{Evidence: Evidence{CPUUse: use, CPULimit: 4}}, 5*time.Second, 10*time.Second); h == nil || h.Cores != 2 {
		t.Errorf("a CPU limit above GOMAXPROCS: %+v, want GOMAXPROCS's 2 cores", h)
	}
	if h := headroomOf(Options{Evidence: Evidence{CPUUse: use}}, time.Second, 10*time.Second); h == nil || h.PerExecution != 1 {
		t.Errorf("0.45 cores over 0.1 in flight: %+v, want at most one core each", h)
	}
	for name, o := range map[string]Options{
		"no metrics":     {Evidence: Evidence{CPULimit: 1}},
		"no cores":       {Evidence: Evidence{CPUUse: &metrics.CPUUse{Span: 10 * time.Second, ProcessCPU: time.Second}}},
		"no process CPU": {Evidence: Evidence{CPUUse: &metrics.CPUUse{Span: 10 * time.Second, GOMAXPROCS: 2}}},
	} {
		if h := headroomOf(o, 5*time.Second, 10*time.Second); h != nil {
			t.Errorf("%s: %+v, want none", name, h)
		}
	}
	if h := headroomOf(Options{Evidence: Evidence{CPUUse: use}}, 0, 10*time.Second); h != nil {
		t.Errorf("no execution: %+v, want none", h)
	}
}

// TestCPUEvidenceShared: where the recorded executions did not stretch,
// the CPU evidence's model puts every execution on the CPU: 9.5 s of
// process CPU, less 1,000 requests at 0.5 ms each before APF (the median
// latency of the 429s), over 10 s of recorded executions is 0.9 of a core
// each; the one core (the CPU limit, below GOMAXPROCS's 2) less that cost
// over the 10 s window (0.05) leaves 0.95, which holds 0.95 / 0.9 = 1.06
// executions at once: one alone runs as recorded, three each 3 / 1.06 =
// 2.84 times as long. Without 429s nothing is taken out; an execution
// needs at most one core; the capacity is at least one execution (a CPU
// limit of half a core: an execution alone ran as recorded). No model
// without process CPU, cores or executions, or where the requests' cost
// before APF takes all the process's CPU or all the cores.
func TestCPUEvidenceShared(t *testing.T) {
	ms := time.Millisecond
	use := &metrics.CPUUse{Span: 12 * time.Second, ProcessCPU: 9500 * ms, GOMAXPROCS: 2}
	rejections := []time.Duration{ms, ms / 2, ms / 4} // median 0.5 ms
	opts := Options{Evidence: Evidence{CPUUse: use, CPULimit: 1}}
	m := cpuEvidenceShared(opts, nil, 10*time.Second, 10*time.Second, 1000, rejectedOf(rejections), 0)
	if m == nil || m.CPUEvidence == nil {
		t.Fatal("no model from 9.5 s of process CPU over 10 s of executions")
	}
	ev := m.CPUEvidence
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if m.From != SharedFromCPUEvidence || m.Share != 1 || m.Cores != 1 || m.CoresFrom != CoresCPULimit {
		t.Errorf("model %+v: want from %q, share 1, 1 core from the CPU limit", m, SharedFromCPUEvidence)
	}
	if time.Duration(ev.RequestCost) != ms/2 || ev.Requests != 1000 || ev.Rejected != 3 || !near(ev.PerExecution, 0.9) || !near(ev.ExecutionCores, 0.95) {
		t.Errorf("evidence %+v: want 0.5 ms a request before APF, 0.9 of a core per execution, 0.95 cores for the executions", ev)
	}
	if !near(m.Capacity, 0.95/0.9) || !near(m.Stretch(1), 1) || !near(m.Stretch(3), 3*0.9/0.95) {
		t.Errorf("capacity %g, stretch at 1 and 3 in flight %g and %g: want %g, 1 and %g", m.Capacity, m.Stretch(1), m.Stretch(3), 0.95/0.9, 3*0.9/0.95)
	}
	if got := cpuEvidenceShared(opts, nil, 10*time.Second, 10*time.Second, 1000, rejected{}, 0); got == nil || !near(got.CPUEvidence.PerExecution, 0.95) || !near(got.CPUEvidence.ExecutionCores, 1) {
		t.Errorf("without 429s: %+v, want 0.95 of a core each on the whole core", got)
	}
	if got := cpuEvidenceShared(Options{Evidence: Evidence{CPUUse: use}}, nil, 10*time.Second, 10*time.Second, 1000, rejectedOf(rejections), 0); got == nil || got.Cores != 2 || got.CoresFrom != CoresGOMAXPROCS || !near(got.Capacity, 1.95/0.9) {
		t.Errorf("without a CPU limit: %+v, want GOMAXPROCS's 2 cores, %g at once", got, 1.95/0.9)
	}
	if got := cpuEvidenceShared(opts, nil, 5*time.Second, 10*time.Second, 1000, rejectedOf(rejections), 0); got == nil || got.CPUEvidence.PerExecution != 1 {
		t.Errorf("9 s of CPU over 5 s of executions: %+v, want at most one core each", got)
	}
	if got := cpuEvidenceShared(Options{Evidence: Evidence{CPUUse: use, CPULimit: 0.5}}, nil, 10*time.Second, 10*time.Second, 1000, rejectedOf(rejections), 0); got == nil || got.Capacity != 1 {
		t.Errorf("half a core: %+v, want one execution at once (an execution alone ran as recorded)", got)
	}
	// the CPU model spends half a core's quota period by period and
	// stalls the executions when it is spent: within a period they share
	// GOMAXPROCS's 2 Ps, not the limit's half core as well
	if got := cpuEvidenceShared(Options{Evidence: Evidence{CPUUse: use, CPULimit: 0.5}}, &CPUModel{}, 10*time.Second, 10*time.Second, 1000, rejectedOf(rejections), 0); got == nil || got.Cores != 2 || got.CoresFrom != CoresWithinPeriod || !near(got.Capacity, 1.95/0.9) {
		t.Errorf("half a core with the CPU model: %+v, want GOMAXPROCS's 2 cores within a period, %g at once", got, 1.95/0.9)
	}
	// the recorded executions ran 1.9 at once on average and did not
	// stretch: the model holds that many, though 0.95 cores hold 1.06 at
	// 0.9 each, and stretches only beyond (noisy-neighbours' LISTs on a
	// level of 2 seats; without the floor it ran them 1.2 times as long
	// as recorded at the recorded concurrency)
	if got := cpuEvidenceShared(opts, nil, 10*time.Second, 10*time.Second, 1000, rejectedOf(rejections), 1.9); got == nil || !near(got.Capacity, 1.9) || !near(got.Stretch(2), 2/1.9) || !near(got.Stretch(5), 5/1.9) || !near(got.CPUEvidence.InFlight, 1.9) {
		t.Errorf("1.9 in flight recorded: %+v, want 1.9 at once without stretching (2 at once 2 / 1.9 as long, not 1.9 times), 5 at once 5 / 1.9 times as long", got)
	}
	for name, c := range map[string]struct {
		opts       Options
		work, span time.Duration
		requests   int
	}{
		"no metrics":                       {Options{Evidence: Evidence{CPULimit: 1}}, 10 * time.Second, 10 * time.Second, 1000},
		"no process CPU":                   {Options{Evidence: Evidence{CPUUse: &metrics.CPUUse{Span: 12 * time.Second, GOMAXPROCS: 2}}}, 10 * time.Second, 10 * time.Second, 1000},
		"no cores":                         {Options{Evidence: Evidence{CPUUse: &metrics.CPUUse{Span: 12 * time.Second, ProcessCPU: 9500 * ms}}}, 10 * time.Second, 10 * time.Second, 1000},
		"no execution":                     {opts, 0, 10 * time.Second, 1000},
		"requests that cost all its CPU":   {opts, 10 * time.Second, 100 * time.Second, 19000},
		"requests that cost all the cores": {opts, 10 * time.Second, time.Second, 2000},
	} {
		if got := cpuEvidenceShared(c.opts, nil, c.work, c.span, c.requests, rejectedOf(rejections), 0); got != nil {
			t.Errorf("%s: %+v, want no model", name, got)
		}
	}
}

// TestServerBeyond: the change's server on the CPU evidence's model is
// processor sharing under it, composed with the CFS model where there is
// one; there is none with a shared-CPU model of the recording (the
// recorded executions stretched: it applies to every replay) or without
// the evidence's model.
func TestServerBeyond(t *testing.T) {
	m := &SharedCPU{From: SharedFromCPUEvidence, Share: 1, Capacity: 1.25}
	r := &Result{Report: Report{Headroom: &Headroom{Shared: m}}}
	cpu, ok := r.ServerBeyond(0, 1)
	ps, isPS := cpu.(processorSharing)
	if !ok || !isPS || ps.m != m || ps.Stretch(5) != 4 {
		t.Fatalf("ServerBeyond = %#v, %v: want processor sharing under the model (5 in flight on 1.25: 4 times as long)", cpu, ok)
	}
	if r.ServerAt(0, 1) != nil {
		t.Errorf("the recorded configuration's server has the change's model")
	}
	withCFS := &Result{Report: Report{Headroom: &Headroom{Shared: m}, CPU: &CPUModel{Period: Duration(100 * time.Millisecond), Quota: Duration(100 * time.Millisecond)}}}
	if cpu, ok := withCFS.ServerBeyond(0, 1); !ok {
		t.Errorf("with a CFS model: no server")
	} else if s, isShared := cpu.(*sharedServer); !isShared || s.m != m || s.next == nil {
		t.Errorf("with a CFS model: %#v, want the model composed with the CFS model's server", cpu)
	}
	for name, r := range map[string]*Result{
		"a shared-CPU model of the recording": {Report: Report{Shared: &SharedCPU{Share: 1, Capacity: 2}, Headroom: &Headroom{Shared: m}}},
		"no evidence's model":                 {Report: Report{Headroom: &Headroom{}}},
		"no headroom":                         {},
	} {
		if cpu, ok := r.ServerBeyond(0, 1); ok {
			t.Errorf("%s: %#v, want none", name, cpu)
		}
	}
}

// TestCPUEvidenceRefusedOnEstimates: the CPU evidence gives no model where
// more than Params.MaxEstimatedShare of the executions are an audit log's
// estimates (noisy-pages from its audit log alone, 2,786 of 4,130
// estimated: 2.0 to 2.7 times the re-runs' 429s with the model), and
// keeps it otherwise.
func TestCPUEvidenceRefusedOnEstimates(t *testing.T) {
	share := DefaultParams().MaxEstimatedShare
	for _, c := range []struct {
		replayed, n int
		refused     bool
	}{{2786, 4130, true}, {1418, 2038, true}, {40, 100, false}, {50, 100, false}, {0, 100, false}, {0, 0, false}} {
		h := &Headroom{Shared: &SharedCPU{From: SharedFromCPUEvidence}}
		h.refuseEstimated(c.replayed, c.n, share)
		if got := h.Shared == nil; got != c.refused {
			t.Errorf("%d of %d executions estimated: refused %v, want %v", c.replayed, c.n, got, c.refused)
		}
		if c.refused && (h.Estimated < 0.6 || h.Estimated > 0.7) {
			t.Errorf("%d of %d executions estimated: Estimated %.2f", c.replayed, c.n, h.Estimated)
		}
		if !c.refused && h.Estimated != 0 {
			t.Errorf("%d of %d executions estimated, kept: Estimated %.2f", c.replayed, c.n, h.Estimated)
		}
	}
}

// TestBeyondStretch: on the CPU evidence's model an execution that ran
// with more in flight than its capacity ran stretched by it already, and
// the replay of a change on the model takes it back to its time alone
// (beyondStretch, which fairqueue.ReplayConfig.Unstretch divides by):
// three executions together on a capacity of 2 ran 3 / 2 as long as
// alone, and one alone ran as recorded. So at the recorded concurrency a
// change runs them as recorded, not 3 / 2 times as long again.
func TestBeyondStretch(t *testing.T) {
	ms := time.Millisecond
	execs := []execution{
		{start: 0, end: 10 * ms, idx: 0}, {start: 0, end: 10 * ms, idx: 1}, {start: 0, end: 10 * ms, idx: 2},
		{start: 20 * ms, end: 30 * ms, idx: 4},
	}
	m := &SharedCPU{From: SharedFromCPUEvidence, Share: 1, Capacity: 2}
	m.keepStretches(execs, inFlight(execs, []int{3}))
	r := &Result{Report: Report{Headroom: &Headroom{Shared: m}}}
	for idx, want := range map[int]float64{0: 1.5, 1: 1.5, 2: 1.5, 3: 1, 4: 1, 5: 1} {
		if got := r.beyondStretch(idx); math.Abs(got-want) > 1e-6 {
			t.Errorf("record %d: stretch %g, want %g", idx, got, want)
		}
	}
	for name, r := range map[string]*Result{
		"no headroom":         {},
		"no evidence's model": {Report: Report{Headroom: &Headroom{}}},
	} {
		if got := r.beyondStretch(0); got != 1 {
			t.Errorf("%s: stretch %g, want 1", name, got)
		}
	}
}
