package input

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// A Grafana dashboard given as a workload (bare, as Grafana's HTTP API
// gives it, or in a ConfigMap) is refused in one line that names it, with
// its panels, and says what to give instead. It was read as lines: "no
// line is an httplog "HTTP" line ... (first line: "\",\n")", quoting a
// fragment of the JSON that reading had written over the first line, or
// "JSON whose records are not audit events ... (first record's keys:
// annotations)" (issue 58, the known failure of testdata/field).
func TestGrafanaDashboardRefused(t *testing.T) {
	// panels far past the 64 KiB that detection peeks at
	var filler strings.Builder
	for i := 0; i < 1200; i++ {
		filler.WriteString(`    {"type": "graph", "title": "padding panel with a long title to fill the peek", "targets": [{"expr": "up"}]},` + "\n")
	}
	dash := `{
  "annotations": {"list": []},
  "title": "APF",
  "panels": [
    {"type": "row", "panels": [
      {"type": "graph", "targets": [{"expr": "sum(rate(apiserver_flowcontrol_rejected_requests_total[5m])) by (priority_level)"}]}
    ]},
` + filler.String() + `    {"type": "text"}
  ]
}
`
	indented := "    " + strings.ReplaceAll(strings.TrimSpace(dash), "\n", "\n    ")
	dir := t.TempDir()
	for _, c := range []struct{ name, in, want string }{
		{"export.json", dash, `the Grafana dashboard "APF" (1201 panels of queries, 1 of them on APF series, apiserver_flowcontrol_*), not a workload`},
		{"api.json", `{"meta": {"slug": "apf"}, "dashboard": ` + dash + `}`, `the Grafana dashboard "APF" (1201 panels of queries`},
		{"configmap.yaml", "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: apf-dashboard\ndata:\n  apf.json: |-\n" + indented + "\n",
			`ConfigMap apf-dashboard holding the Grafana dashboard "APF" (1201 panels of queries, 1 of them on APF series, apiserver_flowcontrol_*) (key apf.json), not a workload`},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, []byte(c.in), 0o644); err != nil {
			t.Fatal(err)
		}
		next := []string{"audit log", "httplog", "--prometheus URL"}
		_, _, err := readFiles(t, p)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s through OpenFiles: %v, want one line with %q", c.name, err, c.want)
		}
		for _, w := range next {
			if err != nil && !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v lacks the next step %q", c.name, err, w)
			}
		}
		_, _, err = NewReader(strings.NewReader(c.in), c.name, Options{Lenient: true}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s through NewReader: %v, want %q", c.name, err, c.want)
		}
	}
}

// An input read whole to tell whether it is a dashboard, and found not to
// be one, is read from its start as before: pretty-printed audit events
// whose request object names "panels" (a dashboard ConfigMap's update,
// logged at RequestResponse) are requests.
func TestGrafanaLookalikeStillRead(t *testing.T) {
	ev := `{
  "kind": "Event",
  "apiVersion": "audit.k8s.io/v1",
  "level": "RequestResponse",
  "auditID": "AID",
  "stage": "ResponseComplete",
  "requestURI": "/api/v1/namespaces/monitoring/configmaps/dash",
  "verb": "update",
  "user": {"username": "alice", "groups": ["system:authenticated"]},
  "objectRef": {"resource": "configmaps", "namespace": "monitoring", "name": "dash", "apiVersion": "v1"},
  "responseStatus": {"code": 200},
  "requestObject": {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "dash"}, "data": {"d.json": "{\"panels\": []}"}},
  "requestReceivedTimestamp": "2025-01-02T03:04:05.000000Z",
  "stageTimestamp": "2025-01-02T03:04:05.010000Z"
}
`
	var in bytes.Buffer
	for _, id := range []string{"a", "b", "c"} {
		in.WriteString(strings.Replace(ev, "AID", id, 1))
	}
	rd, _, err := NewReader(&in, "audit.json", Options{Lenient: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		var r workload.Request
		err := rd.Next(&r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

// The first line an error quotes is the input's, not what reading later
// wrote over the detection buffer.
func TestNothingReadQuotesTheFirstLine(t *testing.T) {
	var in strings.Builder
	in.WriteString("first line of prose\n")
	for i := 0; i < 5000; i++ {
		in.WriteString("another line that is no request at all, to push the reader past its first buffer\n")
	}
	p := filepath.Join(t.TempDir(), "prose.txt")
	if err := os.WriteFile(p, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := readFiles(t, p)
	if err == nil || !strings.Contains(err.Error(), `(first line: "first line of prose")`) {
		t.Errorf("got %v, want the first line quoted", err)
	}
}
