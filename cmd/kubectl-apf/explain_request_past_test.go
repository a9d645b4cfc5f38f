package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/golden"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// starvedRecording gunzips the starved recording's httplog and audit log
// into a temporary directory, and names its bundle.
func starvedRecording(t *testing.T) (httplog, audit, bundle string) {
	t.Helper()
	dir := simulateFixture(filepath.Join("recordings", "starved"))
	tmp := t.TempDir()
	return fixture.Gunzip(t, filepath.Join(dir, recording.HTTPLogFile), tmp), fixture.Gunzip(t, filepath.Join(dir, recording.AuditLogFile), tmp),
		filepath.Join(dir, recording.BundleFile)
}

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
	httplog, audit, bundle := starvedRecording(t)
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

// TestExplain429FromTheLog explains the 429s of the starved recording from
// its logs: one incident per rejecting level, in the schema of every explain
// 429 source, whose rejected clients and counts are those counted straight
// from the audit log's 429s.
func TestExplain429FromTheLog(t *testing.T) {
	httplog, audit, bundle := starvedRecording(t)
	want := rejectedByUser(t, audit)
	for _, files := range [][]string{{httplog, audit}, {audit}} {
		args := []string{"explain", "429", "--from", bundle, "-o", "json"}
		for _, f := range files {
			args = append(args, "--workload", f)
		}
		code, out, errOut := runPlugin(args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var rep rejections.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Schema != rejections.Schema || rep.Source.Kind != rejections.SourceLog || rep.Counts != rejections.CountsInWindow {
			t.Errorf("%v: schema %q, source %+v, counts %q", files, rep.Schema, rep.Source, rep.Counts)
		}
		got := map[string]float64{}
		for _, in := range rep.Incidents {
			if in.Clients == nil || len(in.Clients.HeldSeats) == 0 || len(in.Causes) == 0 {
				t.Errorf("%v: incident of %s without clients or causes: %+v", files, in.Level, in)
				continue
			}
			for _, c := range in.Clients.Rejected {
				got[in.Level+"/"+c.User] += c.Count
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("%v: rejected by level and user %v, the audit log's 429s %v", files, got, want)
		}
	}
}

// rejectedByUser counts the audit log's 429s by the level of the
// recording's FlowSchemas (load-8 is routed to apf-load-reject) and user.
func rejectedByUser(t *testing.T, audit string) map[string]float64 {
	t.Helper()
	f, err := os.Open(audit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Stage          string                    `json:"stage"`
			User           struct{ Username string } `json:"user"`
			ResponseStatus struct{ Code int }        `json:"responseStatus"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Stage != "ResponseComplete" || ev.ResponseStatus.Code != 429 {
			continue
		}
		level := "apf-load"
		if ev.User.Username == "load-8" {
			level = "apf-load-reject"
		}
		out[level+"/"+ev.User.Username]++
	}
	return out
}

func TestExplain429WorkloadFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", "a.log", "--prometheus", "http://127.0.0.1:1", "--at", "-1h"}, "give --since (and --until), not --at"},
		{[]string{"--workload", "a.log", "--incident-gap", "0s"}, "--incident-gap must be positive"},
		{[]string{"--workload", "a.log", "--at", "now"}, "--at is one moment"},
		{[]string{"--from", filepath.Join(simulateFixture(filepath.Join("recordings", "starved")), recording.BundleFile), "--workload", filepath.Join(t.TempDir(), "missing.log")}, "opening workload"},
		// explain request's flags carried over: the message (a 429's text) is
		// explain request's to read, and the identity names one request
		{[]string{"--from-message", "Too many requests, please try again later."}, "'kubectl apf explain request --from-message TEXT' tells whether a 429's text is APF's"},
		{[]string{"--from-message=Too many requests"}, "'kubectl apf explain request --from-message TEXT'"},
		{[]string{"--user-name", "alice"}, "--user-name names one request, a flag of 'kubectl apf explain request'"},
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
	} {
		code, _, errOut := runPlugin(append([]string{"explain", "429"}, tt.args...)...)
		if code == 0 || !strings.Contains(errOut, tt.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q: want one line with %q", tt.args, code, errOut, tt.want)
		}
	}
}

// TestExplain429WorkloadGolden prints the incidents of the quiet recording
// (a queuing level and a Reject level) from its httplog and audit log.
func TestExplain429WorkloadGolden(t *testing.T) {
	dir := simulateFixture(filepath.Join("recordings", "quiet"))
	tmp := t.TempDir()
	httplog := fixture.Gunzip(t, filepath.Join(dir, recording.HTTPLogFile), tmp)
	audit := fixture.Gunzip(t, filepath.Join(dir, recording.AuditLogFile), tmp)
	code, out, errOut := runPlugin("explain", "429", "--from", filepath.Join(dir, recording.BundleFile), "--workload", httplog, "--workload", audit)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	checkGolden(t, "explain/cmd-429-workload.golden", []byte(out))
}

// TestExplainRequestPastOfAUserlessLine explains the kuberay operator's
// first pod creation in testdata/field/kueue-4508-httplog-kuberay-pods.log,
// httplog lines that name no user, on a per-user level (service-accounts,
// ByUser), with the identity given by a flag. The reconstructed moment must
// be that identity's: its queues are explain's hand and the queue it went to
// one of them. Its time is the line's less its latency
// (22:40:41.976983 − 11.586316 ms), with the year of the lines' dated prefix,
// or, from klog's header alone, without a year and saying so. Its 561 µs
// between arrival and execution (latency − apf_execution_time), on a level
// with every seat free and nobody waiting, are no queue: four lines give no
// measured τ, and upstream dispatches such a request at once.
func TestExplainRequestPastOfAUserlessLine(t *testing.T) {
	src := fieldPath("kueue-4508-httplog-kuberay-pods.log")
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	klogOnly := filepath.Join(t.TempDir(), "klog.log")
	if err := os.WriteFile(klogOnly, regexp.MustCompile(`(?m)^\S+ stderr F `).ReplaceAll(raw, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, file, wantAt string
		wantYearUnknown    bool
	}{
		{"a container runtime's dated prefix", src, "2025-03-05T22:40:41.965396684Z", false},
		{"klog's header alone", klogOnly, "--03-05T22:40:41.965396684Z", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runPlugin("explain", "request", "--defaults", "--from-log", tt.file, "--audit-id", "33e27fd2-d22d-4c4d-9b46-d4efeca06f05",
				"--service-account", "ray-system/kuberay-operator", "-o", "json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var ex explain.Explanation
			if err := json.Unmarshal([]byte(out), &ex); err != nil {
				t.Fatal(err)
			}
			var asWritten struct {
				Past struct {
					At          string `json:"at"`
					YearUnknown bool   `json:"yearUnknown"`
				} `json:"past"`
			}
			if err := json.Unmarshal([]byte(out), &asWritten); err != nil {
				t.Fatal(err)
			}
			if ex.Past == nil || ex.Queues == nil {
				t.Fatalf("no reconstructed moment or hand: %s", out)
			}
			if asWritten.Past.At != tt.wantAt || asWritten.Past.YearUnknown != tt.wantYearUnknown {
				t.Errorf("past.at %q, yearUnknown %v; want %q, %v", asWritten.Past.At, asWritten.Past.YearUnknown, tt.wantAt, tt.wantYearUnknown)
			}
			if ex.FlowDistinguisher != "system:serviceaccount:ray-system:kuberay-operator" {
				t.Errorf("flow distinguisher %q, want the service account's user name", ex.FlowDistinguisher)
			}
			var hand, past []int
			for _, q := range ex.Queues.Hand {
				hand = append(hand, q.Index)
			}
			for _, q := range ex.Past.Queues {
				past = append(past, q.Index)
			}
			if !slices.Equal(hand, past) {
				t.Errorf("the queues at the time are %v, explain's hand %v", past, hand)
			}
			if ex.Past.Queue == nil || !slices.Contains(hand, *ex.Past.Queue) {
				t.Errorf("the request went to queue %s, not one of its hand %v", queueOf(ex.Past.Queue), hand)
			}
			if ex.Past.Fate != explain.VerdictRuns || ex.Verdict.Kind != explain.VerdictRuns || ex.Past.Wait != nil {
				t.Errorf("fate %q, verdict %q, wait %v: want dispatched at once (%d of %d seats in use, %d waiting)", ex.Past.Fate, ex.Verdict.Kind, ex.Past.Wait, ex.Past.SeatsInUse, ex.Past.Limit, ex.Past.Waiting)
			}
		})
	}
}

func queueOf(q *int) string {
	if q == nil {
		return "-"
	}
	return strconv.Itoa(*q)
}

// TestExplainPastWiderThanItsLevel: a LIST of 10 seats that make demo's
// Reject level of 1 seat served is said to have run alone, as upstream
// starts it (testdata/simulate/demo-watch); it read "dispatched at once:
// apf-load-reject had 0 of its 1 seat in use" beside "this request takes
// 10 seats".
func TestExplainPastWiderThanItsLevel(t *testing.T) {
	out := explainDemoWatch(t, "c4ec7752-ba41-4e10-b35d-b9a2fc539d46")
	for _, want := range []string{"this request takes 10 seats", "Verdict: runs", "dispatched at once: apf-load-reject had 0 of its 1 seat in use, and it ran alone: its 10 seats are more than the level's 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
}

// TestExplainPastQueueFullOfOneSeat: a LIST make demo's apf-load (1
// seat, queues 3 long) rejected as queue-full says its one seat was taken,
// where it read "every one of apf-load's 1 seat was taken".
func TestExplainPastQueueFullOfOneSeat(t *testing.T) {
	out := explainDemoWatch(t, "bb4b3ff2-22da-47d7-a93b-1ef2bd51f57d")
	golden.Holds(t, "explain request", out, []string{"Verdict: rejected (queue-full)", "at 00:59:55.073 apf-load's 1 seat was taken and the queues of its hand were at their length limit (3): queue 6 held 3"},
		[]string{"every one of"})
}

// explainDemoWatch is explain request's answer on the request of auditID in
// make demo's recording (testdata/simulate/demo-watch): its bundle and
// audit log.
func explainDemoWatch(t *testing.T, auditID string) string {
	t.Helper()
	dir := simulateFixture("demo-watch")
	code, out, errOut := runPlugin("explain", "request", "--from", filepath.Join(dir, "bundle.tar.gz"), "--from-audit", filepath.Join(dir, "audit.log.gz"), "--audit-id", auditID)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	return out
}

// TestExplainRequestOfOneEventPasted: one audit event pasted from a log
// search, pretty-printed, holds nothing of what its request met: its moment
// is not reconstructed and no fate disagrees (it read "the server answered
// 429 but the reconstruction found room for it", on make demo's
// apf-load-reject); a log that starts two seconds before the request is
// reconstructed, and says that it starts late. Given beside the log it
// came from, the event's moment is the log's.
func TestExplainRequestOfOneEventPasted(t *testing.T) {
	tmp := t.TempDir()
	httplog, audit, bundle := starvedRecording(t)
	id := recordedLines(t, httplog, "apf-load", "429")[50]
	var events [][]byte
	var at []time.Time
	var target int
	for _, l := range strings.Split(strings.TrimSpace(string(mustRead(t, audit))), "\n") {
		var ev struct {
			AuditID         string    `json:"auditID"`
			RequestReceived time.Time `json:"requestReceivedTimestamp"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.AuditID == id {
			target = len(events)
		}
		events, at = append(events, []byte(l)), append(at, ev.RequestReceived)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, events[target], "", "  "); err != nil {
		t.Fatal(err)
	}
	// named to be read before the log when both are given (instances
	// are taken in name order)
	one := filepath.Join(tmp, "0-event.json")
	if err := os.WriteFile(one, pretty.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ex := explainRequestJSON(t, "--from", bundle, "--from-audit", one)
	if ex.Past != nil || ex.Recorded == nil || ex.Recorded.FateAgrees != nil || ex.Recorded.Status != 429 ||
		!slices.ContainsFunc(ex.Notes, func(n string) bool {
			return strings.HasPrefix(n, "the log holds no request that arrived before this one")
		}) {
		t.Errorf("one event: past %v, recorded %+v, notes %q; want no moment, no fate compared, and a note that says why", ex.Past, ex.Recorded, ex.Notes)
	}
	// the same event beside the log it came from (each file read as an
	// instance): its moment is the log's, where the event's own file, first,
	// gave none
	ex = explainRequestJSON(t, "--from", bundle, "--from-audit", one, "--workload", audit)
	if ex.Past == nil || ex.Recorded == nil || ex.Recorded.FateAgrees == nil || !*ex.Recorded.FateAgrees {
		t.Errorf("the event beside its log: past %v, recorded %+v, notes %q; want the log's moment, agreeing", ex.Past, ex.Recorded, ex.Notes)
	}
	// the events of the two seconds before it, and it
	first := target
	for first > 0 && at[target].Sub(at[first-1]) <= 2*time.Second {
		first--
	}
	short := filepath.Join(tmp, "short.log")
	if err := os.WriteFile(short, append(bytes.Join(events[first:target+1], []byte("\n")), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	ex = explainRequestJSON(t, "--from", bundle, "--from-audit", short, "--audit-id", id)
	if ex.Past == nil || target-first < 2 || !slices.ContainsFunc(ex.Notes, func(n string) bool {
		return strings.HasPrefix(n, "the log starts ") && strings.HasSuffix(n, " before this request: requests that arrived earlier and still waited or ran then are not in it, so its level may have been fuller than reconstructed")
	}) {
		t.Errorf("a log from %d events before it: past %v, notes %q; want its moment and a note that the log starts late", target-first, ex.Past, ex.Notes)
	}
}

// explainRequestJSON runs explain request -o json with args and reads its
// explanation.
func explainRequestJSON(t *testing.T, args ...string) explain.Explanation {
	t.Helper()
	code, out, errOut := runPlugin(append(append([]string{"explain", "request"}, args...), "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var ex explain.Explanation
	if err := json.Unmarshal([]byte(out), &ex); err != nil {
		t.Fatal(err)
	}
	return ex
}
