package monitoring

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/golden"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
)

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Assert(t, filepath.Join("testdata", name), got)
}

// promtool returns the real promtool ($PROMTOOL_BIN, or the cached build of
// hack/bin.sh); the tests that run it are skipped with -short, which may not
// afford building it.
func promtool(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("promtool is not run with -short")
	}
	p, err := testcluster.Binary("promtool")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func runPromtool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func mustYAML(t *testing.T, v any) []byte {
	t.Helper()
	b, err := MarshalYAML(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// variants are the option sets whose rules are checked by promtool.
func variants() map[string]Options {
	noCluster := DefaultOptions()
	noCluster.ClusterLabel = ""
	selected := DefaultOptions()
	selected.Selector = `job="apiserver", env=~"prod|stag\"ing"`
	selected.ClusterLabel = "k8s_cluster"
	selected.InstanceLabel = "pod"
	selected.RateWindow = 90 * time.Second
	selected.WaitLimit = 2500 * time.Millisecond
	return map[string]Options{"defaults": DefaultOptions(), "no-cluster": noCluster, "selector": selected}
}

func TestRulesGolden(t *testing.T) {
	f := Rules(DefaultOptions())
	checkGolden(t, "rules.golden.yaml", mustYAML(t, f))
	pr := NewPrometheusRule("kubectl-apf", "monitoring", map[string]string{"release": "prometheus"}, f)
	checkGolden(t, "prometheusrule.golden.yaml", mustYAML(t, pr))
	o := variants()["selector"]
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "rules-selector.golden.yaml", mustYAML(t, Rules(o)))
}

// TestRulesPromtoolCheck: every variant is a rule file the real promtool
// accepts (syntax, PromQL, templates, label names).
func TestRulesPromtoolCheck(t *testing.T) {
	for name, o := range variants() {
		t.Run(name, func(t *testing.T) {
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), mustYAML(t, Rules(o)), 0o644); err != nil {
				t.Fatal(err)
			}
			out := runPromtool(t, dir, "check", "rules", "--lint=all", "--lint-fatal", "rules.yaml")
			if !strings.Contains(out, "SUCCESS") {
				t.Fatalf("promtool check rules: %s", out)
			}
		})
	}
}

// TestRulesPromtoolUnit runs testdata/rules_test.yaml, the series that fire
// each alert and those that must not, with the real promtool. Annotations
// are dropped from the rules under test: promtool compares them whole, and
// their text is reviewed in the golden file instead.
func TestRulesPromtoolUnit(t *testing.T) {
	f := Rules(DefaultOptions())
	for gi := range f.Groups {
		for ri := range f.Groups[gi].Rules {
			f.Groups[gi].Rules[ri].Annotations = nil
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), mustYAML(t, f), 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join("testdata", "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	out := runPromtool(t, dir, "test", "rules", "rules_test.yaml")
	t.Logf("promtool test rules: %s", strings.TrimSpace(out))
}

// TestRulesAlertCoverage: every alert the rules define is tested firing in
// testdata/rules_test.yaml, and quiet series sit beside each firing case.
func TestRulesAlertCoverage(t *testing.T) {
	tests, err := os.ReadFile(filepath.Join("testdata", "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range Rules(DefaultOptions()).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if !bytes.Contains(tests, []byte("alertname: "+r.Alert+"\n")) {
				t.Errorf("alert %s has no test in testdata/rules_test.yaml", r.Alert)
			}
			if !bytes.Contains(tests, []byte("--- "+r.Alert+":")) {
				t.Errorf("alert %s has no section of firing and quiet series", r.Alert)
			}
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*Options)
		wantErr string
	}{
		{name: "defaults", mod: func(*Options) {}},
		{name: "no cluster label", mod: func(o *Options) { o.ClusterLabel = "" }},
		{name: "bad cluster label", mod: func(o *Options) { o.ClusterLabel = "k8s-cluster" }, wantErr: `cluster label "k8s-cluster"`},
		{name: "bad instance label", mod: func(o *Options) { o.InstanceLabel = "" }, wantErr: "instance label"},
		{name: "same labels", mod: func(o *Options) { o.ClusterLabel = "instance" }, wantErr: "both"},
		{name: "bad selector", mod: func(o *Options) { o.Selector = "job=apiserver" }, wantErr: "the value of job must be in double quotes"},
		{name: "sub-second window", mod: func(o *Options) { o.RateWindow = 1500 * time.Millisecond }, wantErr: "rate window"},
		{name: "zero wait limit", mod: func(o *Options) { o.WaitLimit = 0 }, wantErr: "wait limit"},
		{name: "negative rate", mod: func(o *Options) { o.Rejected.Threshold = -1 }, wantErr: "rejected threshold"},
		{name: "share above 1", mod: func(o *Options) { o.GlobalDefault.Threshold = 1.5 }, wantErr: "global-default threshold"},
		{name: "negative for", mod: func(o *Options) { o.Saturated.For = -time.Minute }, wantErr: "saturation duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			tt.mod(&o)
			err := o.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
