package render

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/golden"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/simulate"
)

// TestPrintCalibrationSaysWhatWasRefused: a level whose estimate the
// recording contradicted (calibrate.Level.Refused) is marked in the
// calibration table and explained below it, with the refused figure and
// what replaced it; so are the dispatch times that were only estimated, and
// a level whose replayed dispatches stay more than 10% from the recorded.
func TestPrintCalibrationSaysWhatWasRefused(t *testing.T) {
	ms := func(f float64) calibrate.Duration { return calibrate.Duration(f * float64(time.Millisecond)) }
	cal := &calibrate.Report{Enabled: true, Levels: []calibrate.Level{
		{Level: "tiny", Source: "saturated", ConcurrencyLimit: 1, Overhead: ms(11.6), Dispatches: 422, Seats: 422, MeanExecution: ms(1.2), HoldTime: ms(12.8),
			Refused: &calibrate.Refusal{Overhead: ms(31.1), Check: "seat time", Why: "with it, its executed requests would hold 34.5 seat-seconds, more than the 13.7 its 1 seat gave over the 13.7s it had a request in the server"}},
		{Level: "other", Source: calibrate.SourceUnmeasured, ConcurrencyLimit: 2, RecordedDispatches: 100, ReplayedDispatches: 120, Dispatch: calibrate.DispatchTooMany, Refused: &calibrate.Refusal{Check: "seat time", Why: "…", ExecutionScale: 0.97}},
	}, DispatchTimes: &calibrate.DispatchTimes{Annotated: 3, FromLatency: 1000}}
	var b bytes.Buffer
	if err := printCalibration(&b, &simulate.Result{Calibration: cal}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log(out)
	for _, want := range []string{
		"saturated, capped",
		"Capped: tiny's calibration (overhead 31.1ms) contradicts the recording (seat time check): with it, its executed requests would hold 34.5 seat-seconds",
		"; overhead 11.6ms instead.",
		"Capped: other's calibration (overhead 0s)",
		"its execution times estimated from the audit log scaled by 0.97.",
		"dispatch times: 1000 from httplog latency − apf_execution_time",
		"3 recorded by the filters' audit annotations",
		"Dispatches: the replay of the recorded configuration dispatched 120 of other's requests, the server 100: more than 10% apart. Its predictions above",
		"do not hold for it; the calibration lacks what held the server's seats longer",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the calibration table lacks %q", want)
		}
	}
}

// TestCPUModelSaysWhatTheQuotaPays: the CFS model's paragraph says what
// an execution, a request's arrival and the rest of the server spend of
// the quota, and leaves the arrivals out where the model spends none.
func TestCPUModelSaysWhatTheQuotaPays(t *testing.T) {
	ms := func(f float64) calibrate.Duration { return calibrate.Duration(f * float64(time.Millisecond)) }
	for _, c := range []struct {
		cost       calibrate.Duration
		background float64
		want       string
	}{
		{ms(0.2), 0.004, "an execution spends 100% of its work, a request 200µs from the period it arrives in (its cost before APF: the median latency of the recorded 429s, at most what the process's CPU beyond the executions holds), the rest of the server 0.004 cores"},
		{0, 0.012, "an execution spends 100% of its work, the rest of the server 0.012 cores"},
	} {
		cal := &calibrate.Report{CPU: &calibrate.CPUModel{Level: "apf-load", Period: ms(100), Quota: ms(20), CPUPerWork: 1, Background: c.background, RequestCost: c.cost}}
		var b bytes.Buffer
		printCPUModel(&b, cal, nil)
		if out := b.String(); !strings.Contains(out, "Outside the marks the server spends its quota of 20ms per period as it runs, and waits for the next period once it is spent: "+c.want+" (the process's CPU over the metrics' span, less the marks').") {
			t.Errorf("request cost %v: the CFS paragraph does not say %q:\n%s", time.Duration(c.cost), c.want, out)
		}
	}
}

