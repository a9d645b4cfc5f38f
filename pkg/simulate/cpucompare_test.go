package simulate

import (
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
)

// TestCPUEvidenceDecides: the prediction with the CPU model is chosen only
// where the model rests on what the server counted over the workload's
// window (the CFS model, or a shared-CPU model with the process's CPU);
// a shared-CPU model fitted to the recorded stretch alone leaves the
// choice open, saying what is missing, and so do metrics that do not cover
// the workload, naming both windows.
func TestCPUEvidenceDecides(t *testing.T) {
	used := 0.8
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	unc := &calibrate.Uncovered{Metrics: calibrate.TimeRange{From: t0, To: t0.Add(5 * time.Second)}, Workload: calibrate.TimeRange{From: t0.Add(time.Minute), To: t0.Add(2 * time.Minute)}}
	for _, tt := range []struct {
		name string
		cal  *calibrate.Report
		ok   bool
		why  string
	}{
		{"CFS model", &calibrate.Report{CPU: &calibrate.CPUModel{Level: "slow"}}, true, ""},
		{"shared CPU with the process's CPU", &calibrate.Report{Shared: &calibrate.SharedCPU{From: calibrate.SharedFromExecutions, Used: &used}}, true, ""},
		{"shared CPU from the stretch alone", &calibrate.Report{Shared: &calibrate.SharedCPU{From: calibrate.SharedFromExecutions}}, false, "no process CPU from two scrapes around the load"},
		{"metrics before the load", &calibrate.Report{Shared: &calibrate.SharedCPU{From: calibrate.SharedFromExecutions}, Uncovered: unc}, false, unc.Metrics.String()},
	} {
		ok, why := cpuEvidence(tt.cal)
		if ok != tt.ok || !strings.Contains(why, tt.why) {
			t.Errorf("%s: evidence %v (%q), want %v (%q)", tt.name, ok, why, tt.ok, tt.why)
		}
	}
}

// TestQuotaHeld: the bound loses its high end on a server held to a CPU
// quota, which --cpu-limit says, or a level whose stalls end at one phase
// of the CFS period (as the CPU model reads them); stalls spread over the
// period, or too few, say nothing of a quota.
func TestQuotaHeld(t *testing.T) {
	p := calibrate.DefaultParams()
	cal := func(levels ...calibrate.Level) *calibrate.Result {
		return &calibrate.Result{Report: calibrate.Report{Levels: levels}}
	}
	throttled := calibrate.Level{Level: "apf-load", Stalls: p.MinThrottledStalls, StallsAtPeriodStart: 1}
	spread := calibrate.Level{Level: "apf-list", Stalls: 30, StallsAtPeriodStart: 0.27}
	few := calibrate.Level{Level: "tiny", Stalls: 1, StallsAtPeriodStart: 1}
	for _, c := range []struct {
		name  string
		cal   *calibrate.Result
		limit float64
		want  string
	}{
		{"--cpu-limit", cal(spread), 0.2, "the server is held to 0.2 CPU (--cpu-limit)"},
		{"stalls at one phase", cal(spread, throttled), 0, "apf-load's stalled executions end at one phase of the 100 ms CFS period"},
		{"stalls spread over the period", cal(spread), 0, ""},
		{"too few stalls", cal(few), 0, ""},
	} {
		got := quotaHeld(c.cal, c.limit, p)
		if c.want == "" && got != "" || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
