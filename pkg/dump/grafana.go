package dump

import (
	"fmt"

	"github.com/kubectl-apf/kubectl-apf/internal/grafana"
)

// A Grafana dashboard (its JSON model, as "Export" or a provisioning file
// holds it, or a ConfigMap that carries it, as kube-prometheus, OpenShift
// and Helm charts ship dashboards) holds PromQL queries and no data: none of
// its numbers is a figure of the cluster. The readers of raw input name it
// and say where its queries' answers are read, instead of quoting its first
// line as neither a dump nor metrics. The recogniser is internal/grafana's,
// which the workload readers share.

// grafanaError is the refusal of an input that is a Grafana dashboard, or
// a ConfigMap holding one; nil when data is neither.
func grafanaError(name string, data []byte) error {
	if what, ok := grafana.Describe(data); ok {
		return dashboardRefusal(name, what)
	}
	return nil
}

func dashboardRefusal(name, what string) error {
	return fmt.Errorf("%s is %s: a dashboard holds PromQL queries, not their answers: give the Prometheus it reads (--prometheus URL, where the command has it), or a scrape (kubectl get --raw /metrics) or the debug dumps (kubectl apf dump bundle)", name, what)
}
