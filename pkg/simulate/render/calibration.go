package render

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/simulate"
)

// printCPUModel says what the CPU model rests on and how far its replays
// spread, or why a level short of CPU has none.
func printCPUModel(w io.Writer, cal *calibrate.Report, reps *simulate.CPUReplays) {
	m := cal.CPU
	if m == nil {
		if cal.CPUWhy != "" {
			fmt.Fprintf(w, "CPU model: none, %s.%s\n", cal.CPUWhy, cpuHint(cal))
		}
		return
	}
	seen := calibrate.RunFromStalls()
	from := fmt.Sprintf("read from its %d stalls of about a period, the longest (the marks'): %.3g–%s where the limit gave %s on the project's recordings, and the what-ifs follow it closely; the server's CPU limit (--cpu-limit) gives it exactly",
		m.FullPeriodStalls, float64(seen.Low)/float64(time.Millisecond), fmtDuration(seen.High), fmtDuration(seen.Limit))
	if m.CPULimit > 0 {
		from = fmt.Sprintf("from the CPU limit of %g %s over GOMAXPROCS", m.CPULimit, textfmt.PluralFigure(&m.CPULimit, "core", "cores"))
	}
	fmt.Fprintf(w, "CPU model, from %s's stalls and the Go runtime's counters over the metrics' %v: CFS periods of %v starting at %v, %v of running per period while the collector marks (%s); "+
		"a collection every %.0f dispatches (%.0f collections, %.0f dispatches), marking for %v (the mark workers' CPU per collection over GOMAXPROCS %d).\n",
		sanitize.Line(m.Level), fmtDuration(time.Duration(m.MetricsSpan)), fmtDuration(time.Duration(m.Period)), fmtDuration(time.Duration(m.Phase)), fmtDuration(time.Duration(m.RunPerPeriod)), from,
		m.ExecutionsPerCollection, m.Collections, m.Dispatched, fmtDuration(time.Duration(m.Mark)), m.GOMAXPROCS)
	if m.Quota > 0 {
		var spent string
		switch {
		case m.CPUPerWorkRead > 0:
			spent = fmt.Sprintf("an execution spends %.0f%% of its work, the rest of the server none: the process's CPU over the metrics' span, less the marks', read %.0f%%, a floor (the marks are counted with every recorded stall, and some fell outside them), at which the replay of the recorded configuration dispatched %s's requests %+.1f%% against the server, and %+.1f%% at 100%%; the figure is where the line through the two meets the server's dispatches (100%% where even that dispatched more)",
				100*m.CPUPerWork, 100*m.CPUPerWorkRead, sanitize.Line(m.Level), 100*m.PerWorkDispatches[0], 100*m.PerWorkDispatches[1])
		case m.CPUPerWork > 0:
			arrivals := ""
			switch {
			case m.CostDispatches[0] > 0:
				arrivals = fmt.Sprintf(", a request %v from the period it arrives in (its cost before APF: the process's CPU beyond the executions, less the marks', held %v of it, a floor, at which the replay of the recorded configuration dispatched %s's requests %+.1f%% against the server, and %+.1f%% at the median latency of the recorded 429s, %v; the cost is where the line through the two meets the server's dispatches, the 429s' latency where even that dispatched more)",
					fmtDuration(time.Duration(m.RequestCost)), fmtDuration(time.Duration(m.RequestCostRead)), sanitize.Line(m.Level), 100*m.CostDispatches[0], 100*m.CostDispatches[1], fmtDuration(time.Duration(m.RejectedLatency)))
			case m.RequestCost > 0:
				arrivals = fmt.Sprintf(", a request %v from the period it arrives in (its cost before APF: the median latency of the recorded 429s, at most what the process's CPU beyond the executions holds)", fmtDuration(time.Duration(m.RequestCost)))
			}
			spent = fmt.Sprintf("an execution spends %.0f%% of its work%s, the rest of the server %.3f cores (the process's CPU over the metrics' span, less the marks')", 100*m.CPUPerWork, arrivals, m.Background)
		default:
			spent = "the metrics do not tell the process's CPU (two scrapes do): an execution spends its work"
		}
		fmt.Fprintf(w, "Outside the marks the server spends its quota of %v per period as it runs, and waits for the next period once it is spent: %s.\n", fmtDuration(time.Duration(m.Quota)), spent)
	}
	if reps == nil || len(reps.Replays) == 0 {
		return
	}
	what, lo, hi := "rejected", int64(math.MaxInt64), int64(0)
	for _, r := range reps.Replays {
		v := r.Rejected[m.Level]
		if r.AfterRejected != nil {
			v, what = r.AfterRejected[m.Level], "rejected after the change"
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	fmt.Fprintf(w, "Replayed %d times, one per phase of the collections (when the first one starts is not recorded): %s %d to %d %s, mean %.0f; the tables show replay %d, the nearest the mean.\n",
		len(reps.Replays), sanitize.Line(m.Level), lo, hi, what, reps.Mean, reps.Chosen+1)
}

// printCalibration renders what the calibration inferred, the fit of the
// recorded run and the warnings.
func printCalibration(w io.Writer, rep *simulate.Result) error {
	cal := rep.Calibration
	if !calibrationFound(cal) {
		// a synthetic workload (no latencies, no audit annotations) holds no
		// evidence: nothing to show
		return nil
	}
	fmt.Fprintf(w, "\nCalibration: seats held beyond the recorded execution, per dispatch from a queue: %v server-wide; a wait above %v counts as queued (%s)\n",
		fmtDuration(time.Duration(cal.ServerOverhead)), fmtDuration(time.Duration(cal.Threshold)), cal.ThresholdFrom)
	tw := textfmt.NewTable(w)
	fmt.Fprintln(tw, "LEVEL\tOVERHEAD\tFROM\tSEATS\tSATURATED\tSPANS\tQUEUED-DISPATCHES\tMEAN-EXEC\tHOLD\tANNOTATED\tWAIT-P50\tSTALLS")
	for _, l := range cal.Levels {
		if l.Source == calibrate.SourceNone {
			continue
		}
		hold := "-"
		if l.HoldTime > 0 {
			hold = fmtDuration(time.Duration(l.HoldTime))
		}
		stalls := "-"
		if l.MedianExecution > 0 {
			stalls = fmt.Sprintf("%d (%.0f%%)", l.Stalls, 100*l.StallShare)
		}
		from := string(l.Source)
		if l.Refused != nil {
			from += ", capped"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%d\t%s\t%s\t%d\t%s\t%s\n", sanitize.Line(l.Level), fmtDuration(time.Duration(l.Overhead)), from, l.ConcurrencyLimit,
			fmtDuration(time.Duration(l.SaturatedTime)), l.SaturatedSpans, l.Dispatches, fmtDuration(time.Duration(l.MeanExecution)), hold, l.Annotated, fmtDuration(time.Duration(l.QueueWaitP50)), stalls)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	printRefusals(w, cal)
	var short []string
	for _, l := range cal.Levels {
		if !l.ShortOfCPU {
			continue
		}
		short = append(short, fmt.Sprintf("%s (%s)", sanitize.Line(l.Level), l.StallCause(calibrate.DefaultParams())))
	}
	if len(short) > 0 {
		then := "a change that adds work is warned about"
		if cal.CPU != nil {
			then = "the CPU model below places the stalls of a CPU limit's throttling"
		}
		fmt.Fprintf(w, "STALLS: executions that took %d times the level's median and %v more, and their share of its execution time. Short of CPU: %s; %s.\n",
			calibrate.DefaultParams().StallFactor, fmtDuration(calibrate.DefaultParams().StallMin), strings.Join(short, ", "), then)
	}
	printCPUModel(w, cal, rep.CPUReplays)
	printSharedCPU(w, cal)
	e := cal.Estimated
	var est []string
	if n := e.ExecutionFromAnnotations; n > 0 {
		est = append(est, textfmt.Count(n, "execution time", "execution times")+" from latency − apf-queue-wait annotations")
	}
	if n := e.ExecutionFromReplay; n > 0 {
		est = append(est, fmt.Sprintf("%s from latency − the replay's own queue wait, averaged per kind of request (%s, last mean change %v)", textfmt.Count(n, "execution time", "execution times"), textfmt.Count(e.FixedPointIterations, "fixed-point iteration", "fixed-point iterations"), fmtDuration(time.Duration(e.FixedPointChange))))
	}
	if n := e.ExecutionFromEnds; n > 0 {
		est = append(est, textfmt.Count(n, "execution time", "execution times")+" of a level of one seat from its ends (each from when it arrived or the one before it ended, whichever was later)")
	}
	if n := e.SeatsFromObjectCounts; n > 0 {
		s := "seats of " + textfmt.Count(n, "LIST or WATCH", "LISTs and WATCHes") + " from object counts"
		if b := e.SeatsBetweenCounts; b > 0 {
			s += fmt.Sprintf(", each from the scrape before it (%d of them between two scrapes that size them differently: the server's own count refreshed in between, about once a minute, and may have sized %s as the later scrape does)", b, textfmt.Plural(b, "it", "them"))
		}
		est = append(est, s)
	}
	if n := e.SeatsAssumedOne; n > 0 {
		est = append(est, textfmt.Count(n, "request", "requests")+" without a seat estimate given 1 seat")
	}
	if n := e.StallsReplaced; n > 0 {
		est = append(est, textfmt.Count(n, "stalled execution", "stalled executions")+" given their level's median (the CPU model places the stalls)")
	}
	for _, l := range cal.Levels {
		if l.StalledGaps > 0 {
			est = append(est, fmt.Sprintf("%s between %s's executions (%v beyond the median gap) taken out of its overhead (the CPU model places them too)", textfmt.Count(l.StalledGaps, "stalled gap", "stalled gaps"), sanitize.Line(l.Level), fmtDuration(time.Duration(l.StalledGapTime))))
		}
	}
	if n := e.WritesWithoutWatchCount; n > 0 {
		est = append(est, textfmt.Count(n, "write", "writes")+" without their watch-count latency (the apiserver does not export watch counts)")
	}
	if d := cal.DispatchTimes; d != nil && d.FromLatency+d.FromReplay+d.FromEnds > 0 {
		var from []string
		if d.FromLatency > 0 {
			from = append(from, fmt.Sprintf("%d from httplog latency − apf_execution_time (which also counts the filters ahead of APF and the time after the handler)", d.FromLatency))
		}
		if d.FromReplay > 0 {
			from = append(from, fmt.Sprintf("%d from the replay's own queue wait", d.FromReplay))
		}
		if d.FromEnds > 0 {
			from = append(from, fmt.Sprintf("%d from the ends of a level of one seat", d.FromEnds))
		}
		ann := fmt.Sprintf("%d recorded by the filters' audit annotations (authentication, impersonation, apf-queue-wait: requests slower than 500 ms)", d.Annotated)
		if d.Annotated == 0 && d.SlowUnannotated > 0 {
			ann += fmt.Sprintf(", though %d of the requests estimated took longer: kube-apiserver 1.34, and 1.35 before its fix, writes none of these annotations (kubernetes/kubernetes#135684)", d.SlowUnannotated)
		}
		est = append(est, fmt.Sprintf("dispatch times: %s; %s", strings.Join(from, ", "), ann))
	}
	if len(est) > 0 {
		fmt.Fprintf(w, "Estimated, not recorded: %s.\n", strings.Join(est, "; "))
	}
	printMeasured(w, cal)
	// the levels with a 429 recorded or predicted: the others have
	// nothing to compare
	var fits []int
	var requests int64
	for i, f := range rep.Fit {
		requests += f.Requests
		if f.Recorded+f.Predicted > 0 {
			fits = append(fits, i)
		}
	}
	if len(rep.Fit) > 0 && len(fits) == 0 {
		fmt.Fprintf(w, "\nReproduction of the recording: no 429 recorded, and none predicted (%d %s at %d %s): nothing to compare.\n",
			requests, textfmt.Plural(int(min(requests, 2)), "request", "requests"), len(rep.Fit), textfmt.Plural(len(rep.Fit), "level", "levels"))
	}
	if len(fits) > 0 {
		fmt.Fprintln(w, "\nReproduction of the recording, per level (recorded vs predicted 429s):")
		tw := textfmt.NewTable(w)
		fmt.Fprintln(tw, "LEVEL\tREQUESTS\tRECORDED-429\tPREDICTED\tRATIO\tAGREEMENT\tQUALITY\tWINDOWS (start recorded/predicted)")
		for _, i := range fits {
			f := rep.Fit[i]
			var ws []string
			for i, x := range f.Windows {
				if i == 6 {
					ws = append(ws, fmt.Sprintf("+%d more", len(f.Windows)-i))
					break
				}
				ws = append(ws, fmt.Sprintf("%v %d/%d", time.Duration(x.Start), x.Recorded, x.Predicted))
			}
			quality := f.Quality
			if !dispatchHolds(cal, f.Level) {
				// the replay does not reproduce the level's throughput:
				// no verdict on its 429s holds
				quality = "unreproduced"
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.2f\t%.1f%%\t%s\t%s\n", sanitize.Line(f.Level), f.Requests, f.Recorded, f.Predicted, f.Ratio, 100*f.Agreement, quality, strings.Join(ws, ", "))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	printDispatchChecks(w, cal)
	for _, x := range rep.Warnings {
		fmt.Fprintln(w, sanitize.Line(x.Text))
	}
	return nil
}

// printMeasured sets the estimated executions beside the time APF
// measured for them (calibrate.Measured), where the metrics hold it.
func printMeasured(w io.Writer, cal *calibrate.Report) {
	var ms []string
	var between calibrate.TimeRange
	var replay *calibrate.TimeRange
	for _, l := range cal.Levels {
		m := l.Measured
		if m == nil {
			continue
		}
		between = m.Scrapes
		name := sanitize.Line(l.Level)
		if m.Ratio == 0 {
			ms = append(ms, fmt.Sprintf("%s not compared: %s", name, sanitize.Line(m.Why)))
			if m.Replay != nil {
				replay = m.Replay
			}
			continue
		}
		if m.Logged == m.Executions {
			ms = append(ms, fmt.Sprintf("%s's %d executions took %v, the estimates give them %v (%.2f×)",
				name, m.Executions, fmtDuration(time.Duration(m.Time)), fmtDuration(time.Duration(m.Recorded+m.Estimated)), m.Ratio))
			continue
		}
		// the counts differ by the executions that ended while a scrape
		// gathered: the means are set side by side
		gathering := ""
		if g := m.Gathering; g != nil && *g != [2]int64{} {
			gathering = "; " + m.GatheringSaid()
		}
		ms = append(ms, fmt.Sprintf("%s's %d executions took %v, the estimates give the log's %d %v (%.2f× per execution%s)",
			name, m.Executions, fmtDuration(time.Duration(m.Time)), m.Logged, fmtDuration(time.Duration(m.Recorded+m.Estimated)), m.Ratio, gathering))
	}
	if len(ms) > 0 {
		fmt.Fprintf(w, "Execution times against APF's measure of them (apiserver_flowcontrol_request_execution_seconds between the scrapes at %s): %s.\n", logs.FormatWindow(between.From, between.To), strings.Join(ms, "; "))
		if replay != nil {
			// the window cut inside the scrapes' holds fewer executions
			// than they count: the scrapes' own window does not
			fmt.Fprintf(w, "For the check, replay the window between the scrapes: --since %s --until %s.\n",
				replay.From.UTC().Format(time.RFC3339Nano), replay.To.UTC().Format(time.RFC3339Nano))
		}
	}
}

// calibrationFound reports whether a calibration rests on any evidence or
// estimated anything beyond the 1 seat a replay assumes anyway.
func calibrationFound(cal *calibrate.Report) bool {
	if cal == nil {
		return false
	}
	if cal.Shared != nil || cal.CPU != nil {
		return true
	}
	e := cal.Estimated
	if e.ExecutionFromAnnotations+e.ExecutionFromReplay+e.ExecutionFromEnds+e.SeatsFromObjectCounts+e.WritesWithoutWatchCount > 0 {
		return true
	}
	for _, l := range cal.Levels {
		if l.Source == calibrate.SourceSaturated || l.Annotated > 0 {
			return true
		}
	}
	return false
}

// fmtDuration renders a duration with three significant digits.
func fmtDuration(d time.Duration) string { return fmtSeconds(d.Seconds()) }

// printRefusals says which estimates the recording contradicted, and what
// replaced them.
func printRefusals(w io.Writer, cal *calibrate.Report) {
	for _, l := range cal.Levels {
		r := l.Refused
		if r == nil {
			continue
		}
		var then []string
		if r.Overhead > l.Overhead {
			then = append(then, fmt.Sprintf("overhead %v instead", fmtDuration(time.Duration(l.Overhead))))
		}
		if r.ExecutionScale > 0 {
			then = append(then, fmt.Sprintf("its execution times estimated from the audit log scaled by %.2f", r.ExecutionScale))
		}
		if r.Dispatched > 0 {
			then = append(then, fmt.Sprintf("%.3f of that for the replay's throughput to come nearer the server's (the replay dispatches %d of its requests, the server %d)", r.Dispatched, l.ReplayedDispatches, l.RecordedDispatches))
		}
		fmt.Fprintf(w, "Capped: %s's calibration (overhead %v) contradicts the recording (%s check): %s; %s.\n",
			sanitize.Line(l.Level), fmtDuration(time.Duration(r.Overhead)), r.Check, r.Why, strings.Join(then, " and "))
	}
}

// cpuHint names the flag or capture that gives the evidence a missing CPU
// model lacks: the engine says what is missing, not which flag gives it.
func cpuHint(cal *calibrate.Report) string {
	switch cal.CPUNeeds {
	case calibrate.NeedCoveringScrapes, calibrate.NeedScrapes:
		return " " + settleCPU
	case calibrate.NeedCPULimit:
		return " --cpu-limit gives it."
	}
	return ""
}

// settleCPU names the capture that gives CPU evidence over the workload's
// window.
const settleCPU = "A bundle whose scrapes span the load (kubectl apf dump bundle --watch, started before the load and ended after it), or --prometheus with the store that scraped the apiservers, gives the server's CPU over the workload's window; --since/--until keep the part of a longer log that the scrapes cover."

// dispatchHolds reports whether the replay of the recorded configuration
// reproduced the level's dispatches (calibrate.Level.Dispatch).
func dispatchHolds(cal *calibrate.Report, level string) bool {
	if cal == nil {
		return true
	}
	for _, l := range cal.Levels {
		if l.Level == level {
			return l.Dispatch.Holds()
		}
	}
	return true
}

// printDispatchChecks says, for every level whose replay of the recorded
// configuration dispatched more than the tolerance away from the server,
// in either direction, that its predictions do not hold and which
// evidence the calibration lacks.
func printDispatchChecks(w io.Writer, cal *calibrate.Report) {
	tol := 100 * calibrate.DefaultParams().DispatchTolerance
	for _, l := range cal.Levels {
		var lacks string
		switch l.Dispatch {
		case calibrate.DispatchTooMany:
			lacks = "what held the server's seats longer than the recorded executions and overheads explain (on a crowded server, the CPU that the requests and the rejections shared): the server's CPU over the workload's window. " + settleCPU
		case calibrate.DispatchTooFew:
			lacks = "execution times as short as the server's: the replay holds the seats longer than the server did, even with the overhead refused"
			if cal.AuditOnly {
				lacks += " (an audit log alone estimates them; the httplog's apf_execution_time records them)"
			}
			lacks += "."
		default:
			continue
		}
		fmt.Fprintf(w, "Dispatches: the replay of the recorded configuration dispatched %d of %s's requests, the server %d: more than %.0f%% apart. Its predictions above (the levels table, the fit and the change) do not hold for it; the calibration lacks %s\n",
			l.ReplayedDispatches, sanitize.Line(l.Level), l.RecordedDispatches, tol, lacks)
	}
}
