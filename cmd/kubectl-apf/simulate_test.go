package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"
)

func simulateFixture(name string) string {
	return filepath.Join("..", "..", "testdata", "simulate", name)
}

func TestSimulateGolden(t *testing.T) {
	burst := simulateFixture("burst.jsonl")
	team := simulateFixture("team-level.yaml")
	base := []string{"simulate", "--defaults", "--server-concurrency", "15", "--workload", burst}
	tests := []struct {
		name   string
		args   []string
		golden string
	}{
		{name: "defaults", args: base, golden: "simulate/defaults.golden"},
		{name: "new level from a file", args: append(append([]string{}, base...), "-f", team), golden: "simulate/team-level.golden"},
		{name: "shorter queues, two flows a level", args: append(append([]string{}, base...), "--set", "global-default.queueLengthLimit=5", "--max-flows", "2"), golden: "simulate/set-queue-length.golden"},
		{name: "no flows, no borrowing", args: append(append([]string{}, base...), "--max-flows", "0", "--no-borrowing"), golden: "simulate/no-borrowing.golden"},
		{name: "recorded answers", args: []string{"simulate", "--defaults", "--no-borrowing", "--server-concurrency", "49", "--workload", simulateFixture("recorded.jsonl")}, golden: "simulate/recorded.golden"},
		{name: "json with a change", args: append(append([]string{}, base...), "--set", "global-default.queueLengthLimit=5", "-o", "json"), golden: "simulate/set-queue-length.json.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runPlugin(tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if errOut != "" {
				t.Errorf("unexpected diagnostics: %s", errOut)
			}
			checkGolden(t, tt.golden, []byte(out))
		})
	}
}

// simLevel is the part of a level's JSON the tests check.
type simLevel struct {
	Name       string `json:"name"`
	Dispatched int64  `json:"dispatched"`
}

type simJSON struct {
	Levels                  []simLevel `json:"levels"`
	ServerConcurrencyLimit  int        `json:"serverConcurrencyLimit"`
	ServerConcurrencySource string     `json:"serverConcurrencySource"`
}

func findLevel(ls []simLevel, name string) *simLevel {
	for i := range ls {
		if ls[i].Name == name {
			return &ls[i]
		}
	}
	return nil
}

