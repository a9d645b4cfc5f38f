package engine

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"
)

// SeatDemandSmoothingCoefficient is the weight of the previous smoothed seat
// demand in each borrowing period (apf_controller.go:
// seatDemandSmoothingCoefficient); the half-life is about 30 periods.
const SeatDemandSmoothingCoefficient = 0.977

// BorrowingAdjustmentPeriod is how often the server recomputes the current
// limits (apf_controller.go: borrowingAdjustmentPeriod).
const BorrowingAdjustmentPeriod = 10 * time.Second

// IntegratorResults are the statistics of a piecewise-constant quantity over
// a period (fairqueuing/integrator.go:IntegratorResults).
type IntegratorResults struct {
	// Duration of the period in seconds.
	Duration float64
	// Average is the time-weighted average (NaN for an empty period).
	Average float64
	// Deviation is the time-weighted standard deviation (NaN when empty or
	// when rounding makes the variance negative).
	Deviation float64
	// Min and Max are the extreme values seen (including the value at the
	// start of the period).
	Min, Max float64
}

// Integrator integrates a piecewise-constant quantity (the seat demand of a
// level) over time, like fairqueuing/integrator.go but with the time passed
// in explicitly so a simulator can drive it. A time is a time.Duration since
// an origin of the caller's choosing, the same for every call (a replay's
// simulated time zero, the Unix epoch of a log's times): upstream's
// now.Sub(last).Seconds() of two instants is (now-last).Seconds() of their
// offsets from the origin (for instants less than 292 years apart), so the arithmetic is upstream's, in upstream's
// order, without a time.Time at every change. The zero value starts at the
// origin with value 0. It is not safe for concurrent use.
type Integrator struct {
	last             time.Duration
	x                float64
	elapsed, ix, ixx float64
	min, max         float64
}

func (g *Integrator) update(now time.Duration) {
	dt := (now - g.last).Seconds()
	g.last = now
	g.elapsed += dt
	g.ix += g.x * dt
	g.ixx += g.x * g.x * dt
}

// Set changes the value at time now.
func (g *Integrator) Set(now time.Duration, x float64) {
	g.update(now)
	g.x = x
	if x < g.min {
		g.min = x
	}
	if x > g.max {
		g.max = x
	}
}

// Add changes the value by dx at time now.
func (g *Integrator) Add(now time.Duration, dx float64) { g.Set(now, g.x+dx) }

// Results integrates up to now and returns the statistics since the start
// or the last Reset.
func (g *Integrator) Results(now time.Duration) IntegratorResults {
	g.update(now)
	r := IntegratorResults{Duration: g.elapsed, Min: g.min, Max: g.max}
	if g.elapsed <= 0 {
		r.Average, r.Deviation = math.NaN(), math.NaN()
		return r
	}
	r.Average = g.ix / g.elapsed
	variance := g.ixx/g.elapsed - r.Average*r.Average
	if variance >= 0 {
		r.Deviation = math.Sqrt(variance)
	} else {
		r.Deviation = math.NaN()
	}
	return r
}

// Reset returns Results(now) and starts a new period at now, with min and
// max reset to the current value (integrator.go:Reset).
func (g *Integrator) Reset(now time.Duration) IntegratorResults {
	r := g.Results(now)
	g.elapsed, g.ix, g.ixx = 0, 0, 0
	g.min, g.max = g.x, g.x
	return r
}

// SeatDemandStats are the per-level seat-demand statistics the borrowing
// pass uses (apf_controller.go:seatDemandStats).
type SeatDemandStats struct {
	// Avg and StdDev are those of the last period.
	Avg, StdDev float64
	// HighWatermark is round(max) of the last period (an int since v0.31).
	HighWatermark int
	// Max is the unrounded high watermark, which releases up to 1.30 use
	// (Release.ExemptInBorrowingPool).
	Max float64
	// Smoothed is max(envelope, 0.977*smoothed + 0.023*envelope) with
	// envelope = avg + stdDev.
	Smoothed float64
}

// Update folds one period's integrator results in, as
// apf_controller.go:(*seatDemandStats).update: an empty period only updates
// the high watermark; a NaN deviation counts as 0.
func (s *SeatDemandStats) Update(obs IntegratorResults) {
	s.HighWatermark = int(math.Round(obs.Max))
	s.Max = obs.Max
	if obs.Duration <= 0 {
		return
	}
	if math.IsNaN(obs.Deviation) {
		obs.Deviation = 0
	}
	s.Avg, s.StdDev = obs.Average, obs.Deviation
	envelope := obs.Average + obs.Deviation
	s.Smoothed = math.Max(envelope, SeatDemandSmoothingCoefficient*s.Smoothed+(1-SeatDemandSmoothingCoefficient)*envelope)
}

