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
