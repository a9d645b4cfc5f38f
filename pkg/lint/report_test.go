package lint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	junit "github.com/joshdk/go-junit"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
)

var sarifSchema = filepath.Join("..", "..", "testdata", "lint", "sarif", "sarif-schema-2.1.0.json")

// brokenReport lints testdata/lint/broken and testdata/lint/suppress over
// the defaults, with the suppressions of testdata/lint/suppress-config.yaml.
func brokenReport(t *testing.T, failOn Severity) Report {
	t.Helper()
	objs := readDir(t, filepath.Join("..", "..", "testdata", "lint", "broken"))
	objs.Add(readDir(t, filepath.Join("..", "..", "testdata", "lint", "suppress")))
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "lint", "suppress-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig(data, "suppress-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fss, pls := config.UpstreamDefaults()
	fss, pls = config.Overlay(fss, pls, objs)
	in := Input{FlowSchemas: fss, PriorityLevels: pls, Reference: config.UpstreamReference()}
	kept, suppressed, _ := Suppress(Lint(in, DefaultOptions()), in, cfg)
	if len(suppressed) != 2 {
		t.Fatalf("%d suppressed", len(suppressed))
	}
	return Report{Findings: kept, Suppressed: suppressed, Locations: objs.Locations, FailOn: failOn, ToolVersion: "v0.0.0-test"}
}

// lineOf is the 1-based line of the first line of file containing s.
func lineOf(t *testing.T, file, s string) int {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.Contains(sc.Text(), s) {
			return n
		}
	}
	t.Fatalf("%s: no line contains %q", file, s)
	return 0
}

func compileSARIFSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	sch, err := jsonschema.NewCompiler().Compile(sarifSchema)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// TestSARIFValidatesAgainstSchema validates -o sarif against the published
// SARIF 2.1.0 schema, and checks that results point at the file and line
// of the object's metadata.name.
func TestSARIFValidatesAgainstSchema(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSARIF(&buf, brokenReport(t, SeverityError)); err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if err := compileSARIFSchema(t).Validate(inst); err != nil {
		t.Fatalf("-o sarif is not valid SARIF 2.1.0: %v", err)
	}
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Rules []struct{ ID string } `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID       string `json:"ruleId"`
				RuleIndex    int    `json:"ruleIndex"`
				Level        string `json:"level"`
				Suppressions []struct {
					Kind, Justification string
				} `json:"suppressions"`
				Locations []struct {
					PhysicalLocation *struct {
						ArtifactLocation struct{ URI string }    `json:"artifactLocation"`
						Region           struct{ StartLine int } `json:"region"`
					} `json:"physicalLocation"`
					LogicalLocations []struct{ FullyQualifiedName string } `json:"logicalLocations"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(buf.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	run := log.Runs[0]
	fsFile := filepath.ToSlash(filepath.Join("..", "..", "testdata", "lint", "broken", "flowschemas.yaml"))
	want := map[string]int{
		"shadowed-flowschema flowschema/alice-debug":    lineOf(t, fsFile, "name: alice-debug"),
		"dangling-priority-level flowschema/batch-jobs": lineOf(t, fsFile, "name: batch-jobs"),
	}
	suppressedKinds := map[string]string{}
	for _, r := range run.Results {
		if run.Tool.Driver.Rules[r.RuleIndex].ID != r.RuleID {
			t.Errorf("result %s points at rule %d", r.RuleID, r.RuleIndex)
		}
		loc := r.Locations[0]
		key := r.RuleID + " " + loc.LogicalLocations[0].FullyQualifiedName
		if len(r.Suppressions) == 1 {
			suppressedKinds[key] = r.Suppressions[0].Kind
		}
		line, ok := want[key]
		if !ok {
			continue
		}
		delete(want, key)
		if loc.PhysicalLocation == nil || loc.PhysicalLocation.ArtifactLocation.URI != fsFile || loc.PhysicalLocation.Region.StartLine != line {
			t.Errorf("%s at %+v, want %s:%d", key, loc.PhysicalLocation, fsFile, line)
		}
		if r.Level != "error" {
			t.Errorf("%s level %s", key, r.Level)
		}
	}
	if len(want) > 0 {
		t.Errorf("no result for %v", want)
	}
	if suppressedKinds["exempt-beyond-masters flowschema/oncall-exempt"] != "inSource" || suppressedKinds["shadowed-flowschema flowschema/team-a-debug"] != "external" {
		t.Errorf("suppressions: %v", suppressedKinds)
	}
}

// TestSARIFSchemaRejects: the validator is real, it refuses what SARIF
// does not allow.
func TestSARIFSchemaRejects(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSARIF(&buf, brokenReport(t, SeverityError)); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(buf.String(), `"level": "error"`, `"level": "fatal"`, 1)
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	if err := compileSARIFSchema(t).Validate(inst); err == nil {
		t.Fatal(`a result of level "fatal" validates`)
	}
}

// TestJUnitReadBack parses -o junit with github.com/joshdk/go-junit: a
// suite per rule, the findings at or above --fail-on failed, the others
// passed, the suppressed ones skipped with their reason.
func TestJUnitReadBack(t *testing.T) {
	for _, failOn := range []Severity{SeverityError, SeverityWarning} {
		rep := brokenReport(t, failOn)
		var buf bytes.Buffer
		if err := WriteJUnit(&buf, rep); err != nil {
			t.Fatal(err)
		}
		suites, err := junit.Ingest(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if len(suites) != len(Rules()) {
			t.Fatalf("%d suites, want one per rule (%d)", len(suites), len(Rules()))
		}
		failed, skipped := 0, 0
		var reasons []string
		for _, s := range suites {
			failed += s.Totals.Failed
			skipped += s.Totals.Skipped
			for _, tc := range s.Tests {
				if tc.Status == junit.StatusSkipped {
					reasons = append(reasons, tc.Message)
				}
			}
		}
		wantFailed := 0
		for _, f := range rep.Findings {
			if f.Severity.Rank() <= failOn.Rank() {
				wantFailed++
			}
		}
		if failed != wantFailed || wantFailed == 0 {
			t.Errorf("fail-on %s: %d failed cases, %d findings reach it", failOn, failed, wantFailed)
		}
		if skipped != 2 || !strings.Contains(strings.Join(reasons, "\n"), "reviewed quarterly") {
			t.Errorf("%d skipped: %q", skipped, reasons)
		}
	}
}
