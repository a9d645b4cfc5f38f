// Package grafana recognises a Grafana dashboard given where figures or
// requests were expected: its JSON model (as "Export" or a provisioning
// file holds it, bare or under "dashboard" as Grafana's HTTP API gives it),
// or a ConfigMap that carries one, as kube-prometheus, OpenShift and Helm
// charts ship dashboards. A dashboard holds PromQL queries and no data: the
// readers of raw input (pkg/dump) and of workloads (pkg/input)
// name it instead of reading its lines as something else.
package grafana

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// panel is the part of a panel this reads: its nested panels (a collapsed
// row's), and its queries.
type panel struct {
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

type dashboard struct {
	Title  string  `json:"title"`
	Panels []panel `json:"panels"`
	Rows   []panel `json:"rows"` // the dashboards of Grafana before 5
}

// dashboardOf decodes b as a Grafana dashboard, bare or under "dashboard"
// (the form of Grafana's HTTP API); false when b is not one.
func dashboardOf(b []byte) (dashboard, bool) {
	var d dashboard
	var wrapped struct {
		Dashboard *dashboard `json:"dashboard"`
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
func (d dashboard) count() (panels, apf int) {
	var walk func(ps []panel)
	walk = func(ps []panel) {
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

func (d dashboard) describe() string {
	panels, apf := d.count()
	title := ""
	if d.Title != "" {
		title = fmt.Sprintf("%q ", d.Title)
	}
	noun := "panels"
	if panels == 1 {
		noun = "panel"
	}
	return fmt.Sprintf("the Grafana dashboard %s(%d %s of queries, %d of them on APF series, apiserver_flowcontrol_*)", title, panels, noun, apf)
}

// Describe says what data is when it is a Grafana dashboard or a ConfigMap
// holding one ("the Grafana dashboard "API Performance" (31 panels of
// queries, 8 of them on APF series, apiserver_flowcontrol_*)", or
// "ConfigMap NAME holding the Grafana dashboard ... (key KEY)"); false
// when it is neither.
func Describe(data []byte) (string, bool) {
	t := bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\ufeff")))
	if len(t) == 0 {
		return "", false
	}
	if t[0] == '{' {
		if d, ok := dashboardOf(t); ok {
			return d.describe(), true
		}
		// a ConfigMap in JSON is tried below
		if !bytes.Contains(t, []byte("ConfigMap")) {
			return "", false
		}
	}
	// A ConfigMap (YAML or JSON) whose data holds dashboards.
	var cm struct {
		Kind     string                `json:"kind"`
		Metadata struct{ Name string } `json:"metadata"`
		Data     map[string]string     `json:"data"`
	}
	if !bytes.Contains(t, []byte("ConfigMap")) || yaml.Unmarshal(firstDocument(t), &cm) != nil || cm.Kind != "ConfigMap" {
		return "", false
	}
	var keys []string
	for k := range cm.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if d, ok := dashboardOf([]byte(cm.Data[k])); ok {
			return fmt.Sprintf("ConfigMap %s holding %s (key %s)", cm.Metadata.Name, d.describe(), k), true
		}
	}
	return "", false
}

// MayBe reports whether head, the start of an input, may be a dashboard or
// a ConfigMap holding one, so that a reader of a stream knows when to read
// the input whole for Describe: a JSON object, or a ConfigMap, that
// names panels or rows.
func MayBe(head []byte) bool {
	t := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\ufeff")), " \t\r\n")
	if len(t) == 0 {
		return false
	}
	if !bytes.Contains(t, []byte(`"panels"`)) && !bytes.Contains(t, []byte(`"rows"`)) {
		return false
	}
	return t[0] == '{' || bytes.Contains(t, []byte("ConfigMap"))
}

// firstDocument is the first YAML document of b, past a leading "---".
func firstDocument(b []byte) []byte {
	s := strings.TrimPrefix(strings.TrimLeft(string(b), "\n"), "---\n")
	if i := strings.Index(s, "\n---"); i >= 0 {
		s = s[:i]
	}
	return []byte(s)
}
