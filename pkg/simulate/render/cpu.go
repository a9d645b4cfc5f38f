package render

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/simulate"
)

// printSharedCPU says what the shared-CPU model rests on, or why there is
// none.
func printSharedCPU(w io.Writer, cal *calibrate.Report) {
	m := cal.Shared
	if m == nil {
		if cal.SharedWhy != "" {
			fmt.Fprintf(w, "Shared CPU: no model, %s.\n", cal.SharedWhy)
		}
		return
	}
	if s := m.Saturated; m.From == calibrate.SharedFromSaturated && s != nil {
		fmt.Fprintf(w, "Shared CPU: the server's CPU was saturated (its goroutines waited runnable for a CPU %v on average), so its executions shared what it had: %.2f cores, the process's %v of CPU over the %v they were in flight, less %v for its %d requests before APF (%v each, the median latency of its %d 429s, which are that work and their answer). An execution runs max(1, in flight / %.2f) times as long as alone (%d recorded executions, %.1f in flight on average, up to %d, %.1f× as long as alone on average); a change that runs more at once runs each slower, fewer at once faster.\n",
			fmtDuration(time.Duration(s.RunnableWait)), m.Capacity, fmtDuration(time.Duration(s.ProcessCPU)), fmtDuration(time.Duration(s.Busy)),
			fmtDuration(time.Duration(s.Requests)*time.Duration(s.RequestCost)), s.Requests, fmtDuration(time.Duration(s.RequestCost)), s.Rejected,
			m.Capacity, m.Executions, m.MeanInFlight, m.MaxInFlight, m.MeanStretch)
		printServerCPU(w, m)
		return
	}
	fmt.Fprintf(w, "Shared CPU: %.0f%% of an execution shares the CPU with the requests in flight server-wide: it runs %.2f + %.2f × max(1, in flight / %.2f) times as long as alone. ",
		100*m.Share, 1-m.Share, m.Share, m.Capacity)
	fmt.Fprintf(w, "Fitted to %d recorded executions of %d kinds (%.1f in flight on average, up to %d); %.0f%% of them ran stretched, %.1f× on average, which explains %.0f%% of their spread within their kind.\n",
		m.Executions, m.Kinds, m.MeanInFlight, m.MaxInFlight, 100*m.Stretched, m.MeanStretch, 100*(1-m.Spread/m.SpreadRecorded))
	if len(m.Demands) > 0 {
		var ds []string
		for _, d := range m.Demands {
			ds = append(ds, fmt.Sprintf("%s %v (%d)", sanitize.Line(d.Kind), fmtDuration(time.Duration(d.Demand)), d.Executions))
		}
		fmt.Fprintf(w, "Execution alone per kind of request (executions fitted): %s.\n", strings.Join(ds, ", "))
	}
	printServerCPU(w, m)
}

// printBeyondCPU says, for a change replayed on the CPU evidence's model
// (simulate.BeyondCPU), what the model is and what the recorded execution
// times gave instead.
func printBeyondCPU(w io.Writer, b *simulate.BeyondCPU) {
	if b == nil || b.Model == nil || b.Model.CPUEvidence == nil {
		return
	}
	m, ev := b.Model, b.Model.CPUEvidence
	var levels []string
	for _, l := range b.Levels {
		levels = append(levels, fmt.Sprintf("%s (%d 429s, %d dispatched with the recorded execution times%s)", sanitize.Line(l), b.RejectedRecorded[l], b.DispatchedRecorded[l], simulate.OnCFSModel(b.OnCFS)))
	}
	fmt.Fprintf(w, "CPU beyond the recording: the change runs %s more at once than the recording did, beyond what the cores allow; its figures after the change come from the CPU evidence: the process's %v of CPU less %v for its %d requests before APF (%v each, the median latency of its %d 429s), over %s, is %.2f of a core per execution in flight; %g %s (%s%s) less that cost leave the executions %.2f, which hold %.2f at once%s. Beyond that, an execution of the change runs in flight / %.2f times as long as recorded; at the recorded concurrency, as recorded (its executions did not stretch). So the level serves no more requests a second than the cores allowed the recording: a server that serves more, or fewer, by running more at once is outside this model.\n",
		strings.Join(levels, ", "), fmtDuration(time.Duration(ev.ProcessCPU)), fmtDuration(time.Duration(ev.Requests)*time.Duration(ev.RequestCost)), ev.Requests, fmtDuration(time.Duration(ev.RequestCost)), ev.Rejected,
		sanitize.Line(simulate.ExecutionsWork(ev)), ev.PerExecution, m.Cores, textfmt.PluralFigure(&m.Cores, "core", "cores"), simulate.CoresName(m.CoresFrom), limitHint(m.CoresFrom), ev.ExecutionCores, ev.ExecutionCores/ev.PerExecution, held(m), m.Capacity)
	used, wait := "-", "-"
	if m.Used != nil {
		used = fmt.Sprintf("%.2f cores over the metrics' %v", *m.Used, fmtDuration(time.Duration(m.MetricsSpan)))
	}
	if m.RunnableWait != nil {
		wait = fmt.Sprintf("%v on average (%v or more shows a saturated CPU)", fmtDuration(time.Duration(*m.RunnableWait)), fmtDuration(calibrate.DefaultParams().SaturatedRunnableWait))
	}
	fmt.Fprintf(w, "Server CPU in the recording: process CPU used %s; goroutines waited runnable for a CPU %s.\n", used, wait)
}

