package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// explain429Window runs explain 429 -o json with args (explain429JSON),
// and returns its report and the submatches of its note of the window
// read (nil without).
func explain429Window(t *testing.T, args ...string) (*rejections.Report, []string) {
	t.Helper()
	rep := explain429JSON(t, args...)
	for _, n := range rep.Notes {
		if m := windowNote.FindStringSubmatch(n); m != nil {
			return rep, m
		}
	}
	return rep, nil
}

// windowNote is the note of the window a command read.
var windowNote = regexp.MustCompile(`note: read the window (\S+) \(--since/--until\): (\d+) of the log's (\d+) requests`)

// TestLogWindowOnExplain cuts the starved recording's audit log (1,757
// requests over 45 s) with --since/--until on explain 429 --workload and
// explain request --from-audit: the window counts back from the log's
// last request, a relative and an absolute window of the same bounds read
// the same requests, --since takes a time as well as a length, the
// reconstruction sees only the window (fewer 429s, the report's window
// is the one read, a note says how many requests it held), explain request
// picks the last request inside the window and refuses one outside it.
// About a second of CPU (eight reconstructions of a small log).
func TestLogWindowOnExplain(t *testing.T) {
	dir := simulateFixture(filepath.Join("recordings", "starved"))
	audit := fixture.Gunzip(t, filepath.Join(dir, recording.AuditLogFile), t.TempDir())
	bundle := filepath.Join(dir, recording.BundleFile)
	report := func(args ...string) (*rejections.Report, []string) {
		t.Helper()
		return explain429Window(t, append([]string{"--from", bundle, "--workload", audit}, args...)...)
	}
	total := func(rep *rejections.Report) (n float64) {
		for _, v := range rep.Rejected {
			n += v
		}
		return n
	}
	full, note := report()
	if note != nil {
		t.Errorf("the whole log says it read a window: %v", note)
	}
	end := *full.Window.End
	rel, relNote := report("--since", "5s")
	if relNote == nil {
		t.Fatalf("no note of the window read: %q", rel.Notes)
	}
	if !rel.Window.End.Equal(end) || !rel.Window.Start.Equal(end.Add(-5*time.Second)) {
		t.Errorf("--since 5s read %v–%v, want the 5 s before the log's last request %v", rel.Window.Start, rel.Window.End, end)
	}
	kept, _ := strconv.Atoi(relNote[2])
	if of, _ := strconv.Atoi(relNote[3]); kept == 0 || kept >= of || of != 1757 {
		t.Errorf("the window held %d of %d requests; want some of the log's 1757", kept, of)
	}
	if total(rel) == 0 || total(rel) >= total(full) {
		t.Errorf("the window's reconstruction has %v 429s, the whole log's %v: want fewer, not none", total(rel), total(full))
	}
	// the same bounds, absolute; and --since as a time relative to the end
	for _, args := range [][]string{
		{"--since", end.Add(-5 * time.Second).Format(time.RFC3339Nano), "--until", end.Format(time.RFC3339Nano)},
		{"--since", "-5s"},
		{"--since", "5s ago", "--until", "now"},
	} {
		rep, n := report(args...)
		if n == nil || n[2] != relNote[2] || total(rep) != total(rel) {
			t.Errorf("%v: window %v, %v 429s; want --since 5s's %v, %v", args, n, total(rep), relNote, total(rel))
		}
	}

	// explain request: the last request inside the window
	code, out, errOut := runPlugin("explain", "request", "--from", bundle, "--from-audit", audit, "--since", "20s", "--until", "-10s", "-o", "json")
	if code != 0 {
		t.Fatalf("explain request --since 20s --until -10s: exit %d: %s", code, errOut)
	}
	var ex struct {
		Past *struct {
			At time.Time `json:"at"`
		} `json:"past"`
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(out), &ex); err != nil {
		t.Fatal(err)
	}
	if ex.Past == nil || ex.Past.At.After(end.Add(-10*time.Second)) || ex.Past.At.Before(end.Add(-30*time.Second)) {
		t.Errorf("explain request's moment %+v: want the last request of %v–%v", ex.Past, end.Add(-30*time.Second), end.Add(-10*time.Second))
	}
	if !windowNote.MatchString(strings.Join(ex.Notes, "\n")) {
		t.Errorf("explain request does not say which window it read: %q", ex.Notes)
	}
	// a request of the log's first second is outside the window
	first := firstAuditID(t, audit)
	code, _, errOut = runPlugin("explain", "request", "--from", bundle, "--from-audit", audit, "--audit-id", first, "--since", "10s")
	if code == 0 || !strings.Contains(errOut, "in the window") || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
		t.Errorf("--audit-id outside the window: exit %d, stderr %q; want one line saying it is not in the window", code, errOut)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"explain", "429", "--from", bundle, "--workload", audit, "--since", "soon"}, "--since"},
		{[]string{"explain", "429", "--from", bundle, "--workload", audit, "--since", "10m", "--until", "-1h"}, "holds none of the log's"},
		// an absolute bound alone is compared with the log once read, not
		// with an open end (it once said "after its end 0001-01-01...")
		{[]string{"explain", "429", "--from", bundle, "--workload", audit, "--since", "2099-01-01T00:00:00Z"}, "the window from 2099-01-01T00:00:00Z to the log's end holds none of the log's"},
		{[]string{"simulate", "--from", bundle, "--workload", audit, "--until", "2001-01-01T00:00:00Z"}, "after its end 2001-01-01T00:00:00Z"},
		{[]string{"explain", "429", "--from", bundle, "--workload", audit, "--since", "2026-11-23T21:18:00Z", "--until", "2026-11-23T21:17:00Z"}, "the window starts at 2026-11-23T21:18:00Z, after its end 2026-11-23T21:17:00Z"},
		{[]string{"explain", "request", "--from", bundle, "--from-audit", audit, "--audit-id", first, "--since", "2099-01-01T00:00:00Z"}, "(audit IDs present: no request at all) in the window"},
		{[]string{"explain", "429", "--prometheus", "http://127.0.0.1:1", "--since", "-2h"}, "with a store, --since is the window's length"},
		{[]string{"explain", "request", "--from", bundle, "--from-log", "-", "--since", "10s"}, "give one of them as a file"},
	} {
		code, _, errOut := runPlugin(c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error with %q", c.args, code, errOut, c.want)
		}
	}
}