// TestSimulateJSONShape checks the -o json fields scripts read,
// and that "after" is there only when a change was given.
func TestSimulateJSONShape(t *testing.T) {
	wl := filepath.Join(t.TempDir(), "workload.jsonl")
	line := `{"offset":"0s","user":"alice","groups":["system:authenticated"],"verb":"get","path":"/api/v1/namespaces/default/pods/a","serviceTime":"10ms"}` + "\n"
	if err := os.WriteFile(wl, []byte(strings.Repeat(line, 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, change := range [][]string{nil, {"--set", "global-default.shares=40"}, {"--server-speed", "2"}} {
		args := append([]string{"simulate", "--defaults", "-o", "json", "--workload", wl}, change...)
		code, out, errOut := runPlugin(args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &raw); err != nil {
			t.Fatal(err)
		}
		if _, ok := raw["after"]; ok != (change != nil) {
			t.Errorf("%v: after present %v", change, ok)
		}
		// the server's speed is a change of its own, and says so
		if sp, ok := raw["serverSpeed"]; ok != (change != nil && change[0] == "--server-speed") || ok && string(sp) != "2" {
			t.Errorf("%v: serverSpeed %s (present %v)", change, sp, ok)
		}
		for _, key := range []string{"levels", "workload", "serverConcurrencyLimit"} {
			if _, ok := raw[key]; !ok {
				t.Errorf("%v: no %q", change, key)
			}
		}
		var levels []map[string]json.RawMessage
		if err := json.Unmarshal(raw["levels"], &levels); err != nil {
			t.Fatal(err)
		}
		for _, l := range levels {
			for _, key := range []string{"name", "dispatched", "rejected", "waitP99Seconds"} {
				if _, ok := l[key]; !ok {
					t.Errorf("level %s has no %q", l["name"], key)
				}
			}
		}
		var rep simJSON
		_ = json.Unmarshal([]byte(out), &rep)
		if rep.ServerConcurrencyLimit != 600 || rep.ServerConcurrencySource != "default" {
			t.Errorf("server concurrency %d (%s), want kube-apiserver's default 600", rep.ServerConcurrencyLimit, rep.ServerConcurrencySource)
		}
		if g := findLevel(rep.Levels, "global-default"); g == nil || g.Dispatched != 3 {
			t.Errorf("global-default: %+v, want 3 dispatched", g)
		}
	}
}

func TestSimulateErrors(t *testing.T) {
	dir := t.TempDir()
	badLine := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(badLine, []byte(`{"offset":"0s","user":"a","verb":"get","path":"/api/v1/pods","serviceTime":"1ms"}
{"offset":"1s","user":"a","verb":"fly","path":"/api/v1/pods"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	burst := simulateFixture("burst.jsonl")
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"missing workload file", []string{"--workload", filepath.Join(dir, "nope.log")}, "opening workload: open " + filepath.Join(dir, "nope.log") + ": no such file or directory"},
		{"unreadable workload line with --strict", []string{"--workload", badLine, "--strict"}, `bad.jsonl:2: unknown verb "fly"`},
		{"no workload", nil, "no workload given: pass --workload FILE"},
		{"malformed --set", []string{"--workload", burst, "--set", "global-default.queues"}, `--set "global-default.queues": want LEVEL.FIELD=VALUE`},
		{"unknown --set field", []string{"--workload", burst, "--set", "global-default.colour=1"}, `unknown field "colour"`},
		{"--set on a missing level", []string{"--workload", burst, "--set", "nope.queues=1"}, `no priority level named "nope"`},
		{"--set a queue field of a reject level", []string{"--workload", burst, "--set", "catch-all.queues=4"}, "--set catch-all.queues"},
		{"missing -f file", []string{"--workload", burst, "-f", filepath.Join(dir, "nope.yaml")}, "-f " + filepath.Join(dir, "nope.yaml")},
		{"bad output", []string{"--workload", burst, "-o", "wide"}, "--output must be one of table (or ''), json, yaml, jsonpath=..."},
		{"negative concurrency", []string{"--workload", burst, "--server-concurrency", "-1"}, "--server-concurrency must be positive"},
		{"stdin twice", []string{"--workload", "-", "-f", "-"}, "both read standard input"},
		{"--cpu-limit not a quantity", []string{"--workload", burst, "--cpu-limit", "two"}, `--cpu-limit "two": give the CPU limit in cores`},
		{"--cpu-limit zero", []string{"--workload", burst, "--cpu-limit", "0m"}, `--cpu-limit "0m"`},
		{"defaults and from: the input is read", []string{"--workload", burst, "--from", dir}, "not a kubectl-apf bundle"},
		{"--server-speed zero", []string{"--workload", burst, "--server-speed", "0"}, "--server-speed must be a number above 0"},
		{"--server-speed negative", []string{"--workload", burst, "--server-speed", "-2"}, "--server-speed must be a number above 0"},
		{"--server-speed NaN", []string{"--workload", burst, "--server-speed", "NaN"}, "--server-speed must be a number above 0"},
		{"--server-speed infinite", []string{"--workload", burst, "--server-speed", "+Inf"}, "--server-speed must be a number above 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runPlugin(append([]string{"simulate", "--defaults"}, tt.args...)...)
			if code != 1 || !strings.HasPrefix(errOut, "error: ") || !strings.Contains(errOut, tt.wantErr) || strings.Count(errOut, "\n") != 1 {
				t.Fatalf("exit %d, stderr %q, want one error line containing %q", code, errOut, tt.wantErr)
			}
			if out != "" {
				t.Errorf("stdout = %q, want nothing", out)
			}
		})
	}
}

// TestSimulateStdin checks that "--workload -" reads the command's input
// and gives the same report as the file.
func TestSimulateStdin(t *testing.T) {
	burst := simulateFixture("burst.jsonl")
	data, err := os.ReadFile(burst)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"simulate", "--defaults", "--server-concurrency", "15", "--set", "global-default.queueLengthLimit=5"}
	code, fromFile, errOut := runPlugin(append(args, "--workload", burst)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	streams, in, out, errBuf := genericiooptions.NewTestIOStreams()
	in.Write(data)
	if code := run(append(args, "--workload", "-"), streams); code != 0 {
		t.Fatalf("exit %d: %s", code, errBuf)
	}
	if out.String() != fromFile {
		t.Errorf("stdin gives\n%s\nthe file gives\n%s", out, fromFile)
	}
}

// TestSimulateYAML checks that -o yaml carries the same report as -o json.
func TestSimulateYAML(t *testing.T) {
	args := []string{"simulate", "--defaults", "--server-concurrency", "15", "--workload", simulateFixture("burst.jsonl"), "--set", "global-default.queueLengthLimit=5"}
	code, j, errOut := runPlugin(append(args, "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, y, errOut := runPlugin(append(args, "-o", "yaml")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	fromYAML, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("-o yaml is not YAML: %v", err)
	}
	var a, b any
	if err := json.Unmarshal([]byte(j), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(fromYAML, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("-o yaml differs from -o json:\n%s", y)
	}
	if !strings.Contains(y, "after:") || !strings.Contains(y, "waitP99Seconds:") {
		t.Errorf("-o yaml lacks after or waitP99Seconds:\n%s", y)
	}
}

// TestSimulateBrokenChange checks that a change the apiserver would ignore
// is replayed as the apiserver would run it, and said so on stderr: a hand
// larger than the deck breaks global-default, its FlowSchema dangles, and
// its requests fall through to catch-all.
// TestSimulateInvalidChange: a level kube-apiserver would refuse to create
// (hand larger than its queues) is refused by -f, as the server would, not
// replayed as a change nobody could apply.
func TestSimulateInvalidChange(t *testing.T) {
	broken := filepath.Join(t.TempDir(), "broken.yaml")
	if err := os.WriteFile(broken, []byte(`apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: global-default}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 20
    limitResponse:
      type: Queue
      queuing: {queues: 4, handSize: 10, queueLengthLimit: 5}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runPlugin("simulate", "--defaults", "--workload", simulateFixture("burst.jsonl"), "-f", broken, "-o", "json")
	want := "PriorityLevelConfiguration global-default is invalid (kube-apiserver would reject it): spec.limited.limitResponse.queuing.handSize: Invalid value: 10: should not be greater than queues (4)"
	if code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, want)
	}
}

// TestSimulateServerSpeedTable: the table says at what speed the changed
// server ran.
func TestSimulateServerSpeedTable(t *testing.T) {
	code, out, errOut := runPlugin("simulate", "--defaults", "--workload", simulateFixture("burst.jsonl"), "--server-speed", "1.25")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Cells show before->after the change.", "the server runs requests at 1.25× the recorded speed: every execution and seat hold takes 0.8 of its recorded time"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

// TestSimulateDemoRejectLevel: on what make demo gives (testdata/simulate/
// demo-watch), the Reject level whose LISTs take 10 of its 1 seat is
// reproduced from the audit log alone: the seat-time check counts a request
// wider than its level as holding the level. It counted their width,
// scaled the audit log's execution times to 0.10 of APF's measure of them,
// and the replay dispatched 98 of the level's requests where the server
// dispatched 56 (fit 0.85, "unreproduced").
func TestSimulateDemoRejectLevel(t *testing.T) {
	dir := simulateFixture("demo-watch")
	code, out, errOut := runPlugin("simulate", "--from", filepath.Join(dir, "bundle.tar.gz"), "--workload", filepath.Join(dir, "audit.log.gz"), "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Fit []struct {
			Level               string
			Recorded, Predicted float64
			Quality             string
		}
		Calibration struct {
			Levels []struct {
				Level   string
				Refused *struct{ Check, Why string }
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range rep.Fit {
		if f.Level == "apf-load-reject" {
			found = true
			if f.Recorded != 280 || f.Predicted != 280 || f.Quality != "good" {
				t.Errorf("apf-load-reject: %v recorded, %v predicted 429s (%s); want the 280 the server answered", f.Recorded, f.Predicted, f.Quality)
			}
		}
	}
	if !found {
		t.Errorf("no fit of apf-load-reject: %+v", rep.Fit)
	}
	for _, l := range rep.Calibration.Levels {
		if l.Level == "apf-load-reject" && l.Refused != nil {
			t.Errorf("apf-load-reject's calibration refused by the %s check: %s", l.Refused.Check, l.Refused.Why)
		}
	}
}
