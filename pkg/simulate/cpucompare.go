package simulate

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
)

// CPUComparison puts, for a change that adds concurrency on a server the
// recording shows CPU-bound (a calibrated CPU model: the shared CPU, the
// CFS quota's stalls, or both), the prediction with the model beside the
// one that keeps the recorded execution times, and says which applies.
type CPUComparison struct {
	// Model names the CPU model: "shared CPU", "CFS quota" or both;
	// empty where the calibration has none (the comparison then sets the
	// saturated end beside the recorded execution times).
	Model string `json:"model"`
	// Applies says which prediction holds, or that simulate cannot
	// choose (AppliesUndecided), and Why.
	Applies Applies `json:"applies"`
	Why     string  `json:"why"`
	// Levels are the levels replayed, each with its concurrency limit
	// before and after the change and its predictions.
	Levels []CPUComparisonLevel `json:"levels"`
	// Bound, where the comparison cannot choose, is how the ends of each
	// level's bound (RejectedLow, RejectedHigh) were replayed.
	Bound *Bound `json:"bound,omitempty"`
}

// Bound is how simulate bounds the rejections after a change that adds
// concurrency where no evidence tells the server's CPU. The low end keeps
// the recorded execution times (the change can only add to what each
// execution shares) on a server Margin faster than the recorded one; the
// high end stretches every execution Stretch times (the most the change
// raises the seats at once, of one level or of the busy levels together:
// a CPU already saturated, so that the added seats serve nothing more)
// on a server Margin slower. Each end is then widened by the level's
// FitError, what the replay itself missed on the recorded configuration.
//
// On a server held to a CPU quota the bound has no high end but every
// request of the level rejected (NoHigh says why): running more at once
// on a quota can cost CPU per request, so that
// a level given more seats serves fewer requests than it did, which
// nothing recorded at the recorded concurrency tells (the re-runs of
// noisy-pages-heavy seeds 7, 9 and 11, and of starved-seed4, got more 429s
// than the high end on the servers, held to 1 and 0.2 CPU, that served 4–15%
// fewer requests a second with more at once).
type Bound struct {
	Stretch float64 `json:"stretch"`
	Margin  float64 `json:"margin"`
	// NoHigh, where set, says why the bound's high end is every request
	// of the level: the server is held to a CPU quota (quotaHeld).
	NoHigh string `json:"noHigh,omitempty"`
	// Wide is Params.RangeWide: a level whose high end is more than this
	// factor of its low end is marked (CPUComparisonLevel.Wide).
	Wide float64 `json:"wide"`
}

// CPUComparisonLevel is one level's predictions with and without the CPU
// model.
type CPUComparisonLevel struct {
	Level string `json:"level"`
	// LimitBefore and LimitAfter are its nominal concurrency limits in
	// seats (0 for a level that is new or gone).
	LimitBefore int `json:"limitBefore"`
	LimitAfter  int `json:"limitAfter"`
	// RejectedWith and RejectedWithout are the rejections predicted after
	// the change, DispatchedWith and DispatchedWithout the dispatches.
	RejectedWith      int64 `json:"rejectedWith"`
	RejectedWithout   int64 `json:"rejectedWithout"`
	DispatchedWith    int64 `json:"dispatchedWith"`
	DispatchedWithout int64 `json:"dispatchedWithout"`
	// RejectedSaturated and DispatchedSaturated, where no evidence tells
	// the server's CPU (AppliesUndecided), are the predictions with its
	// CPU assumed saturated through the recorded time
	// (calibrate.Result.AssumingSaturated), which the bound holds too.
	RejectedSaturated   *int64 `json:"rejectedSaturated,omitempty"`
	DispatchedSaturated *int64 `json:"dispatchedSaturated,omitempty"`
	// RejectedLow and RejectedHigh, where no evidence tells the server's
	// CPU (AppliesUndecided), are the ends of the bound (CPUComparison.Bound):
	// the fewest rejections of every prediction and of the recorded
	// execution times on a faster server, and the most of every
	// prediction and of every execution stretched as far as the change
	// could stretch it on a slower one, or every request the level holds
	// where the server is held to a CPU quota (Bound.NoHigh).
	RejectedLow  *int64 `json:"rejectedLow,omitempty"`
	RejectedHigh *int64 `json:"rejectedHigh,omitempty"`
	// FitError is the factor by which the replay of the recorded
	// configuration missed the level's recorded 429s (the fit, either
	// way; the worst of the levels whose fit counts where the level's
	// own does not): the bound's ends are divided and multiplied by it.
	FitError float64 `json:"fitError,omitempty"`
	// Wide marks a bound whose high end is more than Params.RangeWide
	// times its low end: it says little about the answer.
	Wide bool `json:"wide,omitempty"`
}