// TestCPUModelSaysItsCPUPerWorkWasFitted: where the dispatch check raised
// the CPU per work, the paragraph gives the figure read, both replays'
// dispatches and the figure fitted.
func TestCPUModelSaysItsCPUPerWorkWasFitted(t *testing.T) {
	ms := func(f float64) calibrate.Duration { return calibrate.Duration(f * float64(time.Millisecond)) }
	cal := &calibrate.Report{CPU: &calibrate.CPUModel{Level: "apf-load", Period: ms(100), Quota: ms(20), CPUPerWork: 0.93, CPUPerWorkRead: 0.78, PerWorkDispatches: [2]float64{0.0774, -0.021}}}
	var b bytes.Buffer
	printCPUModel(&b, cal, nil)
	want := "an execution spends 93% of its work, the rest of the server none: the process's CPU over the metrics' span, less the marks', read 78%, a floor (the marks are counted with every recorded stall, and some fell outside them), at which the replay of the recorded configuration dispatched apf-load's requests +7.7% against the server, and -2.1% at 100%; the figure is where the line through the two meets the server's dispatches"
	if out := b.String(); !strings.Contains(out, want) {
		t.Errorf("the CFS paragraph does not say %q:\n%s", want, out)
	}
}

// TestCPUModelSaysItsArrivalsCostWasFitted: where the dispatch check
// raised the arrivals' cost, the paragraph gives the cost the process's
// CPU held, both replays' dispatches, the 429s' latency and the cost
// fitted.
func TestCPUModelSaysItsArrivalsCostWasFitted(t *testing.T) {
	us := func(f float64) calibrate.Duration { return calibrate.Duration(f * float64(time.Microsecond)) }
	cal := &calibrate.Report{CPU: &calibrate.CPUModel{Level: "apf-load", Period: us(100e3), Quota: us(20e3), CPUPerWork: 1,
		RequestCost: us(210), RequestCostRead: us(167), RejectedLatency: us(239), CostDispatches: [2]float64{0.0227, -0.0009}}}
	var b bytes.Buffer
	printCPUModel(&b, cal, nil)
	want := "an execution spends 100% of its work, a request 210µs from the period it arrives in (its cost before APF: the process's CPU beyond the executions, less the marks', held 167µs of it, a floor, at which the replay of the recorded configuration dispatched apf-load's requests +2.3% against the server, and -0.1% at the median latency of the recorded 429s, 239µs; the cost is where the line through the two meets the server's dispatches"
	if out := b.String(); !strings.Contains(out, want) {
		t.Errorf("the CFS paragraph does not say %q:\n%s", want, out)
	}
}

// TestCPUModelSaysWhereItsRunningComesFrom: a running per period read
// from the stalls says how far to trust it and names --cpu-limit; one
// from the limit says so, and does not.
func TestCPUModelSaysWhereItsRunningComesFrom(t *testing.T) {
	ms := func(f float64) calibrate.Duration { return calibrate.Duration(f * float64(time.Millisecond)) }
	for _, c := range []struct {
		limit     float64
		run       calibrate.Duration
		want      string
		wantLimit bool
	}{
		{0, ms(10.9), "10.9ms of running per period while the collector marks (read from its 91 stalls of about a period, the longest (the marks'): 7.4–13.6ms where the limit gave 10ms on the project's recordings", true},
		{0.2, ms(10), "10ms of running per period while the collector marks (from the CPU limit of 0.2 cores over GOMAXPROCS)", false},
	} {
		cal := &calibrate.Report{CPU: &calibrate.CPUModel{Level: "apf-load", Period: ms(100), RunPerPeriod: c.run, CPULimit: c.limit, FullPeriodStalls: 91, GOMAXPROCS: 2}}
		var b bytes.Buffer
		printCPUModel(&b, cal, nil)
		out := b.String()
		if !strings.Contains(out, c.want) || strings.Contains(out, "--cpu-limit") != c.wantLimit {
			t.Errorf("limit %g: the CFS paragraph does not say %q (naming --cpu-limit: %v):\n%s", c.limit, c.want, c.wantLimit, out)
		}
	}
}

