package calibrate

import (
	"cmp"
	"slices"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// stalledGaps takes the stalls between executions out of the overhead of
// the CPU model's level la, where it has one seat and recorded execution
// times (httplog's). On a level of one seat, a request that waited is
// dispatched when the execution before it ends, and its execution starts
// once its goroutine runs: the gap between the two is the overhead a
// dispatch from a queue adds to the seat hold, which the level's
// saturated time measures on average. A server held to its quota wakes
// most of them at once (0.17 to 0.21 ms at the median on the starved
// recordings), but where the quota ran out as one was woken the gap lasts
// until the next period (4 to 12 gaps of 20 ms or more per recording,
// three quarters of the gaps' time): a stall, which the CPU model places
// where its quota runs out, as it places the stalled executions. So the
// gaps that took as long as a stalled execution (StallFactor times their
// median and StallMin more) count for the median gap, as a stalled
// execution counts for its level's median, and their time beyond it comes
// off the level's saturated time, overall and in each time window: down to
// the median gap, not below it. Every dispatch from a queue holds its seat
// that long before its execution starts, which the gaps measure one by
// one, where the saturated time measures it only on average, and on the
// starved recordings often less than the stalled gaps' time (on seeds 2,
// 4, 8, 14 and 17 their excess was 0.3–3.8 ms a dispatch, the saturated
// time's overhead 0.09–2.4 ms), which left the level no overhead at all.
func (r *Result) stalledGaps(la *levelAcc, limits map[string]engine.LevelLimits) {
	if la == nil || seatLimit(limits[la.name]) != 1 || la.recorded.n < r.params.MinEvidence {
		return
	}
	var lv *Level
	for i := range r.Levels {
		if r.Levels[i].Level == la.name && r.Levels[i].Source == SourceSaturated && r.Levels[i].Seats > 0 {
			lv = &r.Levels[i]
		}
	}
	if lv == nil {
		return
	}
	xs := la.recorded.all()
	slices.SortFunc(xs, func(a, b serialExec) int { return cmp.Compare(a.end, b.end) })
	type gap struct {
		d  time.Duration
		at time.Duration // the dispatch it delayed
	}
	var gaps []gap
	for j := 1; j < len(xs); j++ {
		if xs[j].arrival < xs[j-1].end {
			// it waited for the one before: dispatched as that one ended
			gaps = append(gaps, gap{d: xs[j].start - xs[j-1].end, at: xs[j].start})
		}
	}
	if len(gaps) < r.params.MinEvidence {
		return
	}
	ds := make([]time.Duration, len(gaps))
	for i, g := range gaps {
		ds[i] = g.d
	}
	slices.Sort(ds)
	med := max(ds[len(ds)/2], 0)
	th := stallThreshold(r.params, med)
	var excess time.Duration
	windows := map[int64]time.Duration{}
	for _, g := range gaps {
		if g.d >= th {
			lv.StalledGaps++
			excess += g.d - med
			windows[int64(g.at/r.params.Window)] += g.d - med
		}
	}
	if excess == 0 {
		return
	}
	lv.StalledGapTime = Duration(excess)
	// an overhead less the stalled gaps' excess over its seats, down to
	// the median gap
	less := func(o Duration, e time.Duration, seats int64) Duration {
		return Duration(max(time.Duration(o)-e/time.Duration(seats), med))
	}
	lv.Overhead = less(lv.Overhead, excess, lv.Seats)
	r.overhead[lv.Level] = time.Duration(lv.Overhead)
	for i := range lv.Windows {
		w := &lv.Windows[i]
		k := int64(time.Duration(w.Start) / r.params.Window)
		if e := windows[k]; e > 0 && w.Seats > 0 {
			w.Overhead = less(w.Overhead, e, w.Seats)
			r.windows[lv.Level][k] = time.Duration(w.Overhead)
		}
	}
	lv.HoldTime = lv.MeanExecution + lv.Overhead
}
