package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/auditwrap"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// TestExplain429WrappedWorkload runs explain 429 --workload on the starved
// recording's audit log as the raw file and as users receive it from
// their cloud or log pipeline (a CloudWatch answer; a directory holding
// CloudWatch's gzipped S3 export; an AKS storage blob; a docker log): each
// gives the raw file's 429s, level by level, and the raw file has them.
func TestExplain429WrappedWorkload(t *testing.T) {
	dir := simulateFixture(filepath.Join("recordings", "starved"))
	tmp := t.TempDir()
	raw := fixture.Gunzip(t, filepath.Join(dir, recording.AuditLogFile), tmp)
	bundle := filepath.Join(dir, recording.BundleFile)
	b, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	var events [][]byte
	recorded := 0
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			events = append(events, l)
			if bytes.Contains(l, []byte(`"stage":"ResponseComplete"`)) && bytes.Contains(l, []byte(`"code":429`)) {
				recorded++
			}
		}
	}
	rejected := func(path string) map[string]float64 {
		t.Helper()
		code, out, errOut := runPlugin("explain", "429", "--from", bundle, "--workload", path, "-o", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", path, code, errOut)
		}
		var rep rejections.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return rep.Rejected
	}
	want := rejected(raw)
	var total float64
	for _, n := range want {
		total += n
	}
	if total < 50 || recorded < 50 {
		t.Fatalf("the raw audit log gives %v 429s (%d recorded): the recording should have many", want, recorded)
	}
	for _, name := range []string{"cloudwatch-filter-log-events", "cloudwatch-s3-export", "aks-storage-blob", "docker-json-file"} {
		for _, f := range auditwrap.Formats() {
			if f.Name != name {
				continue
			}
			path := filepath.Join(tmp, name, f.File)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, f.Wrap(events), 0o644); err != nil {
				t.Fatal(err)
			}
			arg := path
			if name == "cloudwatch-s3-export" {
				arg = filepath.Join(tmp, name) // the export's directory
			}
			got := rejected(arg)
			if len(got) != len(want) {
				t.Errorf("%s: 429s %v, the raw file's %v", name, got, want)
			}
			for level, n := range want {
				if got[level] != n {
					t.Errorf("%s: %v 429s on %s, the raw file %v", name, got[level], level, n)
				}
			}
		}
	}
}

// TestExplain429BadWrappedInput: an input that holds no request, or is
// broken, gets one line naming what it holds and a non-zero exit, never an
// empty answer.
func TestExplain429BadWrappedInput(t *testing.T) {
	tmp := t.TempDir()
	bundle := filepath.Join(simulateFixture(filepath.Join("recordings", "starved")), recording.BundleFile)
	write := func(name string, b []byte) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	appLogs := write("app.jsonl", []byte(`{"level":"info","ts":1764236400.123,"caller":"server/main.go:42","msg":"listening","addr":":8080"}
{"level":"error","ts":1764236401.5,"caller":"server/handler.go:77","msg":"request failed","status":500}
`))
	otherGroup := write("lambda.json", []byte(`{
    "events": [
        {
            "logStreamName": "2026/11/27/[$LATEST]6c3e2f1a9b8d4e7f",
            "timestamp": 1764236400123,
            "message": "START RequestId: 6f1c2d3e-4a5b-6c7d-8e9f-0a1b2c3d4e5f Version: $LATEST\n",
            "ingestionTime": 1764236400200,
            "eventId": "38000000000000000000000000000000000000000000000000000000"
        },
        {
            "logStreamName": "2026/11/27/[$LATEST]6c3e2f1a9b8d4e7f",
            "timestamp": 1764236400130,
            "message": "{\"level\":\"info\",\"msg\":\"handled\"}",
            "ingestionTime": 1764236400200,
            "eventId": "38000000000000000000000000000000000000000000000000000001"
        }
    ],
    "searchedLogStreams": []
}
`))
	var events [][]byte
	for _, l := range bytes.Split(mustRead(t, filepath.Join("..", "..", "pkg", "input", "testdata", "wrapped", "raw-audit.log")), []byte("\n")) {
		if len(l) > 0 {
			events = append(events, l)
		}
	}
	var s3 []byte
	for _, f := range auditwrap.Formats() {
		if f.Name == "cloudwatch-s3-export" {
			s3 = f.Wrap(events)
		}
	}
	truncated := write("000000.gz", s3[:len(s3)*2/3])
	cut := write("cut.log", events[0][:len(events[0])/2])
	cwCut := write("cut-cloudwatch.json", auditwrap.Formats()[0].Wrap(events)[:900])
	for _, tt := range []struct{ name, path, want string }{
		{"JSON lines of application logs", appLogs, "JSON lines that are not audit events, httplog lines or workload records (first line's keys: level, ts, caller, msg, addr)"},
		{"a CloudWatch export of another log group", otherGroup, "a CloudWatch Logs export whose records hold no audit event that can be replayed: 2 CloudWatch events whose message is not an audit event"},
		{"a truncated gzip", truncated, "the gzip file is cut short (truncated)"},
		{"an event cut mid-line", cut, "no audit event in it could be read: 1 line that could not be decoded as an audit event"},
		{"a CloudWatch answer cut short", cwCut, "the JSON document ends inside"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runPlugin("explain", "429", "--from", bundle, "--workload", tt.path)
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if code == 0 || len(lines) != 1 || !strings.Contains(errOut, tt.want) || strings.Contains(errOut, "panic") {
				t.Errorf("exit %d, stderr %q (stdout %q), want one line containing %q and a non-zero exit", code, errOut, out, tt.want)
			}
		})
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExplainRequestFromWrappedAudit: explain request --from-audit finds
// the request in audit events as CloudWatch and a gzipped S3 export hand
// them over, and refuses an httplog given as an audit log.
func TestExplainRequestFromWrappedAudit(t *testing.T) {
	samples := filepath.Join("..", "..", "pkg", "input", "testdata", "wrapped")
	bundle := filepath.Join(simulateFixture(filepath.Join("recordings", "quiet")), recording.BundleFile)
	var ev struct {
		AuditID string `json:"auditID"`
		User    struct {
			Username string `json:"username"`
		} `json:"user"`
	}
	first, _, _ := bytes.Cut(mustRead(t, filepath.Join(samples, "raw-audit.log")), []byte("\n"))
	if err := json.Unmarshal(first, &ev); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		filepath.Join(samples, "cloudwatch-filter-log-events", "filter-log-events.json"),
		filepath.Join(samples, "cloudwatch-s3-export", "exportedlogs", "4c1e2a3b-9f7d-4e1a-8b6c-1d2e3f4a5b6c", "kube-apiserver-audit-0a1b2c3d4e5f60718293a4b5c6d7e8f9", "000000.gz"),
	} {
		code, out, errOut := runPlugin("explain", "request", "--from", bundle, "--from-audit", p, "--audit-id", ev.AuditID)
		if code != 0 || !strings.Contains(out, "user "+ev.User.Username) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want the request of user %s", p, code, out, errOut, ev.User.Username)
		}
	}
	httplog := filepath.Join("..", "..", "testdata", "workload", "httplog-v1.37.log")
	code, _, errOut := runPlugin("explain", "request", "--from", bundle, "--from-audit", httplog, "--audit-id", ev.AuditID)
	if code == 0 || !strings.Contains(errOut, "not audit events: give httplog lines with --from-log") {
		t.Errorf("an httplog as --from-audit: exit %d, stderr %q", code, errOut)
	}
}