// firstAuditID is the audit ID of the first event of an audit log.
func firstAuditID(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			AuditID string `json:"auditID"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.AuditID != "" {
			return ev.AuditID
		}
	}
	t.Fatal("no audit event")
	return ""
}

// TestLogWindowOnAnHTTPLogAlone: klog's text headers carry no year, and an
// httplog read alone (no audit log, no metrics: --defaults) took the year
// 2000, so that an absolute --since/--until held none of it. Its times now
// take the window's year.
func TestLogWindowOnAnHTTPLogAlone(t *testing.T) {
	dir := simulateFixture(filepath.Join("recordings", "starved-seed2"))
	httplog := fixture.Gunzip(t, filepath.Join(dir, recording.HTTPLogFile), t.TempDir())
	rep, m := explain429Window(t, "--defaults", "--workload", httplog, "--since", "2026-12-06T11:44:30Z", "--until", "2026-12-06T11:44:50Z")
	if m == nil {
		t.Fatalf("no note of the window read: %q", rep.Notes)
	}
	kept, _ := strconv.Atoi(m[2])
	if of, _ := strconv.Atoi(m[3]); kept == 0 || kept >= of {
		t.Errorf("the window held %d of the log's %d requests; want some", kept, of)
	}
	// explain request finds its request in the window, and its moment
	code, out, errOut := runPlugin("explain", "request", "--defaults", "--from-log", httplog, "--user-name", "u", "--since", "2026-12-06T11:44:30Z", "--until", "2026-12-06T11:44:50Z")
	if code != 0 || !strings.Contains(out, "fate AGREES") {
		t.Errorf("explain request --from-log in the window: exit %d, %s%s", code, out, errOut)
	}
}
