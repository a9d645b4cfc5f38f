package calibrate

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// auditOnlyBusy records, as an audit log alone tells it, a level of
// shares (1: 1 seat, 2: 2 seats) kept busy by one kind of request (about
// 8 ms each) arriving at rate per second from four users, each of which
// also spends filters in the server around APF: its latency is its queue
// wait, its execution and the filters. It returns the requests and each
// one's execution time.
func auditOnlyBusy(t *testing.T, seed uint64, shares int32, rate float64, filters time.Duration) ([]workload.Request, []time.Duration, fairqueue.ReplayConfig) {
	t.Helper()
	cfg := configQueues(t, shares, 50)
	rc := fairqueue.ReplayConfig{Config: cfg, ServerConcurrencyLimit: 6, NoBorrowing: true}
	rng := rand.New(rand.NewPCG(seed, 13))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var reqs []workload.Request
	for at := time.Duration(0); at < 20*time.Second; at += time.Duration(rng.ExpFloat64() / rate * float64(time.Second)) {
		user := []string{"alice", "bob", "carol", "dave"}[rng.IntN(4)]
		exec := time.Duration(6000+rng.IntN(4000)) * time.Microsecond
		reqs = append(reqs, workload.Request{Arrival: start.Add(at), User: user, Groups: []string{"load", "system:authenticated"}, UserKnown: true,
			Method: "GET", Verb: "list", URI: "/api/v1/namespaces/ns/configmaps", ServiceTime: exec, HasServiceTime: true, InitialSeats: 1, HasSeats: true})
	}
	byID := map[int64]fairqueue.Outcome{}
	if _, err := fairqueue.Replay(&sliceReader{reqs: reqs}, rc, nil, fairqueue.ReplayOptions{KeepReceivedArrival: true,
		OnOutcome: func(_ *workload.Request, o *fairqueue.Outcome) { byID[o.ID] = *o }}); err != nil {
		t.Fatal(err)
	}
	execs := make([]time.Duration, len(reqs))
	for i := range reqs {
		r := &reqs[i]
		execs[i] = r.ServiceTime
		o := byID[int64(i+1)]
		r.Latency = o.Start - o.Arrival + filters
		r.Status = 429
		if o.Reason == fairqueue.Executed {
			r.Status = 200
			r.Latency += r.ServiceTime
		}
		r.HasServiceTime, r.ServiceTime = false, 0
	}
	return reqs, execs, rc
}

// TestScaledExecutionsMeetTheRecordedDispatches: from an audit log alone,
// the executions of a level of two seats kept busy (whose ends do not tell
// which execution waited for which, as a level of one seat's do:
// TestOneSeatExecutionsFromTheirEnds) are estimated, then scaled down to
// the seat time the recording allows: its one seat over the time it had a
// request in the server, which also counts the filters around APF. Filling
// it is the most they can hold; the replay of the recorded configuration
// then dispatches fewer than the server did, and the dispatch check
// scales them down further until it dispatches nearer the recorded count.
// A level whose replay dispatches what the server did is left alone.
func TestScaledExecutionsMeetTheRecordedDispatches(t *testing.T) {
	for _, tt := range []struct {
		name    string
		rate    float64
		filters time.Duration
	}{
		{"busy, 1ms of filters", 270, time.Millisecond},
		{"busy, 300µs of filters", 270, 300 * time.Microsecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reqs, _, rc := auditOnlyBusy(t, 1, 2, tt.rate, tt.filters)
			opts := Options{Config: rc.Config, ServerConcurrencyLimit: rc.ServerConcurrencyLimit}
			open := func() (workload.Reader, error) { return &sliceReader{reqs: reqs}, nil }
			res, err := DeriveAuditOnly(open, rc, opts, 10)
			if err != nil {
				t.Fatal(err)
			}
			var first, last LevelFit
			for i := 0; ; i++ {
				fit := NewFit(0, DefaultParams())
				rep, err := fairqueue.Replay(res.Apply(&sliceReader{reqs: reqs}), rc, nil, fairqueue.ReplayOptions{OnOutcome: fit.Observe})
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range fit.Result(rep.Levels) {
					if f.Level == "slow" {
						if i == 0 {
							first = f
						}
						last = f
					}
				}
				if !res.CheckDispatches(fit.Result(rep.Levels), i < 3) {
					break
				}
			}
			lv := res.level("slow")
			t.Logf("%d requests; slow: recorded %d 429s, replayed %d at first, %d after the checks; refused %+v", len(reqs), first.Recorded, first.Predicted, last.Predicted, lv.Refused)
			if lv.Refused == nil || lv.Refused.ExecutionScale <= 0 {
				t.Fatalf("slow: the estimated executions were not scaled to the seat time: %+v", lv.Refused)
			}
			rec := first.Requests - first.Recorded
			short := func(f LevelFit) int64 { return rec - (f.Requests - f.Predicted) }
			switch {
			case float64(short(first)) < params.ScaledDispatchTolerance*float64(rec):
				if lv.Refused.Dispatched != 0 {
					t.Errorf("the replay dispatched %d of %d at first, and the dispatch check scaled the executions by %g", rec-short(first), rec, lv.Refused.Dispatched)
				}
			case lv.Refused.Dispatched <= 0 || lv.Refused.Dispatched >= 1 || short(last) >= short(first):
				t.Errorf("the replay dispatched %d of %d at first, %d after the dispatch check (scaled by %g)", rec-short(first), rec, rec-short(last), lv.Refused.Dispatched)
			case abs(last.Predicted-last.Recorded) >= abs(first.Predicted-first.Recorded):
				t.Errorf("the dispatch check took the replay's 429s from %d to %d, the server's %d", first.Predicted, last.Predicted, first.Recorded)
			}
		})
	}
}