// TestDispatchTimesOfAnUnannotatedLog: an audit log whose slow requests
// carry no latency annotation (kube-apiserver 1.34) says why the
// annotated count is 0; one with annotations does not.
func TestDispatchTimesOfAnUnannotatedLog(t *testing.T) {
	for _, c := range []struct {
		d    calibrate.DispatchTimes
		want bool
	}{
		{calibrate.DispatchTimes{FromReplay: 900, SlowUnannotated: 42}, true},
		{calibrate.DispatchTimes{FromReplay: 900, Annotated: 40, SlowUnannotated: 2}, false},
		{calibrate.DispatchTimes{FromReplay: 900}, false},
	} {
		var b bytes.Buffer
		levels := []calibrate.Level{{Level: "tiny", Source: "saturated", ConcurrencyLimit: 1, Dispatches: 422, Seats: 422}}
		if err := printCalibration(&b, &simulate.Result{Calibration: &calibrate.Report{Enabled: true, Levels: levels, DispatchTimes: &c.d}}); err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(b.String(), "though 42 of the requests estimated took longer: kube-apiserver 1.34, and 1.35 before its fix, writes none of these annotations (kubernetes/kubernetes#135684)")
		if got != c.want {
			t.Errorf("%+v: %v, want %v:\n%s", c.d, got, c.want, b.String())
		}
	}
}

