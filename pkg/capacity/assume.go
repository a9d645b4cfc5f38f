package capacity

import (
	"fmt"
	"sort"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
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
