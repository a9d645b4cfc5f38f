package calibrate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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
	levels map[int]*fitAcc
}

type fitAcc struct {
	requests, recorded, predicted, agree int64
	windows                              map[int64]*WindowFit
}

// NewFit returns a Fit with windows of the given length (default 5 s).
func NewFit(window time.Duration) *Fit {
	if window <= 0 {
		window = 5 * time.Second
	}
	return &Fit{window: window, levels: map[int]*fitAcc{}}
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
		lf.Quality = quality(a.recorded, a.predicted, lf.Agreement)
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

func quality(recorded, predicted int64, agreement float64) string {
	r := float64(predicted) / float64(max(recorded, 1))
	switch {
	case (recorded < 5 && predicted < 5 || r >= 0.75 && r <= 1.25) && agreement >= 0.8:
		return "good"
	case r >= 0.5 && r <= 2:
		return "fair"
	}
	return "poor"
}

// WarningKind says what a Warning of Regime is about.
type WarningKind string

// The kinds of Regime's warnings.
const (
	// WarnNewLevel: the change adds a level the recording never saw.
	WarnNewLevel WarningKind = "new-level"
	// WarnSeats: a level's nominal seats change by more than a factor of two.
	WarnSeats WarningKind = "seats"
	// WarnQueueCapacity: a level's queues hold more than twice as many requests.
	WarnQueueCapacity WarningKind = "queue-capacity"
	// WarnMoreExecutions: a level would execute more than twice the
	// requests recorded, on a server that paid an overhead per dispatch.
	WarnMoreExecutions WarningKind = "more-executions"
	// WarnShortOfCPU: the recorded server was short of CPU and the change
	// gives it more work; the replay then predicts too few rejections.
	WarnShortOfCPU WarningKind = "short-of-cpu"
)

// Warning is one of Regime's warnings: its kind, the level it is about and
// its text, "warning: ..." as printed. In JSON it is the text alone.
type Warning struct {
	Kind  WarningKind
	Level string
	Text  string
}

// MarshalJSON encodes the warning as its text.
func (w Warning) MarshalJSON() ([]byte, error) { return json.Marshal(w.Text) }

func (w Warning) String() string { return w.Text }

// FindWarning returns the warning of kind about level, if ws holds one.
func FindWarning(ws []Warning, kind WarningKind, level string) (Warning, bool) {
	for _, w := range ws {
		if w.Kind == kind && w.Level == level {
			return w, true
		}
	}
	return Warning{}, false
}

func warnf(kind WarningKind, level, format string, args ...any) Warning {
	return Warning{Kind: kind, Level: level, Text: fmt.Sprintf(format, args...)}
}

// Regime returns warnings for a what-if that leaves the recorded regime:
// a level whose seats or queue capacity change by more than a factor of
// two, a level the recording never saw, one that would execute far more
// requests than were recorded, or a server short of CPU that the change
// gives more work (shortOfCPU). The replay keeps every request's recorded
// execution time and overhead, which holds only near the recorded load.
func Regime(before, after *engine.Config, scl int, rep *fairqueue.Report, cal *Result) []Warning {
	if before == nil || after == nil {
		return nil
	}
	if scl == 0 {
		scl = engine.DefaultServerConcurrencyLimit
	}
	old := map[string]engine.LevelLimits{}
	for _, l := range before.Limits(scl) {
		old[l.Name] = l
	}
	capacity := func(c *engine.Config, name string) int {
		pl := c.PriorityLevels[name]
		if pl == nil || pl.Spec.Limited == nil || pl.Spec.Limited.LimitResponse.Queuing == nil {
			return 0
		}
		q := pl.Spec.Limited.LimitResponse.Queuing
		return int(q.Queues * q.QueueLengthLimit)
	}
	var out []Warning
	for _, l := range after.Limits(scl) {
		if l.Exempt {
			continue
		}
		o, ok := old[l.Name]
		if !ok {
			out = append(out, warnf(WarnNewLevel, l.Name, "warning: %s is new: the recording holds no evidence of its hold time; it gets the server-wide overhead %v", l.Name, time.Duration(cal.Overhead(l.Name))))
			continue
		}
		if l.NominalCL > 2*o.NominalCL || 2*l.NominalCL < o.NominalCL {
			if cal != nil && cal.Shared != nil {
				out = append(out, warnf(WarnSeats, l.Name, "warning: %s goes from %d to %d nominal seats: the shared-CPU model stretches the executions with the requests in flight, as far as the recording showed them stretch (up to %d in flight); the overhead per dispatch is the recorded one", l.Name, o.NominalCL, l.NominalCL, cal.Shared.MaxInFlight))
				continue
			}
			out = append(out, warnf(WarnSeats, l.Name, "warning: %s goes from %d to %d nominal seats: the replay keeps the recorded execution times and overhead, which change when the server runs that much more or less at once", l.Name, o.NominalCL, l.NominalCL))
		}
		if oc, nc := capacity(before, l.Name), capacity(after, l.Name); nc > 2*oc && oc > 0 {
			out = append(out, warnf(WarnQueueCapacity, l.Name, "warning: %s's queues hold %d requests instead of %d: requests the server rejected at once now wait, for times never recorded", l.Name, nc, oc))
		}
	}
	if rep != nil && rep.After != nil && cal != nil && cal.Enabled && cal.ServerOverhead > 0 {
		b := map[string]int64{}
		for _, l := range rep.Levels {
			b[l.Name] = l.Dispatched
		}
		for _, l := range rep.After.Levels {
			if d := b[l.Name]; d > 0 && l.Dispatched > 2*d {
				out = append(out, warnf(WarnMoreExecutions, l.Name, "warning: %s would execute %d requests where %d were recorded, on a server that already paid %v per dispatch from a queue: the replay cannot tell how much slower that would make it", l.Name, l.Dispatched, d, time.Duration(cal.ServerOverhead)))
			}
		}
	}
	out = append(out, shortOfCPU(rep, cal)...)
	return out
}

// shortOfCPU warns, for every level whose recorded executions stalled for
// CPU (Level.ShortOfCPU), when the change has the server execute more than
// a tenth more requests: on a server short of CPU the added work makes
// every execution stall more often, which the replay, keeping the recorded
// execution times, does not model; it then predicts too few rejections.
func shortOfCPU(rep *fairqueue.Report, cal *Result) []Warning {
	if rep == nil || rep.After == nil || cal == nil || !cal.Enabled {
		return nil
	}
	var before, after int64
	for _, l := range rep.Levels {
		before += l.Dispatched
	}
	for _, l := range rep.After.Levels {
		after += l.Dispatched
	}
	if before == 0 || 10*after <= 11*before {
		return nil
	}
	var out []Warning
	for _, l := range cal.Levels {
		if !l.ShortOfCPU {
			continue
		}
		if cal.Shared != nil {
			// the shared-CPU model stretches the executions with the
			// requests in flight
			continue
		}
		if cal.CPU != nil && l.StallsAtPeriodStart >= params.AtBoundaryThrottled {
			// the CPU model places the stalls where the collections
			// of the changed load fall
			continue
		}
		why := ""
		if cal.CPUWhy != "" {
			why = "; it is not modelled: " + cal.CPUWhy
		}
		out = append(out, warnf(WarnShortOfCPU, l.Level, "warning: %s: %d of its executions took %d times the median %v or longer, %.0f%% of its execution time: "+
			shortOfCPUPhrase+" (%s). "+
			"The change has the server execute %d requests instead of %d (+%.0f%%), more CPU in the same time, so its requests would stall more often; "+
			"the replay keeps the recorded execution times and so predicts too few rejections%s",
			l.Level, l.Stalls, params.StallFactor, time.Duration(l.MedianExecution), 100*l.StallShare, l.StallCause(),
			after, before, 100*float64(after-before)/float64(before), why))
	}
	return out
}

// StallCause says what stalled the level's executions: a CPU limit's
// throttling when most of the stalls ended at one phase of the CFS period
// (StallsAtPeriodStart), else the machine or the garbage collector.
func (l Level) StallCause() string {
	if l.StallsAtPeriodStart >= params.AtBoundaryThrottled {
		return fmt.Sprintf("%.0f%% of the stalls ended at one phase of a 100 ms period: the CFS quota of its CPU limit throttled it, and a higher limit would shorten every stalled hold", 100*l.StallsAtPeriodStart)
	}
	return "crowded out by other processes, or long garbage-collector pauses"
}

// ShortOfCPUWarning returns, of the texts of Regime's warnings as read back
// from "simulate -o json" (which carries each warning as its text), the
// one of kind WarnShortOfCPU about level, or "". Code that holds the
// warnings themselves uses FindWarning.
func ShortOfCPUWarning(warnings []string, level string) string {
	for _, w := range warnings {
		if strings.HasPrefix(w, "warning: "+level+": ") && strings.Contains(w, shortOfCPUPhrase) {
			return w
		}
	}
	return ""
}

const shortOfCPUPhrase = "the recorded server was short of CPU"

// maximumMutatingSeats is upstream's MaximumMutatingSeatsLimit.
const maximumMutatingSeats = 10

// Work returns a fairqueue.ReplayConfig.Work for the changed
// configuration after of a workload recorded under before. A request whose
// level's seat cap is not the one it had under before
// (engine.LevelLimits.MaxSeats) is sized again: the seats of a LIST or WATCH are estimated from the
// object counts with the new cap; without counts, recorded seats above the
// new cap are cut to it, as upstream's estimators clamp them. Final seats
// of writes above the cap are cut and their additional latency stretched
// to keep the same work (mutating_work_estimator.go). Requests whose cap
// did not change keep their recorded estimate.
func Work(rel engine.Release, before, after *engine.Config, scl int, counts engine.ObjectCounts) func(*workload.Request, *engine.Request, string, *fairqueue.Request) {
	if scl == 0 {
		scl = engine.DefaultServerConcurrencyLimit
	}
	caps := func(c *engine.Config) map[string]uint64 {
		m := map[string]uint64{}
		for _, l := range c.Limits(scl) {
			m[l.Name] = l.MaxSeats
		}
		return m
	}
	beforeCaps, afterCaps := caps(before), caps(after)
	return func(w *workload.Request, er *engine.Request, level string, sr *fairqueue.Request) {
		old := w.PriorityLevel
		if w.UserKnown {
			old = before.Classify(*er).PriorityLevel.Name
		}
		maxSeats := afterCaps[level]
		if bc, ok := beforeCaps[old]; ok && bc == maxSeats {
			return
		}
		switch er.Info.Verb {
		case "list", "watch":
			if counts != nil {
				if s, ok := engine.ListSeats(rel, *er, counts, maxSeats); ok {
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