// TestDispatchCheckOfScaledExecutions: the dispatch check scales the
// estimated executions of a level only where they were scaled to the seat
// time already and the replay dispatched more than
// ScaledDispatchTolerance fewer than the server, by the replay's
// shortfall.
func TestDispatchCheckOfScaledExecutions(t *testing.T) {
	for _, tt := range []struct {
		name      string
		scaled    bool
		predicted int64
		want      float64
	}{
		{"0.6% short", true, 105, 0.5},
		{"5.6% short", true, 150, 0.5 * 850 / 900},
		{"not scaled to the seat time", false, 150, 0},
		{"more dispatched", true, 50, 0.5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Result{params: &params, Report: Report{Enabled: true, Levels: []Level{{Level: "slow", Source: "saturated"}}}}
			if tt.scaled {
				r.Levels[0].Refused = &Refusal{Check: "seat time", ExecutionScale: 0.5}
				r.execScale = map[string]float64{"slow": 0.5}
			}
			changed := r.CheckDispatches([]LevelFit{{Level: "slow", Requests: 1000, Recorded: 100, Predicted: tt.predicted}}, true)
			got, _ := r.execScaleOf("slow")
			if !tt.scaled {
				got = 0
			}
			if math.Abs(got-tt.want) > 1e-9 || changed != (got != 0 && got != 0.5) {
				t.Errorf("scale %g (changed %v), want %g", got, changed, tt.want)
			}
		})
	}
}

func abs(x int64) int64 { return max(x, -x) }

// TestOneSeatExecutionsFromTheirEnds: from an audit log alone, a level of
// one seat executes one request at a time, so its ends tell each
// dispatch: when the request arrived or when the execution before it
// ended, whichever was later. Each execution is then its own time (with
// the filters around APF: those ahead of it for one that found the seat
// free, the writing of the response before it for one that waited), not
// its kind's mean through the replay's queue waits, and the replay of
// the recorded configuration gives back the server's 429s without
// scaling them (the seat-time check may still trim the small overhead the
// filters look like).
func TestOneSeatExecutionsFromTheirEnds(t *testing.T) {
	for _, filters := range []time.Duration{300 * time.Microsecond, time.Millisecond} {
		t.Run(filters.String(), func(t *testing.T) {
			reqs, execs, rc := auditOnlyBusy(t, 1, 1, 135, filters)
			opts := Options{Config: rc.Config, ServerConcurrencyLimit: rc.ServerConcurrencyLimit}
			open := func() (workload.Reader, error) { return &sliceReader{reqs: reqs}, nil }
			res, err := DeriveAuditOnly(open, rc, opts, 10)
			if err != nil {
				t.Fatal(err)
			}
			fit := NewFit(0, DefaultParams())
			var got []time.Duration
			prepared := res.Apply(&sliceReader{reqs: reqs})
			rep, err := fairqueue.Replay(readerFunc(func(w *workload.Request) error {
				err := prepared.Next(w)
				if err == nil {
					got = append(got, w.ServiceTime)
				}
				return err
			}), rc, nil, fairqueue.ReplayOptions{OnOutcome: fit.Observe})
			if err != nil {
				t.Fatal(err)
			}
			var slow LevelFit
			for _, f := range fit.Result(rep.Levels) {
				if f.Level == "slow" {
					slow = f
				}
			}
			d := res.DispatchTimes
			t.Logf("%d requests; slow: recorded %d 429s, replayed %d; dispatch times %+v; estimated %+v", len(reqs), slow.Recorded, slow.Predicted, d, res.Estimated)
			if d == nil || d.FromEnds == 0 || d.FromReplay != 0 {
				t.Fatalf("dispatch times %+v: want every one from the level's ends", d)
			}
			if lv := res.level("slow"); lv.Refused != nil && (lv.Refused.ExecutionScale != 0 || lv.Refused.Dispatched != 0) {
				t.Errorf("the executions from the ends were scaled: %+v", lv.Refused)
			}
			// each execution is its own: its true time, plus at most the
			// filters around it
			var off int
			for i, r := range reqs {
				if r.Status == 429 {
					continue
				}
				if e := got[i] - execs[i]; e < -filters || e > 2*filters {
					if off++; off <= 3 {
						t.Errorf("request %d: execution %v from the ends, it took %v", i, got[i], execs[i])
					}
				}
			}
			if off > 0 {
				t.Errorf("%d of %d executions more than the filters (%v) away from their time", off, len(reqs), filters)
			}
			// Executions gives each executed record the execution the
			// replay read, and leaves the counts of the last Apply
			var want, gave []time.Duration
			for i, r := range reqs {
				if r.Status != 429 {
					want = append(want, got[i])
				}
			}
			est := res.Estimated
			if err := res.Executions(&sliceReader{reqs: reqs}, func(_ *workload.Request, exec time.Duration) { gave = append(gave, exec) }); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(gave, want) {
				t.Errorf("Executions gave %d executions, the replay read %d: they differ", len(gave), len(want))
			}
			if res.Estimated != est {
				t.Errorf("Executions changed the counts of the last Apply: %+v, were %+v", res.Estimated, est)
			}
			if !withinBand(slow.Predicted, slow.Recorded) {
				t.Errorf("the replay of the recorded configuration: %d 429s, the server answered %d", slow.Predicted, slow.Recorded)
			}
		})
	}
}