// Range is the level's bound on its rejections after the change where the
// comparison cannot choose (RejectedLow to RejectedHigh); ok is false
// where it has none.
func (l CPUComparisonLevel) Range() (lo, hi int64, ok bool) {
	if l.RejectedLow == nil || l.RejectedHigh == nil {
		return 0, 0, false
	}
	return *l.RejectedLow, *l.RejectedHigh, true
}

// RangeOf is level's Range where the comparison cannot choose
// (AppliesUndecided); ok is false where it chose, or the level has no
// bound.
func (c *CPUComparison) RangeOf(level string) (lo, hi int64, ok bool) {
	if c == nil || c.Applies != AppliesUndecided {
		return 0, 0, false
	}
	for _, l := range c.Levels {
		if l.Level == level {
			return l.Range()
		}
	}
	return 0, 0, false
}

// compareCPU replays the change once more without the calibration's CPU
// models and returns the comparison, or nil when there is no change, no
// CPU model and no recorded execution to assume a saturated CPU from, or
// the change adds no concurrency to any level. Its figures with the CPU
// model are res's, the change's replay as the tables show it (on the CPU
// evidence's model where replayBeyond replayed it so). Where no evidence
// over the workload's window tells the server's CPU, the change is
// replayed with the CPU assumed saturated, and the two ends of the bound
// (Bound) are replayed; cfg gives the bound's margins and the CPU limit.
func compareCPU(ctx context.Context, res *Result, cal *calibrate.Result, rc replayConfigs, scl int, cfg Config) (*CPUComparison, error) {
	p := cfg.params()
	if res.After == nil || rc.after == nil || cal == nil || rc.tape == nil {
		return nil, nil
	}
	saturated := cal.AssumingSaturated()
	if cal.Shared == nil && cal.CPU == nil && saturated == nil {
		return nil, nil
	}
	beforeLimits, afterLimits := levelLimits(rc.before.Config, scl), levelLimits(rc.after.Config, scl)
	if raised, _ := raisedLevels(beforeLimits, afterLimits); len(raised) == 0 {
		return nil, nil
	}
	before, after := nominalCLs(beforeLimits), nominalCLs(afterLimits)
	plain := cal.WithoutCPU()
	without, err := replayOnce(ctx, plain.Apply(logs.Cancellable(ctx, rc.tape.Reader())), plain, rc)
	if err != nil {
		return nil, err
	}
	c := &CPUComparison{Applies: AppliesWith}
	if cal.Shared != nil || cal.CPU != nil {
		c.Model, c.Why = cpuWhy(&cal.Report)
	}
	ok, why := cpuEvidence(&cal.Report)
	if c.Model == "" && cal.HasProcessCPU() {
		// the process's CPU over the window, and no CPU model: the
		// recorded executions did not stretch with what was in flight,
		// and the recorded execution times are the prediction
		return nil, nil
	}
	sat, low, high := map[string]fairqueue.LevelResult{}, map[string]fairqueue.LevelResult{}, map[string]fairqueue.LevelResult{}
	if !ok {
		c.Applies, c.Why = AppliesUndecided, why
		if saturated != nil {
			r, err := replayOnce(ctx, saturated.Apply(logs.Cancellable(ctx, rc.tape.Reader())), saturated, rc)
			if err != nil {
				return nil, err
			}
			for _, l := range r.After.Levels {
				sat[l.Name] = l
			}
		}
		c.Bound = &Bound{Stretch: boundStretch(res, before, after), Margin: p.RangeMargin, Wide: p.RangeWide, NoHigh: quotaHeld(cal, cfg.CPULimit, cfg.calibration())}
		speed := rc.afterSpeed()
		ends := []struct {
			speed float64
			into  map[string]fairqueue.LevelResult
		}{{speed * (1 + c.Bound.Margin), low}, {speed / (c.Bound.Stretch * (1 + c.Bound.Margin)), high}}
		if c.Bound.NoHigh != "" {
			ends = ends[:1]
		}
		for _, end := range ends {
			r, err := replayAfterAt(ctx, plain, rc, end.speed)
			if err != nil {
				return nil, err
			}
			for _, l := range r.After.Levels {
				end.into[l.Name] = l
			}
		}
	}
	with := map[string]fairqueue.LevelResult{}
	for _, l := range res.After.Levels {
		with[l.Name] = l
	}
	for _, l := range without.After.Levels {
		w := with[l.Name]
		cl := CPUComparisonLevel{Level: l.Name, LimitBefore: before[l.Name], LimitAfter: after[l.Name],
			RejectedWith: total(w.Rejected), RejectedWithout: total(l.Rejected), DispatchedWith: w.Dispatched, DispatchedWithout: l.Dispatched}
		if s, found := sat[l.Name]; found {
			rej, disp := total(s.Rejected), s.Dispatched
			cl.RejectedSaturated, cl.DispatchedSaturated = &rej, &disp
		}
		if c.Bound != nil {
			lo, hi := min(cl.RejectedWith, cl.RejectedWithout, total(low[l.Name].Rejected)), max(cl.RejectedWith, cl.RejectedWithout, total(high[l.Name].Rejected))
			if cl.RejectedSaturated != nil {
				lo, hi = min(lo, *cl.RejectedSaturated), max(hi, *cl.RejectedSaturated)
			}
			cl.FitError = fitError(res.Fit, l.Name, p.RangeFitRecorded)
			lo, hi = int64(math.Floor(float64(lo)/cl.FitError)), int64(math.Ceil(float64(hi)*cl.FitError))
			// no level rejects more than the requests it holds, which
			// is the high end on a CPU quota (Bound.NoHigh) of a level
			// that can reject (exempt has no limit)
			held := l.Dispatched + total(l.Rejected)
			hi = min(hi, held)
			if c.Bound.NoHigh != "" && after[l.Name] > 0 {
				hi = held
			}
			cl.RejectedLow, cl.RejectedHigh = &lo, &hi
			cl.Wide = float64(hi) > p.RangeWide*float64(max(lo, 1))
		}
		c.Levels = append(c.Levels, cl)
	}
	return c, nil
}