// Borrowing branches of updateBorrowingLocked.
const (
	// BranchLowerBounds: exempt's reservation leaves no more than the sum of
	// the non-exempt lower limits; every level gets its lower limit.
	BranchLowerBounds = "lower-bounds"
	// BranchProrated: the remainder lies between the lower limits and the
	// demand-raised minimums; the difference is prorated.
	BranchProrated = "prorated"
	// BranchFairShare: the fair-share solve (computeConcurrencyAllocation)
	// over the nominal limit sum.
	BranchFairShare = "fair-share"
	// BranchFairShareWithExempt: releases up to 1.30 always solve the fair
	// share, with exempt levels among the items.
	BranchFairShareWithExempt = "fair-share-with-exempt"
)

// CurrentLimits is the result of one borrowing pass.
type CurrentLimits struct {
	// CurrentCL is the current concurrency limit per level
	// (current_limit_seats).
	CurrentCL map[string]int
	// Target is the fair-share target per non-exempt level (target_seats;
	// the server's value for exempt is an arbitrary other level's, so it is
	// not reproduced).
	Target map[string]float64
	// ConcurrencyDenominator is what the level's seat-demand ratio gauges
	// divide by: CurrentCL, or max(1, round(serverCL/10)) when that is 0.
	ConcurrencyDenominator map[string]int
	// FairFrac is seat_fair_frac (0 outside the fair-share branch).
	FairFrac float64
	// Branch says which case applied.
	Branch string
	// Err is set when the fair-share solve failed; the previous limits are
	// kept then, as upstream.
	Err error
}

// AllocateCurrentLimits performs the periodic borrowing pass of
// apf_controller.go:(*configController).updateBorrowingLocked (v0.31+) as a
// pure function: the limits from Limits, each level's seat-demand stats
// (already updated for the period; missing means zero demand) and each
// level's previous current limit (used only if the solve fails).
//
// Exempt levels first reserve max(lower, high watermark); each non-exempt
// level gets lower bound max(lower, min(nominal, high watermark)), upper
// bound its upper limit and target max(lower bound, smoothed). Note that the
// fair-share branch distributes the whole nominal sum, not what is left
// after exempt's reservation, exactly as upstream.
func AllocateCurrentLimits(levels []LevelLimits, stats map[string]SeatDemandStats, previous map[string]int, serverConcurrencyLimit int) CurrentLimits {
	return AllocateCurrentLimitsFor(NewestRelease, levels, stats, previous, serverConcurrencyLimit)
}

// AllocateCurrentLimitsFor is AllocateCurrentLimits as release rel does it:
// up to 1.30 (Release.ExemptInBorrowingPool) every level, exempt included,
// is an item of one fair-share solve over the nominal limit sum, with lower
// bound max(lower, min(nominal, unrounded high watermark)) (k8s.io/apiserver
// v0.30 apf_controller.go:updateBorrowingLocked).
func AllocateCurrentLimitsFor(rel Release, levels []LevelLimits, stats map[string]SeatDemandStats, previous map[string]int, serverConcurrencyLimit int) CurrentLimits {
	if rel.ExemptInBorrowingPool() {
		return allocateCurrentLimits130(levels, stats, previous, serverConcurrencyLimit)
	}
	out := CurrentLimits{
		CurrentCL:              map[string]int{},
		Target:                 map[string]float64{},
		ConcurrencyDenominator: map[string]int{},
	}
	nominalSum := 0
	for _, l := range levels {
		nominalSum += l.NominalCL
	}
	remaining := nominalSum
	var items []AllocItem
	idx := map[string]int{}
	minCurrent := map[string]int{}
	var lowerSum, minCurrentSum int
	for _, l := range levels {
		s := stats[l.Name]
		if l.Exempt {
			m := max(l.LowerCL, s.HighWatermark)
			out.CurrentCL[l.Name] = m
			remaining -= m
			continue
		}
		m := max(l.LowerCL, min(l.NominalCL, s.HighWatermark))
		minCurrent[l.Name] = m
		idx[l.Name] = len(items)
		items = append(items, AllocItem{Lower: float64(m), Upper: float64(l.UpperCL), Target: math.Max(float64(m), s.Smoothed)})
		out.Target[l.Name] = items[len(items)-1].Target
		lowerSum += l.LowerCL
		minCurrentSum += m
	}
	var allocs []float64
	var shareFrac float64
	switch {
	case remaining <= lowerSum:
		out.Branch = BranchLowerBounds
	case remaining <= minCurrentSum:
		out.Branch = BranchProrated
		shareFrac = float64(remaining-lowerSum) / float64(minCurrentSum-lowerSum)
	default:
		out.Branch = BranchFairShare
		var err error
		allocs, out.FairFrac, err = ComputeConcurrencyAllocation(nominalSum, items)
		if err != nil {
			out.Err = fmt.Errorf("deriving current limits: %w", err)
			allocs = make([]float64, len(items))
			for _, l := range levels {
				if i, ok := idx[l.Name]; ok {
					allocs[i] = float64(previous[l.Name])
				}
			}
		}
	}
	for _, l := range levels {
		if l.Exempt {
			continue
		}
		var cl int
		switch out.Branch {
		case BranchLowerBounds:
			cl = l.LowerCL
		case BranchProrated:
			cl = l.LowerCL + int(math.Round(float64(minCurrent[l.Name]-l.LowerCL)*shareFrac))
		default:
			cl = int(math.Round(allocs[idx[l.Name]]))
		}
		out.CurrentCL[l.Name] = cl
	}
	out.setDenominators(serverConcurrencyLimit)
	return out
}

