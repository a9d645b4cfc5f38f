package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-apf/kubectl-apf/pkg/monitoring"
)

// TestMonitoringRulesFlags: the flags reach the rules (a change of each
// threshold shows in its alert's expression), and -o prometheusrule wraps
// them.
func TestMonitoringRulesFlags(t *testing.T) {
	code, out, errOut := runPlugin("monitoring", "rules", "-o", "prometheusrule", "-n", "monitoring", "--labels", "release=prometheus",
		"--selector", `job="apiserver"`, "--cluster-label", "", "--rate-window", "2m", "--rejected-rate", "0.5", "--rejected-for", "1h",
		"--wait-limit", "4s", "--wait-ratio", "0.5", "--global-default-share", "0.3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var pr monitoring.PrometheusRule
	if err := yaml.UnmarshalStrict([]byte(out), &pr); err != nil {
		t.Fatalf("decoding %s: %v", out, err)
	}
	if pr.Kind != "PrometheusRule" || pr.APIVersion != "monitoring.coreos.com/v1" || pr.Metadata.Namespace != "monitoring" ||
		pr.Metadata.Labels["release"] != "prometheus" || pr.Metadata.Name != "kubectl-apf" {
		t.Fatalf("header %s %s %+v", pr.APIVersion, pr.Kind, pr.Metadata)
	}
	alerts := map[string]monitoring.Rule{}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts[r.Alert] = r
			}
			if strings.Contains(r.Expr, "cluster") {
				t.Errorf("--cluster-label '' left a cluster label in %s", r.Expr)
			}
			if strings.Contains(r.Expr, "_total") && !strings.Contains(r.Expr, `job="apiserver"`) {
				t.Errorf("a selector without the --selector matcher: %s", r.Expr)
			}
			if strings.Contains(r.Expr, "[5m]") {
				t.Errorf("--rate-window 2m ignored: %s", r.Expr)
			}
		}
	}
	for name, want := range map[string]string{
		monitoring.AlertRejected:      "> 0.5",
		monitoring.AlertWaitNearLimit: "> 2",
		monitoring.AlertGlobalDefault: "> 0.3",
	} {
		if !strings.HasSuffix(alerts[name].Expr, want) {
			t.Errorf("%s: %q does not end with %q", name, alerts[name].Expr, want)
		}
	}
	if alerts[monitoring.AlertRejected].For != "1h" {
		t.Errorf("--rejected-for 1h gave for: %q", alerts[monitoring.AlertRejected].For)
	}
}

func TestMonitoringFlagErrors(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"monitoring", "rules", "--selector", "job=apiserver"}, "--selector"},
		{[]string{"monitoring", "rules", "--saturation", "1.5"}, "--saturation"},
		{[]string{"monitoring", "rules", "--rate-window", "0s"}, "--rate-window"},
		{[]string{"monitoring", "rules", "--instance-label", "my-instance"}, "--instance-label"},
		{[]string{"monitoring", "rules", "-o", "wide"}, "--output"},
		{[]string{"monitoring", "dashboard", "--defaults", "-o", "yaml"}, "--output"},
		{[]string{"monitoring", "rules", "--labels", "a=b"}, "-o prometheusrule"},
		{[]string{"monitoring", "dashboard", "--defaults", "--from", "x.tar.gz"}, "x.tar.gz"},
		{[]string{"monitoring", "dashboard", "--defaults", "--uid", ""}, "--uid"},
		{[]string{"monitoring", "dashboard", "--defaults", "--cluster-label", "a b"}, "--cluster-label"},
		{[]string{"monitoring", "dashboard", "--from", filepath.Join(t.TempDir(), "missing.tar.gz")}, "missing.tar.gz"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[1:], " "), func(t *testing.T) {
			code, out, errOut := runPlugin(tt.args...)
			if code == 0 || !strings.Contains(errOut, tt.wantErr) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Fatalf("exit %d, stderr %q (want one line containing %q), stdout %q", code, errOut, tt.wantErr, out)
			}
		})
	}
}

// TestMonitoringDashboardFiles: levels given with -f get rows next to the
// defaults' (and replace a default of the same name).
func TestMonitoringDashboardFiles(t *testing.T) {
	proposal := filepath.Join("..", "..", "testdata", "capacity", "proposal.yaml")
	code, out, errOut := runPlugin("monitoring", "dashboard", "--defaults", "-f", proposal, "--title", "APF proposal")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var d monitoring.Dashboard
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d.Title != "APF proposal" {
		t.Errorf("title %q", d.Title)
	}
	rows := strings.Join(d.Rows(), "\n")
	for _, want := range []string{"Level exempt:", "Level workload-low:", "Level batch:", "Level global-default: Limited, 20 shares, lendable 50%, no borrowing limit, 256 queues"} {
		if !strings.Contains(rows, want) {
			t.Errorf("no row %q in\n%s", want, rows)
		}
	}
	t.Logf("rows:\n%s", rows)
}

// TestMonitoringOutputTemplates: -o jsonpath reads the same JSON as -o json.
func TestMonitoringOutputTemplates(t *testing.T) {
	code, out, errOut := runPlugin("monitoring", "rules", "-o", "jsonpath={.groups[1].rules[*].alert}")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := strings.Join([]string{monitoring.AlertRejected, monitoring.AlertTimedOut, monitoring.AlertWaitNearLimit, monitoring.AlertSaturated,
		monitoring.AlertCatchAll, monitoring.AlertGlobalDefault, monitoring.AlertDisagreement}, " ")
	if strings.TrimSpace(out) != want {
		t.Errorf("alerts %q, want %q", out, want)
	}
	code, out, errOut = runPlugin("monitoring", "dashboard", "--defaults", "-o", "jsonpath={.templating.list[*].name}")
	if code != 0 || strings.TrimSpace(out) != "datasource cluster instance" {
		t.Fatalf("exit %d, variables %q: %s", code, out, errOut)
	}
}
