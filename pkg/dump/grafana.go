package dump

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// A Grafana dashboard (its JSON model, as "Export" or a provisioning file
// holds it, or a ConfigMap that carries it, as kube-prometheus, OpenShift
// and Helm charts ship dashboards) holds PromQL queries and no data: none of
// its numbers is a figure of the cluster. The readers of raw input name it
// and say where its queries' answers are read, instead of quoting its first
// line as neither a dump nor metrics.

// grafanaPanel is the part of a panel this reads: its nested panels (a
// collapsed row's), and its queries.
type grafanaPanel struct {
	Panels  []grafanaPanel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

type grafanaDashboard struct {
	Title  string         `json:"title"`
	Panels []grafanaPanel `json:"panels"`
	Rows   []grafanaPanel `json:"rows"` // the dashboards of Grafana before 5
}

// dashboardOf decodes b as a Grafana dashboard, bare or under "dashboard"
// (the form of Grafana's HTTP API); false when b is not one.
func dashboardOf(b []byte) (grafanaDashboard, bool) {
	var d grafanaDashboard
	var wrapped struct {
		Dashboard *grafanaDashboard `json:"dashboard"`
	}
	if json.Unmarshal(b, &wrapped) == nil && wrapped.Dashboard != nil && len(wrapped.Dashboard.Panels)+len(wrapped.Dashboard.Rows) > 0 {
		return *wrapped.Dashboard, true
	}
	if json.Unmarshal(b, &d) != nil || len(d.Panels)+len(d.Rows) == 0 {
		return d, false
	}
	return d, true
}

// count gives the panels of d with queries, and of those the panels that
// query an APF family (apiserver_flowcontrol_*).
func (d grafanaDashboard) count() (panels, apf int) {
	var walk func(ps []grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			walk(p.Panels)
			if len(p.Targets) == 0 {
				continue
			}
			panels++
			for _, t := range p.Targets {
				if strings.Contains(t.Expr, "apiserver_flowcontrol_") {
					apf++
					break
				}
			}
		}
	}
	walk(d.Panels)
	walk(d.Rows)
	return panels, apf
}

// grafanaError is the refusal of an input that is a Grafana dashboard, or
// a ConfigMap holding one; nil when data is neither.
func grafanaError(name string, data []byte) error {
	t := bytes.TrimSpace(data)
	if len(t) == 0 {
		return nil
	}
	describe := func(d grafanaDashboard) string {
		panels, apf := d.count()
		title := ""
		if d.Title != "" {
			title = fmt.Sprintf("%q ", d.Title)
		}
		return fmt.Sprintf("the Grafana dashboard %s(%s, %d of them on APF series, apiserver_flowcontrol_*)", title, plural(panels, "panel")+" of queries", apf)
	}
	if t[0] == '{' {
		if d, ok := dashboardOf(t); ok {
			return dashboardRefusal(name, describe(d))
		}
		return nil
	}
	// A ConfigMap (YAML or JSON) whose data holds dashboards.
	var cm struct {
		Kind     string                `json:"kind"`
		Metadata struct{ Name string } `json:"metadata"`
		Data     map[string]string     `json:"data"`
	}
	if !bytes.Contains(t, []byte("ConfigMap")) || yaml.Unmarshal(firstDocument(t), &cm) != nil || cm.Kind != "ConfigMap" {
		return nil
	}
	var keys []string
	for k := range cm.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if d, ok := dashboardOf([]byte(cm.Data[k])); ok {
			return dashboardRefusal(name, fmt.Sprintf("ConfigMap %s holding %s (key %s)", cm.Metadata.Name, describe(d), k))
		}
	}
	return nil
}

func dashboardRefusal(name, what string) error {
	return fmt.Errorf("%s is %s: a dashboard holds PromQL queries, not their answers: give the Prometheus it reads (--prometheus URL, where the command has it), or a scrape (kubectl get --raw /metrics) or the debug dumps (kubectl apf dump bundle)", name, what)
}

// firstDocument is the first YAML document of b, past a leading "---".
func firstDocument(b []byte) []byte {
	s := strings.TrimPrefix(strings.TrimLeft(string(b), "\n"), "---\n")
	if i := strings.Index(s, "\n---"); i >= 0 {
		s = s[:i]
	}
	return []byte(s)
}
