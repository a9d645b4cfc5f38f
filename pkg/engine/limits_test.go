package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestIdleBorrowingDefaults checks the limits of the default levels right
// after start-up, as upstream's updateBorrowingLocked
// (k8s.io/apiserver/pkg/util/flowcontrol/apf_controller.go) sets them: idle
// levels are scaled up by 602/258 from their lower limits.
func TestIdleBorrowingDefaults(t *testing.T) {
	ls := ComputeLimits(DefaultPriorityLevels(), DefaultServerConcurrencyLimit)
	cur := AllocateCurrentLimits(ls, nil, nil, DefaultServerConcurrencyLimit)
	want := map[string]int{"exempt": 0, "catch-all": 30, "system": 117, "node-high": 170, "leader-election": 58, "workload-high": 114, "workload-low": 56, "global-default": 56}
	for name, w := range want {
		if cur.CurrentCL[name] != w {
			t.Errorf("%s: current %d, want %d", name, cur.CurrentCL[name], w)
		}
	}
	if cur.Branch != BranchFairShare || math.Abs(cur.FairFrac-602.0/258.0) > 1e-12 {
		t.Errorf("branch %s fair frac %v, want fair-share %v", cur.Branch, cur.FairFrac, 602.0/258.0)
	}
	if d := cur.ConcurrencyDenominator["exempt"]; d != 60 {
		t.Errorf("exempt denominator %d, want max(1, round(600/10)) = 60", d)
	}
}

func TestBorrowingBranches(t *testing.T) {
	ls := ComputeLimits(DefaultPriorityLevels(), DefaultServerConcurrencyLimit)
	t.Run("exempt demand does not shrink the fair-share sum", func(t *testing.T) {
		cur := AllocateCurrentLimits(ls, map[string]SeatDemandStats{
			"exempt":         {HighWatermark: 100},
			"global-default": {HighWatermark: 300, Smoothed: 300},
		}, nil, 600)
		sum := 0
		for name, cl := range cur.CurrentCL {
			if name != "exempt" {
				sum += cl
			}
		}
		if cur.CurrentCL["exempt"] != 100 || sum < 600 || sum > 604 || cur.Branch != BranchFairShare {
			t.Errorf("exempt %d, non-exempt sum %d (want about 602), branch %s", cur.CurrentCL["exempt"], sum, cur.Branch)
		}
		if cur.CurrentCL["global-default"] <= 56 {
			t.Errorf("global-default should borrow beyond its idle 56, got %d", cur.CurrentCL["global-default"])
		}
	})
	t.Run("prorated", func(t *testing.T) {
		cur := AllocateCurrentLimits(ls, map[string]SeatDemandStats{
			"exempt":         {HighWatermark: 302},
			"global-default": {HighWatermark: 49},
			"workload-low":   {HighWatermark: 245},
		}, nil, 600)
		// remaining 300, lower sum 258, raised minimum sum 504:
		// shareFrac 42/246.
		if cur.Branch != BranchProrated || cur.CurrentCL["global-default"] != 28 || cur.CurrentCL["workload-low"] != 62 || cur.CurrentCL["system"] != 50 || cur.FairFrac != 0 {
			t.Errorf("branch %s current %v", cur.Branch, cur.CurrentCL)
		}
	})
	t.Run("lower bounds", func(t *testing.T) {
		cur := AllocateCurrentLimits(ls, map[string]SeatDemandStats{"exempt": {HighWatermark: 500}}, nil, 600)
		for _, l := range ls {
			if !l.Exempt && cur.CurrentCL[l.Name] != l.LowerCL {
				t.Errorf("%s: %d, want its lower limit %d", l.Name, cur.CurrentCL[l.Name], l.LowerCL)
			}
		}
		if cur.Branch != BranchLowerBounds {
			t.Errorf("branch %s", cur.Branch)
		}
	})
}

