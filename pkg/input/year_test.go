package input

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/auditwrap"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
)

func TestLogYear(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const klog = `I0305 22:40:41.976983       1 httplog.go:134] "HTTP" verb="GET" URI="/api" latency="1ms" userAgent="x" audit-ID="a" srcIP="1.2.3.4:5" resp=200` + "\n"
	plain := write("plain.log", klog)
	// the published lines, with a container runtime's prefix
	cri := fixture.Path("field", "kueue-4508-httplog-kuberay-pods.log")
	// kubectl logs --timestamps in local time across New Year: the prefix
	// is already in January, klog's header still in December
	newYear := write("newyear.log", "2026-01-01T00:30:00.000000000+01:00 I1231 23:30:00.000000       1 httplog.go:134] \"HTTP\" verb=\"GET\" URI=\"/api\" latency=\"1ms\" resp=200\n")
	jsonLine := write("json.log", `{"ts":1741214441976.983,"caller":"httplog/httplog.go:134","msg":"HTTP","v":3,"verb":"GET","URI":"/api","latency":"1ms","resp":200}`+"\n")
	audit := write("audit.log", `{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","auditID":"a","requestReceivedTimestamp":"2024-11-21T14:15:17.977828Z","stageTimestamp":"2024-11-21T14:15:17.980328Z","verb":"get","requestURI":"/api","user":{"username":"u"},"responseStatus":{"code":200}}`+"\n")
	// the audit event as EKS exports it, and gzipped
	event := []byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","auditID":"a","requestReceivedTimestamp":"2024-11-21T14:15:17.977828Z","stageTimestamp":"2024-11-21T14:15:17.980328Z","verb":"get","requestURI":"/api","user":{"username":"u"},"responseStatus":{"code":200}}`)
	cloudWatch := write("filter-log-events.json", string(auditwrap.CloudWatchFilterStreams([]auditwrap.Stream{{Name: "kube-apiserver-audit-1", Events: [][]byte{event}}})))
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write(append(event, '\n'))
	zw.Close()
	gzipped := write("audit.log.gz", zipped.String())
	for _, tt := range []struct {
		name      string
		paths     []string
		wantYear  int
		wantKnown bool
	}{
		{"klog header alone", []string{plain}, 0, false},
		{"a container runtime's prefix", []string{cri}, 2025, true},
		{"a prefix in January, klog in December", []string{newYear}, 2025, true},
		{"klog JSON", []string{jsonLine}, 2025, true},
		{"an audit log wins", []string{cri, audit}, 2024, true},
		{"a CloudWatch export of audit events", []string{cloudWatch}, 2024, true},
		{"a CloudWatch export wins", []string{plain, cri, cloudWatch}, 2024, true},
		{"a gzipped audit log", []string{gzipped}, 2024, true},
		{"missing and stdin", []string{filepath.Join(dir, "missing"), "-"}, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			y, ok := Year(tt.paths)
			if y != tt.wantYear || ok != tt.wantKnown {
				t.Errorf("Year = %d, %v; want %d, %v", y, ok, tt.wantYear, tt.wantKnown)
			}
		})
	}
}

// FuzzHTTPLogLineYear: any line gives a year or none, never a panic.
func FuzzHTTPLogLineYear(f *testing.F) {
	for _, s := range []string{
		`2025-03-05T22:40:41.977203895Z stderr F I0305 22:40:41.976983       1 httplog.go:134] "HTTP" verb="POST"`,
		`I0305 22:40:41.976983       1 httplog.go:134] "HTTP" verb="POST"`,
		`{"ts":1741214441976.983,"msg":"HTTP"}`,
		`2025-13-05T22:40:41Z a b c] "HTTP" `,
		`x I1 a b] "HTTP" `,
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if y, ok := httplogLineYear([]byte(s)); !ok && y != 0 {
			t.Fatalf("year %d without ok", y)
		}
	})
}
