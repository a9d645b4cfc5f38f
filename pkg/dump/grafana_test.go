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
