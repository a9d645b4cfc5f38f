package calibrate

import (
	"fmt"
	"slices"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// WindowFit is one time window of a level: the 429s the server answered
// and those the replay predicted, for requests arriving in it.
type WindowFit struct {
	Start     Duration `json:"start"`
	Recorded  int64    `json:"recorded"`
	Predicted int64    `json:"predicted"`
}

// LevelFit is how well the replay of the recorded configuration
// reproduced one level's recorded 429s.
type LevelFit struct {
	Level     string `json:"level"`
	Requests  int64  `json:"requests"`
	Recorded  int64  `json:"recorded"`
	Predicted int64  `json:"predicted"`
	// Ratio is Predicted / Recorded (0 when nothing was recorded).
	Ratio float64 `json:"ratio"`
	// Agreement is the share of requests whose fate the replay got right.
	Agreement float64 `json:"agreement"`
	// Quality is good (ratio within 0.75–1.25, or both below 5, and
	// agreement at least 80%), fair (ratio within 0.5–2) or poor.
	Quality string `json:"quality"`
	// Windows with a recorded or predicted 429, in time order.
	Windows []WindowFit `json:"windows,omitempty"`
}

// Fit accumulates recorded and predicted fates per level and window from
// the replay's outcomes (fairqueue.ReplayOptions.OnOutcome).
type Fit struct {
	window time.Duration
	params Params
	levels map[int]*fitAcc
}

type fitAcc struct {
	requests, recorded, predicted, agree int64
	windows                              map[int64]*WindowFit
}

// NewFit returns a Fit with windows of the given length (default 5 s).
func NewFit(window time.Duration, params Params) *Fit {
	if window <= 0 {
		window = params.FitWindow
	}
	return &Fit{window: window, levels: map[int]*fitAcc{}, params: params}
}

// Observe is a fairqueue.ReplayOptions.OnOutcome. Requests without a
// recorded status are left out.
func (f *Fit) Observe(w *workload.Request, o *fairqueue.Outcome) {
	if w.Status == 0 {
		return
	}
	a := f.levels[o.Level]
	if a == nil {
		a = &fitAcc{windows: map[int64]*WindowFit{}}
		f.levels[o.Level] = a
	}
	rec, pred := w.Status == 429, o.Reason != fairqueue.Executed
	a.requests++
	if rec == pred {
		a.agree++
	}
	if !rec && !pred {
		return
	}
	k := int64(o.Arrival / f.window)
	wf := a.windows[k]
	if wf == nil {
		wf = &WindowFit{Start: Duration(time.Duration(k) * f.window)}
		a.windows[k] = wf
	}
	if rec {
		a.recorded++
		wf.Recorded++
	}
	if pred {
		a.predicted++
		wf.Predicted++
	}
}

// Result returns the fit per level; names are the replay's level names by
// index (fairqueue.Result.Levels).
func (f *Fit) Result(levels []fairqueue.LevelResult) []LevelFit {
	var out []LevelFit
	for i, a := range f.levels {
		name := fmt.Sprintf("level-%d", i)
		if i < len(levels) {
			name = levels[i].Name
		}
		lf := LevelFit{Level: name, Requests: a.requests, Recorded: a.recorded, Predicted: a.predicted}
		if a.requests > 0 {
			lf.Agreement = float64(a.agree) / float64(a.requests)
		}
		if a.recorded > 0 {
			lf.Ratio = float64(a.predicted) / float64(a.recorded)
		}
		lf.Quality = quality(f.params, a.recorded, a.predicted, lf.Agreement)
		for _, w := range a.windows {
			lf.Windows = append(lf.Windows, *w)
		}
		slices.SortFunc(lf.Windows, func(x, y WindowFit) int { return int(x.Start - y.Start) })
		out = append(out, lf)
	}
	slices.SortFunc(out, func(x, y LevelFit) int {
		if x.Level < y.Level {
			return -1
		}
		if x.Level > y.Level {
			return 1
		}
		return 0
	})
	return out
}

func quality(params Params, recorded, predicted int64, agreement float64) string {
	r := float64(predicted) / float64(max(recorded, 1))
	switch {
	case (recorded < params.FewRejections && predicted < params.FewRejections || r >= params.GoodBand[0] && r <= params.GoodBand[1]) && agreement >= params.GoodAgreement:
		return "good"
	case r >= params.FairBand[0] && r <= params.FairBand[1]:
		return "fair"
	}
	return "poor"
}

// StallCause says what stalled the level's executions: a CPU limit's
// throttling when most of the stalls ended at one phase of the CFS period
// (StallsAtPeriodStart), else the machine or the garbage collector.
func (l Level) StallCause(p Params) string {
	if l.StallsAtPeriodStart >= p.AtBoundaryThrottled {
		return fmt.Sprintf("%.0f%% of the stalls ended at one phase of a 100 ms period: the CFS quota of its CPU limit throttled it, and a higher limit would shorten every stalled hold", 100*l.StallsAtPeriodStart)
	}
	return "crowded out by other processes, or long garbage-collector pauses"
}

// maximumMutatingSeats is upstream's MaximumMutatingSeatsLimit.
const maximumMutatingSeats = 10

// Work returns a fairqueue.ReplayConfig.Work for the changed
// configuration after of a workload recorded under before. A request whose
// level's seat cap is not the one it had under before
// (engine.LevelLimits.MaxSeats) is sized again: the seats of a LIST or
// WATCH are estimated from the object counts of the scrape before it
// (engine.ListSeatsAt) with the new cap; without counts, recorded seats
// above the new cap are cut to it, as upstream's estimators clamp them.
// Final seats of writes above the cap are cut and their additional
// latency stretched to keep the same work (mutating_work_estimator.go).
// Requests whose cap did not change keep their recorded estimate. The
// function it returns memoizes the classification under before
// (engine.ClassifyMemo): it is not safe for concurrent use.
func Work(rel engine.Release, before, after *engine.Config, scl int, counts engine.CountsSeries) func(*workload.Request, *engine.Request, string, *fairqueue.Request) {
	beforeCaps, afterCaps := seatCaps(before, scl), seatCaps(after, scl)
	var memo engine.ClassifyMemo
	return func(w *workload.Request, er *engine.Request, level string, sr *fairqueue.Request) {
		old := w.PriorityLevel
		if w.UserKnown {
			old = memo.Classify(before, er).PriorityLevel.Name
		}
		maxSeats := afterCaps[level]
		if bc, ok := beforeCaps[old]; ok && bc == maxSeats {
			return
		}
		switch er.Info.Verb {
		case "list", "watch":
			if counts != nil {
				if s, ok, _ := engine.ListSeatsAt(rel, *er, counts, w.Arrival, maxSeats); ok {
					sr.InitialSeats = s
					return
				}
			}
			if maxSeats > 0 && sr.InitialSeats > maxSeats {
				sr.InitialSeats = maxSeats
			}
		case "create", "update", "patch", "delete":
			ms := maxSeats
			if ms == 0 || ms > maximumMutatingSeats {
				ms = maximumMutatingSeats
			}
			if sr.FinalSeats > ms {
				work := time.Duration(sr.FinalSeats) * sr.AdditionalLatency
				sr.FinalSeats = ms
				sr.AdditionalLatency = work / time.Duration(ms)
			}
		}
	}
}

// seatCaps are the levels' seat caps (engine.LevelLimits.MaxSeats).
func seatCaps(c *engine.Config, scl int) map[string]uint64 {
	if scl == 0 {
		scl = engine.DefaultServerConcurrencyLimit
	}
	m := map[string]uint64{}
	for _, l := range c.Limits(scl) {
		m[l.Name] = l.MaxSeats
	}
	return m
}

// SameWork says, for Work(rel, before, after, scl, counts), whether it
// leaves a request as it is when before puts it in level old (the
// recorded level of a request without identity) and after in level new:
// when both levels have the same seat cap (fairqueue.ReplayConfig.SameWork).
func SameWork(before, after *engine.Config, scl int) func(old, new string) bool {
	beforeCaps, afterCaps := seatCaps(before, scl), seatCaps(after, scl)
	return func(old, new string) bool {
		bc, ok := beforeCaps[old]
		return ok && bc == afterCaps[new]
	}
}