// limitHint, where the cores are the Go runtime's GOMAXPROCS, says that a
// CPU limit below it is not seen there: from Go 1.25 the runtime sets
// GOMAXPROCS to a container's CPU limit rounded up, and to no fewer than
// 2 (runtime/cgroup_linux.go, adjustCgroupGOMAXPROCS), and before it to the
// node's CPUs; a kube-apiserver held to 1 CPU runs 2 Ps.
func limitHint(from calibrate.CoresSource) string {
	if from != calibrate.CoresGOMAXPROCS {
		return ""
	}
	return "; a CPU limit below it is not seen, as Go rounds a limit up and to at least 2: give it with --cpu-limit"
}

// printServerCPU gives the server's CPU evidence of a shared-CPU model.
func printServerCPU(w io.Writer, m *calibrate.SharedCPU) {
	cores := "-"
	if m.Cores > 0 {
		cores = fmt.Sprintf("%g (%s)", m.Cores, simulate.CoresName(m.CoresFrom))
	}
	used, wait := "-", "-"
	if m.Used != nil {
		used = fmt.Sprintf("%.2f cores over the metrics' %v", *m.Used, fmtDuration(time.Duration(m.MetricsSpan)))
	}
	if m.RunnableWait != nil {
		wait = fmt.Sprintf("%v on average", fmtDuration(time.Duration(*m.RunnableWait)))
	}
	fmt.Fprintf(w, "Server CPU: cores %s; process CPU used %s; goroutines waited runnable for a CPU %s; the model's CPU for the executions recorded: %v.\n", cores, used, wait, fmtDuration(time.Duration(m.RequestsCPU)))
}