func TestFmtSeconds(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0s"}, {-1, "0s"}, {0.000000123, "123ns"}, {0.00085049, "850µs"}, {0.0123456, "12.3ms"},
		{1.5, "1.5s"}, {14.9653, "15s"}, {75.4, "1m15.4s"}, {754, "12m34s"},
		// From 1000 s on, to the second (issue 58: 39m32.7s printed as
		// 39m30s, 3h25m17s as 3h25m0s).
		{999.6, "16m40s"}, {2372.7, "39m33s"}, {12317.2, "3h25m17s"}, {90061.4, "25h1m1s"},
	}
	for _, tt := range tests {
		if got := fmtSeconds(tt.in); got != tt.want {
			t.Errorf("fmtSeconds(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestCPUComparisonUndecided: without CPU evidence and without a bound
// the comparison says that simulate cannot choose and cannot bound the
// answer, gives both predictions (not as a range), and names the capture
// that would settle it; it does not say that a prediction applies.
func TestCPUComparisonUndecided(t *testing.T) {
	c := &simulate.CPUComparison{Model: "shared CPU", Applies: simulate.AppliesUndecided, Why: "the metrics hold no process CPU from two scrapes around the load",
		Levels: []simulate.CPUComparisonLevel{{Level: "tiny", LimitBefore: 1, LimitAfter: 3, RejectedWith: 776, RejectedWithout: 536, DispatchedWith: 1208, DispatchedWithout: 1448}}}
	var b bytes.Buffer
	if err := printCPUComparison(&b, c); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !regexp.MustCompile(`tiny +1->3 +776 +536 +1208/1448`).MatchString(out) {
		t.Errorf("the comparison lacks tiny's two predictions:\n%s", out)
	}
	for _, want := range []string{"cannot choose", "the metrics hold no process CPU", "It cannot bound the answer", "kubectl apf dump bundle --watch"} {
		if !strings.Contains(out, want) {
			t.Errorf("the comparison lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "applies") || strings.Contains(out, "lie between") || strings.Contains(out, "BOUND") {
		t.Errorf("an undecided comparison without a bound says a prediction applies or gives a range:\n%s", out)
	}
}

// TestCPUComparisonRange: without CPU evidence, and with no CPU model at
// all, the comparison gives per level the prediction with the CPU
// saturated, the one with the recorded execution times and the bound
// (with the dispatches of each prediction), says it cannot choose, how the
// bound was made (its margin, stretch and each level's fit widening), names
// a bound too wide to say much, and what would settle it; a level without
// a saturated end or a bound shows "-", not 0.
func TestCPUComparisonRange(t *testing.T) {
	sat, satDisp := int64(905), int64(1079)
	tinyLo, tinyHi, wideLo, wideHi := int64(496), int64(1105), int64(793), int64(1494)
	c := &simulate.CPUComparison{Applies: simulate.AppliesUndecided, Why: "the metrics hold no process CPU from two scrapes around the load",
		Bound: &simulate.Bound{Stretch: 3, Margin: 0.1, Wide: 2},
		Levels: []simulate.CPUComparisonLevel{
			{Level: "tiny", LimitBefore: 1, LimitAfter: 3, RejectedWith: 536, RejectedWithout: 536, DispatchedWith: 1448, DispatchedWithout: 1448, RejectedSaturated: &sat, DispatchedSaturated: &satDisp,
				RejectedLow: &tinyLo, RejectedHigh: &tinyHi, FitError: 1.01, Wide: true},
			{Level: "wide", LimitBefore: 3, LimitAfter: 3, RejectedWith: 842, RejectedWithout: 842, DispatchedWith: 1332, DispatchedWithout: 1332, RejectedSaturated: &sat, DispatchedSaturated: &satDisp,
				RejectedLow: &wideLo, RejectedHigh: &wideHi, FitError: 1.12},
			{Level: "new", LimitBefore: 0, LimitAfter: 2, RejectedWith: 7, RejectedWithout: 7, DispatchedWith: 20, DispatchedWithout: 20},
		}}
	var b bytes.Buffer
	if err := printCPUComparison(&b, c); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, re := range []string{`CPU-SATURATED +RECORDED-EXECUTION-TIMES +BOUND +DISPATCHED SATURATED/RECORDED`, `tiny +1->3 +905 +536 +496–1105 +1079/1448`, `new +0->2 +- +7 +- +-/20`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("the comparison lacks %q:\n%s", re, out)
		}
	}
	if strings.Contains(out, "WITH-CPU-MODEL") {
		t.Errorf("a comparison without a CPU model shows its column:\n%s", out)
	}
	for _, want := range []string{"cannot choose", "read BOUND instead", "10% faster", "stretched 3.00×", "10% slower", "(tiny ×1.01; wide ×1.12)", "The bound of tiny (496–1105) spans more than 2-fold", "kubectl apf dump bundle --watch"} {
		if !strings.Contains(out, want) {
			t.Errorf("the comparison lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "wide (793") {
		t.Errorf("a bound within 2-fold is called wide:\n%s", out)
	}
	if lo, hi, ok := c.Levels[0].Range(); !ok || lo != 496 || hi != 1105 {
		t.Errorf("tiny's range %d–%d (%v), want 496–1105", lo, hi, ok)
	}
	if _, _, ok := c.Levels[2].Range(); ok {
		t.Error("a level without a bound has a range")
	}
	// on a CPU quota the high end is every request of the level: the text
	// says so and why, and does not claim a stretch or a slower server
	c.Bound.NoHigh = "the server is held to 0.2 CPU (--cpu-limit)"
	b.Reset()
	if err := printCPUComparison(&b, c); err != nil {
		t.Fatal(err)
	}
	out = b.String()
	for _, want := range []string{"read BOUND instead", "10% faster", "(tiny ×1.01; wide ×1.12)", "no high end but every request of the level rejected: the server is held to 0.2 CPU (--cpu-limit)", "can cost CPU per request", "The bound of tiny (496–1105) spans more than 2-fold"} {
		if !strings.Contains(out, want) {
			t.Errorf("the comparison on a CPU quota lacks %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"stretched 3.00×", "10% slower"} {
		if strings.Contains(out, not) {
			t.Errorf("the comparison on a CPU quota says %q:\n%s", not, out)
		}
	}
}

// TestUnreproducedLevelIsNotShownAsHeld: a level whose replay of the
// recorded configuration dispatched more than 10% more than the server
// (calibrate.DispatchTooMany) is marked in the levels table, its fit gets
// no quality verdict, and the line below says its predictions do not hold
// and names the evidence the calibration lacks; a level that held keeps
// its verdict and its plain name.
func TestUnreproducedLevelIsNotShownAsHeld(t *testing.T) {
	cal := &calibrate.Report{Enabled: true, Levels: []calibrate.Level{
		{Level: "tiny", Source: calibrate.SourceSaturated, ConcurrencyLimit: 1, Annotated: 1, RecordedDispatches: 49, ReplayedDispatches: 223, Dispatch: calibrate.DispatchTooMany},
		{Level: "wide", Source: calibrate.SourceSaturated, ConcurrencyLimit: 3, Annotated: 1, RecordedDispatches: 900, ReplayedDispatches: 910, Dispatch: calibrate.DispatchHeld},
	}}
	rep := &simulate.Result{Report: &fairqueue.Report{Result: fairqueue.Result{Levels: []fairqueue.LevelResult{
		{Name: "tiny", Dispatched: 223, Rejected: map[string]int64{"queue-full": 1277}},
		{Name: "wide", Dispatched: 910, Rejected: map[string]int64{"queue-full": 90}},
	}}}, Calibration: cal, Fit: []calibrate.LevelFit{
		{Level: "tiny", Requests: 1500, Recorded: 1451, Predicted: 1277, Ratio: 0.88, Agreement: 0.9, Quality: "good"},
		{Level: "wide", Requests: 1000, Recorded: 100, Predicted: 90, Ratio: 0.9, Agreement: 0.95, Quality: "good"},
	}}
	var b bytes.Buffer
	if err := Write(&b, rep, 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, re := range []string{
		`(?m)^tiny \(unreproduced\) +223 +1277`,
		`(?m)^wide +910 +90`,
		`(?m)^tiny +1500 +1451 +1277 +0\.88 +90\.0% +unreproduced`,
		`(?m)^wide +1000 +100 +90 +0\.90 +95\.0% +good`,
		`dispatched 223 of tiny's requests, the server 49: more than 10% apart\. Its predictions above .* do not hold for it; the calibration lacks .*the server's CPU over the workload's window`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("the output does not match %q:\n%s", re, out)
		}
	}
	if strings.Contains(out, "wide's requests") {
		t.Errorf("a level whose dispatches held is said not to:\n%s", out)
	}
}

// TestNoReproductionTableWithout429s: a recording without a 429, whose
// replay predicts none either, has no row to show: the table was printed
// with its header alone (issue 58, also seen); a line says why there is
// none.
func TestNoReproductionTableWithout429s(t *testing.T) {
	cal := &calibrate.Report{Enabled: true, Levels: []calibrate.Level{{Level: "exempt", Source: calibrate.SourceSaturated, Annotated: 1}}}
	rep := &simulate.Result{Report: &fairqueue.Report{Result: fairqueue.Result{Levels: []fairqueue.LevelResult{{Name: "exempt", Dispatched: 3}}}},
		Calibration: cal, Fit: []calibrate.LevelFit{{Level: "exempt", Requests: 3, Agreement: 1, Quality: "good"}}}
	var b bytes.Buffer
	if err := Write(&b, rep, 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "RECORDED-429") {
		t.Errorf("an empty reproduction table:\n%s", out)
	}
	if !strings.Contains(out, "Reproduction of the recording: no 429 recorded, and none predicted (3 requests at 1 level): nothing to compare.") {
		t.Errorf("no line says why there is no table:\n%s", out)
	}
}

// TestBeyondTheCoresIsNotKnown: a level the change runs beyond the server's
// cores (simulate.WarnBeyondCores) shows its figures after the change as
// not known ("?") instead of the replay's, with a legend; another level
// keeps its before->after figures.
func TestBeyondTheCoresIsNotKnown(t *testing.T) {
	rep := &simulate.Result{
		Report: &fairqueue.Report{
			Result: fairqueue.Result{Levels: []fairqueue.LevelResult{
				{Name: "team", Dispatched: 100, Rejected: map[string]int64{"queue-full": 50}},
				{Name: "other", Dispatched: 7},
			}},
			After: &fairqueue.Result{Levels: []fairqueue.LevelResult{
				{Name: "team", Dispatched: 150, Rejected: map[string]int64{"queue-full": 3}},
				{Name: "other", Dispatched: 8},
			}},
		},
		Warnings: []simulate.Warning{{Kind: simulate.WarnBeyondCores, Level: "team", Text: "warning: team: ..."}},
	}
	var b bytes.Buffer
	if err := Write(&b, rep, 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log(out)
	if !regexp.MustCompile(`(?m)^team \(not known\) +100->\? +50->\? `).MatchString(out) || !strings.Contains(out, "?: not known.") {
		t.Errorf("team's figures after the change are not shown as not known:\n%s", out)
	}
	if strings.Contains(out, "150") || strings.Contains(out, "50->3") {
		t.Errorf("team's replayed figures after the change are shown:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^other +7->8 `).MatchString(out) {
		t.Errorf("other's figures are not before->after:\n%s", out)
	}
}

// TestBeyondTheCoresOnTheCPUEvidence: a level the change runs beyond the
// cores, replayed on the CPU evidence's model (simulate.BeyondCPU), keeps
// its figures after the change, marked as resting on that evidence, with
// a legend and the model's paragraph, which names what the recorded
// execution times gave instead; nothing is shown as not known.
func TestBeyondTheCoresOnTheCPUEvidence(t *testing.T) {
	model := &calibrate.SharedCPU{From: calibrate.SharedFromCPUEvidence, Share: 1, Capacity: 1.06, Cores: 1, CoresFrom: calibrate.CoresCPULimit,
		CPUEvidence: &calibrate.CPUEvidence{ProcessCPU: calibrate.Duration(9500 * time.Millisecond), Work: calibrate.Duration(10 * time.Second), Span: calibrate.Duration(10 * time.Second),
			Requests: 1000, Rejected: 3, RequestCost: calibrate.Duration(time.Millisecond / 2), PerExecution: 0.9, ExecutionCores: 0.95}}
	rep := &simulate.Result{
		Report: &fairqueue.Report{
			Result: fairqueue.Result{Levels: []fairqueue.LevelResult{{Name: "team", Dispatched: 100, Rejected: map[string]int64{"queue-full": 50}}}},
			After:  &fairqueue.Result{Levels: []fairqueue.LevelResult{{Name: "team", Dispatched: 120, Rejected: map[string]int64{"queue-full": 30}}}},
		},
		Calibration: &calibrate.Report{Enabled: true},
		Warnings:    []simulate.Warning{{Kind: simulate.WarnCPUEvidence, Level: "team", Text: "warning: team: ..."}},
		BeyondCPU:   &simulate.BeyondCPU{Model: model, Levels: []string{"team"}, RejectedRecorded: map[string]int64{"team": 3}, DispatchedRecorded: map[string]int64{"team": 150}},
	}
	var b bytes.Buffer
	if err := Write(&b, rep, 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log(out)
	if !regexp.MustCompile(`(?m)^team \(CPU evidence\) +100->120 +50->30 `).MatchString(out) || !strings.Contains(out, "(CPU evidence): the change runs the level more at once") {
		t.Errorf("team's figures after the change are not shown as resting on the CPU evidence:\n%s", out)
	}
	if !strings.Contains(out, "CPU beyond the recording: the change runs team (3 429s, 150 dispatched with the recorded execution times) more at once") ||
		!strings.Contains(out, "is 0.90 of a core per execution in flight; 1 core (--cpu-limit) less that cost leave the executions 0.95, which hold 1.06 at once") ||
		!strings.Contains(out, "So the level serves no more requests a second than the cores allowed the recording: a server that serves more, or fewer, by running more at once is outside this model.") {
		t.Errorf("the model's paragraph is missing or wrong:\n%s", out)
	}
	if strings.Contains(out, "not known") || strings.Contains(out, "->?") {
		t.Errorf("a figure is shown as not known:\n%s", out)
	}
	golden.Holds(t, "--cpu-limit given", out, nil, []string{"a CPU limit below it"})

	// the cores from GOMAXPROCS: a CPU limit below it (1 CPU runs 2 Ps)
	// is not seen, and the paragraph says how to give it
	model.Cores, model.CoresFrom = 2, calibrate.CoresGOMAXPROCS
	b.Reset()
	if err := Write(&b, rep, 0); err != nil {
		t.Fatal(err)
	}
	golden.Holds(t, "cores from GOMAXPROCS", b.String(), []string{"; 2 cores (GOMAXPROCS; a CPU limit below it is not seen, as Go rounds a limit up and to at least 2: give it with --cpu-limit) less that cost"}, nil)
}

// TestChangeThatMovesNothing: a change whose replay gives every level the
// figures it had says so under the table, where "Cells show before->after"
// would leave a table of single values unexplained; a change that moves
// one figure does not.
func TestChangeThatMovesNothing(t *testing.T) {
	levels := func(rejected int64) []fairqueue.LevelResult {
		return []fairqueue.LevelResult{{Name: "l", Dispatched: 10, Rejected: map[string]int64{"queue-full": rejected}}}
	}
	const line = "The change moves no figure"
	for _, c := range []struct {
		after int64
		want  bool
	}{{3, true}, {2, false}} {
		rep := &simulate.Result{Report: &fairqueue.Report{Result: fairqueue.Result{Levels: levels(3)}, After: &fairqueue.Result{Levels: levels(c.after)}}}
		var b bytes.Buffer
		if err := Write(&b, rep, 0); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), line); got != c.want {
			t.Errorf("3 -> %d queue-full: %q said %v, want %v:\n%s", c.after, line, got, c.want, b.String())
		}
	}
}

// TestMeasuredExecutions: the estimated executions beside APF's measure
// of them, level by level, with the scrapes' window; a level whose
// executions are not APF's says why, and the window to replay for the
// check is given once, however many levels lack it.
func TestMeasuredExecutions(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	w := calibrate.TimeRange{From: t0, To: t0.Add(30 * time.Second)}
	s := func(f float64) calibrate.Duration { return calibrate.Duration(f * float64(time.Second)) }
	for _, c := range []struct {
		name      string
		levels    []calibrate.Level
		want, not []string
	}{
		{"compared", []calibrate.Level{
			{Level: "tiny", Measured: &calibrate.Measured{Executions: 620, Time: s(11.837), Scrapes: w, Logged: 620, Estimated: s(12.188), Ratio: 1.03}},
		}, []string{"between the scrapes at 2030-01-01T00:00:00Z–00:00:30Z): tiny's 620 executions took 11.8s, the estimates give them 12.2s (1.03×)."}, []string{"replay"}},
		{"the counts differ by the scrapes' gathering", []calibrate.Level{
			{Level: "apf-load", Measured: &calibrate.Measured{Executions: 240, Time: s(5.152), Scrapes: w, Logged: 233, Gathering: &[2]int64{2, 9}, Estimated: s(5.038), Ratio: 1.007}},
		}, []string{"apf-load's 240 executions took 5.15s, the estimates give the log's 233 5.04s (1.01× per execution; 2 of them ended while the first scrape gathered, 9 more while the last did)."}, []string{"replay"}},
		{"a window cut inside", []calibrate.Level{
			{Level: "a", Measured: &calibrate.Measured{Executions: 855, Time: s(9), Scrapes: w, Logged: 798, Why: "APF measured 855 executions ..., the workload holds 798: not the same requests", Replay: &w}},
			{Level: "b", Measured: &calibrate.Measured{Executions: 45, Time: s(1), Scrapes: w, Logged: 42, Why: "APF measured 45 ...", Replay: &w}},
		}, []string{"a not compared: APF measured 855", "b not compared: APF measured 45", "For the check, replay the window between the scrapes: --since 2030-01-01T00:00:00Z --until 2030-01-01T00:00:30Z.\n"}, nil},
	} {
		var b bytes.Buffer
		// the estimates the measure is set beside
		est := calibrate.Estimated{ExecutionFromEnds: 620}
		if err := printCalibration(&b, &simulate.Result{Calibration: &calibrate.Report{Enabled: true, Levels: c.levels, Estimated: est}}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		golden.Holds(t, c.name, out, c.want, c.not)
		if n := strings.Count(out, "For the check"); n > 1 {
			t.Errorf("%s: the window to replay given %d times:\n%s", c.name, n, out)
		}
	}
}

// TestEvidenceOverPartOfTheLog: scrapes that cover part of a longer log
// say which --since/--until replay that part, to whole seconds around the
// scrapes (make demo's audit log of an hour, a watch of a minute: it said
// how many 429s lay outside, and not what to do).
func TestEvidenceOverPartOfTheLog(t *testing.T) {
	from := time.Date(2026, 12, 6, 0, 59, 40, 12e6, time.UTC)
	rep := &simulate.Result{Evidence: &simulate.EvidenceCoverage{Metrics: calibrate.TimeRange{From: from, To: from.Add(60156 * time.Millisecond)},
		Scrapes: 14, Requests: 2580, Total: 23175, RejectedOutside: 7331}}
	var b bytes.Buffer
	printWindow(&b, rep)
	want := "cover 2580 of the 23175 requests (11.1%); 7331 recorded 429s lie outside it, which it did not see (--since 2026-12-06T00:59:40Z --until 2026-12-06T01:00:41Z replays the part it covers).\n"
	if !strings.HasSuffix(b.String(), want) {
		t.Errorf("got %q, want it to end %q", b.String(), want)
	}
}

// TestSpeedSpreadLine: a level whose figures after the change follow the
// server's speed beyond the band gets a line that says how far; one within
// it gets none.
func TestSpeedSpreadLine(t *testing.T) {
	rep := &simulate.Result{
		Report: &fairqueue.Report{
			Result: fairqueue.Result{Levels: []fairqueue.LevelResult{{Name: "tiny", Dispatched: 600, Rejected: map[string]int64{"queue-full": 379}}, {Name: "wide", Dispatched: 900, Rejected: map[string]int64{"queue-full": 392}}}},
			After:  &fairqueue.Result{Levels: []fairqueue.LevelResult{{Name: "tiny", Dispatched: 917, Rejected: map[string]int64{"queue-full": 62}}, {Name: "wide", Dispatched: 897, Rejected: map[string]int64{"queue-full": 395}}}},
		},
		SpeedSpread: &simulate.SpeedSpread{Margin: 0.1, Levels: []simulate.SpeedSpreadLevel{
			{Level: "tiny", Rejected: 62, Faster: 48, Slower: 78, Steep: true}, {Level: "wide", Rejected: 395, Faster: 372, Slower: 418}}},
	}
	var b bytes.Buffer
	if err := Write(&b, rep, 0); err != nil {
		t.Fatal(err)
	}
	golden.Holds(t, "simulate", b.String(), []string{"Server speed: tiny's 62 429s after the change become 48 on a server 10% faster and 78 on one 10% slower, beyond a prediction's band (0.75-1.25)", "it is not known closer than 48-78.\n"},
		[]string{"Server speed: wide"})
}
