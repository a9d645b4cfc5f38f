package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/capacity"
)

func TestCapacityGolden(t *testing.T) {
	proposal := filepath.Join("..", "..", "testdata", "capacity", "proposal.yaml")
	tests := []struct {
		name   string
		args   []string
		golden string
	}{
		{name: "defaults", args: []string{"capacity", "--defaults"}, golden: "capacity/defaults.golden"},
		{name: "set", args: []string{"capacity", "--defaults", "--set", "workload-low.shares=200", "--set", "global-default.queues=256"}, golden: "capacity/set.golden"},
		{name: "file proposal at 1200 seats", args: []string{"capacity", "--defaults", "-f", proposal, "--server-concurrency", "1200"}, golden: "capacity/proposal.golden"},
		{name: "json", args: []string{"capacity", "--defaults", "--set", "leader-election.queues=64", "-o", "json"}, golden: "capacity/set.json.golden"},
		// The levels now of raw metrics: absent figures null, the input of each present one.
		{name: "now json", args: []string{"capacity", "--from", fieldPath("eks-rejected-inqueue.txt"), "-o", "json"}, golden: "capacity/now.json.golden"},
		{name: "now yaml", args: []string{"capacity", "--from", fieldPath("eks-concurrency-limit.txt"), "-f", proposal, "-o", "yaml"}, golden: "capacity/now.yaml.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runPlugin(tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			checkGolden(t, tt.golden, []byte(out))
		})
	}
}

// TestCapacityJSONCollisionTable checks that the JSON carries the exact
// documented probabilities for a level configured like a row of the docs'
// table (hand 8, 64 queues).
func TestCapacityJSONCollisionTable(t *testing.T) {
	code, out, errOut := runPlugin("capacity", "--defaults", "--set", "system.handSize=8", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep capacity.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Proposed == nil {
		t.Fatal("no proposed table")
	}
	for _, l := range rep.Proposed.Levels {
		if l.Name != "system" {
			continue
		}
		want := map[int]float64{1: 2.25929199850899e-10, 4: 0.0004886697053040446, 16: 0.35935114681123076}
		for _, c := range l.Crush {
			if d := (c.Probability - want[c.Elephants]) / want[c.Elephants]; d > 1e-12 || d < -1e-12 {
				t.Errorf("%d elephants: %v, docs say %v", c.Elephants, c.Probability, want[c.Elephants])
			}
		}
		return
	}
	t.Fatal("no system level")
}

func TestCapacityFlagErrors(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"capacity", "--defaults", "--set", "workload-low.colour=1"}, `unknown field "colour"`},
		{[]string{"capacity", "--defaults", "--set", "nope.queues=1"}, `no priority level named "nope"`},
		{[]string{"capacity", "--defaults", "--server-concurrency", "-5"}, "--server-concurrency must be positive"},
		{[]string{"capacity", "--defaults", "-o", "wide"}, "--output must be one of '' (or table), json, yaml, jsonpath=..."},
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

// TestCapacityRawMetrics: capacity over raw metrics (issue 47, R6). The
// Now table holds the levels the metrics name and no other (no exempt 0/0,
// no catch-all at 600); -f starts from the upstream defaults when the
// metrics name only default levels, and says so; --defaults beside --from
// takes the defaults of the input's release.
func TestCapacityRawMetrics(t *testing.T) {
	proposal := filepath.Join("..", "..", "testdata", "capacity", "proposal.yaml")
	nowRows := func(out string) []string {
		_, now, ok := strings.Cut(out, "\nNow, from the state read")
		if !ok {
			t.Fatalf("no Now table in %q", out)
		}
		var names []string
		for _, line := range strings.Split(now, "\n")[2:] {
			if f := strings.Fields(line); len(f) > 1 {
				names = append(names, f[1])
			}
		}
		return names
	}
	code, out, errOut := runPlugin("capacity", "--from", fieldPath("eks-rejected-inqueue.txt"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got := strings.Join(nowRows(out), " "); got != "workload-low" {
		t.Errorf("Now rows %q, want the metrics' one level workload-low", got)
	}

	code, out, errOut = runPlugin("capacity", "--from", fieldPath("eks-concurrency-limit.txt"), "-f", proposal)
	if code != 0 {
		t.Fatalf("-f: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "Assumed: the input holds no PriorityLevelConfigurations; the current configuration is assumed to be the upstream defaults") ||
		!strings.Contains(out, "the input's nominal limits agree with them at 600 seats") {
		t.Errorf("-f does not say what it assumed:\n%s", out)
	}
	// The defaults at the assumed 600 seats: workload-low 245, catch-all
	// 13, as the metrics say; not the mandatory catch-all at 600.
	for _, want := range []string{"workload-low", "245", "catch-all"} {
		if !strings.Contains(out, want) {
			t.Errorf("-f: %q missing:\n%s", want, out)
		}
	}
	if strings.Contains(out, "exempt  ") && strings.Contains(strings.Join(nowRows(out), " "), "exempt") {
		t.Errorf("-f: exempt row the metrics lack:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 5 && f[0] == "catch-all" && strings.HasPrefix(f[5], "600") {
			t.Errorf("-f: catch-all at 600 seats: %s", l)
		}
	}

	code, out, errOut = runPlugin("capacity", "--defaults", "--from", fieldPath("eks-concurrency-limit.txt"))
	if code != 0 {
		t.Fatalf("--defaults --from: exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "Assumed:") || !strings.Contains(out, "workload-low") || !strings.Contains(out, "\nNow, from the state read") {
		t.Errorf("--defaults --from:\n%s", out)
	}
}

// TestCapacityEstimatorCap: a Reject level sets no per-request cap, so the
// work estimator's applies: a LIST's, 10 seats up to 1.33 and 100 from
// 1.34 (SizeBasedListCostEstimate). MAXSEATS read "-" there, as for
// exempt, while lint's seat-starvation said one request may take 100.
func TestCapacityEstimatorCap(t *testing.T) {
	for _, tt := range []struct {
		version string
		want    uint64
	}{{"1.33", 10}, {"1.34", 100}, {"1.37", 100}} {
		code, out, errOut := runPlugin("capacity", "--defaults", "--kube-version", tt.version, "-o", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tt.version, code, errOut)
		}
		var rep struct {
			Current struct {
				Levels []struct {
					Name         string
					Type         string
					MaxSeats     uint64 `json:"maxSeatsPerRequest"`
					EstimatorCap uint64 `json:"estimatorCapSeats"`
				}
			}
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		for _, l := range rep.Current.Levels {
			// catch-all has no cap of its own; a cap above the
			// estimator's (node-high's 15 up to 1.33) yields to it
			want := uint64(0)
			if l.Name == "catch-all" || l.Type == "Limited" && l.MaxSeats > tt.want {
				want = tt.want
			}
			if l.EstimatorCap != want {
				t.Errorf("%s: %s (%s, max seats %d): estimator cap %d, want %d", tt.version, l.Name, l.Type, l.MaxSeats, l.EstimatorCap, want)
			}
		}
	}
	code, out, _ := runPlugin("capacity", "--defaults", "--kube-version", "1.33")
	if code != 0 || !strings.Contains(out, "10*") || !strings.Contains(out, "catch-all has no hand, so no cap of its own; node-high's 15, system's 12, workload-high's 15, workload-low's 37 caps are above it") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}
