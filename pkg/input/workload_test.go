package input

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

const testdata = "../../testdata/workload"

func readAll(t testing.TB, r workload.Reader) ([]workload.Request, error) {
	t.Helper()
	var out []workload.Request
	for {
		var q workload.Request
		err := r.Next(&q)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, q)
	}
}

func openTestdata(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join(testdata, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

// summary is the part of a Request the table tests look at.
type summary struct {
	Arrival     time.Time
	AuditID     string
	Method, URI string
	User        string
	UserKnown   bool
	Service     time.Duration
	HasService  bool
	Seats       [2]uint64
	AddLatency  time.Duration
	FS, PL      string
	Status      int
}

func summarize(rs []workload.Request) []summary {
	var out []summary
	for _, r := range rs {
		out = append(out, summary{r.Arrival, r.AuditID[max(0, len(r.AuditID)-2):], r.Method, r.URI, r.User, r.UserKnown,
			r.ServiceTime, r.HasServiceTime, [2]uint64{r.InitialSeats, r.FinalSeats}, r.AdditionalLatency, r.FlowSchema, r.PriorityLevel, r.Status})
	}
	return out
}

func TestHTTPLogReader(t *testing.T) {
	st := &workload.Stats{}
	got, err := readAll(t, NewHTTPLogReader(openTestdata(t, "httplog-v1.37.log"), "httplog", Options{}, st))
	if err != nil {
		t.Fatal(err)
	}
	// arrival = line time - latency, in arrival order: the 10 s watch first
	want := []summary{
		{at("2000-11-21T14:15:08.2Z"), "05", "GET", "/api/v1/pods?watch=true&timeoutSeconds=30", "", false, 1300 * time.Microsecond, true, [2]uint64{1, 0}, 0, "kube-scheduler", "workload-high", 200},
		{at("2000-11-21T14:15:17.977828Z"), "01", "GET", "/api/v1/namespaces/default/pods?limit=500", "", false, 1900 * time.Microsecond, true, [2]uint64{1, 0}, 0, "global-default", "global-default", 200},
		{at("2000-11-21T14:15:17.990Z"), "03", "GET", "/api/v1/namespaces/default/configmaps/cm", "", false, 0, false, [2]uint64{1, 0}, 0, "service-accounts", "workload-low", 429},
		{at("2000-11-21T14:15:17.9911Z"), "02", "POST", "/api/v1/namespaces/default/configmaps", "", false, 3500 * time.Microsecond, true, [2]uint64{1, 2}, 5 * time.Millisecond, "service-accounts", "workload-low", 201},
		{at("2000-11-21T14:15:18.097Z"), "04", "GET", "/api/v1/namespaces/x/pods/p", "", false, 500 * time.Microsecond, true, [2]uint64{1, 0}, 0, "catch-all", "catch-all", 404},
	}
	assertSummaries(t, want, summarize(got))
	if got[1].SourceIP != "127.0.0.1:53422" || got[1].UserAgent != "kubectl/v1.37.1 (linux/amd64) kubernetes/abcdef" {
		t.Errorf("srcIP %q, userAgent %q", got[1].SourceIP, got[1].UserAgent)
	}
	if st.Lines != 8 || st.Records != 5 || st.Skipped != 1 {
		t.Errorf("stats %+v, want 8 lines (3 of them the trace and the multi-line value), 5 records, 1 skipped", *st)
	}
}

func assertSummaries(t *testing.T, want, got []summary) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d requests, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d:\n got  %+v\n want %+v", i, got[i], want[i])
		}
	}
}