// readerFunc is a workload.Reader of a function.
type readerFunc func(*workload.Request) error

func (f readerFunc) Next(w *workload.Request) error { return f(w) }

// withinBand is the what-if test's agreement: within 0.75–1.25 from 20
// 429s on either side, else within 10.
func withinBand(p, r int64) bool {
	if max(p, r) < 20 {
		return abs(p-r) <= 10
	}
	return float64(p) >= 0.75*float64(r) && float64(p) <= 1.25*float64(r)
}

// TestDispatchCheckBothWays: the dispatch check holds the replay of the
// recorded configuration to the recorded dispatches within 10% in both
// directions. A replay that dispatches too many is not reproduced (the
// server held its seats longer than the calibration explains) and is
// said so, its overhead left as it was; one that dispatches too few has
// its overhead refused (as before) and, when even that leaves it short,
// is not reproduced either.
func TestDispatchCheckBothWays(t *testing.T) {
	for _, tt := range []struct {
		name               string
		recorded, replayed int64
		want               DispatchVerdict
		refused            bool
	}{
		{"as many", 900, 900, DispatchHeld, false},
		{"9% more", 900, 981, DispatchHeld, false},
		{"11% more", 900, 999, DispatchTooMany, false},
		{"4.5× as many", 49, 223, DispatchTooMany, false},
		{"9% fewer", 900, 819, DispatchHeld, false},
		{"11% fewer", 900, 801, DispatchTooFew, true},
		{"none recorded", 0, 10, DispatchUnchecked, false},
		{"too few recorded to tell", 3, 4, DispatchUnchecked, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			over := Duration(5 * time.Millisecond)
			r := &Result{params: &params, Report: Report{Enabled: true, Levels: []Level{{Level: "slow", Source: SourceSaturated, Overhead: over, MeanExecution: Duration(time.Millisecond), Seats: 10}}},
				working: working{overhead: map[string]time.Duration{"slow": time.Duration(over)}, windows: map[string]map[int64]time.Duration{}}}
			const requests = 2000
			r.CheckDispatches([]LevelFit{{Level: "slow", Requests: requests, Recorded: requests - tt.recorded, Predicted: requests - tt.replayed}}, true)
			lv := r.Levels[0]
			if lv.Dispatch != tt.want || lv.Dispatch.Holds() != (tt.want == DispatchHeld || tt.want == DispatchUnchecked) {
				t.Errorf("verdict %q, want %q", lv.Dispatch, tt.want)
			}
			if (lv.Refused != nil) != tt.refused {
				t.Errorf("refused %+v, want a refusal: %v", lv.Refused, tt.refused)
			}
			if tt.want == DispatchTooMany && lv.Overhead != over {
				t.Errorf("a replay that dispatched too many changed the overhead to %v", time.Duration(lv.Overhead))
			}
		})
	}
}
