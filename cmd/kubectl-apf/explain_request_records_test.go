package main

import "testing"

// TestReadRecordedLineForms: a --from-log value that is no file and looks
// like a log line is read as the line. kube-proxy's line of
// kubernetes/kubernetes#105370, published without its klog header, is a
// request whose time is unknown (issue 47's field test, N3).
func TestReadRecordedLineForms(t *testing.T) {
	kubeProxy := `"HTTP" verb="GET" URI="/api/v1/nodes?limit=500" latency="1.36583ms" userAgent="kube-proxy/v1.23.0" apf_pl="global-default" apf_fs="global-default" apf_fd="system:kube-proxy" resp=200`
	r, _, err := readRecorded(kubeProxy, "", "", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimeUnknown || r.Verb != "GET" || r.FlowDistinguisher != "system:kube-proxy" {
		t.Errorf("request %+v", r)
	}
}
