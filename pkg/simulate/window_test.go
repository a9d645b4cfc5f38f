package simulate

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// recordedLine is one request of a recording: its httplog line and its
// audit event, joined by audit ID.
type recordedLine struct {
	httplog, audit string
	arrival        time.Time
	status         int
}

var (
	auditIDRe = regexp.MustCompile(`audit-ID="([^"]+)"`)
	respRe    = regexp.MustCompile(` resp=(\d+)`)
)

// readRecordedLines reads a recording's httplog and audit log, and joins
// them by audit ID (the httplog lines without an audit event are left
// out; the recordings have none that matter here).
func readRecordedLines(t *testing.T, logFile, auditFile string) []recordedLine {
	t.Helper()
	events := map[string]string{}
	received := map[string]time.Time{}
	var order []string
	for _, line := range readLines(t, auditFile) {
		var ev struct {
			AuditID  string    `json:"auditID"`
			Received time.Time `json:"requestReceivedTimestamp"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.AuditID == "" {
			continue
		}
		events[ev.AuditID], received[ev.AuditID] = line, ev.Received
		order = append(order, ev.AuditID)
	}
	byID := map[string]string{}
	status := map[string]int{}
	for _, line := range readLines(t, logFile) {
		m := auditIDRe.FindStringSubmatch(line)
		if m == nil || !strings.Contains(line, `"HTTP"`) {
			continue
		}
		byID[m[1]] = line
		if r := respRe.FindStringSubmatch(line); r != nil {
			var code int
			fmt.Sscan(r[1], &code)
			status[m[1]] = code
		}
	}
	var out []recordedLine
	for _, id := range order {
		if l, ok := byID[id]; ok {
			out = append(out, recordedLine{httplog: l, audit: events[id], arrival: received[id], status: status[id]})
		}
	}
	return out
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// shifted is l moved by d, under a new audit ID made from n: the klog
// header of its httplog line and both timestamps of its audit event.
func (l recordedLine) shifted(t *testing.T, d time.Duration, n int) recordedLine {
	t.Helper()
	old := auditIDRe.FindStringSubmatch(l.httplog)[1]
	id := fmt.Sprintf("%08x", 0xf0000000+n) + old[8:]
	// "I1128 02:40:09.639523 ...": the header's time, without a year
	hdr, err := time.Parse("0102 15:04:05.000000", l.httplog[1:21])
	if err != nil {
		t.Fatal(err)
	}
	hl := l.httplog[:1] + hdr.Add(d).Format("0102 15:04:05.000000") + l.httplog[21:]
	hl = strings.Replace(hl, old, id, 1)
	var ev map[string]any
	if err := json.Unmarshal([]byte(l.audit), &ev); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"requestReceivedTimestamp", "stageTimestamp"} {
		ts, err := time.Parse(time.RFC3339Nano, ev[k].(string))
		if err != nil {
			t.Fatal(err)
		}
		ev[k] = ts.Add(d).Format("2006-01-02T15:04:05.000000Z07:00")
	}
	ev["auditID"] = id
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return recordedLine{httplog: hl, audit: string(b), arrival: l.arrival.Add(d), status: l.status}
}

// writeRecording writes lines as an httplog and an audit log, each in
// the order of its own times (an httplog line is logged when its request
// completed), and returns their paths.
func writeRecording(t *testing.T, dir, name string, lines []recordedLine) (logFile, auditFile string) {
	t.Helper()
	logFile, auditFile = filepath.Join(dir, name+"-apiserver.log"), filepath.Join(dir, name+"-audit.log")
	var hl, al strings.Builder
	for _, l := range lines {
		al.WriteString(l.audit + "\n")
	}
	// the fixture's httplog lines are in their own (completion) order:
	// keep them so, with the lines moved before and after around them
	for _, l := range lines {
		hl.WriteString(l.httplog + "\n")
	}
	if err := os.WriteFile(logFile, []byte(hl.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(auditFile, []byte(al.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return logFile, auditFile
}

// TestEvidenceCoversItsWindowOfAFullLog: a recording's log made longer, as
// a real log is, with quiet traffic before the load (the server's
// start-up and quiet hours, copies of the recording's own answered
// requests one a second for ten minutes) and after it (the capture's own
// reads and another minute of quiet traffic), is replayed with the bundle
// whose two scrapes span the load. simulate replays the part of the log
// the evidence covers, and the prediction (the fit of the recorded
// configuration and the what-if) is the one of the log cut to the scrapes'
// window by this test from the fixture's own times: with ten minutes of
// quiet traffic before the load, the requests between the scrapes are
// fewer than the 90% the calibration asks of a workload for its CPU
// evidence; with one minute (quiet), more, and the quiet traffic is still
// not the load the evidence saw (a server's start-up, 8% of a full log,
// moved a prediction of a crowded load by a quarter when it was replayed
// beside the load). With recorded 429s outside the window the evidence did
// not see that load, and it is refused as before.
func TestEvidenceCoversItsWindowOfAFullLog(t *testing.T) {
	for _, c := range []struct {
		name, whatIf string
		quiet        int
	}{
		{"crowded-30", "whatif-3.yaml", 600},
		{"starved", "whatif.yaml", 600},
		{"crowded-30", "whatif-3.yaml", 60},
	} {
		t.Run(fmt.Sprintf("%s-%d", c.name, c.quiet), func(t *testing.T) {
			dir := filepath.Join(recordingsDir(t), c.name)
			kr := openRecording(t, dir)
			st := loadState(t, stateInput{from: kr.bundle}, commandDefaults())
			ms := st.Snapshots[0].Metrics
			if len(ms) < 2 {
				t.Fatalf("%s's bundle holds %d scrapes, want two around the load", c.name, len(ms))
			}
			slack := calibrate.DefaultParams().ClockSlack
			from, to := ms[0].Time.Add(-slack), ms[len(ms)-1].Time.Add(slack)
			lines := readRecordedLines(t, kr.logFile, kr.auditFile)
			var answered []recordedLine
			for _, l := range lines {
				if l.status == 200 {
					answered = append(answered, l)
				}
			}
			// quiet traffic: c.quiet requests before the first scrape, one
			// a second, 60 after the last, and the capture's own reads (the
			// fixture's first three requests, the recorder's /version and
			// /metrics reads)
			var before, after []recordedLine
			n := 0
			for k := range c.quiet {
				src := answered[k%len(answered)]
				at := ms[0].Time.Add(-5*time.Second - time.Duration(c.quiet-k)*time.Second)
				before = append(before, src.shifted(t, at.Sub(src.arrival), n))
				n++
			}
			for k := range 3 {
				src := lines[k]
				at := ms[len(ms)-1].Time.Add(3*time.Second + time.Duration(k)*10*time.Millisecond)
				after = append(after, src.shifted(t, at.Sub(src.arrival), n))
				n++
			}
			for k := range 60 {
				src := answered[(k*7)%len(answered)]
				at := ms[len(ms)-1].Time.Add(5*time.Second + time.Duration(k)*time.Second)
				after = append(after, src.shifted(t, at.Sub(src.arrival), n))
				n++
			}
			full := append(append(append([]recordedLine{}, before...), lines...), after...)
			// the cut: the requests of the full log that arrived between
			// the scrapes (widened by the calibration's clock slack)
			var cut []recordedLine
			for _, l := range full {
				if !l.arrival.Before(from) && !l.arrival.After(to) {
					cut = append(cut, l)
				}
			}
			tmp := t.TempDir()
			fullLog, fullAudit := writeRecording(t, tmp, "full", full)
			cutLog, cutAudit := writeRecording(t, tmp, "cut", cut)
			whatIf := filepath.Join(dir, c.whatIf)

			got := kr.simulate(t, []string{fullLog, fullAudit}, true, whatIf)
			want := kr.simulate(t, []string{cutLog, cutAudit}, true, whatIf)
			if want.Calibration.Uncovered != nil {
				t.Fatalf("the cut log's evidence was refused: %s", want.Calibration.Uncovered.Why())
			}
			if got.Calibration.Uncovered != nil {
				t.Fatalf("the full log's evidence was refused: %s", got.Calibration.Uncovered.Why())
			}
			e := got.Evidence
			if e == nil || !e.Cut {
				t.Fatalf("evidence %+v, want the replay cut to the scrapes' window", e)
			}
			if e.Total != int64(len(full)) || e.Requests != int64(len(cut)) || e.Before != int64(len(before)) || e.After != int64(len(full)-len(cut)-len(before)) {
				t.Errorf("evidence covers %d of %d requests (%d before, %d after), want %d of %d (%d before)", e.Requests, e.Total, e.Before, e.After, len(cut), len(full), len(before))
			}
			if got.Requests != want.Requests {
				t.Errorf("replayed %d requests, the cut log %d", got.Requests, want.Requests)
			}
			for _, l := range whatIfLevels(nil, kr.rec.Recorded) {
				for _, after := range []bool{false, true} {
					if g, w := rejected(got, after, l), rejected(want, after, l); g != w {
						t.Errorf("%s (after the change: %v): the full log predicts %d 429s, the cut log %d", l, after, g, w)
					}
				}
				t.Logf("%s: recorded %d 429s; predicted %d, after the change %d, from the full log and from the cut one", l, kr.rec.Recorded.Rejected429[l], rejected(got, false, l), rejected(got, true, l))
			}
			if (got.Calibration.Shared != nil) != (want.Calibration.Shared != nil) || (got.Calibration.CPU != nil) != (want.Calibration.CPU != nil) {
				t.Errorf("CPU models differ: full log shared %v CFS %v, cut log shared %v CFS %v", got.Calibration.Shared != nil, got.Calibration.CPU != nil, want.Calibration.Shared != nil, want.Calibration.CPU != nil)
			}
			if float64(len(cut)) < calibrate.DefaultParams().MinCoveredArrivals*float64(len(full)) {
				if c.quiet < 600 {
					t.Fatalf("%d of the full log's %d requests between the scrapes: the case of fewer than %.0f%% is the one of ten minutes of quiet traffic", len(cut), len(full), 100*calibrate.DefaultParams().MinCoveredArrivals)
				}
			} else if c.quiet >= 600 {
				t.Fatalf("%d of the full log's %d requests between the scrapes, want fewer than %.0f%%", len(cut), len(full), 100*calibrate.DefaultParams().MinCoveredArrivals)
			}
			if c.quiet < 600 {
				// enough between the scrapes for the evidence to be kept
				// for the whole log: the refusals below do not apply
				return
			}

			// asked for every request, the evidence cannot cover them
			all := commandDefaults()
			all.Workloads, all.CPULimit = []string{fullLog, fullAudit}, kr.rec.APIServerCPUs
			all.Window = logs.Window{Since: "1d"}
			all.Sets = nil
			whole := simulateT(t, stateInput{from: kr.bundle, files: []string{whatIf}}, all)
			for _, l := range whatIfLevels(nil, kr.rec.Recorded) {
				t.Logf("%s: the whole full log, the evidence refused: predicted %d, after the change %d", l, rejected(whole, false, l), rejected(whole, true, l))
			}
			if whole.Calibration.Uncovered == nil || whole.Evidence == nil || whole.Evidence.Cut {
				t.Errorf("--since 1d over the full log: uncovered %v, evidence %+v; want the evidence refused for the quiet traffic it did not see", whole.Calibration.Uncovered, whole.Evidence)
			}

			// 429s outside the scrapes: a load the evidence did not see
			var loud []recordedLine
			for _, l := range lines {
				if l.status == 429 {
					loud = append(loud, l)
				}
			}
			for k := range c.quiet {
				src := loud[k%len(loud)]
				at := ms[0].Time.Add(-5*time.Second - time.Duration(c.quiet-k)*time.Second)
				before[k] = src.shifted(t, at.Sub(src.arrival), k)
			}
			loudLog, loudAudit := writeRecording(t, tmp, "loud", append(append(append([]recordedLine{}, before...), lines...), after...))
			res := kr.simulate(t, []string{loudLog, loudAudit}, true)
			if res.Calibration.Uncovered == nil || res.Evidence == nil || res.Evidence.Cut || res.Evidence.RejectedOutside != 600 {
				t.Errorf("429s outside the scrapes: uncovered %v, evidence %+v; want the evidence refused, 600 429s outside", res.Calibration.Uncovered, res.Evidence)
			}
		})
	}
}

// recordingsDir is testdata/simulate/recordings.
func recordingsDir(t *testing.T) string {
	t.Helper()
	return filepath.Dir(recordingDirs(t)[0])
}

// TestScrapePair: of a --watch bundle's scrapes, the evidence of a window
// is read from the two that bracket it.
func TestScrapePair(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var ms []*metrics.Scrape
	for k := range 10 { // one every 10s, 0s to 90s
		ms = append(ms, &metrics.Scrape{Time: t0.Add(time.Duration(k) * 10 * time.Second)})
	}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, c := range []struct {
		from, to, first, last int
		ok                    bool
	}{
		{25, 47, 20, 50, true}, // bracketed
		{20, 50, 20, 50, true}, // on the scrapes
		{-30, 47, 0, 50, true}, // starts before them: the earliest
		{25, 200, 20, 90, true},
		{100, 200, 0, 0, false}, // wholly after
		{-50, -10, 0, 0, false}, // wholly before
	} {
		f, l, ok := scrapePair(ms, calibrate.TimeRange{From: at(c.from), To: at(c.to)})
		if ok != c.ok || ok && (!f.Time.Equal(at(c.first)) || !l.Time.Equal(at(c.last))) {
			t.Errorf("window %ds–%ds: %v %v %v, want %ds–%ds %v", c.from, c.to, f, l, ok, c.first, c.last, c.ok)
		}
	}
}

// TestMedianGap: a recorder's scrapes say how often it scraped, to 10 ms,
// whatever one late scrape or its jitter; two scrapes say nothing.
func TestMedianGap(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(offsets ...time.Duration) []*metrics.Scrape {
		var ms []*metrics.Scrape
		for _, o := range offsets {
			ms = append(ms, &metrics.Scrape{Time: t0.Add(o)})
		}
		return ms
	}
	ms := time.Millisecond
	for _, c := range []struct {
		scrapes []*metrics.Scrape
		want    time.Duration
	}{
		{at(0, 1003*ms, 2001*ms, 3004*ms, 7000*ms), time.Second},
		{at(0, 10*time.Second, 20*time.Second), 10 * time.Second},
		{at(0, 45*time.Second), 0},
		{at(0), 0},
	} {
		if got := medianGap(c.scrapes); got != c.want {
			t.Errorf("medianGap of %d scrapes = %v, want %v", len(c.scrapes), got, c.want)
		}
	}
}

// TestSettleExecutions: a window cut from a longer log lacks the requests
// that arrived before it, whose executions APF counted where they ended
// after a scrape inside it. The pair of scrapes APF's executions are
// read between moves past the end of the last of them (a watch's and a
// 429's latency are not executions), to scrapes the evidence's store
// holds inside the window; where none lie there, the executions are not
// evidence, and a note says why; a pair taken before the window is kept.
func TestSettleExecutions(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var a arrivals
	for _, r := range []struct {
		at, latency int
		method, uri string
		status      int
	}{
		{200, 60_000, "GET", "/api/v1/pods?watch=true", 200},          // a watch: its latency is not its execution
		{400, 5_000, "GET", "/api/v1/namespaces/a/pods/p/log", 200},   // long-running, not APF's
		{500, 800, "GET", "/api/v1/namespaces/a/pods", 200},           // ran until 1.3s
		{900, 2_000, "GET", "/api/v1/namespaces/a/pods", 429},         // rejected: not an execution
		{1_200, 3_000, "GET", "/api/v1/namespaces/a/configmaps", 200}, // inside the window
	} {
		a.add(&workload.Request{Arrival: at(r.at), Latency: time.Duration(r.latency) * time.Millisecond, Method: r.method, URI: r.uri, Status: r.status})
	}
	if got := a.settled(at(1_000)); !got.Equal(at(1_300)) {
		t.Fatalf("settled at 1s: %v, want 1.3s: the end of the pods LIST that arrived at 0.5s", got)
	}
	if got := a.settled(at(100)); !got.Equal(at(100)) {
		t.Fatalf("settled at 0.1s, before every arrival: %v", got)
	}
	scrape := func(ms int) *metrics.Scrape {
		l := `{flow_schema="f",priority_level="l",type="regular"}`
		body := fmt.Sprintf("# TYPE apiserver_flowcontrol_request_execution_seconds histogram\n"+
			"apiserver_flowcontrol_request_execution_seconds_bucket{flow_schema=\"f\",priority_level=\"l\",type=\"regular\",le=\"+Inf\"} %d\n"+
			"apiserver_flowcontrol_request_execution_seconds_sum%s %d\n"+
			"apiserver_flowcontrol_request_execution_seconds_count%s %d\n", ms, l, ms/100, l, ms)
		s, err := metrics.ParseText([]byte(body), at(ms))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	scrapes := func(ms ...int) []*metrics.Scrape {
		var out []*metrics.Scrape
		for _, m := range ms {
			out = append(out, scrape(m))
		}
		return out
	}
	win := &ReplayWindow{From: at(1_000), To: at(10_000)}
	for _, c := range []struct {
		name     string
		source   []*metrics.Scrape // the evidence's instance's scrapes read
		store    []*metrics.Scrape // what the store answers for the settled window
		first    int               // the pair read for APF's executions
		want     [2]int            // {0, 0}: none
		note     bool
		storeAsk bool
	}{
		{"the state's scrapes, every second", scrapes(0, 1_100, 2_100, 9_100, 10_100), nil, 1_100, [2]int{2_100, 9_100}, false, false},
		{"a store's: bracket and the widest inner pair, read again", scrapes(0, 1_100, 9_100, 10_100), scrapes(1_100, 2_100, 9_100, 10_100), 1_100, [2]int{2_100, 9_100}, false, true},
		{"one scrape inside from then on", scrapes(0, 1_100, 9_100, 10_100), scrapes(1_100, 9_100, 10_100), 1_100, [2]int{}, true, true},
		{"the inner pair taken after the requests ended", scrapes(0, 1_400, 9_100, 10_100), nil, 1_400, [2]int{1_400, 9_100}, false, false},
		{"a bracketing pair", scrapes(0, 10_100), nil, 0, [2]int{0, 10_100}, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var cfg Config
			var store *fakeStore
			m := serverMetrics{source: instanceScrapes{instance: "i", scrapes: c.source}}
			if c.store != nil {
				store = &fakeStore{scrapes: c.store, instance: "i"}
				cfg.Store, m.store = store, store.Describe()
			}
			last := c.source[len(c.source)-1]
			if c.first != 0 {
				last = c.source[len(c.source)-2]
			}
			m.setExecutions(scrape(c.first), last)
			if err := settleExecutions(context.Background(), cfg, &m, &a, win); err != nil {
				t.Fatal(err)
			}
			got := m.evidence.ExecutionsWindow
			switch {
			case c.want == [2]int{}:
				if m.evidence.Executions != nil || !got.IsZero() {
					t.Errorf("APF's executions read between %v, want none", got)
				}
			case !got.From.Equal(at(c.want[0])) || !got.To.Equal(at(c.want[1])):
				t.Errorf("APF's executions read between %v, want %v–%v", got, at(c.want[0]), at(c.want[1]))
			case m.evidence.Executions["l"].Count != int64(c.want[1]-c.want[0]):
				t.Errorf("APF's executions: %+v, want %d", m.evidence.Executions["l"], c.want[1]-c.want[0])
			}
			if noted := len(m.notes) == 1 && strings.Contains(m.notes[0], "ran until 2030-01-01T00:00:01.3Z"); noted != c.note {
				t.Errorf("notes %q, want one saying when the earlier requests ended: %v", m.notes, c.note)
			}
			if asked := store != nil && len(store.asked) == 1 && store.asked[0] == [2]time.Time{at(1_300), at(10_000)}; asked != c.storeAsk {
				t.Errorf("the store was asked %v, want once for 1.3s–10s: %v", store, c.storeAsk)
			}
		})
	}
}
