package fromlog

import (
	"strings"
	"testing"
	"time"
)

// TestReadRecordedLineForms: a --from-log value that is no file and looks
// like a log line is read as the line. kube-proxy's line of
// kubernetes/kubernetes#105370, published without its klog header, is a
// request whose time is unknown (N3); the 1.18 httplog line of
// k3s-io/k3s#2278 is refused as a line, with why, not opened as a file
// (N5); a name without key=value fields stays a file name (issue 47's
// field test).
func TestReadRecordedLineForms(t *testing.T) {
	kubeProxy := `"HTTP" verb="GET" URI="/api/v1/nodes?limit=500" latency="1.36583ms" userAgent="kube-proxy/v1.23.0" apf_pl="global-default" apf_fs="global-default" apf_fd="system:kube-proxy" resp=200`
	r, _, err := ReadRecorded(kubeProxy, "", "", nil, nil, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimeUnknown || r.Verb != "GET" || r.FlowDistinguisher != "system:kube-proxy" {
		t.Errorf("request %+v", r)
	}
	k3s := `Sep 23 20:01:07 pi04 k3s[2957]: I0923 20:01:07.329494    2957 httplog.go:90] verb="GET" URI="/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/cloud-controller-manager" latency=19.205301ms resp=200 UserAgent="k3s/v1.18.8+k3s1 (linux/arm) kubernetes/6b59531/leader-election" srcIP="127.0.0.1:50946":`
	_, _, err = ReadRecorded(k3s, "", "", nil, nil, time.Time{}, time.Time{})
	if err == nil || strings.Contains(err.Error(), "no such file") || !strings.Contains(err.Error(), "the line given: it is an httplog line of the form before 1.22") {
		t.Errorf("1.18 line: %v", err)
	}
	_, _, err = ReadRecorded("no-such-file.log", "", "", nil, nil, time.Time{}, time.Time{})
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing file: %v", err)
	}
}