func (out *CurrentLimits) setDenominators(serverConcurrencyLimit int) {
	for name, cl := range out.CurrentCL {
		d := cl
		if d <= 0 {
			d = int(math.Max(1, math.Round(float64(serverConcurrencyLimit)/10)))
		}
		out.ConcurrencyDenominator[name] = d
	}
}

// allocateCurrentLimits130 is updateBorrowingLocked of k8s.io/apiserver
// v0.29 and v0.30.
func allocateCurrentLimits130(levels []LevelLimits, stats map[string]SeatDemandStats, previous map[string]int, serverConcurrencyLimit int) CurrentLimits {
	out := CurrentLimits{
		CurrentCL:              map[string]int{},
		Target:                 map[string]float64{},
		ConcurrencyDenominator: map[string]int{},
		Branch:                 BranchFairShareWithExempt,
	}
	nominalSum := 0
	for _, l := range levels {
		nominalSum += l.NominalCL
	}
	items := make([]AllocItem, 0, len(levels))
	for _, l := range levels {
		s := stats[l.Name]
		m := math.Max(float64(l.LowerCL), math.Min(float64(l.NominalCL), s.Max))
		items = append(items, AllocItem{Lower: m, Upper: float64(l.UpperCL), Target: math.Max(m, s.Smoothed)})
		out.Target[l.Name] = items[len(items)-1].Target
	}
	allocs, fairFrac, err := ComputeConcurrencyAllocation(nominalSum, items)
	if err != nil {
		out.Err = fmt.Errorf("deriving current limits: %w", err)
		allocs = make([]float64, len(items))
		for i, l := range levels {
			allocs[i] = float64(previous[l.Name])
		}
	}
	out.FairFrac = fairFrac
	for i, l := range levels {
		out.CurrentCL[l.Name] = int(math.Round(allocs[i]))
	}
	out.setDenominators(serverConcurrencyLimit)
	return out
}

// AllocItem is one class of the fair-share problem (conc_alloc.go:allocProblemItem).
type AllocItem struct {
	// Target is the desired allocation before scaling.
	Target float64
	// Lower and Upper bound the allocation.
	Lower, Upper float64
}

// MinTarget is the smallest target the solver uses; smaller ones are raised
// to it to avoid dividing by zero (conc_alloc.go:MinTarget).
const MinTarget = 0.001

const allocEpsilon = 0.0000001