// TestSimulateWrappedWorkload: simulate --workload on the quiet
// recording's audit log as CloudWatch and Fluent Bit hand it over predicts
// what the raw file predicts, to the byte of its JSON.
func TestSimulateWrappedWorkload(t *testing.T) {
	dir := simulateFixture(filepath.Join("recordings", "quiet"))
	tmp := t.TempDir()
	raw := fixture.Gunzip(t, filepath.Join(dir, recording.AuditLogFile), tmp)
	var events [][]byte
	for _, l := range bytes.Split(mustRead(t, raw), []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			events = append(events, l)
		}
	}
	simulate := func(path string) string {
		t.Helper()
		code, out, errOut := runPlugin("simulate", "--from", filepath.Join(dir, recording.BundleFile), "--workload", path, "-f", filepath.Join(dir, "whatif.yaml"), "-o", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", path, code, errOut)
		}
		return out
	}
	want := simulate(raw)
	for _, f := range auditwrap.Formats() {
		if f.Name != "cloudwatch-filter-log-events" && f.Name != "fluent-bit-fields" {
			continue
		}
		path := filepath.Join(tmp, f.File)
		if err := os.WriteFile(path, f.Wrap(events), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := simulate(path); got != want {
			t.Errorf("%s: simulate's answer differs from the raw file's:\n%s\nwant\n%s", f.Name, got, want)
		}
	}
}

// TestWorkloadShorthand: -w is --workload on explain 429 and explain
// request, as on simulate and tune (explain 429 -w answered "unknown
// shorthand flag").
func TestWorkloadShorthand(t *testing.T) {
	dir := simulateFixture(filepath.Join("recordings", "quiet"))
	bundle := filepath.Join(dir, recording.BundleFile)
	audit := filepath.Join(dir, recording.AuditLogFile)
	for _, args := range [][]string{
		{"explain", "429", "--from", bundle, "-o", "json"},
		{"explain", "request", "--from", bundle, "--from-audit", audit, "-o", "json"},
	} {
		long, short := append(slices.Clone(args), "--workload", audit), append(slices.Clone(args), "-w", audit)
		c1, o1, e1 := runPlugin(long...)
		c2, o2, e2 := runPlugin(short...)
		if c1 != 0 || c2 != 0 || o1 != o2 {
			t.Errorf("%v: --workload exit %d (%s), -w exit %d (%s), outputs equal %v", args[:2], c1, e1, c2, e2, o1 == o2)
		}
	}
}