func TestIntegratorAndStats(t *testing.T) {
	t0 := 1000 * time.Second
	var g Integrator
	g.Reset(t0) // the period starts at t0
	g.Set(t0, 0)
	g.Set(t0+5*time.Second, 10)
	r := g.Reset(t0 + 10*time.Second)
	if r.Duration != 10 || r.Average != 5 || r.Deviation != 5 || r.Min != 0 || r.Max != 10 {
		t.Fatalf("results %+v", r)
	}
	var s SeatDemandStats
	s.Update(r)
	if s.HighWatermark != 10 || s.Smoothed != 10 {
		t.Fatalf("stats %+v", s)
	}
	g.Set(t0+10*time.Second, 0)
	r = g.Reset(t0 + 20*time.Second)
	if r.Max != 10 || r.Min != 0 || r.Average != 0 { // min/max restart from the value at reset (10)
		t.Fatalf("second period %+v", r)
	}
	s.Update(r)
	if s.HighWatermark != 10 || math.Abs(s.Smoothed-9.77) > 1e-12 {
		t.Fatalf("stats after idle period %+v, want smoothed 0.977*10", s)
	}
	var fresh Integrator
	empty := fresh.Results(0)
	if !math.IsNaN(empty.Average) || !math.IsNaN(empty.Deviation) {
		t.Errorf("empty period %+v, want NaN average and deviation", empty)
	}
	s.Update(IntegratorResults{Duration: 0, Max: 3.6})
	if s.HighWatermark != 4 || math.Abs(s.Smoothed-9.77) > 1e-12 {
		t.Errorf("empty period must only move the high watermark: %+v", s)
	}
}

// TestComputeConcurrencyAllocationProperties checks the solver's contract
// on random problems: allocations within bounds, summing to the requirement,
// each either fairProp*target or at a bound.
func TestComputeConcurrencyAllocationProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	solved := 0
	for i := 0; i < 20000; i++ {
		n := 1 + r.IntN(8)
		items := make([]AllocItem, n)
		for j := range items {
			lo := float64(r.IntN(50))
			items[j] = AllocItem{Lower: lo, Target: lo + float64(r.IntN(100))*r.Float64(), Upper: lo + float64(r.IntN(700))}
		}
		req := r.IntN(1500)
		allocs, fair, err := ComputeConcurrencyAllocation(req, items)
		if err != nil {
			continue
		}
		solved++
		sum := 0.0
		for j, a := range allocs {
			it := items[j]
			sum += a
			if a < it.Lower-1e-9 || a > it.Upper+1e-9 {
				t.Fatalf("alloc %v outside [%v, %v]", a, it.Lower, it.Upper)
			}
			tgt := math.Max(it.Target, MinTarget)
			if math.Abs(a-fair*tgt) > 1e-6*math.Max(1, a) && math.Abs(a-it.Lower) > 1e-9 && math.Abs(a-it.Upper) > 1e-9 {
				t.Fatalf("alloc %v is neither %v*%v nor a bound of %+v", a, fair, tgt, it)
			}
		}
		if math.Abs(sum-float64(req)) > 1e-6*math.Max(1, float64(req)) {
			t.Fatalf("allocs sum to %v, want %d (items %+v)", sum, req, items)
		}
	}
	if solved < 5000 {
		t.Errorf("only %d problems were solvable; the generator is off", solved)
	}
}

func TestInferServerConcurrencyLimit(t *testing.T) {
	tests := []struct {
		nominal, upper float64
		want           int
		wantErr        string
	}{
		{0, 600, 600, ""}, {13, 613, 600, ""}, {5, 5, 0, "positive integer"},
		{1, 2.5, 0, "positive integer"}, {math.NaN(), 3, 0, "positive integer"},
	}
	for _, tt := range tests {
		got, err := InferServerConcurrencyLimit(tt.nominal, tt.upper)
		if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) || got != tt.want {
			t.Errorf("(%v, %v): %d, %v; want %d, %q", tt.nominal, tt.upper, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestCandidateQueues(t *testing.T) {
	tests := []struct {
		name string
		hand []int
		work map[int]uint64
		want []int
	}{
		{"all empty: any of the hand", []int{55, 62, 126}, nil, []int{55, 62, 126}},
		{"minimal sums only", []int{5, 3, 9}, map[int]uint64{5: 300000, 3: 0, 9: 0}, []int{3, 9}},
		{"one minimum", []int{5, 3, 9}, map[int]uint64{5: 1, 3: 2, 9: 3}, []int{5}},
		{"empty hand", nil, nil, nil},
	}
	for _, tt := range tests {
		if got := CandidateQueues(tt.hand, tt.work); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
