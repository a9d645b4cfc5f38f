package input

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// kubeProxyLine is kube-proxy's httplog line as kubernetes/kubernetes#105370
// published it, without its klog header (testdata/field of the module).
const kubeProxyLine = `"HTTP" verb="GET" URI="/api/v1/nodes?fieldSelector=metadata.name%3Dgce-scale-cluster-minion-group-1-gxj1&limit=500&resourceVersion=0" latency="1.36583ms" userAgent="kube-proxy/v1.23.0 (linux/amd64) kubernetes/6f47878" audit-ID="dcde2865-8562-4d2d-9384-c1679543ebec" srcIP="10.40.8.85:54464" apf_pl="global-default" apf_fs="global-default" apf_fd="system:kube-proxy" resp=200`

// TestHTTPLogHeaderless: with Headerless, a line that starts with "HTTP"
// (published without its klog header) is a request whose time is unknown,
// with its verb, URI, classification and apf_fd; without it, such a line
// is not a request (a log's requests need their times). A line with its
// header keeps its time and gives apf_fd too (issue 47's field test, N3
// and N4).
func TestHTTPLogHeaderless(t *testing.T) {
	got, err := readAll(t, NewHTTPLogReader(strings.NewReader("  "+kubeProxyLine+"\n"), "line", Options{Headerless: true}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d requests, want 1", len(got))
	}
	r := got[0]
	if !r.TimeUnknown || !r.Arrival.IsZero() || r.Verb != "GET" || !strings.HasPrefix(r.URI, "/api/v1/nodes?fieldSelector=") || r.Status != 200 ||
		r.FlowSchema != "global-default" || r.PriorityLevel != "global-default" || r.FlowDistinguisher != "system:kube-proxy" || !r.HasFlowDistinguisher {
		t.Errorf("request %+v", r)
	}
	st := &workload.Stats{}
	if got, err := readAll(t, NewHTTPLogReader(strings.NewReader(kubeProxyLine+"\n"), "log", Options{}, st)); err != nil || len(got) != 0 || st.Skipped != 1 {
		t.Errorf("without Headerless: %d requests, %d skipped, %v", len(got), st.Skipped, err)
	}
	withHeader := `I0929 17:09:18.547660      12 httplog.go:105] "HTTP" verb="GET" URI="/api/v1/nodes/n" latency="5.586004ms" apf_pl="global-default" apf_fs="global-default" apf_fd="system:node-problem-detector" resp=200`
	got, err = readAll(t, NewHTTPLogReader(strings.NewReader(withHeader+"\n"), "log", Options{Headerless: true}, nil))
	if err != nil || len(got) != 1 {
		t.Fatalf("%v, %v", got, err)
	}
	if r := got[0]; r.TimeUnknown || r.Arrival.IsZero() || r.FlowDistinguisher != "system:node-problem-detector" {
		t.Errorf("request %+v", r)
	}
}

func FuzzHTTPLogHeaderless(f *testing.F) {
	f.Add([]byte(kubeProxyLine))
	f.Add([]byte(`"HTTP" `))
	f.Add([]byte(" \t\"HTTP\" verb=\"GET\" URI=\"/x\" latency=\"1ms\" addedInfo=<\n\tx\n >\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkStream(t, NewHTTPLogReader(bytes.NewReader(b), "fuzz", Options{Headerless: true}, nil))
	})
}