// quotaHeld says why the recorded server is taken to be held to a CPU
// quota, "" where nothing says it is: --cpu-limit, or a level whose stalls
// end at one phase of the 100 ms CFS period (the CPU model's test,
// calibrate.Params.Throttled), which the log itself shows.
func quotaHeld(cal *calibrate.Result, cpuLimit float64, cp calibrate.Params) string {
	if cpuLimit > 0 {
		return fmt.Sprintf("the server is held to %g CPU (--cpu-limit)", cpuLimit)
	}
	for i := range cal.Levels {
		if l := &cal.Levels[i]; cp.Throttled(l) {
			return fmt.Sprintf("%s's stalled executions end at one phase of the 100 ms CFS period: a CPU quota throttled the server", l.Level)
		}
	}
	return ""
}

// boundStretch is the most a change stretches an execution where the CPU
// is saturated and the added seats serve nothing more: the greatest ratio
// of seats after the change to before, of one level that holds requests
// before and after it, or of the levels that hold requests together; at
// least 1.
func boundStretch(res *Result, before, after map[string]int) float64 {
	busy := func(ls []fairqueue.LevelResult, limits map[string]int) (sum int, names []string) {
		for _, l := range ls {
			if l.Dispatched+total(l.Rejected) > 0 && limits[l.Name] > 0 {
				sum += limits[l.Name]
				names = append(names, l.Name)
			}
		}
		return sum, names
	}
	k := 1.0
	sumBefore, namesBefore := busy(res.Levels, before)
	sumAfter, namesAfter := busy(res.After.Levels, after)
	if sumBefore > 0 {
		k = max(k, float64(sumAfter)/float64(sumBefore))
	}
	for _, n := range namesAfter {
		if slices.Contains(namesBefore, n) {
			k = max(k, float64(after[n])/float64(before[n]))
		}
	}
	return k
}

