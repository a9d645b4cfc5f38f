package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
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

// jsonl builds a workload in the project's JSONL format.
type jsonl struct{ lines []string }

// burst adds n requests of user arriving together at offset, each running
// for svc once dispatched.
func (w *jsonl) burst(offset, user, verb, path, svc string, n int) *jsonl {
	for range n {
		w.lines = append(w.lines, fmt.Sprintf(`{"offset":%q,"user":%q,"groups":["system:authenticated"],"verb":%q,"path":%q,"serviceTime":%q}`, offset, user, verb, path, svc))
	}
	return w
}

func (w *jsonl) write(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "workload.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(w.lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// simLevel is the part of a level's JSON the hand-computed cases check.
type simLevel struct {
	Name            string           `json:"name"`
	Dispatched      int64            `json:"dispatched"`
	Rejected        map[string]int64 `json:"rejected"`
	WaitP50Seconds  float64          `json:"waitP50Seconds"`
	WaitP99Seconds  float64          `json:"waitP99Seconds"`
	WaitMaxSeconds  float64          `json:"waitMaxSeconds"`
	PeakQueueLength int              `json:"peakQueueLength"`
	PeakSeatsInUse  int              `json:"peakSeatsInUse"`
}

type simJSON struct {
	Levels []simLevel `json:"levels"`
	After  *struct {
		Levels []simLevel `json:"levels"`
	} `json:"after"`
	ServerConcurrencyLimit  int    `json:"serverConcurrencyLimit"`
	ServerConcurrencySource string `json:"serverConcurrencySource"`
}

func findLevel(ls []simLevel, name string) *simLevel {
	for i := range ls {
		if ls[i].Name == name {
			return &ls[i]
		}
	}
	return nil
}

// TestSimulateHandComputed checks outcomes worked out by hand from the
// rules of APF, not from the simulator. Without borrowing, a level's limit
// is ceil(serverConcurrency * shares / sum of shares); the upstream defaults
// hold 245 shares, global-default 20 of them, so 49 seats give it 4. One
// user's flow has a hand of 6 of global-default's 128 queues.
func TestSimulateHandComputed(t *testing.T) {
	const pods = "/api/v1/namespaces/default/pods"
	// a Reject level of 5 shares: with 250 seats and 245+5 shares, 5 seats
	rejectLevel := filepath.Join(t.TempDir(), "reject.yaml")
	if err := os.WriteFile(rejectLevel, []byte(`apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: batch}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 5
    lendablePercent: 0
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: batch}
spec:
  priorityLevelConfiguration: {name: batch}
  matchingPrecedence: 100
  rules:
  - subjects: [{kind: User, user: {name: batch}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"]}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		workload *jsonl
		args     []string
		level    string
		after    bool // check the "after" run
		want     simLevel
	}{
		{
			// 4 run at once, 4 after 1s, 2 after 2s: waits 0×4, 1s×4, 2s×2;
			// 6 wait at once after the 10th arrival
			name:     "ten requests on four seats",
			workload: (&jsonl{}).burst("0s", "alice", "list", pods, "1s", 10),
			args:     []string{"--server-concurrency", "49"},
			level:    "global-default",
			want:     simLevel{Dispatched: 10, Rejected: map[string]int64{}, WaitP50Seconds: 1, WaitP99Seconds: 2, WaitMaxSeconds: 2, PeakQueueLength: 6, PeakSeatsInUse: 4},
		},
		{
			// a queue length limit of 1 on a hand of 6: 4 run, 6 wait (one
			// per queue), 2 are rejected
			name:     "queue length limit 1",
			workload: (&jsonl{}).burst("0s", "alice", "list", pods, "1s", 12),
			args:     []string{"--server-concurrency", "49", "--set", "global-default.queueLengthLimit=1"},
			level:    "global-default",
			after:    true,
			want:     simLevel{Dispatched: 10, Rejected: map[string]int64{"queue-full": 2}, WaitP50Seconds: 1, WaitP99Seconds: 2, WaitMaxSeconds: 2, PeakQueueLength: 6, PeakSeatsInUse: 4},
		},
		{
			// the same twelve with the default queues: all served, waits
			// 0, 1s and 2s four times each
			name:     "queue length limit 1, before",
			workload: (&jsonl{}).burst("0s", "alice", "list", pods, "1s", 12),
			args:     []string{"--server-concurrency", "49", "--set", "global-default.queueLengthLimit=1"},
			level:    "global-default",
			want:     simLevel{Dispatched: 12, Rejected: map[string]int64{}, WaitP50Seconds: 1, WaitP99Seconds: 2, WaitMaxSeconds: 2, PeakQueueLength: 8, PeakSeatsInUse: 4},
		},
		{
			// --request-timeout 8s: a 2s wait limit. Rounds of 4 start at
			// 0, 0.9s and 1.8s; the 8 still queued at 2s time out
			name:     "wait limit from the request timeout",
			workload: (&jsonl{}).burst("0s", "alice", "list", pods, "900ms", 20),
			args:     []string{"--server-concurrency", "49", "--server-request-timeout", "8s"},
			level:    "global-default",
			want:     simLevel{Dispatched: 12, Rejected: map[string]int64{"time-out": 8}, WaitP50Seconds: 0.9, WaitP99Seconds: 1.8, WaitMaxSeconds: 1.8, PeakQueueLength: 16, PeakSeatsInUse: 4},
		},
		{
			// ?timeout=4s lowers the deadline, so the wait limit is 1s: only
			// the first two rounds are served
			name:     "wait limit from the timeout parameter",
			workload: (&jsonl{}).burst("0s", "alice", "list", pods+"?timeout=4s", "900ms", 20),
			args:     []string{"--server-concurrency", "49"},
			level:    "global-default",
			want:     simLevel{Dispatched: 8, Rejected: map[string]int64{"time-out": 12}, WaitP50Seconds: 0, WaitP99Seconds: 0.9, WaitMaxSeconds: 0.9, PeakQueueLength: 16, PeakSeatsInUse: 4},
		},
		{
			// a Reject level of 5 seats: 5 run, 3 are refused at once
			name:     "reject level from a file",
			workload: (&jsonl{}).burst("0s", "batch", "list", pods, "1s", 8),
			args:     []string{"--server-concurrency", "250", "-f", rejectLevel},
			level:    "batch",
			after:    true,
			want:     simLevel{Dispatched: 5, Rejected: map[string]int64{"concurrency-limit": 3}, PeakSeatsInUse: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"simulate", "--defaults", "--no-borrowing", "-o", "json", "--workload", tt.workload.write(t)}, tt.args...)
			code, out, errOut := runPlugin(args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var rep simJSON
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			levels := rep.Levels
			if tt.after {
				if rep.After == nil {
					t.Fatal("no after run")
				}
				levels = rep.After.Levels
			}
			got := findLevel(levels, tt.level)
			if got == nil {
				t.Fatalf("no level %s in %s", tt.level, out)
			}
			tt.want.Name = tt.level
			// waits come from a histogram exact to 1.6%
			for _, w := range []struct {
				what      string
				got, want float64
			}{{"p50", got.WaitP50Seconds, tt.want.WaitP50Seconds}, {"p99", got.WaitP99Seconds, tt.want.WaitP99Seconds}, {"max", got.WaitMaxSeconds, tt.want.WaitMaxSeconds}} {
				if d := w.got - w.want; d > 0.016*w.want+1e-6 || d < -0.016*w.want-1e-6 {
					t.Errorf("wait %s = %vs, want %vs", w.what, w.got, w.want)
				}
			}
			got.WaitP50Seconds, got.WaitP99Seconds, got.WaitMaxSeconds = tt.want.WaitP50Seconds, tt.want.WaitP99Seconds, tt.want.WaitMaxSeconds
			if fmt.Sprint(*got) != fmt.Sprint(tt.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

// TestSimulateJSONShape checks the -o json fields scripts read,
// and that "after" is there only when a change was given.
func TestSimulateJSONShape(t *testing.T) {
	wl := (&jsonl{}).burst("0s", "alice", "get", "/api/v1/namespaces/default/pods/a", "10ms", 3).write(t)
	for _, change := range [][]string{nil, {"--set", "global-default.shares=40"}} {
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
		{"defaults and from", []string{"--workload", burst, "--from", dir}, "--defaults and --from"},
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

func TestFmtSeconds(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0s"}, {-1, "0s"}, {0.000000123, "123ns"}, {0.00085049, "850µs"}, {0.0123456, "12.3ms"},
		{1.5, "1.5s"}, {14.9653, "15s"}, {75.4, "1m15.4s"}, {754, "12m34s"},
	}
	for _, tt := range tests {
		if got := fmtSeconds(tt.in); got != tt.want {
			t.Errorf("fmtSeconds(%v) = %q, want %q", tt.in, got, tt.want)
		}
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

// TestSimulateStdinCalibrated replays a recorded audit log alone, the case
// whose calibration iterates to a fixed point, from the command's input and
// from the file, and checks that standard input is calibrated (the fixed
// point iterated) and gives the file's report: the calibration's later
// passes read the tape of the one reading of the input.
func TestSimulateStdinCalibrated(t *testing.T) {
	dir := simulateFixture(filepath.Join("recordings", "starved"))
	audit := gunzipTo(t, filepath.Join(dir, recording.AuditLogFile), filepath.Join(t.TempDir(), "audit.log"))
	args := []string{"simulate", "--from", filepath.Join(dir, recording.BundleFile), "-o", "json", "-w"}
	fromFile, _ := simulateEstimated(t, nil, append(args, audit)...)
	f, err := os.Open(audit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fromStdin, est := simulateEstimated(t, f, append(args, "-")...)
	if est.FixedPointIterations < 1 || est.ExecutionFromReplay == 0 {
		t.Errorf("standard input was not calibrated: %+v", est)
	}
	if fromStdin != fromFile {
		t.Errorf("the calibrated replay of standard input differs from the replay of the same file")
	}
}

// estimated is what a calibration estimated, from simulate -o json.
type estimated struct {
	ExecutionFromReplay  int64 `json:"executionFromReplay"`
	FixedPointIterations int   `json:"fixedPointIterations"`
}

// simulateEstimated runs simulate with -o json among args and in (if not
// nil) as its input, and returns its output and what its calibration
// estimated.
func simulateEstimated(t *testing.T, in io.Reader, args ...string) (string, estimated) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	if in != nil {
		streams.In = in
	}
	if code := run(args, streams); code != 0 {
		t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	var r struct {
		Calibration struct {
			Estimated estimated `json:"estimated"`
		} `json:"calibration"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	return out.String(), r.Calibration.Estimated
}

// TestSimulateInterrupted checks that a cancelled context (SIGINT) stops a
// long replay with an error instead of reading on.
func TestSimulateInterrupted(t *testing.T) {
	wl := (&jsonl{}).burst("0s", "alice", "get", "/api/v1/namespaces/default/pods/a", "1ms", 10000).write(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	o := NewSimulateOptions(nil, streams)
	o.Defaults, o.Workloads = true, []string{wl}
	if err := o.Complete(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	err := o.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("Run with a cancelled context = %v, want interrupted", err)
	}
	if out.Len() != 0 {
		t.Errorf("printed a partial report:\n%s", out)
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
