package fairqueue_test

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
)

// sliceSource feeds a slice of requests to the simulator.
type sliceSource struct {
	reqs []fairqueue.Request
	i    int
}

func (s *sliceSource) Next(r *fairqueue.Request) error {
	if s.i >= len(s.reqs) {
		return io.EOF
	}
	*r = s.reqs[s.i]
	s.i++
	return nil
}

// runSim replays reqs through a one-level simulator and returns the
// outcomes by request index (IDs are indices).
func runSim(t testing.TB, level fairqueue.LevelConfig, reqs []fairqueue.Request, defWL time.Duration) []fairqueue.Outcome {
	out, _ := runSimDemand(t, level, reqs, defWL)
	return out
}

// runSimDemand is runSim that also returns the level's seat-demand
// statistics at the end.
func runSimDemand(t testing.TB, level fairqueue.LevelConfig, reqs []fairqueue.Request, defWL time.Duration) ([]fairqueue.Outcome, engine.IntegratorResults) {
	out := make([]fairqueue.Outcome, len(reqs))
	sim, err := fairqueue.NewSimulator([]fairqueue.LevelConfig{level}, fairqueue.Options{
		DefaultWaitLimit: defWL,
		OnOutcome:        func(o *fairqueue.Outcome) { out[o.ID] = *o },
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(&sliceSource{reqs: reqs}); err != nil {
		t.Fatal(err)
	}
	return out, sim.SeatDemand(0)
}

// scenario is one generated single-level workload.
type scenario struct {
	level fairqueue.LevelConfig
	reqs  []fairqueue.Request
	defWL time.Duration
}

// genScenario draws a level and a workload that exercise the corners of the
// queueset: bursts of simultaneous arrivals, requests wider than the level,
// final seats with additional latency (and final seats wider than the level,
// which upstream clips), short wait limits, tiny queues, Reject and exempt
// levels.
func genScenario(r *rand.Rand) scenario {
	var lv fairqueue.LevelConfig
	lv.Name = "pl"
	switch k := r.Intn(20); {
	case k == 0:
		lv.Exempt = true
	case k <= 3:
		lv.Queues = 0 // Reject
	default:
		for {
			lv.Queues = 1 + r.Intn(64)
			if r.Intn(4) == 0 {
				lv.Queues = 1 + r.Intn(4)
			}
			lv.HandSize = 1 + r.Intn(min(lv.Queues, 8))
			if _, err := engine.NewDealer(lv.Queues, lv.HandSize); err == nil {
				break
			}
		}
		lv.QueueLengthLimit = 1 + r.Intn(8)
		if r.Intn(5) == 0 {
			lv.QueueLengthLimit = 50
		}
	}
	lv.ConcurrencyLimit = 1 + r.Intn(12)
	if r.Intn(15) == 0 {
		lv.ConcurrencyLimit = 0
	}
	nFlows := 1 + r.Intn(12)
	hashes := make([]uint64, nFlows)
	for i := range hashes {
		if lv.Queues > 1 {
			hashes[i] = engine.HashFlowID("fs", fmt.Sprintf("user-%d", r.Intn(1000)))
		}
	}
	n := 20 + r.Intn(280)
	reqs := make([]fairqueue.Request, 0, n)
	t := time.Duration(0)
	meanGap := time.Duration(50+r.Intn(5000)) * time.Microsecond
	wideP := r.Intn(4)   // 0..3 in 10
	finalP := r.Intn(4)  // 0..3 in 10
	shortWL := r.Intn(3) // 0: none, else share of short wait limits
	for len(reqs) < n {
		burst := 1
		if r.Intn(10) == 0 {
			burst = 2 + r.Intn(30)
		}
		for b := 0; b < burst && len(reqs) < n; b++ {
			f := r.Intn(nFlows)
			q := fairqueue.Request{ID: int64(len(reqs)), Arrival: t, Flow: int32(f), Hash: hashes[f], InitialSeats: 1}
			if r.Intn(10) < wideP {
				q.InitialSeats = uint64(1 + r.Intn(lv.ConcurrencyLimit+3))
			}
			if r.Intn(10) < finalP {
				q.FinalSeats = uint64(1 + r.Intn(lv.ConcurrencyLimit+3))
				q.AdditionalLatency = time.Duration(1+r.Intn(20_000_000)) + time.Duration(r.Intn(1000))
			}
			q.ServiceTime = time.Duration(1+r.Intn(200))*time.Millisecond + time.Duration(r.Intn(1_000_000))
			if r.Intn(20) == 0 {
				q.ServiceTime = time.Duration(1 + r.Intn(5000)) // a few µs
			}
			if shortWL > 0 && r.Intn(3) < shortWL {
				q.WaitLimit = time.Duration(1+r.Intn(400))*time.Millisecond + time.Duration(r.Intn(1000))
			}
			reqs = append(reqs, q)
		}
		t += time.Duration(r.ExpFloat64()*float64(meanGap)) + time.Duration(r.Intn(1000))
	}
	return scenario{level: lv, reqs: reqs, defWL: 15 * time.Second}
}

// compare returns a description of the first disagreement, or "".
func compare(want, got []fairqueue.Outcome) string {
	var b strings.Builder
	for i := range want {
		w, g := want[i], got[i]
		if w.Reason != g.Reason {
			fmt.Fprintf(&b, "request %d: upstream %q, simulator %q", i, reasonText(w.Reason), reasonText(g.Reason))
			return b.String()
		}
		if w.Seq != g.Seq {
			fmt.Fprintf(&b, "request %d: upstream dispatch #%d, simulator #%d", i, w.Seq, g.Seq)
			return b.String()
		}
		if d := w.Start - g.Start; d > time.Millisecond || d < -time.Millisecond {
			fmt.Fprintf(&b, "request %d: upstream start %v, simulator %v", i, w.Start, g.Start)
			return b.String()
		}
	}
	return ""
}

func reasonText(r fairqueue.Reason) string {
	if r == fairqueue.Executed {
		return "executed"
	}
	return r.String()
}

// TestFidelityAgainstUpstream replays generated scenarios through upstream's
// queueset (fake event clock) and through the simulator, and requires the
// same outcome for every request, the same dispatch order and start times
// within 1 ms (they are in fact equal).
func TestFidelityAgainstUpstream(t *testing.T) {
	n := 1200
	if testing.Short() {
		n = 200
	}
	var tot, rejected, timedOut, executed int
	for seed := int64(1); seed <= int64(n); seed++ {
		sc := genScenario(rand.New(rand.NewSource(seed)))
		want, wantDemand := runUpstreamDemand(sc.level, sc.reqs, sc.defWL)
		got, gotDemand := runSimDemand(t, sc.level, sc.reqs, sc.defWL)
		if diff := compare(want, got); diff != "" {
			t.Fatalf("seed %d (%+v, %d requests): %s", seed, sc.level, len(sc.reqs), diff)
		}
		// the seat demand that feeds borrowing must match too
		if !approx(wantDemand.Duration, gotDemand.Duration) || wantDemand.Max != gotDemand.Max || wantDemand.Min != gotDemand.Min ||
			!approx(wantDemand.Average, gotDemand.Average) || !approx(wantDemand.Deviation, gotDemand.Deviation) {
			t.Fatalf("seed %d: seat demand upstream %+v, simulator %+v", seed, wantDemand, gotDemand)
		}
		for _, o := range want {
			tot++
			switch o.Reason {
			case fairqueue.Executed:
				executed++
			case fairqueue.RejectedTimeOut:
				timedOut++
			default:
				rejected++
			}
		}
	}
	t.Logf("%d scenarios, %d requests: %d executed, %d rejected at arrival, %d timed out", n, tot, executed, rejected, timedOut)
	if executed == 0 || rejected == 0 || timedOut == 0 {
		t.Fatalf("the generated scenarios do not cover every outcome")
	}
}

var _ = errors.New

// approx compares floats to 1e-9 relative (the integrals add the same terms
// in the same order, but upstream's clock is a time.Time).
func approx(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// FuzzFidelity lets `go test -fuzz` search for a generated scenario on which
// the simulator and upstream disagree; the seeds run in plain `go test`.
func FuzzFidelity(f *testing.F) {
	for _, seed := range []int64{0, 7, 42, 1 << 40} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed int64) {
		sc := genScenario(rand.New(rand.NewSource(seed)))
		if diff := compare(runUpstream(sc.level, sc.reqs, sc.defWL), runSim(t, sc.level, sc.reqs, sc.defWL)); diff != "" {
			t.Fatalf("seed %d (%+v): %s", seed, sc.level, diff)
		}
	})
}
