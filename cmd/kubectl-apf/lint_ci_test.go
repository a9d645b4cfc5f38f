package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/lint"
	lintrender "github.com/kubectl-apf/kubectl-apf/pkg/lint/render"
)

var (
	lintTestdata  = filepath.Join("..", "..", "testdata", "lint")
	suppressDir   = filepath.Join(lintTestdata, "suppress")
	suppressCfg   = filepath.Join(lintTestdata, "suppress-config.yaml")
	brokenLintDir = filepath.Join(lintTestdata, "broken")
	accepted      = filepath.Join(suppressDir, "accepted.yaml")
)

func TestLintListRules(t *testing.T) {
	code, out, errOut := runPlugin("lint", "--list-rules")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, r := range lint.Rules() {
		if !strings.Contains(out, r.ID+" ") {
			t.Errorf("--list-rules lacks %s", r.ID)
		}
	}
	code, out, _ = runPlugin("lint", "--list-rules", "-o", "json")
	var rules []lint.Rule
	if code != 0 || json.Unmarshal([]byte(out), &rules) != nil || len(rules) != len(lint.Rules()) {
		t.Fatalf("exit %d, %d rules from -o json:\n%s", code, len(rules), out)
	}
	// --list-rules needs no cluster: it must not read a kubeconfig.
	if code, _, errOut := runPlugin("lint", "--list-rules", "--kubeconfig", "does-not-exist"); code != 0 {
		t.Fatalf("--list-rules read the kubeconfig: %s", errOut)
	}
}