func TestAuditReader(t *testing.T) {
	st := &workload.Stats{}
	got, err := readAll(t, NewAuditReader(openTestdata(t, "audit.jsonl"), "audit", Options{}, st))
	if err != nil {
		t.Fatal(err)
	}
	want := []summary{
		{at("2000-11-21T14:15:17.977828Z"), "01", "GET", "/api/v1/namespaces/default/pods?limit=500", "alice", true, 0, false, [2]uint64{}, 0, "", "", 200},
		{at("2000-11-21T14:15:17.990Z"), "03", "GET", "/api/v1/namespaces/default/configmaps/cm", "system:serviceaccount:default:loadgen", true, 0, false, [2]uint64{}, 0, "", "", 429},
		// APF sees the impersonated user
		{at("2000-11-21T14:15:17.9911Z"), "02", "POST", "/api/v1/namespaces/default/configmaps", "bob", true, 0, false, [2]uint64{}, 0, "", "", 201},
		// no requestURI: rebuilt from objectRef
		{at("2000-11-21T14:15:18.3Z"), "09", "GET", "/apis/apps/v1/namespaces/prod/deployments/web", "carol", true, 0, false, [2]uint64{}, 0, "", "", 200},
	}
	assertSummaries(t, want, summarize(got))
	if got[0].SourceIP != "127.0.0.1" {
		t.Errorf("source IP %q, want the first of sourceIPs", got[0].SourceIP)
	}
	if got[0].Latency != 2500*time.Microsecond {
		t.Errorf("latency %v, want 2.5ms (stageTimestamp - requestReceivedTimestamp)", got[0].Latency)
	}
	if st.Skipped != 1 {
		t.Errorf("skipped %d, want 1 (the RequestReceived stage)", st.Skipped)
	}
}

