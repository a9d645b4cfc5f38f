package render

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/capacity"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/simulate"
)

// sameFigures reports whether the replay of the change gives every level
// and flow the figures of the recorded configuration's.
func sameFigures(before, after []fairqueue.LevelResult) bool {
	return reflect.DeepEqual(before, after)
}

// simulateReasons are the rejection reasons, in the order of the columns;
// they are the reason labels of apiserver_flowcontrol_rejected_requests_total.
var simulateReasons = []string{"queue-full", "concurrency-limit", "time-out"}

// Write renders the report as a header, one table row per level
// that saw requests (with its busiest maxFlows flows indented below it) and,
// when the workload recorded the server's answers, the comparison of
// predicted rejections with recorded 429s. With a changed configuration
// every cell is "before->after".
func Write(w io.Writer, rep *simulate.Result, maxFlows int) error {
	ws := rep.Workload
	fmt.Fprintf(w, "Workload: %d %s replayed, arriving over %s", rep.Requests, textfmt.Plural(int(rep.Requests), "request", "requests"), fmtSeconds(ws.ArrivalSpanSeconds))
	if extra := ws.Records - rep.Requests; extra > 0 {
		fmt.Fprintf(w, " (%d %s read: %d bypass APF, %d skipped)", ws.Records, textfmt.Plural(int(ws.Records), "record", "records"), ws.Bypassed, ws.Skipped)
	}
	fmt.Fprintln(w)
	printWindow(w, rep)
	fmt.Fprintf(w, "Replaying Kubernetes %s (%s)\n", rep.Release, rep.ReleaseFrom)
	fmt.Fprintf(w, "Server concurrency limit: %d seats (%s)\n", rep.ServerConcurrencyLimit, rep.ServerConcurrencySource)
	if rep.After != nil {
		fmt.Fprintln(w, "Cells show before->after the change.")
	}
	if rep.ServerSpeed > 0 {
		fmt.Fprintf(w, "After the change, the server runs requests at %.3g× the recorded speed: every execution and seat hold takes %.3g of its recorded time.\n", rep.ServerSpeed, 1/rep.ServerSpeed)
	}
	fmt.Fprintln(w)

	var table bytes.Buffer
	tw := textfmt.NewTable(&table)
	fmt.Fprintln(tw, "LEVEL / FLOW\tDISPATCHED\tQUEUE-FULL\tCONCURRENCY-LIMIT\tTIME-OUT\tWAIT-P50\tWAIT-P99\tWAIT-MAX\tPEAK-QUEUE\tPEAK-SEATS")
	afterBy := map[string]*fairqueue.LevelResult{}
	var names []string
	seen := map[string]bool{}
	beforeBy := map[string]*fairqueue.LevelResult{}
	for i := range rep.Levels {
		l := &rep.Levels[i]
		beforeBy[l.Name], seen[l.Name] = l, true
		names = append(names, l.Name)
	}
	if rep.After != nil {
		for i := range rep.After.Levels {
			l := &rep.After.Levels[i]
			afterBy[l.Name] = l
			if !seen[l.Name] {
				names = append(names, l.Name)
			}
		}
	}
	idle := 0
	notKnown, fromEvidence := false, false
	for _, name := range names {
		b, a := beforeBy[name], afterBy[name]
		if levelTotal(b) == 0 && levelTotal(a) == 0 {
			idle++
			continue
		}
		label := sanitize.Line(name)
		if calibrationFound(rep.Calibration) && !dispatchHolds(rep.Calibration, name) {
			label += " (unreproduced)"
		}
		switch {
		case rep.After == nil:
		case b == nil:
			label += " (new)"
		case a == nil:
			label += " (removed)"
		}
		// a level whose figures after the change the evidence cannot
		// tell (simulate.WarnBeyondCores) shows them as not known, "?",
		// rather than the replay's confident few 429s
		_, unknown := simulate.FindWarning(rep.Warnings, simulate.WarnBeyondCores, name)
		cells := func(b, a *fairqueue.LevelResult) []string {
			if unknown {
				return unknownAfter(b)
			}
			return resultCells(b, a, rep.After != nil)
		}
		if unknown {
			label += " (not known)"
			notKnown = true
		}
		if _, ok := simulate.FindWarning(rep.Warnings, simulate.WarnCPUEvidence, name); ok && rep.BeyondCPU != nil {
			label += " (CPU evidence)"
			fromEvidence = true
		}
		fmt.Fprintf(tw, "%s\t%s\n", label, strings.Join(cells(b, a), "\t"))
		for _, f := range pickFlows(b, a, maxFlows) {
			fb, fa := findFlow(b, f), findFlow(a, f)
			fmt.Fprintf(tw, "  %s\t%s\n", sanitize.Line(f), strings.Join(cells(fb, fa), "\t"))
		}
		if more := flowCount(b, a) - min(maxFlows, flowCount(b, a)); more > 0 && maxFlows > 0 {
			fmt.Fprintf(tw, "  (%d more %s)\t\t\t\t\t\t\t\t\t\n", more, textfmt.Plural(more, "flow", "flows"))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// the "more flows" rows carry empty cells to keep the columns aligned:
	// drop the padding they leave at the end of the line
	for _, line := range strings.SplitAfter(table.String(), "\n") {
		if line != "" {
			fmt.Fprintln(w, strings.TrimRight(line, " \n"))
		}
	}
	if idle > 0 {
		fmt.Fprintf(w, "%d %s without requests not shown.\n", idle, textfmt.Plural(idle, "level", "levels"))
	}
	if rep.After != nil && rep.ServerSpeed == 0 && sameFigures(rep.Levels, rep.After.Levels) {
		fmt.Fprintln(w, "The change moves no figure: every level's requests, rejections, waits and peaks are as before it.")
	}
	fmt.Fprint(w, simulateLegend)
	if notKnown {
		fmt.Fprintln(w, "?: not known. The change runs a level (not known) more at once than the recording did, beyond what the server's CPU")
		fmt.Fprintln(w, "allows by its evidence; how far its executions would stretch the recording cannot tell (see the warning).")
	}
	if fromEvidence {
		fmt.Fprintln(w, "(CPU evidence): the change runs the level more at once than the recording did, beyond what the server's cores allow; its figures")
		fmt.Fprintln(w, "after the change rest on the CPU evidence's model of how its executions stretch (see the warning and CPU beyond the recording).")
	}
	printSpeedSpread(w, rep.SpeedSpread)
	printBeyondCPU(w, rep.BeyondCPU)
	if err := printCPUComparison(w, rep.CPUComparison); err != nil {
		return err
	}
	if err := printAgreement(w, rep); err != nil {
		return err
	}
	if err := printCalibration(w, rep); err != nil {
		return err
	}
	return printInstances(w, rep)
}

// printSpeedSpread says which levels' figures after the change follow the
// server's speed beyond a prediction's band (simulate.SpeedSpread), and
// how far.
func printSpeedSpread(w io.Writer, s *simulate.SpeedSpread) {
	for _, l := range s.Steep() {
		fmt.Fprintf(w, "Server speed: %s's %s after the change become %d on a server %.0f%% faster and %d on one %.0f%% slower, beyond a prediction's band (0.75-1.25): near its capacity the level follows the server's speed, which the recording fixes for its own day only (two runs of one server differ about so); it is not known closer than %d-%d.\n",
			sanitize.Line(l.Level), textfmt.Count(l.Rejected, "429", "429s"), l.Faster, 100*s.Margin, l.Slower, 100*s.Margin, min(l.Faster, l.Slower), max(l.Faster, l.Slower))
	}
}

// printInstances says, for a workload of several apiserver instances, what
// each instance's replay gave, and its calibration.
func printInstances(w io.Writer, rep *simulate.Result) error {
	if len(rep.Instances) < 2 {
		return nil
	}
	fmt.Fprintf(w, "\nInstances (each replayed on its own, the change applied to each; the tables above sum them, with the largest wait and peak of any instance):\n")
	for _, in := range rep.Instances {
		before, after := int64(0), int64(-1)
		for _, l := range in.Levels {
			before += levelTotal(&l) - l.Dispatched
		}
		if in.After != nil {
			after = 0
			for _, l := range in.After.Levels {
				after += levelTotal(&l) - l.Dispatched
			}
		}
		fmt.Fprintf(w, "  %s: server concurrency limit %d, %d %s replayed, %d recorded 429s, %d predicted", sanitize.Line(in.Name), in.ServerConcurrencyLimit,
			in.Requests, textfmt.Plural(int(in.Requests), "request", "requests"), in.Workload.RecordedRejections, before)
		if after >= 0 {
			fmt.Fprintf(w, ", %d after the change", after)
		}
		fmt.Fprintln(w)
	}
	for _, in := range rep.Instances {
		if calibrationFound(in.Calibration) {
			fmt.Fprintf(w, "\nInstance %s:", sanitize.Line(in.Name))
			if err := printCalibration(w, in.Result); err != nil {
				return err
			}
		}
	}
	return nil
}

// simulateLegend says what the columns count. PEAK-QUEUE counts a request
// from the moment it joins a queue, as upstream's queueset does even when it
// dispatches it at once: a peak of 1 with no wait is such a request.
const simulateLegend = `
DISPATCHED: requests that ran; QUEUE-FULL, CONCURRENCY-LIMIT, TIME-OUT: requests rejected for that reason.
WAIT-*: time the dispatched requests spent queued. PEAK-QUEUE: most requests in the queues at once,
counting those dispatched the moment they were queued (so 1 with no wait). PEAK-SEATS: most seats in use at once.
`

// printAgreement compares, for the levels where either side rejected
// something, the predicted rejections of the base configuration with the
// 429s the server recorded.
func printAgreement(w io.Writer, rep *simulate.Result) error {
	var rows []fairqueue.LevelAgreement
	for _, a := range rep.Agreement {
		if a.BothRejected+a.OnlyPredicted+a.OnlyRecorded > 0 {
			rows = append(rows, a)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	n := int(rep.Workload.RecordedRejections)
	fmt.Fprintf(w, "\nRecorded 429 answers (%d in the workload) against the rejections predicted with the current configuration:\n", n)
	tw := textfmt.NewTable(w)
	fmt.Fprintln(tw, "LEVEL\tRECORDED-429\tPREDICTED-429\t429-PREDICTED\tSERVED-PREDICTED")
	for _, a := range rows {
		rp, rr := a.Rejections()
		dp, dr := a.Dispatches()
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", sanitize.Line(a.Level), rr, a.BothRejected+a.OnlyPredicted, ratio(rp, rr), ratio(dp, dr))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "429-PREDICTED: recorded 429s the replay also rejected; SERVED-PREDICTED: recorded successes the replay also served.")
	return nil
}

// levelTotal is the number of requests a level (or flow) saw; 0 for nil.
func levelTotal(l *fairqueue.LevelResult) int64 {
	if l == nil {
		return 0
	}
	n := l.Dispatched
	for _, v := range l.Rejected {
		n += v
	}
	return n
}

// resultCells renders the columns after the name; with compare, each is
// "before->after" when they differ (a missing side counts zero requests and
// its waits are "n/a").
func resultCells(b, a *fairqueue.LevelResult, compare bool) []string {
	bc := oneSideCells(b)
	if !compare {
		return bc
	}
	ac := oneSideCells(a)
	for i := range bc {
		bc[i] = change(bc[i], ac[i])
	}
	return bc
}

// unknownAfter renders the columns of a level whose figures after the
// change are not known: "before->?".
func unknownAfter(b *fairqueue.LevelResult) []string {
	bc := oneSideCells(b)
	for i := range bc {
		bc[i] += "->?"
	}
	return bc
}

func oneSideCells(l *fairqueue.LevelResult) []string {
	if l == nil {
		// the level or flow does not exist on this side: no request, and
		// no wait to speak of
		return []string{"0", "0", "0", "0", "n/a", "n/a", "n/a", "0", "0"}
	}
	cells := make([]string, 9)
	cells[0] = fmt.Sprint(l.Dispatched)
	for i, r := range simulateReasons {
		cells[1+i] = fmt.Sprint(l.Rejected[r])
	}
	cells[4] = fmtSeconds(l.WaitP50Seconds)
	cells[5] = fmtSeconds(l.WaitP99Seconds)
	cells[6] = fmtSeconds(l.WaitMaxSeconds)
	cells[7] = fmt.Sprint(l.PeakQueueLength)
	cells[8] = fmt.Sprint(l.PeakSeatsInUse)
	return cells
}

// pickFlows names the flows to show under a level: the busiest max of the
// base run (flows come busiest first), then those of the changed run that
// were not among them, up to max in all.
func pickFlows(b, a *fairqueue.LevelResult, max int) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range []*fairqueue.LevelResult{b, a} {
		if l == nil {
			continue
		}
		for _, f := range l.Flows {
			if len(out) >= max {
				return out
			}
			if !seen[f.Name] {
				seen[f.Name] = true
				out = append(out, f.Name)
			}
		}
	}
	return out
}

// flowCount is the number of distinct flows of a level in either run.
func flowCount(b, a *fairqueue.LevelResult) int {
	seen := map[string]bool{}
	for _, l := range []*fairqueue.LevelResult{b, a} {
		if l != nil {
			for _, f := range l.Flows {
				seen[f.Name] = true
			}
		}
	}
	return len(seen)
}

func findFlow(l *fairqueue.LevelResult, name string) *fairqueue.LevelResult {
	if l == nil {
		return nil
	}
	for i := range l.Flows {
		if l.Flows[i].Name == name {
			return &l.Flows[i]
		}
	}
	return nil
}

// fmtSeconds renders a duration in seconds with three significant digits
// ("0s", "850µs", "12.3ms", "1.5s"), so that columns stay narrow and a
// golden file does not change with the histogram's sub-microsecond detail;
// from 1000 s on, to the second ("39m33s", not "39m30s": a rounding to
// tens of seconds or more would read as a figure to the second).
func fmtSeconds(s float64) string {
	d := time.Duration(math.Round(s * 1e9))
	if d <= 0 {
		return "0s"
	}
	unit := time.Duration(1)
	for x := d; x >= 1000 && unit < time.Second; x /= 10 {
		unit *= 10
	}
	return d.Round(unit).String()
}

// ratio renders "n/d (p%)", or "-" when there is nothing to count.
func ratio(n, d int64) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d (%.1f%%)", n, d, 100*float64(n)/float64(d))
}

// change renders "a" when b is empty or equal, else "a->b".
func change(a, b string) string { return capacity.Change(a, b) }

// printWindow says which part of the log was replayed (--since/--until),
// and which window the metrics' CPU evidence covers and which part of the
// workload that is.
func printWindow(w io.Writer, rep *simulate.Result) {
	if win := rep.Window; win != nil && win.Given {
		fmt.Fprintf(w, "Window: %s (--since/--until): %d of the log's %d %s (%s).\n", logs.FormatWindow(win.From, win.To), win.Requests, win.Of, textfmt.Plural(int(win.Of), "request", "requests"), percent(win.Requests, win.Of))
	}
	e := rep.Evidence
	if e == nil {
		return
	}
	if e.Store != "" {
		every := "-"
		if e.Interval > 0 {
			every = fmtDuration(time.Duration(e.Interval))
		}
		fmt.Fprintf(w, "CPU evidence: the samples of %s's scrapes from %s (%s apart; scraped every %s) cover %d of the %d %s (%s)",
			sanitize.Line(e.Store), logs.FormatWindow(e.Metrics.From, e.Metrics.To), fmtDuration(e.Metrics.To.Sub(e.Metrics.From)), every, e.Requests, e.Total, textfmt.Plural(int(e.Total), "request", "requests"), percent(e.Requests, e.Total))
	} else {
		fmt.Fprintf(w, "CPU evidence: the metrics' scrapes from %s (%s apart; 2 of the %d read) cover %d of the %d %s (%s)",
			logs.FormatWindow(e.Metrics.From, e.Metrics.To), fmtDuration(e.Metrics.To.Sub(e.Metrics.From)), e.Scrapes, e.Requests, e.Total, textfmt.Plural(int(e.Total), "request", "requests"), percent(e.Requests, e.Total))
	}
	switch {
	case e.Cut:
		fmt.Fprintf(w, ": only those are replayed; the %d before and %d after, none answered 429, are not the load the evidence saw (--since/--until choose another window).\n", e.Before, e.After)
	case e.Requests < e.Total && e.RejectedOutside > 0:
		// the flags that replay the covered part alone, to the second,
		// the window widened to whole seconds
		from, to := e.Metrics.From.UTC().Truncate(time.Second), e.Metrics.To.UTC().Add(time.Second-1).Truncate(time.Second)
		fmt.Fprintf(w, "; %d recorded 429s lie outside it, which it did not see (--since %s --until %s replays the part it covers).\n",
			e.RejectedOutside, from.Format(time.RFC3339), to.Format(time.RFC3339))
	default:
		fmt.Fprintln(w, ".")
	}
}

// percent is n of d as a percentage, "-" when d is 0.
func percent(n, d int64) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(d))
}
