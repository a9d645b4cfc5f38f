package simulate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
)

// WarningKind says what a Warning of Regime is about.
type WarningKind string

// The kinds of Regime's warnings.
const (
	// WarnNewLevel: the change adds a level the recording never saw.
	WarnNewLevel WarningKind = "new-level"
	// WarnSeats: a level's nominal seats change by more than
	// Params.SeatsFactor.
	WarnSeats WarningKind = "seats"
	// WarnQueueCapacity: a level's queues hold more than Params.QueueFactor
	// times as many requests.
	WarnQueueCapacity WarningKind = "queue-capacity"
	// WarnMoreExecutions: a level would execute more than
	// Params.ExecutionsFactor times the requests recorded, on a server that paid an overhead per dispatch.
	WarnMoreExecutions WarningKind = "more-executions"
	// WarnShortOfCPU: the recorded server was short of CPU and the change
	// gives it more work; the replay then predicts too few rejections.
	WarnShortOfCPU WarningKind = "short-of-cpu"
	// WarnStretchUnknown: an audit log alone cannot tell how the
	// executions stretch when more run at once, and the change has a
	// level run more at once; the replay then predicts too few
	// rejections where the executions share the server's CPU.
	WarnStretchUnknown WarningKind = "stretch-unknown"
	// WarnBeyondCores: the recorded executions did not stretch (no
	// shared-CPU model), and the change has a level run so many more at
	// once that, by the metrics' CPU evidence (calibrate.Headroom), they
	// would need more CPU than the server's cores: they would stretch, by
	// how much the recording cannot tell, and the level's predicted
	// figures are not known.
	WarnBeyondCores WarningKind = "beyond-cores"
	// WarnCPUEvidence: as WarnBeyondCores (from an audit log alone too),
	// but the CPU evidence gives the model the change is replayed with
	// (calibrate.SharedFromCPUEvidence, Result.BeyondCPU): the level's
	// figures after the change rest on it, not on the recorded execution
	// times.
	WarnCPUEvidence WarningKind = "cpu-evidence"
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
// a level whose seats or queue capacity change by more than a factor
// (Params.SeatsFactor, QueueFactor), a level the recording never saw, one
// that would execute far more requests than were recorded
// (ExecutionsFactor), a server short of CPU that the change
// gives more work (shortOfCPU), or a level that would run more at once
// where an audit log alone cannot tell how its executions stretch
// (stretchUnknown). The replay keeps every request's recorded
// execution time and overhead, which holds only near the recorded load.
func Regime(params Params, before, after *engine.Config, scl int, rep *fairqueue.Report, cal *calibrate.Report) []Warning {
	if before == nil || after == nil {
		return nil
	}
	if scl == 0 {
		scl = engine.DefaultServerConcurrencyLimit
	}
	oldLimits, limits := before.Limits(scl), after.Limits(scl)
	old := map[string]engine.LevelLimits{}
	for _, l := range oldLimits {
		old[l.Name] = l
	}
	raised, exempt := raisedLevels(oldLimits, limits)
	capacity := func(c *engine.Config, name string) int {
		pl := c.PriorityLevels[name]
		if pl == nil || pl.Spec.Limited == nil || pl.Spec.Limited.LimitResponse.Queuing == nil {
			return 0
		}
		q := pl.Spec.Limited.LimitResponse.Queuing
		return int(q.Queues * q.QueueLengthLimit)
	}
	var out []Warning
	for _, l := range limits {
		if l.Exempt {
			continue
		}
		o, ok := old[l.Name]
		if !ok {
			out = append(out, warnf(WarnNewLevel, l.Name, "warning: %s is new: the recording holds no evidence of its hold time; it gets no overhead per dispatch from a queue", l.Name))
			continue
		}
		if l.NominalCL > params.SeatsFactor*o.NominalCL || params.SeatsFactor*l.NominalCL < o.NominalCL {
			if cal != nil && cal.Shared != nil {
				out = append(out, warnf(WarnSeats, l.Name, "warning: %s goes from %d to %d nominal seats: the shared-CPU model stretches the executions with the requests in flight, as far as the recording showed them stretch (up to %d in flight); the overhead per dispatch is the recorded one", l.Name, o.NominalCL, l.NominalCL, cal.Shared.MaxInFlight))
				continue
			}
			out = append(out, warnf(WarnSeats, l.Name, "warning: %s goes from %d to %d nominal seats: the replay keeps the recorded execution times and overhead, which change when the server runs that much more or less at once", l.Name, o.NominalCL, l.NominalCL))
		}
		if oc, nc := capacity(before, l.Name), capacity(after, l.Name); nc > params.QueueFactor*oc && oc > 0 {
			out = append(out, warnf(WarnQueueCapacity, l.Name, "warning: %s's queues hold %d requests instead of %d: requests the server rejected at once now wait, for times never recorded", l.Name, nc, oc))
		}
	}
	if rep != nil && rep.After != nil && cal != nil && cal.Enabled && cal.ServerOverhead > 0 {
		b := map[string]int64{}
		for _, l := range rep.Levels {
			b[l.Name] = l.Dispatched
		}
		for _, l := range rep.After.Levels {
			if d := b[l.Name]; d > 0 && l.Dispatched > params.ExecutionsFactor*d {
				out = append(out, warnf(WarnMoreExecutions, l.Name, "warning: %s would execute %d requests where %d were recorded, on a server that already paid %v per dispatch from a queue: the replay cannot tell how much slower that would make it", l.Name, l.Dispatched, d, time.Duration(cal.ServerOverhead)))
			}
		}
	}
	out = append(out, shortOfCPU(params, rep, cal)...)
	beyond := beyondCores(params, rep, cal, exempt, raised)
	for _, w := range stretchUnknown(rep, cal) {
		// a level the CPU evidence's model stretches is not replayed
		// with the estimated execution times, nor one whose figures it
		// says are not known
		_, model := FindWarning(beyond, WarnCPUEvidence, w.Level)
		_, unknown := FindWarning(beyond, WarnBeyondCores, w.Level)
		if !model && !unknown {
			out = append(out, w)
		}
	}
	return append(out, beyond...)
}

// executingPeak is the most requests the level executed at once; a result
// without the figure (built before it, or by hand) counts a seat each.
func executingPeak(l fairqueue.LevelResult) int {
	if l.PeakExecuting > 0 {
		return l.PeakExecuting
	}
	return l.PeakSeatsInUse
}

// beyondCores warns, where the recorded executions did not stretch with
// the requests in flight (no shared-CPU model; calibrate.Headroom holds
// the CPU evidence), about every level whose peak seats in use the change
// raises (one idle in the recording included) when the server would need
// more CPU at once than its cores, by more than Params.BeyondCoresFactor.
// The recorded server ran its executions up to P at once (the levels'
// peak seats in use, summed), each in flight needing
// Headroom.PerExecution cores; a change that has it execute W1 requests
// where it executed W0 runs about P × W1 / W0 at once, and needs that
// many times PerExecution; a change that gives a level more seats than
// it had (a new level included) runs it up to its peak seats in use after
// the change, the others as recorded, whatever work it adds (2 → 5 seats
// with 5% more work served: 5 at once where the recording ran 2), and the
// larger of the two counts. A change that only moves requests (the same
// work, W1 = W0), or adds no more than Params.MoreWork of it (the few
// requests of a client it no longer rejects), stays in the recorded
// regime: the recording ran that much at once already, whatever the
// evidence's PerExecution × P says of it (0.99 of a core each, up to 1
// at once, on 1 core: a controller's 29 rejections served among 1,406
// executions would otherwise need "1.01 cores" and be warned about). The replay keeps the recorded execution
// times, which held at the recorded concurrency alone; beyond the cores
// they stretch, and the recording, which never ran that many at once,
// cannot tell by how much: the level's figures are then not known, not
// the confident few rejections the replay gives (a level of one seat on a
// server held to one CPU whose whole LISTs used 0.88 of a core each,
// given three seats by borrowing: the replay predicted 92 429s, the
// re-run got 388; the same LISTs moved to a level of 5 seats: 0 in the
// replay, 1,006 to 1,188 in three re-runs). Where the evidence gives
// the CPU evidence's model (calibrate.Headroom.Shared) the warning is
// WarnCPUEvidence instead: the change is replayed on that model
// (replayBeyond), and its figures rest on it; from an audit log alone too,
// whose executions the calibration estimated (on a level of one seat,
// from their ends), and the model takes the place of stretchUnknown's
// warning on the level it stretches. An audit log alone without the model
// has its own warning (stretchUnknown).
func beyondCores(params Params, rep *fairqueue.Report, cal *calibrate.Report, exempt, raised map[string]bool) []Warning {
	if rep == nil || rep.After == nil || cal == nil || !cal.Enabled || cal.Shared != nil || cal.Headroom == nil || cal.AuditOnly && cal.Headroom.Shared == nil && cal.Headroom.Estimated == 0 {
		return nil
	}
	h := cal.Headroom
	// the CPU is the executions': a LIST of 10 seats is one execution
	// (seats counted as executions, the demo cluster's Reject level's one
	// LIST of 10 seats read as 10 executions "which need 8.1 cores")
	peak, execPeak := map[string]int{}, map[string]int{}
	var p0, w0, w1 int64
	for _, l := range rep.Levels {
		peak[l.Name], execPeak[l.Name] = l.PeakSeatsInUse, executingPeak(l)
		if !exempt[l.Name] {
			p0 += int64(execPeak[l.Name])
			w0 += l.Dispatched
		}
	}
	for _, l := range rep.After.Levels {
		if !exempt[l.Name] {
			w1 += l.Dispatched
		}
	}
	if p0 == 0 || w0 == 0 {
		return nil
	}
	// more work: about P × W1 / W0 at once, where the change adds more
	// than MoreWork of it
	atOnce := float64(p0)
	how := fmt.Sprintf("the change has the server execute %d requests where it executed %d", w1, w0)
	if float64(w1) > (1+params.MoreWork)*float64(w0) {
		atOnce = float64(p0) * float64(w1) / float64(w0)
	}
	// more seats: the levels the change gives more run up to their peak
	// after it, the others as recorded, whatever the work
	var names []string
	var before, after int64
	for _, l := range rep.After.Levels {
		if raised[l.Name] && !exempt[l.Name] && l.PeakSeatsInUse > peak[l.Name] {
			names = append(names, l.Name)
			before += int64(execPeak[l.Name])
			after += int64(executingPeak(l))
		}
	}
	if seats := float64(p0 - before + after); seats > atOnce {
		atOnce = seats
		how += fmt.Sprintf(", and gives %s more seats, which it runs up to %d at once where the recording ran %d", strings.Join(names, ", "), after, before)
	}
	need := h.PerExecution * atOnce
	if atOnce <= float64(p0) || need <= params.BeyondCoresFactor*h.Cores {
		return nil
	}
	var out []Warning
	for _, l := range rep.After.Levels {
		if exempt[l.Name] || l.PeakSeatsInUse <= peak[l.Name] {
			continue
		}
		if m := h.Shared; m != nil && m.CPUEvidence != nil {
			// the evidence gives the model the change is replayed with
			// (runOne, Prepared.Replay): rep is still the replay with the
			// recorded execution times, whose 429s the warning names
			ev := m.CPUEvidence
			out = append(out, warnf(WarnCPUEvidence, l.Name, "warning: %s: runs up to %d seats at once instead of %d, more than the server's cores hold by its CPU evidence: "+
				"the recording ran up to %d at once, and %s, about %.1f at once, which need about %.1f cores, more than the %g it has. "+
				"So "+cpuEvidencePhrase+": the process used %v of CPU, of which its %d requests cost %v each before APF (the median latency of its %d 429s), "+
				"and the rest over %s is %.2f of a core for each execution in flight; the %.2f cores%s that cost leaves hold, with no fewer than the recorded executions ran at once on average, %.2f executions at once, "+
				"beyond which each runs in proportion slower (the recorded executions did not stretch, so their times hold at the recorded concurrency alone). "+
				"The replay with the recorded execution times%s gives %s %d 429s",
				l.Name, l.PeakSeatsInUse, peak[l.Name], p0, how, atOnce, need, h.Cores,
				time.Duration(ev.ProcessCPU).Round(time.Millisecond), ev.Requests, time.Duration(ev.RequestCost), ev.Rejected,
				ExecutionsWork(ev), ev.PerExecution, ev.ExecutionCores, withinPeriod(m), m.Capacity, OnCFSModel(cal.CPU != nil), l.Name, total(l.Rejected)))
			continue
		}
		if h.Estimated > 0 {
			// the evidence would give the model, but from executions
			// that are mostly an audit log's estimates
			out = append(out, warnf(WarnBeyondCores, l.Name, "warning: %s: runs up to %d seats at once instead of %d; "+beyondCoresPhrase+
				": the recording ran up to %d at once, and %s, about %.1f at once, more than its cores hold by its CPU evidence. "+
				"How they would stretch is not known: %.0f%% of the executions are the audit log's estimates (its latency less the replay's own queue wait, averaged per kind of request), "+
				"so the CPU each needed and how many the recording ran at once are estimates too (httplog's apf_execution_time records them, and APF's execution histogram measures them in metrics scraped before and after the load: a bundle whose scrapes bracket it, dump bundle --watch, or --prometheus); %s's predicted 429s and waits are not known",
				l.Name, l.PeakSeatsInUse, peak[l.Name], p0, how, atOnce, 100*h.Estimated, l.Name))
			continue
		}
		out = append(out, warnf(WarnBeyondCores, l.Name, "warning: %s: runs up to %d seats at once instead of %d; "+beyondCoresPhrase+
			": the process used %.2f cores while %.2f executions were in flight on average, %.2f cores each; the recording ran up to %d at once, "+
			"and %s, about %.1f at once, which need about %.1f cores, more than the %g it has. "+
			"They would stretch, by how much the recording cannot tell (it never ran that many at once, and its executions did not stretch): %s's predicted 429s and waits are not known; "+
			"the replay keeps the recorded execution times and so predicts too few rejections",
			l.Name, l.PeakSeatsInUse, peak[l.Name], h.Used, h.InFlight, h.PerExecution, p0, how, atOnce, need, h.Cores, l.Name))
	}
	return out
}

// withinPeriod says, of a model whose cores are GOMAXPROCS's within a CFS
// period (calibrate.CoresWithinPeriod), where they come from and what holds
// the executions to the quota; nothing of another.
func withinPeriod(m *calibrate.SharedCPU) string {
	if m.CoresFrom != calibrate.CoresWithinPeriod {
		return ""
	}
	return fmt.Sprintf(" (of GOMAXPROCS's %g, which run side by side within a CFS period: the CPU model spends its quota and stalls them when it is spent)", m.Cores)
}

// OnCFSModel names, where the recorded execution times were replayed on
// the CFS model (calibrate.CPUModel), that they were: the stalls it places
// are not the recorded times, and the figure is not the one without any
// CPU model (CPUComparison's RECORDED-EXECUTION-TIMES).
func OnCFSModel(cfs bool) string {
	if !cfs {
		return ""
	}
	return " on the CFS model"
}

// ExecutionsWork names the executions' time the CPU evidence's model
// read: the recorded executions', or, where an audit log's estimates were
// taken to APF's measure of them (calibrate.CPUEvidence.Measured), that
// measure.
func ExecutionsWork(ev *calibrate.CPUEvidence) string {
	work := time.Duration(ev.Work).Round(time.Millisecond)
	if len(ev.Measured) == 0 {
		return fmt.Sprintf("the recorded executions' %v", work)
	}
	return fmt.Sprintf("the executions' %v, with %s's at the time APF measured for them between the metrics' scrapes (the audit log's estimates gave %v)",
		work, strings.Join(ev.Measured, ", "), time.Duration(ev.EstimatedWork).Round(time.Millisecond))
}

// stretchUnknown warns, for an audit log alone (no execution time of its
// own) without a shared-CPU model, about every level whose peak seats in
// use the change raises. The shared-CPU model stretches the executions
// with the requests in flight, as far as the recording showed them
// stretch; an audit log alone records no execution, only its latency, so
// its executions are the replay's estimates and cannot show it. The
// replay keeps them, and a level that runs more at once on a server whose
// CPU its executions share then gets them as fast as before: too few
// rejections (a level of a CPU-limited server given 1 → 2 nominal seats,
// 4 → 8 with borrowing: its executions took nearly twice as long in
// re-runs after the change, and the prediction from the audit log alone
// was 0.70 to 0.91 of the re-runs' 429s; docs/simulate.md).
func stretchUnknown(rep *fairqueue.Report, cal *calibrate.Report) []Warning {
	if rep == nil || rep.After == nil || cal == nil || !cal.Enabled || !cal.AuditOnly || cal.Shared != nil {
		return nil
	}
	peak := map[string]int{}
	for _, l := range rep.Levels {
		peak[l.Name] = l.PeakSeatsInUse
	}
	var out []Warning
	for _, l := range rep.After.Levels {
		before := peak[l.Name]
		if before == 0 || l.PeakSeatsInUse <= before {
			// new, idle before the change, or running no more at once
			continue
		}
		out = append(out, warnf(WarnStretchUnknown, l.Name, "warning: %s: runs up to %d seats at once instead of %d, and "+stretchUnknownPhrase+
			" when more run at once (it records no execution time, so there is no shared-CPU model): the replay keeps the execution times it estimated, "+
			"so where the executions share the server's CPU it predicts too few rejections; httplog lines with apf_execution_time give the model",
			l.Name, l.PeakSeatsInUse, before))
	}
	return out
}

// shortOfCPU warns, for every level whose recorded executions stalled for
// CPU (Level.ShortOfCPU), when the change has the server execute more
// requests, by more than Params.MoreWork: on a server short of CPU the added work makes
// every execution stall more often, which the replay, keeping the recorded
// execution times, does not model; it then predicts too few rejections.
func shortOfCPU(params Params, rep *fairqueue.Report, cal *calibrate.Report) []Warning {
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
	if before == 0 || float64(after) <= (1+params.MoreWork)*float64(before) {
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
		if cal.CPU != nil && l.StallsAtPeriodStart >= calibrate.DefaultParams().AtBoundaryThrottled {
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
			l.Level, l.Stalls, calibrate.DefaultParams().StallFactor, time.Duration(l.MedianExecution), 100*l.StallShare, l.StallCause(calibrate.DefaultParams()),
			after, before, 100*float64(after-before)/float64(before), why))
	}
	return out
}

