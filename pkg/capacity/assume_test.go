package capacity

import (
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
)

// TestAssumeBase: -f over raw metrics starts from the upstream defaults
// when the metrics name only default levels, and from nothing otherwise;
// never from the mandatory levels alone (issue 47, R6).
func TestAssumeBase(t *testing.T) {
	pls, assumed, refused := AssumeBase(engine.NewestRelease, []string{"workload-low", "catch-all", "workload-low"})
	if pls == nil || refused != "" || !strings.Contains(assumed, "upstream defaults of Kubernetes "+engine.NewestRelease.String()) ||
		!strings.Contains(assumed, "catch-all, workload-low") {
		t.Fatalf("assumed %q refused %q", assumed, refused)
	}
	tab, err := Compute(pls, 600, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The defaults at 600 seats: workload-low's 100 of 245 shares is 245
	// seats (ceil(600*100/245)), as the EKS guide's metrics show.
	for _, l := range tab.Levels {
		if l.Name == "workload-low" && l.NominalCL != 245 {
			t.Errorf("workload-low nominal %d, want 245", l.NominalCL)
		}
		if l.Name == "catch-all" && l.NominalCL != 13 {
			t.Errorf("catch-all nominal %d, want 13", l.NominalCL)
		}
	}
	pls, _, refused = AssumeBase(engine.NewestRelease, []string{"workload-low", "team-a"})
	if pls != nil || !strings.Contains(refused, "(team-a)") {
		t.Errorf("a level outside the defaults: %d levels assumed, refused %q", len(pls), refused)
	}
}

// TestReachable: the most a level can reach by borrowing, against the
// apiserver's upper limit, which overstates it (kubernetes/kubernetes#129086).
// The defaults at 600 seats lend 344 seats in all (global-default 25,
// node-high 25, system 24, workload-high 49, workload-low 221), so
// catch-all (lends 0) reaches 13+344 = 357, not its upper limit 613, and
// workload-low 245+344-221 = 368, not 845.
func TestReachable(t *testing.T) {
	pls, _, _ := AssumeBase(engine.NewestRelease, nil)
	tab, err := Compute(pls, 600, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]int{"catch-all": {357, 613}, "workload-low": {368, 845}, "global-default": {368, 649}}
	for _, l := range tab.Levels {
		if l.Name == "exempt" {
			if l.ReachableCL != nil {
				t.Errorf("exempt, never limited: reachable %d, want none", *l.ReachableCL)
			}
			continue
		}
		if w, ok := want[l.Name]; ok && (l.ReachableCL == nil || *l.ReachableCL != w[0] || l.UpperCL != w[1]) {
			t.Errorf("%s: reachable %v, upper %d; want %d, %d", l.Name, l.ReachableCL, l.UpperCL, w[0], w[1])
		}
	}
}

// TestCheckAssumed: the input's nominal limits (its metrics) confirm or
// contradict the assumed defaults. The EKS guide's 245 seats of
// workload-low are the defaults' at 600 seats; at 1000 they would be 409
// (ceil(1000*100/245)).
func TestCheckAssumed(t *testing.T) {
	pls, _, _ := AssumeBase(engine.NewestRelease, nil)
	row := func(level string, v float64, from string) levels.Row {
		r := levels.Empty("", level)
		r.NominalLimit, r.From[levels.FigureNominalLimit] = v, from
		return r
	}
	now := []levels.Row{row("workload-low", 245, levels.FromMetrics), row("catch-all", 99, levels.FromConfiguration)}
	for scl, want := range map[int]string{
		600:  "; the input's nominal limits agree with them at 600 seats",
		1000: "; the input's nominal limits differ from them at 1000 seats (workload-low 245 against 409): the cluster's configuration or its server concurrency limit is not the one assumed",
	} {
		tab, err := Compute(pls, scl, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if got := CheckAssumed(tab, now); got != want {
			t.Errorf("at %d seats: %q, want %q", scl, got, want)
		}
	}
	tab, _ := Compute(pls, 600, time.Minute)
	if got := CheckAssumed(tab, []levels.Row{row("catch-all", 99, levels.FromConfiguration)}); got != "" {
		t.Errorf("no nominal limit from the input: %q", got)
	}
}
