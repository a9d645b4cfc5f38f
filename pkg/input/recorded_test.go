package input

import (
	"os"
	"path/filepath"
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
	r, _, err := ReadRecorded(kubeProxy, "", "", nil, nil, time.Time{}, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimeUnknown || r.Verb != "GET" || r.FlowDistinguisher != "system:kube-proxy" {
		t.Errorf("request %+v", r)
	}
	k3s := `Sep 23 20:01:07 pi04 k3s[2957]: I0923 20:01:07.329494    2957 httplog.go:90] verb="GET" URI="/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/cloud-controller-manager" latency=19.205301ms resp=200 UserAgent="k3s/v1.18.8+k3s1 (linux/arm) kubernetes/6b59531/leader-election" srcIP="127.0.0.1:50946":`
	_, _, err = ReadRecorded(k3s, "", "", nil, nil, time.Time{}, time.Time{}, 0)
	if err == nil || strings.Contains(err.Error(), "no such file") || !strings.Contains(err.Error(), "the line given: it is an httplog line of the form before 1.22") {
		t.Errorf("1.18 line: %v", err)
	}
	_, _, err = ReadRecorded("no-such-file.log", "", "", nil, nil, time.Time{}, time.Time{}, 0)
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing file: %v", err)
	}
}

// TestReadRecordedSaysACauseOnce: an --from-audit file none of whose lines
// is an event that can be read is refused with what it skipped, once: the
// reader's own refusal names the line and its cause, and the note of the
// same skipped line was added after it (the cause three times on one
// line, issue 58, also seen).
func TestReadRecordedSaysACauseOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.log")
	line := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","auditID":"x","requestReceivedTimestamp":"not a time"}`
	if err := os.WriteFile(p, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := ReadRecorded("", p, "", nil, nil, time.Time{}, time.Time{}, 0)
	if err == nil {
		t.Fatal("read")
	}
	cause := `parsing time "not a time"`
	if n := strings.Count(err.Error(), cause); n != 1 {
		t.Errorf("the cause %d times, want once: %v", n, err)
	}
	if !strings.Contains(err.Error(), "no audit event in it could be read") {
		t.Errorf("%v", err)
	}
}

// TestReadRecordedPrettyPrintedEvent: an audit event pretty-printed, as
// the docs and jq show it, is read (it was "holds jsonl, not audit
// events: give httplog lines with --from-log", S1 of issue 58).
func TestReadRecordedPrettyPrintedEvent(t *testing.T) {
	p := filepath.Join(t.TempDir(), "event.json")
	ev := `{
  "kind": "Event",
  "apiVersion": "audit.k8s.io/v1",
  "level": "Metadata",
  "auditID": "6a9b1f0e-2b8c-4a4e-9d2f-1c5e8a7b3d90",
  "stage": "ResponseComplete",
  "requestURI": "/api/v1/namespaces/default/pods?limit=500",
  "verb": "list",
  "user": {
    "username": "alice",
    "groups": ["dev", "system:authenticated"]
  },
  "responseStatus": {"metadata": {}, "code": 200},
  "requestReceivedTimestamp": "2026-01-02T03:04:05.100000Z",
  "stageTimestamp": "2026-01-02T03:04:05.112500Z"
}
`
	if err := os.WriteFile(p, []byte(ev), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _, err := ReadRecorded("", p, "", nil, nil, time.Time{}, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// 05.1125 - 05.1 = 12.5ms
	if r.User != "alice" || r.Verb != "list" || r.Status != 200 || r.Latency.String() != "12.5ms" || r.AuditID != "6a9b1f0e-2b8c-4a4e-9d2f-1c5e8a7b3d90" {
		t.Errorf("read as %+v", r)
	}
}
