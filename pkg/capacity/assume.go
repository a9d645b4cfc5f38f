package capacity

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
)

// AssumeBase is the starting configuration of "capacity -f" over an input
// that holds no PriorityLevelConfigurations (a raw dump or metrics file):
// the upstream defaults of rel, when every level the input names is one
// of them, and assumed says so; otherwise none (nil), and refused says
// which levels the defaults lack. The mandatory levels alone are never
// assumed: catch-all would hold every seat.
func AssumeBase(rel engine.Release, named []string) (pls []*flowcontrolv1.PriorityLevelConfiguration, assumed, refused string) {
	defaults := map[string]bool{}
	for _, pl := range rel.DefaultPriorityLevels() {
		defaults[pl.Name] = true
		pls = append(pls, engine.DefaultPriorityLevel(pl.DeepCopy()))
	}
	var seen, others []string
	done := map[string]bool{}
	for _, n := range named {
		if done[n] {
			continue
		}
		done[n] = true
		if defaults[n] {
			seen = append(seen, n)
		} else {
			others = append(others, n)
		}
	}
	sort.Strings(seen)
	sort.Strings(others)
	if len(others) > 0 {
		return nil, "", fmt.Sprintf("the input holds no PriorityLevelConfigurations and names levels the upstream defaults lack (%s), so the configuration -f changes is unknown (give a bundle or the cluster, or --defaults to start from the upstream defaults anyway)", strings.Join(others, ", "))
	}
	which := "it names no level"
	if len(seen) > 0 {
		which = "every level it names is one of them: " + strings.Join(seen, ", ")
	}
	return pls, fmt.Sprintf("the input holds no PriorityLevelConfigurations; the current configuration is assumed to be the upstream defaults of Kubernetes %s (%s); give --defaults to start from them knowingly, or a bundle or the cluster for the configured objects", rel, which), ""
}

// CheckAssumed compares the nominal limits the input gives (its metrics)
// with those of the assumed configuration t, for the Assumed line: "" when
// the input gives none, else whether they agree.
func CheckAssumed(t Table, now []levels.Row) string {
	nominal := map[string]int{}
	for _, l := range t.Levels {
		nominal[l.Name] = l.NominalCL
	}
	var differ []string
	n := 0
	for _, r := range now {
		want, ok := nominal[r.Name]
		if math.IsNaN(r.NominalLimit) || !ok || r.From[levels.FigureNominalLimit] != levels.FromMetrics {
			continue
		}
		n++
		if r.NominalLimit != float64(want) {
			differ = append(differ, fmt.Sprintf("%s %s against %d", r.Name, strconv.FormatFloat(r.NominalLimit, 'f', -1, 64), want))
		}
	}
	switch {
	case n == 0:
		return ""
	case len(differ) == 0:
		return fmt.Sprintf("; the input's nominal limits agree with them at %d seats", t.ServerConcurrencyLimit)
	}
	return fmt.Sprintf("; the input's nominal limits differ from them at %d seats (%s): the cluster's configuration or its server concurrency limit is not the one assumed", t.ServerConcurrencyLimit, strings.Join(differ, ", "))
}