// ComputeConcurrencyAllocation mirrors conc_alloc.go:computeConcurrencyAllocation:
// it finds allocations summing to requiredSum with each one
// clamp(fairProp*target, lower, upper) for a single fairProp, and returns
// them with fairProp. It fails when the bounds make requiredSum unreachable
// or an item is inconsistent (target < lower, upper < lower, lower < 0).
// The floating-point steps are upstream's, in upstream's order, so results
// are bit-identical.
func ComputeConcurrencyAllocation(requiredSum int, classes []AllocItem) ([]float64, float64, error) {
	if requiredSum < 0 {
		return nil, 0, errors.New("negative sums are not supported")
	}
	requiredSumF := float64(requiredSum)
	var lowSum, highSum, targetSum float64
	ubMin, ubMax := float64(math.MaxFloat32), 0.0
	lbMin, lbMax := float64(math.MaxFloat32), 0.0
	rel := make([]relItem, len(classes))
	for i, item := range classes {
		target := item.Target
		if item.Lower < 0 {
			return nil, 0, fmt.Errorf("lower bound %d is %v but negative lower bounds are not allowed", i, item.Lower)
		}
		if target < item.Lower {
			return nil, 0, fmt.Errorf("target %d is %v, which is below its lower bound of %v", i, target, item.Lower)
		}
		if item.Upper < item.Lower {
			return nil, 0, fmt.Errorf("upper bound %d is %v but should not be less than the lower bound %v", i, item.Upper, item.Lower)
		}
		if target < MinTarget {
			target = MinTarget
		}
		lowSum += item.Lower
		highSum += item.Upper
		targetSum += target
		r := relItem{target: target, lower: item.Lower / target, upper: item.Upper / target}
		// minMax.note in upstream starts max at 0 (the zero value).
		ubMin, ubMax = math.Min(ubMin, r.upper), math.Max(ubMax, r.upper)
		lbMin, lbMax = math.Min(lbMin, r.lower), math.Max(lbMax, r.lower)
		rel[i] = r
	}
	if lbMax > 1 {
		return nil, 0, fmt.Errorf("lbRange.max-1=%v, which is impossible because lbRange.max can not be greater than 1", lbMax-1)
	}
	if lowSum-requiredSumF > allocEpsilon {
		return nil, 0, fmt.Errorf("lower bounds sum to %v, which is higher than the required sum of %v", lowSum, requiredSum)
	}
	if requiredSumF-highSum > allocEpsilon {
		return nil, 0, fmt.Errorf("upper bounds sum to %v, which is lower than the required sum of %v", highSum, requiredSum)
	}
	ans := make([]float64, len(classes))
	if requiredSum == 0 {
		return ans, 0, nil
	}
	if lowSum-requiredSumF > -allocEpsilon {
		for i, item := range classes {
			ans[i] = item.Lower
		}
		return ans, lbMin, nil
	}
	if requiredSumF-highSum > -allocEpsilon {
		for i, item := range classes {
			ans[i] = item.Upper
		}
		return ans, ubMax, nil
	}
	fairProp := requiredSumF / targetSum
	if lbMax <= fairProp && fairProp <= ubMin {
		for i := range classes {
			ans[i] = rel[i].target * fairProp
		}
		return ans, fairProp, nil
	}
	// Some bounds matter: sweep fairProp upward over the sorted relative
	// bounds. Bound 2*N is item N's lower bound, 2*N+1 its upper bound;
	// sort.Sort (not stable) over the same Less gives upstream's order.
	rap := &relProblem{items: rel, asc: make([]int, 2*len(rel))}
	for i := range rap.asc {
		rap.asc[i] = i
	}
	sort.Sort(rap)
	sumSoFar := lowSum
	fairProp = lbMin
	var sensitiveTargetSum, deltaSensitiveTargetSum float64
	var numSensitive, deltaSensitive int
	var next int
	for sumSoFar < requiredSumF {
		var nextBound float64
		for {
			sensitiveTargetSum += deltaSensitiveTargetSum
			numSensitive += deltaSensitive
			if next >= rap.Len() {
				return nil, 0, fmt.Errorf("impossible: ran out of bounds to consider in bound-constrained problem")
			}
			var itemIdx int
			var lower bool
			nextBound, itemIdx, lower = rap.decode(next)
			if lower {
				deltaSensitive, deltaSensitiveTargetSum = 1, rap.items[itemIdx].target
			} else {
				deltaSensitive, deltaSensitiveTargetSum = -1, -rap.items[itemIdx].target
			}
			next++
			if nextBound > fairProp {
				break
			}
		}
		if numSensitive == 0 {
			fairProp = nextBound
			continue
		}
		nextProp := fairProp + (requiredSumF-sumSoFar)/sensitiveTargetSum
		if nextProp <= nextBound {
			fairProp = nextProp
			break
		}
		sumSoFar += (nextBound - fairProp) * sensitiveTargetSum
		fairProp = nextBound
	}
	for i, item := range classes {
		ans[i] = math.Max(item.Lower, math.Min(item.Upper, fairProp*rel[i].target))
	}
	return ans, fairProp, nil
}

type relItem struct{ target, lower, upper float64 }

type relProblem struct {
	items []relItem
	asc   []int
}

func (p *relProblem) decode(i int) (float64, int, bool) {
	packed := p.asc[i]
	item := packed / 2
	if packed == item*2 {
		return p.items[item].lower, item, true
	}
	return p.items[item].upper, item, false
}

func (p *relProblem) Len() int { return len(p.asc) }
func (p *relProblem) Less(i, j int) bool {
	a, _, _ := p.decode(i)
	b, _, _ := p.decode(j)
	return a < b
}
func (p *relProblem) Swap(i, j int) { p.asc[i], p.asc[j] = p.asc[j], p.asc[i] }
