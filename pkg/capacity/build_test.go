package capacity

import (
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// TestBuild: the report of a state with the default levels at 600 seats
// (current only; with --set, the proposed table too), and of a state
// with no PriorityLevelConfigurations and no -f (no table, and why).
func TestBuild(t *testing.T) {
	st := &state.State{BasePriorityLevels: defaultLevels(), PriorityLevels: defaultLevels(), ServerConcurrency: 600, ServerConcurrencySource: "flag"}
	rep, err := Build(Input{State: st, RequestTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Current == nil || rep.Proposed != nil || rep.Unconfigured != "" || rep.ServerConcurrencySource != "flag" {
		t.Fatalf("report %+v: want the current table alone", rep)
	}
	rep, err = Build(Input{State: st, RequestTimeout: time.Minute, Settings: []Setting{{Level: "workload-low", Field: "nominalConcurrencyShares", Value: ptr(200)}}})
	if err != nil {
		t.Fatal(err)
	}
	nominal := func(tab *Table, name string) int {
		for _, l := range tab.Levels {
			if l.Name == name {
				return l.NominalCL
			}
		}
		return -1
	}
	// ceil(600*100/245) now, ceil(600*200/345) with workload-low's shares doubled
	if rep.Proposed == nil || nominal(rep.Current, "workload-low") != 245 || nominal(rep.Proposed, "workload-low") != 348 {
		t.Fatalf("--set: current %d, proposed %+v", nominal(rep.Current, "workload-low"), rep.Proposed)
	}
	if _, err := Build(Input{State: st, Settings: []Setting{{Level: "nope", Field: "nominalConcurrencyShares", Value: ptr(1)}}}); err == nil {
		t.Error("a --set on a level that does not exist: no error")
	}

	rep, err = Build(Input{State: &state.State{NoObjects: true, ServerConcurrency: 600}, RequestTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Current != nil || !strings.Contains(rep.Unconfigured, "holds no PriorityLevelConfigurations") {
		t.Errorf("no objects, no -f: current %v, unconfigured %q", rep.Current, rep.Unconfigured)
	}
}
