package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/golden"
	lintrender "github.com/kubectl-apf/kubectl-apf/pkg/lint/render"
)

// checkGolden compares got with testdata/<name> (internal/testharness/golden: go test
// -update rewrites it).
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Assert(t, filepath.Join("..", "..", "testdata", name), got)
}

// runPlugin runs the plugin in-process and returns its exit code and output.
func runPlugin(args ...string) (code int, stdout, stderr string) {
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	code = run(args, streams)
	return code, out.String(), errOut.String()
}

func TestLintGolden(t *testing.T) {
	broken := filepath.Join("..", "..", "testdata", "lint", "broken")
	tests := []struct {
		name     string
		args     []string
		golden   string
		wantCode int
	}{
		{name: "defaults", args: []string{"lint", "--defaults"}, golden: "lint/defaults.golden"},
		{name: "defaults with info", args: []string{"lint", "--defaults", "--min-severity=info"}, golden: "lint/defaults-info.golden"},
		{name: "broken repository", args: []string{"lint", "--defaults", "-f", broken}, golden: "lint/broken.golden", wantCode: 1},
		{name: "broken repository as json", args: []string{"lint", "--defaults", "-f", broken, "-o", "json"}, golden: "lint/broken.json.golden", wantCode: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runPlugin(tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tt.wantCode, errOut)
			}
			if tt.wantCode != 0 && errOut != "error: 2 lint findings at or above error found\n" {
				t.Errorf("stderr %q", errOut)
			}
			checkGolden(t, tt.golden, []byte(out))
		})
	}
}

// TestLintBrokenRepositoryFindsEveryPlantedMistake ties each object of
// testdata/lint/broken to the rule its comment names, independently of the
// golden file's wording.
func TestLintBrokenRepositoryFindsEveryPlantedMistake(t *testing.T) {
	code, out, _ := runPlugin("lint", "--defaults", "-f", filepath.Join("..", "..", "testdata", "lint", "broken"), "-o", "json")
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	var rep lintrender.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	planted := map[string]string{
		"shadowed-flowschema flowschema/alice-debug":                       "",
		"dangling-priority-level flowschema/batch-jobs":                    "",
		"precedence-tie flowschema/ci-bots":                                "",
		"no-distinguisher-shared-level flowschema/ci-runners":              "",
		"exempt-beyond-masters flowschema/oncall-exempt":                   "",
		"reject-level-with-traffic flowschema/scrapers":                    "",
		"unused-priority-level prioritylevelconfiguration/reserved":        "",
		"shuffle-sharding-crush-risk prioritylevelconfiguration/tiny":      "",
		"suggested-object-differs prioritylevelconfiguration/workload-low": "",
		"system-identity-falls-through flowschema/global-default":          "",
	}
	for _, f := range rep.Findings {
		key := f.Rule + " " + f.Objects[0].String()
		if _, ok := planted[key]; ok {
			planted[key] = "found"
		}
	}
	for k, v := range planted {
		if v == "" {
			t.Errorf("planted mistake not found: %s", k)
		}
	}
	if rep.Errors != 2 {
		t.Errorf("%d errors, want 2 (shadowed, dangling)", rep.Errors)
	}
}

func TestLintFlagErrors(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"lint", "--defaults", "-o", "xml"}, "--output must be one of '' (or table), json, yaml, sarif, junit, jsonpath=..."},
		{[]string{"lint", "--defaults", "--min-severity", "loud"}, "--min-severity: severity must be one of error, warning, info"},
		{[]string{"lint", "--defaults", "--from", "x.tar.gz"}, "x.tar.gz"},
		{[]string{"lint", "--defaults", "-f", "does-not-exist"}, "-f does-not-exist:"},
		{[]string{"lint", "--from", "does-not-exist.tar.gz"}, "does-not-exist.tar.gz"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errOut := runPlugin(tt.args...)
			if code == 0 || !strings.Contains(errOut, tt.wantErr) || strings.Count(errOut, "\n") != 1 {
				t.Fatalf("exit %d, stderr %q, want one line containing %q", code, errOut, tt.wantErr)
			}
		})
	}
}

func TestLintStdin(t *testing.T) {
	streams, in, out, _ := genericiooptions.NewTestIOStreams()
	in.WriteString(`apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: lost}
spec:
  priorityLevelConfiguration: {name: nowhere}
  rules: [{subjects: [{kind: User, user: {name: bob}}], nonResourceRules: [{verbs: ["get"], nonResourceURLs: ["/version"]}]}]
`)
	if code := run([]string{"lint", "--defaults", "-f", "-"}, streams); code != 1 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out.String(), "FlowSchema lost references priority level \"nowhere\"") {
		t.Fatalf("output:\n%s", out)
	}
}

// TestLintReadsTheServerConcurrency: lint of a bundle sizes the levels at
// the server concurrency limit its metrics give (15 for the quiet
// recording's kube-apiserver, as capacity reads it), not at the default
// 600 (the demo cluster's 1-seat level was reported "at 600 server
// seats"); --defaults alone keeps 600, and --server-concurrency wins.
func TestLintReadsTheServerConcurrency(t *testing.T) {
	quiet := filepath.Join("..", "..", "testdata", "simulate", "recordings", "quiet", "bundle.tar.gz")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"lint", "--from", quiet}, "at 15 server seats"},
		{[]string{"lint", "--from", quiet, "--server-concurrency", "40"}, "at 40 server seats"},
	} {
		code, out, errOut := runPlugin(c.args...)
		if code > 1 || !strings.Contains(out, c.want) || strings.Contains(out, "at 600 server seats") {
			t.Errorf("%v: exit %d, stderr %q; want %q in\n%s", c.args, code, errOut, c.want, out)
		}
	}
}
