package calibrate

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// auditOnlyBusy records, as an audit log alone tells it, a 1-seat level
// kept busy by one kind of request (about 8 ms each) arriving at rate per
// second from four users, each of which also spends filters in the
// server around APF: its latency is its queue wait, its execution and
// the filters.
func auditOnlyBusy(t *testing.T, seed uint64, rate float64, filters time.Duration) ([]workload.Request, fairqueue.ReplayConfig) {
	t.Helper()
	cfg := configQueues(t, 1, 50)
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
	for i := range reqs {
		r := &reqs[i]
		o := byID[int64(i+1)]
		r.Latency = o.Start - o.Arrival + filters
		r.Status = 429
		if o.Reason == fairqueue.Executed {
			r.Status = 200
			r.Latency += r.ServiceTime
		}
		r.HasServiceTime, r.ServiceTime = false, 0
	}
	return reqs, rc
}

// TestScaledExecutionsMeetTheRecordedDispatches: from an audit log alone,
// the executions of a level kept busy are estimated, then scaled down to
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
		{"busy, 1ms of filters", 135, time.Millisecond},
		{"busy, 300µs of filters", 135, 300 * time.Microsecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reqs, rc := auditOnlyBusy(t, 1, tt.rate, tt.filters)
			opts := Options{Config: rc.Config, ServerConcurrencyLimit: rc.ServerConcurrencyLimit}
			open := func() (workload.Reader, error) { return &sliceReader{reqs: reqs}, nil }
			res, err := DeriveAuditOnly(open, rc, opts, 10)
			if err != nil {
				t.Fatal(err)
			}
			var first, last LevelFit
			for i := 0; ; i++ {
				fit := NewFit(0)
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
			case float64(short(first)) < ScaledDispatchTolerance*float64(rec):
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
			r := &Result{Enabled: true, Levels: []Level{{Level: "slow", Source: "saturated"}}}
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
