package simulate

import (
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
)

// TestCPUWhyNamesTheQuotaWhereItIsTheCapacity: where the shared CPU's
// capacity was the server's CPU limit, whether fitted ("limit") or read
// from the metrics on --cpu-limit's cores, the replay runs it under the
// CFS model's quota (SharedCPU.UnderQuota), and the comparison's reason
// speaks of that quota, not of the limit's cores as a capacity; a CPU
// limit the model does not compose keeps its own reason.
func TestCPUWhyNamesTheQuotaWhereItIsTheCapacity(t *testing.T) {
	cfs := &calibrate.CPUModel{Level: "tiny", Period: calibrate.Duration(100 * time.Millisecond),
		Quota: calibrate.Duration(20 * time.Millisecond), GOMAXPROCS: 2}
	for _, tc := range []struct {
		name        string
		shared      *calibrate.SharedCPU
		cpu         *calibrate.CPUModel
		model, want string
	}{
		{"metrics on the limit", &calibrate.SharedCPU{From: calibrate.SharedFromMetrics, Cores: 0.2, CoresFrom: calibrate.CoresCPULimit, Share: 0.5}, cfs,
			"shared CPU and CFS quota", "its process's CPU puts 50% of an execution on the CPU, and the server may spend 20ms of CPU per 100ms CFS period"},
		{"fitted on the limit", &calibrate.SharedCPU{From: calibrate.SharedFromLimit, Cores: 0.2, CoresFrom: calibrate.CoresCPULimit, Share: 0.25, Overlapped: 40}, cfs,
			"shared CPU and CFS quota", "the 40 recorded executions that ran with others in flight put 25% of each on the CPU, and the server may spend 20ms"},
		{"metrics on GOMAXPROCS", &calibrate.SharedCPU{From: calibrate.SharedFromMetrics, Cores: 2, CoresFrom: calibrate.CoresGOMAXPROCS, Share: 0.5}, cfs,
			"shared CPU and CFS quota", "the server had 2 cores (GOMAXPROCS)"},
		{"the limit without the CFS model", &calibrate.SharedCPU{From: calibrate.SharedFromLimit, Cores: 1, CoresFrom: calibrate.CoresCPULimit, Share: 0.25, Capacity: 1, Overlapped: 40}, nil,
			"shared CPU", "stretched as if 25% of each shared the 1.00 cores of its CPU limit"},
		{"the CFS model alone", nil, cfs, "CFS quota", "the recorded executions of tiny stalled where the CFS quota ran out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model, why := cpuWhy(&calibrate.Report{Shared: tc.shared, CPU: tc.cpu})
			if model != tc.model || !strings.Contains(why, tc.want) {
				t.Errorf("cpuWhy = %q, %q; want %q and a reason with %q", model, why, tc.model, tc.want)
			}
		})
	}
}

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
