package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
)

var auditIDOf = regexp.MustCompile(`audit-ID="([^"]+)"`)

// recordedLines returns the audit IDs of the recording's httplog lines of
// one level answered with status (in log order).
func recordedLines(t *testing.T, httplog, level, status string) []string {
	t.Helper()
	f, err := os.Open(httplog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	want := regexp.MustCompile(`apf_pl="` + regexp.QuoteMeta(level) + `".* resp=` + status + `$`)
	for sc.Scan() {
		if want.Match(sc.Bytes()) {
			if m := auditIDOf.FindSubmatch(sc.Bytes()); m != nil {
				ids = append(ids, string(m[1]))
			}
		}
	}
	return ids
}

// TestExplainRequestFromTheLog explains requests of the starved recording
// from its httplog joined to its audit log: a 429 gets a rejection verdict
// at its own moment with its reason and the state of its hand's queues,
// the fate is compared with the server's answer, and a served request gets
// a served verdict.
func TestExplainRequestFromTheLog(t *testing.T) {
	dir := simulateFixture(filepath.Join("recordings", "starved"))
	tmp := t.TempDir()
	httplog := gunzipTo(t, filepath.Join(dir, recording.HTTPLogFile), filepath.Join(tmp, "apiserver.log"))
	audit := gunzipTo(t, filepath.Join(dir, recording.AuditLogFile), filepath.Join(tmp, "audit.log"))
	bundle := filepath.Join(dir, recording.BundleFile)
	rejected, served := recordedLines(t, httplog, "apf-load", "429"), recordedLines(t, httplog, "apf-load", "200")
	if len(rejected) < 100 || len(served) < 100 {
		t.Fatalf("the recording has %d 429s and %d served requests on apf-load", len(rejected), len(served))
	}
	agree := 0
	for i, id := range []string{rejected[10], rejected[50], rejected[99], served[10], served[99]} {
		code, out, errOut := runPlugin("explain", "request", "--from", bundle, "--from-log", httplog, "--from-audit", audit, "--audit-id", id, "-o", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", id, code, errOut)
		}
		var ex explain.Explanation
		if err := json.Unmarshal([]byte(out), &ex); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if ex.Past == nil || ex.Recorded == nil || ex.Recorded.FateAgrees == nil {
			t.Fatalf("%s: no reconstructed moment or fate comparison: %s", id, out)
		}
		if *ex.Recorded.FateAgrees {
			agree++
		}
		if len(ex.Past.Queues) != 2 || ex.Past.QueueLengthLimit != 2 || ex.Past.Level != "apf-load" {
			t.Errorf("%s: the moment has %d queues of length limit %d on %q, want apf-load's hand of 2 queues of 2", id, len(ex.Past.Queues), ex.Past.QueueLengthLimit, ex.Past.Level)
		}
		if i < 3 {
			if ex.Verdict.Kind != explain.VerdictRejected || ex.Verdict.RejectReason == "" || ex.Verdict.Reason == "" {
				t.Errorf("%s (429): verdict %+v, want a rejection with its reason", id, ex.Verdict)
			}
			continue
		}
		if ex.Verdict.Kind == explain.VerdictRejected {
			t.Errorf("%s (served): verdict %+v", id, ex.Verdict)
		}
	}
	// the recording's fates agree on 96% of requests: four of five at least
	if agree < 4 {
		t.Errorf("the reconstructed fate agrees with the server on %d of 5 requests", agree)
	}
}
