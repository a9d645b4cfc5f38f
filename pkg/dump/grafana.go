package dump

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

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

// Prometheus rules (a PrometheusRule, plain or as a Helm template of one,
// or a rules file of groups) hold PromQL queries too: alerting and
// recording rules, and no answer. They are named like a dashboard.
var (
	ruleKind  = regexp.MustCompile(`(?m)^kind:\s*["']?PrometheusRule["']?\s*$`)
	ruleName  = regexp.MustCompile(`(?m)^metadata:\s*\n(?:[ \t]+.*\n)*?[ \t]+name:\s*["']?([^\s"'{}]+)`)
	ruleGroup = regexp.MustCompile(`(?m)^\s*groups:\s*$`)
	ruleStart = regexp.MustCompile(`(?m)^\s*-\s*(alert|record):`)
)

// rulesError is the refusal of an input of Prometheus rules; nil when data
// is none.
func rulesError(name string, data []byte) error {
	isRule := ruleKind.Match(data)
	if !isRule && !ruleGroup.Match(data) {
		return nil
	}
	starts := ruleStart.FindAllSubmatchIndex(data, -1)
	if len(starts) == 0 {
		return nil
	}
	alerts, records, apf := 0, 0, 0
	for i, m := range starts {
		end := len(data)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		if string(data[m[2]:m[3]]) == "alert" {
			alerts++
		} else {
			records++
		}
		if bytes.Contains(data[m[0]:end], []byte("apiserver_flowcontrol_")) {
			apf++
		}
	}
	var kinds []string
	if alerts > 0 {
		kinds = append(kinds, plural(alerts, "alerting rule"))
	}
	if records > 0 {
		kinds = append(kinds, plural(records, "recording rule"))
	}
	what := "Prometheus rules"
	if isRule {
		what = "PrometheusRule"
		if m := ruleName.FindSubmatch(data); m != nil {
			what += " " + string(m[1])
		}
	}
	return fmt.Errorf("%s is %s (%s, %d of them on APF series, apiserver_flowcontrol_*): rules hold PromQL queries, not their answers: give the Prometheus they run on (--prometheus URL, where the command has it), or a scrape (kubectl get --raw /metrics) or the debug dumps (kubectl apf dump bundle)",
		name, what, strings.Join(kinds, " and "), apf)
}
