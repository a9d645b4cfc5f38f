package fairqueue_test

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
)

// multiScenario is several levels sharing a server, with the periodic
// borrowing between them.
type multiScenario struct {
	levels []fairqueue.LevelConfig
	limits []engine.LevelLimits
	reqs   []fairqueue.Request
	server int
}

// borrowFunc is the config controller's pass: engine.AllocateCurrentLimits
// over the scenario's limits, remembering the previous limits.
func (sc *multiScenario) borrowFunc() fairqueue.BorrowFunc {
	prev := map[string]int{}
	for _, l := range sc.levels {
		prev[l.Name] = l.ConcurrencyLimit
	}
	return func(stats []engine.SeatDemandStats) []int {
		m := map[string]engine.SeatDemandStats{}
		for i, s := range stats {
			m[sc.limits[i].Name] = s
		}
		cur := engine.AllocateCurrentLimits(sc.limits, m, prev, sc.server)
		out := make([]int, len(sc.levels))
		for i, l := range sc.levels {
			out[i] = cur.CurrentCL[l.Name]
			prev[l.Name] = out[i]
		}
		return out
	}
}

func genMultiScenario(r *rand.Rand) multiScenario {
	sc := multiScenario{server: 10 + r.Intn(40)}
	n := 2 + r.Intn(3)
	for i := range n {
		one := genScenario(r).level // reuse the single-level level generator
		one.Name = fmt.Sprintf("pl-%d", i)
		if one.Exempt && i > 0 {
			one.Exempt, one.Queues = false, 0
		}
		nominal := 1 + r.Intn(sc.server/2)
		lend := nominal * r.Intn(101) / 100
		lim := engine.LevelLimits{Name: one.Name, Exempt: one.Exempt, Queuing: one.Queues > 0, NominalCL: nominal, LendableCL: lend,
			LowerCL: nominal - lend, BorrowingCL: sc.server, UpperCL: nominal + sc.server}
		if one.Exempt {
			lim.NominalCL, lim.LendableCL, lim.LowerCL, lim.UpperCL = 0, 0, 0, sc.server
		}
		if r.Intn(3) == 0 && !one.Exempt {
			lim.BorrowingCL = nominal * r.Intn(200) / 100
			lim.UpperCL = nominal + lim.BorrowingCL
		}
		sc.limits = append(sc.limits, lim)
		one.ConcurrencyLimit = nominal - lend/2 // upstream's initial limit of a new level
		if one.Exempt {
			one.ConcurrencyLimit = 0
		}
		sc.levels = append(sc.levels, one)
	}
	// ~40 s of traffic with quiet spells and bursts, so several borrowing
	// passes see different demand
	total := 200 + r.Intn(800)
	t := time.Duration(0)
	for len(sc.reqs) < total {
		l := r.Intn(n)
		if r.Intn(3) == 0 {
			l = 0 // one busier level
		}
		burst := 1
		if r.Intn(15) == 0 {
			burst = 2 + r.Intn(40)
		}
		for b := 0; b < burst && len(sc.reqs) < total; b++ {
			q := fairqueue.Request{ID: int64(len(sc.reqs)), Arrival: t, Level: l, Flow: int32(r.Intn(8)), InitialSeats: 1,
				ServiceTime: time.Duration(r.ExpFloat64()*float64(400*time.Millisecond)) + time.Duration(1+r.Intn(1000))}
			if sc.levels[l].Queues > 1 {
				q.Hash = engine.HashFlowID(sc.levels[l].Name, fmt.Sprint(q.Flow))
			}
			if r.Intn(10) == 0 {
				q.InitialSeats = uint64(1 + r.Intn(6))
			}
			if r.Intn(10) == 0 {
				q.FinalSeats = uint64(1 + r.Intn(8))
				q.AdditionalLatency = time.Duration(1 + r.Intn(30_000_000))
			}
			if r.Intn(4) == 0 {
				q.WaitLimit = time.Duration(1+r.Intn(3000))*time.Millisecond + time.Duration(r.Intn(1000))
			}
			sc.reqs = append(sc.reqs, q)
		}
		gap := time.Duration(r.ExpFloat64() * float64(40*time.Millisecond))
		if r.Intn(40) == 0 {
			gap += time.Duration(r.Intn(12)) * time.Second // a quiet spell
		}
		t += gap + time.Duration(r.Intn(1000))
	}
	return sc
}

// levelRanks turns global dispatch numbers into each request's rank among
// its level's dispatches. Levels are independent queue sets: only the order
// within a level is upstream's (two levels releasing seats at the very same
// nanosecond run concurrently in upstream's event clock).
func levelRanks(out []fairqueue.Outcome) []fairqueue.Outcome {
	idx := make([]int, 0, len(out))
	for i, o := range out {
		if o.Seq >= 0 {
			idx = append(idx, i)
		}
	}
	sort.Slice(idx, func(a, b int) bool { return out[idx[a]].Seq < out[idx[b]].Seq })
	ranked := append([]fairqueue.Outcome(nil), out...)
	next := map[int]int64{}
	for _, i := range idx {
		ranked[i].Seq = next[out[i].Level]
		next[out[i].Level]++
	}
	return ranked
}

// TestFidelityMultiLevelBorrowing drives several upstream queuesets on one
// fake clock, with the config controller's periodic borrowing played by
// engine.AllocateCurrentLimits over upstream's own seat-demand integrators,
// against the simulator doing the same with its own.
func TestFidelityMultiLevelBorrowing(t *testing.T) {
	n := 150
	if testing.Short() {
		n = 30
	}
	var reqs, rejected, changes int
	for seed := int64(1); seed <= int64(n); seed++ {
		sc := genMultiScenario(rand.New(rand.NewSource(1000 + seed)))
		want, _ := runUpstreamLevels(sc.levels, sc.reqs, 15*time.Second, sc.borrowFunc())

		got := make([]fairqueue.Outcome, len(sc.reqs))
		borrow := sc.borrowFunc()
		var seen []int
		sim, err := fairqueue.NewSimulator(sc.levels, fairqueue.Options{
			OnOutcome: func(o *fairqueue.Outcome) { got[o.ID] = *o },
			Borrow: func(st []engine.SeatDemandStats) []int {
				l := borrow(st)
				seen = append(seen, l...)
				return l
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sim.Run(&sliceSource{reqs: sc.reqs}); err != nil {
			t.Fatal(err)
		}
		if diff := compare(levelRanks(want), levelRanks(got)); diff != "" {
			t.Fatalf("seed %d (levels %+v): %s", seed, sc.levels, diff)
		}
		for i := len(sc.levels); i < len(seen); i++ {
			if seen[i] != seen[i-len(sc.levels)] {
				changes++
			}
		}
		for _, o := range want {
			reqs++
			if o.Reason != fairqueue.Executed {
				rejected++
			}
		}
	}
	t.Logf("%d multi-level scenarios, %d requests, %d rejected, %d limit changes by borrowing", n, reqs, rejected, changes)
	if changes == 0 || rejected == 0 {
		t.Fatal("the scenarios never change a limit or never reject: they test nothing")
	}
}