// printCPUComparison sets the prediction without the CPU model beside the
// one with it, for a change that adds concurrency on a CPU-bound server.
func printCPUComparison(w io.Writer, c *simulate.CPUComparison) error {
	if c == nil {
		return nil
	}
	saturated := false
	for _, l := range c.Levels {
		saturated = saturated || l.RejectedSaturated != nil
	}
	if c.Model != "" {
		fmt.Fprintf(w, "\nThe change adds concurrency on a server the recording shows CPU-bound (%s model). Rejections predicted after the change:\n", c.Model)
	} else {
		fmt.Fprintf(w, "\nThe change adds concurrency, and nothing tells how much CPU the server had left for it. Rejections predicted after the change:\n")
	}
	tw := textfmt.NewTable(w)
	head := "LEVEL\tSEATS"
	if c.Model != "" {
		head += "\tWITH-CPU-MODEL"
	}
	if saturated {
		head += "\tCPU-SATURATED"
	}
	head += "\tRECORDED-EXECUTION-TIMES"
	if c.Bound != nil {
		head += "\tBOUND"
	}
	head += "\tDISPATCHED"
	var disp []string
	if c.Model != "" {
		disp = append(disp, "WITH")
	}
	if saturated {
		disp = append(disp, "SATURATED")
	}
	fmt.Fprintln(tw, head+" "+strings.Join(append(disp, "RECORDED"), "/"))
	for _, l := range c.Levels {
		if l.RejectedWith+l.RejectedWithout == 0 && l.LimitAfter <= l.LimitBefore && (l.RejectedSaturated == nil || *l.RejectedSaturated == 0) {
			continue
		}
		row := fmt.Sprintf("%s\t%d->%d", sanitize.Line(l.Level), l.LimitBefore, l.LimitAfter)
		var ds []string
		if c.Model != "" {
			row += fmt.Sprintf("\t%d", l.RejectedWith)
			ds = append(ds, fmt.Sprint(l.DispatchedWith))
		}
		if saturated {
			if l.RejectedSaturated != nil {
				row += fmt.Sprintf("\t%d", *l.RejectedSaturated)
				ds = append(ds, fmt.Sprint(*l.DispatchedSaturated))
			} else {
				row += "\t-"
				ds = append(ds, "-")
			}
		}
		ds = append(ds, fmt.Sprint(l.DispatchedWithout))
		row += fmt.Sprintf("\t%d", l.RejectedWithout)
		if c.Bound != nil {
			if lo, hi, ok := l.Range(); ok {
				row += fmt.Sprintf("\t%d–%d", lo, hi)
			} else {
				row += "\t-"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\n", row, strings.Join(ds, "/"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if c.Applies == simulate.AppliesUndecided {
		shown := "the prediction with the CPU model"
		if c.Model == "" {
			shown = "the prediction with the recorded execution times"
		}
		if b := c.Bound; b != nil {
			// the low end, and what each end is widened by, alike
			// with a high end and without
			low := fmt.Sprintf("the fewest rejections of every prediction here and of the recorded execution times on a server %.0f%% faster than the recorded one", 100*b.Margin)
			missed := fmt.Sprintf("what the replay missed of the level's recorded 429s, at least 1 + 1/√n of its n (%s)", fitErrors(c.Levels))
			var how string
			if b.NoHigh != "" {
				how = fmt.Sprintf("It gives %s, divided by %s, and no high end but every request of the level rejected: %s, and on a CPU quota more executions at once can cost CPU per request, so that a level given more seats may serve fewer requests than it did, which nothing recorded at the recorded concurrency tells.",
					low, missed, b.NoHigh)
			} else {
				how = fmt.Sprintf("It runs from %s, to the most of them and of every execution stretched %.2f× (the most the change raises the seats at once, as if the CPU were saturated and the added seats served nothing more) on a server %.0f%% slower; each end is then widened by %s. It bounds the answer as far as the server runs as it did within that margin (a server held to a CPU quota may serve fewer requests with more at once: give --cpu-limit, and the bound has no high end); it is not an estimate.",
					low, b.Stretch, 100*b.Margin, missed)
			}
			fmt.Fprintf(w, "Simulate cannot choose: %s. The tables above show %s; read BOUND instead, not one figure. %s%s %s\n", c.Why, shown, how, wideBounds(c.Levels, b.Wide), settleCPU)
		} else {
			fmt.Fprintf(w, "Simulate cannot choose: %s. It cannot bound the answer; the tables above show %s. %s\n", c.Why, shown, settleCPU)
		}
		return nil
	}
	fmt.Fprintf(w, "The prediction with the CPU model applies (the tables above show it): %s.\n", c.Why)
	return nil
}

// fitErrors names the factors each level's bound was widened by, the
// levels of one factor together.
func fitErrors(ls []simulate.CPUComparisonLevel) string {
	var order []string
	by := map[string][]string{}
	for _, l := range ls {
		if l.RejectedLow == nil || l.FitError == 0 || *l.RejectedHigh == 0 {
			continue
		}
		f := fmt.Sprintf("×%.2f", l.FitError)
		if _, ok := by[f]; !ok {
			order = append(order, f)
		}
		by[f] = append(by[f], sanitize.Line(l.Level))
	}
	if len(order) == 0 {
		return "nothing to widen"
	}
	var out []string
	for _, f := range order {
		out = append(out, fmt.Sprintf("%s %s", strings.Join(by[f], ", "), f))
	}
	return strings.Join(out, "; ")
}

// wideBounds says plainly which levels' bounds are too wide to say much.
func wideBounds(ls []simulate.CPUComparisonLevel, factor float64) string {
	var wide []string
	for _, l := range ls {
		if l.Wide {
			wide = append(wide, fmt.Sprintf("%s (%d–%d)", sanitize.Line(l.Level), *l.RejectedLow, *l.RejectedHigh))
		}
	}
	if len(wide) == 0 {
		return ""
	}
	return fmt.Sprintf(" The bound of %s spans more than %g-fold: the recording cannot narrow it, and it says little.", strings.Join(wide, ", "), factor)
}

// held says, where the recorded executions ran more at once without
// stretching than the cores hold by the CPU evidence, that the model
// holds that many (calibrate.CPUEvidence.InFlight), "" otherwise.
func held(m *calibrate.SharedCPU) string {
	ev := m.CPUEvidence
	if ev.InFlight <= ev.ExecutionCores/ev.PerExecution || ev.InFlight <= 1 {
		return ""
	}
	return fmt.Sprintf("; the recorded executions ran %.2f at once on average without stretching, so the model holds %.2f", ev.InFlight, m.Capacity)
}