// TestLintListRulesSeverityIsTheFindings: the SEVERITY column of
// --list-rules names the severity every finding of its rule prints (issue
// 58: exempt-beyond-masters was listed as an error and printed as a
// warning), apart from information on objects only their manager changes,
// which the list's note says.
func TestLintListRulesSeverityIsTheFindings(t *testing.T) {
	code, out, errOut := runPlugin("lint", "--list-rules")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	listed := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		cells := regexp.MustCompile(`\s{2,}`).Split(line, 3)
		if len(cells) == 3 && cells[0] != "RULE" {
			listed[cells[0]] = strings.Split(cells[1], " or ")
		}
	}
	if len(listed) != len(lint.Rules()) {
		t.Fatalf("%d rules in the table, want %d:\n%s", len(listed), len(lint.Rules()), out)
	}
	if !strings.Contains(out, "is info, whatever its rule's severity") {
		t.Errorf("the list does not say that findings on managed objects are info:\n%s", out)
	}
	seen := map[string]bool{}
	for _, args := range [][]string{
		{"lint", "--defaults", "-f", brokenLintDir, "-o", "json", "--min-severity=info"},
		{"lint", "--defaults", "-o", "json", "--min-severity=info"},
		{"lint", "--defaults", "-f", filepath.Join(lintTestdata, "public", "kueue"), "-o", "json", "--min-severity=info"},
	} {
		_, out, _ := runPlugin(args...)
		var rep struct {
			Findings []lint.Finding `json:"findings"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Findings) == 0 {
			t.Fatalf("%v: %v, no findings in:\n%s", args, err, out)
		}
		for _, f := range rep.Findings {
			seen[f.Rule+" "+string(f.Severity)] = true
			if f.Severity == lint.SeverityInfo && f.ManagedBy != "" {
				continue
			}
			if !slices.Contains(listed[f.Rule], string(f.Severity)) {
				t.Errorf("%s finding printed as %s, listed as %s: %s", f.Rule, f.Severity, strings.Join(listed[f.Rule], " or "), f.Message)
			}
		}
	}
	// The broken repository's oncall-exempt is the milder warning.
	if !seen[lint.RuleExemptBeyondMasters+" warning"] {
		t.Errorf("no exempt-beyond-masters warning among %v", seen)
	}
}

func TestLintExplain(t *testing.T) {
	code, out, _ := runPlugin("lint", "--explain", "reject-level-admits-when-idle")
	r, _ := lint.RuleByID("reject-level-admits-when-idle")
	if code != 0 || out != lint.RulePage(r) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	code, _, errOut := runPlugin("lint", "--explain", "no-such-rule")
	if code != 2 || !strings.Contains(errOut, `no lint rule "no-such-rule"`) || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// TestLintExitCodes: 0 below --fail-on, 1 at or above it, 2 when lint
// itself fails.
func TestLintExitCodes(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"lint", "--defaults"}, 0},
		{[]string{"lint", "--defaults", "--fail-on", "info"}, 1}, // the defaults have information findings
		{[]string{"lint", "--defaults", "-f", brokenLintDir}, 1},
		{[]string{"lint", "--defaults", "-f", accepted, "--config", suppressCfg}, 0},
		{[]string{"lint", "--defaults", "-f", accepted, "--config", suppressCfg, "--fail-on", "warning"}, 0},
		{[]string{"lint", "--defaults", "-f", accepted, "--config", suppressCfg, "--fail-on", "warning", "--disallow-suppressions"}, 1},
		{[]string{"lint", "--defaults", "-f", accepted}, 1},
		{[]string{"lint", "--defaults", "-f", suppressDir, "--config", suppressCfg}, 1}, // no-reason.yaml's error stays
		{[]string{"lint", "--defaults", "--fail-on", "never"}, 2},
		{[]string{"lint", "--defaults", "--no-such-flag"}, 2},
		{[]string{"lint", "--defaults", "-f", "does-not-exist"}, 2},
		{[]string{"lint", "--kubeconfig", "does-not-exist"}, 2},
		{[]string{"lint", "--defaults", "--config", "does-not-exist.yaml"}, 2},
		{[]string{"lint", "--defaults", "--target-version", "1.99"}, 2},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[1:], " "), func(t *testing.T) {
			code, _, errOut := runPlugin(tt.args...)
			if code != tt.want {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tt.want, errOut)
			}
			if tt.want == 2 && strings.Count(errOut, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", errOut)
			}
		})
	}
}

func TestLintSuppressions(t *testing.T) {
	code, out, errOut := runPlugin("lint", "--defaults", "-f", suppressDir, "--config", suppressCfg, "--show-suppressed", "-o", "json")
	if code != 1 {
		t.Fatalf("exit %d (team-b-debug's annotation has no reason, so its error stays): %s", code, errOut)
	}
	if !strings.Contains(errOut, "annotation ignore-check.kubectl-apf.io/shadowed-flowschema has no reason") {
		t.Errorf("no note for the empty reason: %q", errOut)
	}
	var rep lintrender.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	by := map[string]string{}
	for _, s := range rep.Suppressed {
		by[s.Rule+" "+s.Objects[0].String()] = s.Reason
	}
	if by["exempt-beyond-masters flowschema/oncall-exempt"] != "break-glass access for the on-call rota, reviewed quarterly" ||
		by["shadowed-flowschema flowschema/team-a-debug"] != "kept until team A's migration ends (ticket OPS-1234)" || len(by) != 2 {
		t.Fatalf("suppressed: %v", by)
	}
	if rep.SuppressedCount != 2 || rep.Errors != 1 {
		t.Fatalf("%d suppressed, %d errors", rep.SuppressedCount, rep.Errors)
	}
	// Without --show-suppressed they are counted, not listed.
	_, text, _ := runPlugin("lint", "--defaults", "-f", suppressDir, "--config", suppressCfg)
	if !strings.Contains(text, ", 2 suppressed (--show-suppressed lists them)") || strings.Contains(text, "oncall-exempt") {
		t.Fatalf("text:\n%s", text)
	}
	// --disallow-suppressions ignores both kinds.
	_, out, _ = runPlugin("lint", "--defaults", "-f", suppressDir, "--config", suppressCfg, "--disallow-suppressions", "-o", "json")
	rep = lintrender.Report{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.SuppressedCount != 0 || rep.Errors != 2 || rep.Warnings == 0 {
		t.Fatalf("with --disallow-suppressions: %d suppressed, %d errors, %d warnings", rep.SuppressedCount, rep.Errors, rep.Warnings)
	}
}

func TestLintConfigErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ config, want string }{
		{"suppressions:\n- rule: shadowed-flowschema\n  name: x\n", "reason is required"},
		{"suppressions:\n- rule: no-such-rule\n  name: x\n  reason: r\n", `no lint rule "no-such-rule"`},
		{"suppressions:\n- rule: shadowed-flowschema\n  name: '['\n  reason: r\n", "is not a valid pattern"},
		{"suppressions:\n- rule: shadowed-flowschema\n  nmae: x\n  reason: r\n", `unknown field "nmae"`},
	}
	for i, tt := range tests {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(tt.config), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runPlugin("lint", "--defaults", "--config", p)
		if code != 2 || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("case %d: exit %d, stderr %q, want %q", i, code, errOut, tt.want)
		}
	}
}

// TestLintSARIFAndJUnitFromFiles: -o sarif places findings on the -f file
// and line of their object, with every finding (not only those at
// --min-severity); -o junit reports as many failures as findings reach
// --fail-on. The formats themselves are validated in pkg/lint.
func TestLintSARIFAndJUnitFromFiles(t *testing.T) {
	code, out, errOut := runPlugin("lint", "--defaults", "-f", brokenLintDir, "-o", "sarif")
	if code != 1 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var log struct {
		Runs []struct {
			Results []struct {
				RuleID    string `json:"ruleId"`
				Locations []struct {
					PhysicalLocation *struct {
						ArtifactLocation struct{ URI string }    `json:"artifactLocation"`
						Region           struct{ StartLine int } `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatal(err)
	}
	placed := 0
	for _, r := range log.Runs[0].Results {
		if p := r.Locations[0].PhysicalLocation; p != nil {
			placed++
			if !strings.HasPrefix(p.ArtifactLocation.URI, "../../testdata/lint/broken/") || p.Region.StartLine < 1 {
				t.Errorf("%s at %+v", r.RuleID, p)
			}
		}
	}
	if placed < 10 || len(log.Runs[0].Results) <= placed {
		t.Errorf("%d of %d results placed in the files (the defaults' own findings have no file)", placed, len(log.Runs[0].Results))
	}
	_, out, _ = runPlugin("lint", "--defaults", "-f", brokenLintDir, "-o", "json")
	var rep lintrender.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runPlugin("lint", "--defaults", "-f", brokenLintDir, "-o", "junit", "--fail-on", "warning")
	if want := rep.Errors + rep.Warnings; code != 1 || strings.Count(out, "<failure ") != want || want == 0 {
		t.Errorf("exit %d, %d failures, want %d (the errors and warnings of -o json):\n%s", code, strings.Count(out, "<failure "), want, out)
	}
}