func TestOpenFilesJoinsHTTPLogAndAudit(t *testing.T) {
	// the audit log says 2026; the httplog's klog headers have no year and
	// must take the audit log's for the join to line up
	b, err := os.ReadFile(filepath.Join(testdata, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(audit, []byte(strings.ReplaceAll(string(b), `"2000-`, `"2026-`)), 0o600); err != nil {
		t.Fatal(err)
	}
	fs, err := OpenFiles([]string{filepath.Join(testdata, "httplog-v1.37.log"), audit}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	got, err := readAll(t, fs)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, r := range got {
		u := r.User
		if !r.UserKnown {
			u = "?"
		}
		users = append(users, r.AuditID[len(r.AuditID)-2:]+"="+u)
	}
	if g, w := strings.Join(users, " "), "05=? 01=alice 03=system:serviceaccount:default:loadgen 02=bob 04=?"; g != w {
		t.Errorf("joined identities %q, want %q", g, w)
	}
	if *fs.Join != (workload.JoinStats{Matched: 3, Unmatched: 2, AuditOnly: 1}) {
		t.Errorf("join stats %+v", *fs.Join)
	}
	// a joined request is its httplog line's: the audit events give only
	// their identity (their reader makes no Source for them)
	for _, r := range got {
		if !strings.HasPrefix(r.Source.String(), filepath.Join(testdata, "httplog-v1.37.log")+":") {
			t.Errorf("request %s from %q, want a line of the httplog", r.AuditID, r.Source)
		}
	}
}

func TestJSONLReader(t *testing.T) {
	got, err := readAll(t, NewJSONLReader(openTestdata(t, "workload.jsonl"), "w", Options{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []summary{
		{Epoch, "", "GET", "/api/v1/pods", "alice", true, 20 * time.Millisecond, true, [2]uint64{}, 0, "", "", 0},
		{Epoch.Add(time.Millisecond), "", "POST", "/api/v1/namespaces/default/configmaps", "system:serviceaccount:default:builder", true, 4 * time.Millisecond, true, [2]uint64{1, 3}, 5 * time.Millisecond, "", "", 0},
		{Epoch.Add(1500 * time.Millisecond), "", "GET", "/healthz", "", false, 100 * time.Microsecond, true, [2]uint64{}, 0, "probes", "exempt", 200},
	}
	assertSummaries(t, want, summarize(got))
	if !got[1].HasSeats || got[0].HasSeats {
		t.Errorf("HasSeats = %v, %v; want false, true", got[0].HasSeats, got[1].HasSeats)
	}
}

func TestReaderErrors(t *testing.T) {
	tests := []struct {
		name    string
		format  workload.Format
		input   string
		wantErr string
	}{
		{"jsonl both times", workload.FormatJSONL, `{"offset":"1s","arrival":"2026-01-01T00:00:00Z","verb":"get","path":"/x"}`, "w:1: give either arrival or offset"},
		{"jsonl no time", workload.FormatJSONL, `{"verb":"get","path":"/x"}`, "w:1: missing arrival"},
		{"jsonl unknown field", workload.FormatJSONL, `{"offset":"1s","verb":"get","path":"/x","seats":3}`, `unknown field "seats"`},
		{"jsonl bad verb", workload.FormatJSONL, `{"offset":"1s","verb":"fetch","path":"/x"}`, `unknown verb "fetch"`},
		{"jsonl relative path", workload.FormatJSONL, `{"offset":"1s","verb":"get","path":"x"}`, `path "x" must start with /`},
		{"jsonl bad duration", workload.FormatJSONL, `{"offset":"1 s","verb":"get","path":"/x"}`, "decoding workload record"},
		{"jsonl out of order", workload.FormatJSONL, "{\"offset\":\"2s\",\"verb\":\"get\",\"path\":\"/x\"}\n{\"offset\":\"1s\",\"verb\":\"get\",\"path\":\"/x\"}", "w:2: arrival 2000-01-01 00:00:01 +0000 UTC is before the previous record's"},
		{"httplog bad latency", workload.FormatHTTPLog, `I1121 14:15:17.980328 1 httplog.go:134] "HTTP" verb="GET" URI="/x" latency="fast" resp=200`, `w:1: latency "fast" is not a duration`},
		{"httplog unterminated", workload.FormatHTTPLog, `I1121 14:15:17.980328 1 httplog.go:134] "HTTP" verb="GET" URI="/x`, "unterminated quoted value of URI"},
		{"httplog bad verb", workload.FormatHTTPLog, `I1121 14:15:17.980328 1 httplog.go:134] "HTTP" verb="FETCH" URI="/x" resp=200`, `unknown verb "FETCH"`},
		{"httplog bad header", workload.FormatHTTPLog, `X1121 14:15:17.980328 1 httplog.go:134] "HTTP" verb="GET" URI="/x"`, "expected a severity letter"},
		{"httplog unclosed multiline", workload.FormatHTTPLog, "I1121 14:15:17.980328 1 httplog.go:134] \"HTTP\" verb=\"GET\" URI=\"/x\" addedInfo=<\n\tmore", `multi-line value not closed`},
		{"audit not an event", workload.FormatAudit, `{"kind":"Pod","apiVersion":"v1"}`, `kind "Pod" apiVersion "v1" is not an audit.k8s.io Event`},
		{"audit garbage", workload.FormatAudit, `{"kind":`, "w:1: not an audit event"},
		{"audit no uri", workload.FormatAudit, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"get","requestReceivedTimestamp":"2026-01-01T00:00:00Z"}`, "requestURI \"\" must be a path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r workload.Reader
			switch tt.format {
			case workload.FormatJSONL:
				r = NewJSONLReader(strings.NewReader(tt.input), "w", Options{}, nil)
			case workload.FormatAudit:
				r = NewAuditReader(strings.NewReader(tt.input), "w", Options{}, nil)
			default:
				r = NewHTTPLogReader(strings.NewReader(tt.input), "w", Options{}, nil)
			}
			_, err := readAll(t, r)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name, input string
		want        workload.Format
	}{
		{"klog text", `I1121 14:15:17.980328 1 httplog.go:134] "HTTP" verb="GET"`, workload.FormatHTTPLog},
		{"klog json", `{"ts":1700000000000.5,"caller":"httplog/httplog.go:134","msg":"HTTP","v":3,"verb":"GET"}`, workload.FormatHTTPLog},
		{"audit", "\n\n" + `{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"x","stage":"ResponseComplete"}`, workload.FormatAudit},
		{"jsonl with comment", "# comment\n" + `{"offset":"0s","verb":"get","path":"/x"}`, workload.FormatJSONL},
		{"empty", "", workload.FormatJSONL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, r, err := Detect(strings.NewReader(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			if f != tt.want {
				t.Errorf("format %q, want %q", f, tt.want)
			}
			b, _ := io.ReadAll(r)
			if string(b) != tt.input {
				t.Errorf("Detect consumed input: %q", b)
			}
		})
	}
}

func TestHTTPLogJSONFormat(t *testing.T) {
	in := `{"ts":1700000000123.5,"caller":"httplog/httplog.go:134","msg":"HTTP","v":3,"verb":"LIST","URI":"/api/v1/pods","latency":"3ms","userAgent":"x","audit-ID":"a","srcIP":"1.2.3.4:5","apf_pl":"global-default","apf_fs":"global-default","apf_iseats":2,"apf_fseats":0,"apf_additionalLatency":"0s","apf_execution_time":"2ms","resp":200}`
	got, err := readAll(t, NewHTTPLogReader(strings.NewReader(in), "j", Options{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("got %d requests", len(got))
	}
	wantArrival := time.UnixMilli(1700000000123).Add(500 * time.Microsecond).Add(-3 * time.Millisecond).UTC()
	if g := got[0]; !g.Arrival.Equal(wantArrival) || g.InitialSeats != 2 || g.ServiceTime != 2*time.Millisecond || g.Method != "GET" {
		t.Errorf("got %+v, want arrival %v, 2 seats, 2ms service, GET", g, wantArrival)
	}
}

// TestHTTPLogReaderStreams feeds 200,000 generated lines (1000 per second,
// latencies up to 10 ms, so out of arrival order) through a pipe and checks
// that they come out in arrival order while the reader holds only the
// requests of its 1 s re-ordering window, not the input.
func TestHTTPLogReaderStreams(t *testing.T) {
	const n = 200_000
	pr, pw := io.Pipe()
	go func() {
		base := time.Date(2000, 11, 21, 14, 0, 0, 0, time.UTC)
		for i := range n {
			ts := base.Add(time.Duration(i) * time.Millisecond)
			fmt.Fprintf(pw, "I%s       1 httplog.go:134] \"HTTP\" verb=\"GET\" URI=\"/api/v1/namespaces/ns%d/pods/p\" latency=\"%dms\" userAgent=\"x\" audit-ID=\"%d\" apf_pl=\"global-default\" apf_fs=\"global-default\" apf_iseats=1 apf_fseats=0 apf_additionalLatency=\"0s\" apf_execution_time=\"1ms\" resp=200\n",
				ts.Format("0102 15:04:05.000000"), i%7, 1+i%10, i)
		}
		pw.Close()
	}()
	st := &workload.Stats{}
	r := NewHTTPLogReader(pr, "pipe", Options{ReorderWindow: time.Second}, st)
	var q workload.Request
	var prev time.Time
	count := 0
	for {
		err := r.Next(&q)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if q.Arrival.Before(prev) {
			t.Fatalf("record %d out of arrival order", count)
		}
		prev = q.Arrival
		count++
	}
	if count != n {
		t.Fatalf("read %d requests, want %d", count, n)
	}
	// a 1 s window at 1000 lines per second holds about 1000 requests
	if st.PeakHeld > 1100 {
		t.Errorf("reader held %d requests at once; it should hold only its window's", st.PeakHeld)
	}
}

// TestReorderMaxHeld checks that the requests held to restore arrival
// order are bounded by count as well as by time: a request that arrived
// before the last MaxHeld requests is clamped to their edge and counted,
// while with room enough it takes its place in arrival order.
func TestReorderMaxHeld(t *testing.T) {
	// completions 1 ms apart; the fifth request took 3.5 ms, so it arrived
	// between the first and the second
	var b strings.Builder
	base := time.Date(2000, 11, 21, 14, 0, 0, 0, time.UTC)
	for i := range 8 {
		lat := "100us"
		if i == 4 {
			lat = "3500us"
		}
		fmt.Fprintf(&b, "I%s       1 httplog.go:134] \"HTTP\" verb=\"GET\" URI=\"/api/v1/namespaces/ns/pods/p%d\" latency=%q userAgent=\"x\" audit-ID=\"%d\" resp=200\n",
			base.Add(time.Duration(i)*time.Millisecond).Format("0102 15:04:05.000000"), i, lat, i)
	}
	for _, tc := range []struct {
		maxHeld     int
		wantClamped int64
		wantOrder   string
	}{
		{0, 0, "/p0 /p4 /p1 /p2 /p3 /p5 /p6 /p7"},
		{2, 1, "/p0 /p1 /p4 /p2 /p3 /p5 /p6 /p7"}, // clamped to /p1's arrival
	} {
		st := &workload.Stats{}
		rs, err := readAll(t, NewHTTPLogReader(strings.NewReader(b.String()), "t", Options{MaxHeld: tc.maxHeld}, st))
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for i, r := range rs {
			order = append(order, r.URI[strings.LastIndex(r.URI, "/"):])
			if i > 0 && r.Arrival.Before(rs[i-1].Arrival) {
				t.Errorf("MaxHeld %d: request %d out of arrival order", tc.maxHeld, i)
			}
		}
		if got := strings.Join(order, " "); got != tc.wantOrder || st.Clamped != tc.wantClamped {
			t.Errorf("MaxHeld %d: order %s with %d clamped, want %s with %d", tc.maxHeld, got, st.Clamped, tc.wantOrder, tc.wantClamped)
		}
		if tc.maxHeld > 0 && st.PeakHeld > tc.maxHeld+1 {
			t.Errorf("MaxHeld %d: held %d requests at once", tc.maxHeld, st.PeakHeld)
		}
	}
}
