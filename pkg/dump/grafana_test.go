package dump

import (
	"strings"
	"testing"
)

// A Grafana dashboard given as raw input is named as one, with its panels
// of APF queries, and the refusal says where their answers are read. It was
// refused as '"{" is neither a debug dump ...' (issue 58, item 3).
func TestDetectRawGrafanaDashboard(t *testing.T) {
	dash := `{
  "title": "APF",
  "panels": [
    {"type": "row", "panels": [
      {"type": "graph", "targets": [{"expr": "sum(rate(apiserver_flowcontrol_rejected_requests_total[5m])) by (priority_level)"}]}
    ]},
    {"type": "graph", "targets": [{"expr": "sum(apiserver_current_inflight_requests)"}]},
    {"type": "text"}
  ]
}`
	indented := "    " + strings.ReplaceAll(dash, "\n", "\n    ")
	for _, c := range []struct{ name, in, want string }{
		{"export", dash, `dash.json is the Grafana dashboard "APF" (2 panels of queries, 1 of them on APF series`},
		{"api", `{"dashboard": ` + dash + `, "meta": {}}`, `the Grafana dashboard "APF" (2 panels of queries`},
		{"configmap", "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: apf-dashboard\ndata:\n  apf.json: |-\n" + indented + "\n",
			`is ConfigMap apf-dashboard holding the Grafana dashboard "APF" (2 panels of queries, 1 of them on APF series, apiserver_flowcontrol_*) (key apf.json)`},
	} {
		var in RawInput
		err := DetectRaw("dash.json", []byte(c.in), &in)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--prometheus URL") {
			t.Errorf("%s: %v, want %q and the next step", c.name, err, c.want)
		}
	}
	// A ConfigMap of something else is no dashboard: the usual refusal.
	var in RawInput
	err := DetectRaw("cm.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: b\n"), &in)
	if err == nil || strings.Contains(err.Error(), "Grafana") {
		t.Errorf("a plain ConfigMap: %v", err)
	}
}

// Prometheus rules given as raw input are named, with their APF rules:
// they were 'line 3: "metadata:" is neither a debug dump ...'.
func TestDetectRawPrometheusRules(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"rule.yaml", "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  labels:\n    {{- include \"x\" . | nindent 4 }}\n  name: apf\nspec:\n  groups:\n  - name: g\n    rules:\n    - alert: A\n      expr: increase(apiserver_flowcontrol_rejected_requests_total[1m]) > 0\n    - record: r\n      expr: sum(up)\n",
			"rule.yaml is PrometheusRule apf (1 alerting rule and 1 recording rule, 1 of them on APF series, apiserver_flowcontrol_*)"},
		{"rules.yml", "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: |\n      rate(apiserver_flowcontrol_rejected_requests_total[5m]) > 5\n",
			"rules.yml is Prometheus rules (1 alerting rule, 1 of them on APF series"},
	} {
		var in RawInput
		err := DetectRaw(c.name, []byte(c.in), &in)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--prometheus URL") {
			t.Errorf("%s: %v, want %q and the next step", c.name, err, c.want)
		}
	}
}
