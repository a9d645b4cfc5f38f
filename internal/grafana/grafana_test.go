package grafana

import (
	"strings"
	"testing"
)

func TestDescribe(t *testing.T) {
	dash := `{"title": "APF", "rows": [{"panels": [{"targets": [{"expr": "apiserver_flowcontrol_current_inqueue_requests"}]}]}]}`
	for _, c := range []struct{ in, want string }{
		{dash, `the Grafana dashboard "APF" (1 panel of queries, 1 of them on APF series, apiserver_flowcontrol_*)`},
		{`{"dashboard": ` + dash + `}`, `the Grafana dashboard "APF" (1 panel of queries, 1 of them on APF series, apiserver_flowcontrol_*)`},
		{`{"kind": "ConfigMap", "metadata": {"name": "d"}, "data": {"a.json": ` + quote(dash) + `}}`, `ConfigMap d holding the Grafana dashboard "APF" (1 panel of queries, 1 of them on APF series, apiserver_flowcontrol_*) (key a.json)`},
		{`{"kind": "Event", "apiVersion": "audit.k8s.io/v1"}`, ""},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: b\n", ""},
		{"", ""},
	} {
		got, ok := Describe([]byte(c.in))
		if got != c.want || ok != (c.want != "") {
			t.Errorf("Describe(%.40q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
}

func quote(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
}

// FuzzDescribe: any input is described or not, without a panic, and
// whatever is described is said to be a Grafana dashboard.
func FuzzDescribe(f *testing.F) {
	f.Add([]byte(`{"title": "x", "panels": [{"targets": [{"expr": "apiserver_flowcontrol_x"}]}]}`))
	f.Add([]byte("kind: ConfigMap\ndata:\n  a: '{\"panels\": [{}]}'\n"))
	f.Add([]byte(`{"dashboard": {"rows": [{}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, ok := Describe(b); ok && !strings.Contains(got, "Grafana dashboard") {
			t.Errorf("described as %q", got)
		}
		_ = MayBe(b)
	})
}