// fitError is the factor by which the replay of the recorded
// configuration missed level's recorded 429s, either way (at least 1):
// the level's own where it recorded minRecorded or more and the replay
// predicted some, else the worst of the levels that did. A fit resolves
// no finer than its count does: n recorded 429s are one run's draw, which
// a run of the same load on the same server moves by about √n, so the
// factor is at least 1 + 1/√n (starved-seed2's apf-load-reject: the audit
// log alone's replay gave its 113 429s exactly, its bound was 113–113,
// and the re-runs, which the change did not touch, got 111, 113 and 114).
func fitError(fit []calibrate.LevelFit, level string, minRecorded int64) float64 {
	worst := 1.0
	for _, f := range fit {
		if f.Recorded < minRecorded || f.Predicted == 0 {
			continue
		}
		r := float64(f.Predicted) / float64(f.Recorded)
		e := max(r, 1/r, 1+1/math.Sqrt(float64(f.Recorded)))
		if f.Level == level {
			return e
		}
		worst = max(worst, e)
	}
	return worst
}

// Applies says which of a CPUComparison's predictions holds.
type Applies string

// The verdicts of a CPUComparison.
const (
	// AppliesWith: the prediction with the CPU model.
	AppliesWith Applies = "with"
	// AppliesUndecided: the evidence cannot choose; each level's bound
	// (CPUComparisonLevel.Range) holds the predictions.
	AppliesUndecided Applies = "undecided"
)

// cpuEvidence reports whether the calibration's CPU model rests on what
// the server counted over the workload's own window: the Go runtime's
// collections and CPU limit (the CFS model, which is built only from
// scrapes around the recorded time), or the process's CPU over the
// window (the shared-CPU model's Used). A shared-CPU model fitted to how
// the recorded executions stretched, with no such figure, cannot tell a
// change that adds concurrency how much CPU is left for it; why says what
// is missing.
func cpuEvidence(cal *calibrate.Report) (ok bool, why string) {
	if cal.CPU != nil || cal.Shared != nil && cal.Shared.Used != nil {
		return true, ""
	}
	if u := cal.Uncovered; u != nil {
		return false, u.Why()
	}
	return false, "the metrics hold no process CPU from two scrapes around the load, so nothing tells how much CPU the server had left for the added executions"
}

// cpuWhy names the calibration's CPU model and says why the prediction
// with it applies to a change that adds concurrency.
func cpuWhy(cal *calibrate.Report) (model, why string) {
	switch {
	case cal.Shared != nil && cal.CPU != nil:
		model = "shared CPU and CFS quota"
	case cal.Shared != nil:
		model = "shared CPU"
	default:
		model = "CFS quota"
	}
	if m := cal.Shared; m != nil && m.From == calibrate.SharedFromSaturated {
		why = fmt.Sprintf("its CPU was saturated over the recorded load (its goroutines waited runnable for a CPU), and its executions shared the %.2f cores its requests' other work left: the change runs more at once on that CPU, each slower", m.Capacity)
	} else if m != nil {
		why = fmt.Sprintf("the recorded executions ran longer the more requests were in flight: %.0f%% of them ran with more than the %.2f cores the fit finds shared, %.1f× as long as alone on average, and the change adds executions to share them", 100*m.Stretched, m.Capacity, m.MeanStretch)
	} else {
		why = fmt.Sprintf("the recorded executions of %s stalled where the CFS quota ran out, while the garbage collector marked and where the executions spent it", cal.CPU.Level)
	}
	return model, why
}

// levelLimits returns the limits of every level of c (none when c is nil)
// under the server concurrency limit scl (the default when 0).
func levelLimits(c *engine.Config, scl int) []engine.LevelLimits {
	if c == nil {
		return nil
	}
	if scl == 0 {
		scl = engine.DefaultServerConcurrencyLimit
	}
	return c.Limits(scl)
}

// nominalCLs returns the nominal concurrency limit of every level of ls.
func nominalCLs(ls []engine.LevelLimits) map[string]int {
	out := map[string]int{}
	for _, l := range ls {
		out[l.Name] = l.NominalCL
	}
	return out
}

func total(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// CoresName names where the server's cores came from as the command's user
// knows it: the --cpu-limit flag, or the Go runtime's GOMAXPROCS.
func CoresName(c calibrate.CoresSource) string {
	if c == calibrate.CoresCPULimit {
		return "--cpu-limit"
	}
	return string(c)
}