// FallsShortWarning returns, of the texts of Regime's warnings as read
// back from "simulate -o json" (which carries each warning as its text),
// the first about level that says the prediction falls short for want of
// a CPU model (WarnShortOfCPU, WarnStretchUnknown), or "". Code that
// holds the warnings themselves uses FindWarning.
func FallsShortWarning(warnings []string, level string) string {
	for _, w := range warnings {
		if strings.HasPrefix(w, "warning: "+level+": ") && (strings.Contains(w, shortOfCPUPhrase) || strings.Contains(w, stretchUnknownPhrase)) {
			return w
		}
	}
	return ""
}

// NotKnownLevels returns the levels, sorted and each once, whose figures
// after the change ws say are not known (WarnBeyondCores), of every
// instance.
func NotKnownLevels(ws []Warning) []string {
	var out []string
	for _, w := range ws {
		if w.Kind == WarnBeyondCores && !slices.Contains(out, w.Level) {
			out = append(out, w.Level)
		}
	}
	slices.Sort(out)
	return out
}

// NotKnownWarning returns, of the texts of Regime's warnings as read back
// from "simulate -o json", the first about level that says its figures
// after the change are not known (WarnBeyondCores: the table prints them
// as "?"), or "".
func NotKnownWarning(warnings []string, level string) string {
	for _, w := range warnings {
		if strings.HasPrefix(w, "warning: "+level+": ") && strings.Contains(w, beyondCoresPhrase) {
			return w
		}
	}
	return ""
}

const (
	cpuEvidencePhrase    = "the replay of the change stretches them by what the cores allow, and its figures rest on that model"
	beyondCoresPhrase    = "by the server's CPU evidence its executions would need more CPU than it has"
	shortOfCPUPhrase     = "the recorded server was short of CPU"
	stretchUnknownPhrase = "an audit log alone cannot tell how the executions stretch"
)

// raisedLevels returns the levels a change gives more nominal seats than
// they had (new ones included), and the levels exempt before or after it,
// which no seats limit, from the levels' limits before and after it. A
// change that raises no level runs no more at once than the recording did.
func raisedLevels(before, after []engine.LevelLimits) (raised, exempt map[string]bool) {
	old := map[string]engine.LevelLimits{}
	raised, exempt = map[string]bool{}, map[string]bool{}
	for _, l := range before {
		old[l.Name] = l
		exempt[l.Name] = l.Exempt
	}
	for _, l := range after {
		exempt[l.Name] = exempt[l.Name] || l.Exempt
		if o, ok := old[l.Name]; !l.Exempt && (!ok || l.NominalCL > o.NominalCL) {
			raised[l.Name] = true
		}
	}
	return raised, exempt
}
