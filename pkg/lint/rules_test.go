package lint

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/golden"
	"github.com/kubectl-apf/kubectl-apf/pkg/config"
)

var docsDir = filepath.Join("..", "..", "docs", "lint")

// TestRulePages keeps docs/lint in step with the rule registry: a page per
// rule, generated from it (go test ./pkg/lint -run TestRulePages -update
// rewrites them), the index, and no page of a rule that no longer exists.
func TestRulePages(t *testing.T) {
	want := map[string]bool{"README.md": true}
	for _, r := range Rules() {
		want[r.ID+".md"] = true
		golden.AssertString(t, filepath.Join(docsDir, r.ID+".md"), RulePage(r))
	}
	golden.AssertString(t, filepath.Join(docsDir, "README.md"), RuleIndex())
	entries, err := os.ReadDir(docsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !want[e.Name()] {
			t.Errorf("docs/lint/%s is the page of no rule: delete it", e.Name())
		}
	}
}

var kebab = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

// TestRuleRegistry: every rule the checks can report is in the registry,
// with a kebab-case ID and every field filled, and every rule ID constant
// of lint.go is registered.
func TestRuleRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules() {
		if !kebab.MatchString(r.ID) {
			t.Errorf("rule ID %q is not kebab-case", r.ID)
		}
		if seen[r.ID] {
			t.Errorf("rule %s registered twice", r.ID)
		}
		seen[r.ID] = true
		if r.Summary == "" || r.Why == "" || r.Example == "" || r.Fix == "" {
			t.Errorf("rule %s lacks a summary, why, example or fix", r.ID)
		}
		if _, err := ParseSeverity(string(r.Severity)); err != nil {
			t.Errorf("rule %s: %v", r.ID, err)
		}
	}
	src, err := os.ReadFile("lint.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^\s+Rule\w+\s+= "([a-z0-9-]+)"`).FindAllStringSubmatch(string(src), -1) {
		if !seen[m[1]] {
			t.Errorf("rule %s (lint.go) has no entry in the registry (rules.go)", m[1])
		}
	}
	if len(seen) < 20 {
		t.Errorf("%d rules registered", len(seen))
	}
}

// TestFindingsLinkTheirRule: each finding of the broken repository names a
// registered rule and links its page.
func TestFindingsLinkTheirRule(t *testing.T) {
	objs := readDir(t, filepath.Join("..", "..", "testdata", "lint", "broken"))
	fss, pls := config.UpstreamDefaults()
	fss, pls = config.Overlay(fss, pls, objs)
	fs := Lint(Input{FlowSchemas: fss, PriorityLevels: pls, Reference: config.UpstreamReference()}, DefaultOptions())
	if len(fs) == 0 {
		t.Fatal("no findings")
	}
	for _, f := range fs {
		r, ok := RuleByID(f.Rule)
		if !ok || f.URL != r.URL() || !strings.HasSuffix(f.URL, "/docs/lint/"+f.Rule+".md") {
			t.Errorf("finding of %s links %q", f.Rule, f.URL)
		}
	}
}

func readDir(t *testing.T, dir string) config.Objects {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out config.Objects
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		o, err := config.ParseObjects(data, p)
		if err != nil {
			t.Fatal(err)
		}
		out.Add(o)
	}
	return out
}

// TestRuleExamplesTrip: the examples on the rule pages that are whole
// configurations trip their rule over the 1.37 defaults.
func TestRuleExamplesTrip(t *testing.T) {
	for _, id := range []string{RuleEmptyFlowSchema, RuleShadowedFlowSchema, RuleDanglingPriorityLevel, RuleExemptBeyondMasters,
		RuleCrushRisk, RuleRejectAdmitsWhenIdle, RuleExemptReach, RuleSuggestedDiffers, RuleUnusedPriorityLevel, RuleClientInSystemLevel} {
		r, _ := RuleByID(id)
		objs, err := config.ParseObjects([]byte(r.Example), id+" example")
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		fss, pls := config.UpstreamDefaults()
		fss, pls = config.Overlay(fss, pls, objs)
		if got := ofRule(Lint(Input{FlowSchemas: fss, PriorityLevels: pls, Reference: config.UpstreamReference()}, DefaultOptions()), id); len(got) == 0 {
			t.Errorf("the example of %s does not trip it", id)
		}
	}
}
