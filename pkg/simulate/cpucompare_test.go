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
