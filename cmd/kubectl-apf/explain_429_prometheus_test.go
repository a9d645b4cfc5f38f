package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testprom"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// TestExplain429PrometheusWorkload joins a store's incidents to a real
// recording's log: a real Prometheus serves incidents placed at the quiet
// recording's times on its levels (testprom.Fleet), and the log is that
// recording's httplog and audit log (21:17:51 to 21:18:39). Each incident
// must name the 429s counted straight from the log in its window, or say
// that the log does not cover it, or covers only part of it.
func TestExplain429PrometheusWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Prometheus and promtool")
	}
	dir := simulateFixture(filepath.Join("recordings", "quiet"))
	tmp := t.TempDir()
	httplog := fixture.Gunzip(t, filepath.Join(dir, recording.HTTPLogFile), tmp)
	audit := fixture.Gunzip(t, filepath.Join(dir, recording.AuditLogFile), tmp)
	at := func(hms string) time.Time {
		v, err := time.Parse(time.RFC3339, "2026-11-23T"+hms+"Z")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// (a series per level, FlowSchema and reason: no two incidents share one)
	f := &testprom.Fleet{Instances: 1, Levels: []string{"apf-load", "apf-load-reject"},
		Start: at("21:00:00"), End: at("21:30:00"), Interval: 15 * time.Second,
		Incidents: []testprom.Incident{
			// seen by the scrapes of 21:18:15 and 21:18:30: inside the log
			{Level: "apf-load", FlowSchema: "apf-load", Reason: "queue-full", Instances: []int{0}, Start: at("21:18:01"), End: at("21:18:16"), PerSecond: 1},
			// long before the log
			{Level: "apf-load", FlowSchema: "apf-load", Reason: "time-out", Instances: []int{0}, Start: at("21:05:00"), End: at("21:06:00"), PerSecond: 1},
			// from the scrape of 21:18:45 on: the log ends in its window
			{Level: "apf-load-reject", FlowSchema: "apf-load-reject", Reason: "concurrency-limit", Instances: []int{0}, Start: at("21:18:31"), End: at("21:19:30"), PerSecond: 1},
		}}
	if _, err := f.CreateBlocks(context.Background(), tmp, filepath.Join(tmp, "data")); err != nil {
		t.Fatal(err)
	}
	prom := testprom.StartT(t, testprom.Options{Dir: tmp})
	args := []string{"explain", "429", "--from", filepath.Join(dir, recording.BundleFile), "--workload", httplog, "--workload", audit,
		"--prometheus", prom.URL, "--scrape-interval", "15s", "--since", "30m", "--until", f.End.Format(time.RFC3339)}

	code, out, errOut := runPlugin(append(args, "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep rejections.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Source.Kind != rejections.SourcePrometheus || len(rep.Incidents) != 3 {
		var got []string
		for _, in := range rep.Incidents {
			got = append(got, fmt.Sprintf("%s %v to %v", in.Level, in.Start, in.End))
		}
		t.Fatalf("source %+v, incidents %q; want the store's 3 (notes %q)", rep.Source, got, rep.Notes)
	}
	// Every incident's level held its 10 seats and 50 waiting requests
	// through the burst (the fleet's busy gauges), the 15 s one too, which
	// no step's instant falls in: its peaks read 2 and 0 when the gauges
	// were read at the instants alone.
	for i, in := range rep.Incidents {
		if s, w := in.Peaks[rejections.SeriesSeats], in.Peaks[rejections.SeriesWaiting]; s != 10 || w != 50 {
			t.Errorf("incident %d (%s, %v to %v): seats in use peaked at %v, waiting at %v; want 10 and 50", i+1, in.Level, in.Start, in.End, s, w)
		}
	}
	rejected429 := logRejections(t, httplog, audit)
	first, last := logSpan(t, audit)
	lead := 15 * time.Second
	seen := map[string]bool{}
	for i, in := range rep.Incidents {
		from, to := in.Start.Add(-lead), *in.End
		switch {
		case to.Before(first):
			seen["before"] = true
			if in.Clients != nil || !hasNote(rep.Notes, "does not cover incident") {
				t.Errorf("incident %d (%s, %v) is before the log: clients %+v, notes %q", i+1, in.Level, from, in.Clients, rep.Notes)
			}
			continue
		case to.After(last):
			seen["partial"] = true
			// the log's last arrival at APF, a little after the audit's receipt
			if in.Clients == nil || in.Clients.Window == nil || in.Clients.Window.End.Sub(last) < 0 || in.Clients.Window.End.Sub(last) > time.Second ||
				!in.Clients.Window.Start.Equal(from) || !hasNote(rep.Notes, "the log covers only") {
				t.Fatalf("incident %d (%s, %v to %v) outlasts the log (to %v): clients %+v, notes %q", i+1, in.Level, from, to, last, in.Clients, rep.Notes)
			}
			to = last
		default:
			seen["inside"] = true
			if in.Clients == nil || in.Clients.Window == nil || !in.Clients.Window.Start.Equal(from) || !in.Clients.Window.End.Equal(to) || len(in.Clients.HeldSeats) == 0 {
				t.Fatalf("incident %d (%s, %v to %v) is inside the log: clients %+v", i+1, in.Level, from, to, in.Clients)
			}
		}
		want := map[string]float64{}
		for _, r := range rejected429 {
			if r.level == in.Level && !r.at.Before(from) && !r.at.After(to) {
				want[r.user]++
			}
		}
		got := map[string]float64{}
		for _, c := range in.Clients.Rejected {
			got[c.User] += c.Count
		}
		if len(want) == 0 || !maps.Equal(got, want) {
			t.Errorf("incident %d (%s, %v to %v): rejected %v, the log's 429s %v", i+1, in.Level, from, to, got, want)
		}
	}
	if len(seen) != 3 {
		t.Errorf("the incidents were %v; want one inside the log, one before it, one it ends in", seen)
	}

	code, out, errOut = runPlugin(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	checkGolden(t, "explain/cmd-429-prometheus-workload.golden", []byte(out))
}

// logRejection is one 429 of the log: its level (httplog) and its user and
// arrival (the audit event of the same audit ID).
type logRejection struct {
	level, user string
	at          time.Time
}

// logRejections reads the 429s straight from the logs, without the
// workload readers.
func logRejections(t *testing.T, httplog, audit string) []logRejection {
	t.Helper()
	type event struct {
		AuditID string `json:"auditID"`
		User    struct {
			Username string `json:"username"`
		} `json:"user"`
		Received time.Time `json:"requestReceivedTimestamp"`
	}
	events := map[string]event{}
	eachLine(t, audit, func(l string) {
		var e event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		events[e.AuditID] = e
	})
	re := regexp.MustCompile(`audit-ID="([^"]+)".* apf_pl="([^"]+)".* resp=429$`)
	var out []logRejection
	eachLine(t, httplog, func(l string) {
		if m := re.FindStringSubmatch(l); m != nil {
			e, ok := events[m[1]]
			if !ok {
				t.Fatalf("no audit event for %s", m[1])
			}
			out = append(out, logRejection{level: m[2], user: e.User.Username, at: e.Received})
		}
	})
	return out
}

// logSpan is the first and last arrival of the audit log.
func logSpan(t *testing.T, audit string) (first, last time.Time) {
	t.Helper()
	eachLine(t, audit, func(l string) {
		var e struct {
			Received time.Time `json:"requestReceivedTimestamp"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		if first.IsZero() || e.Received.Before(first) {
			first = e.Received
		}
		if e.Received.After(last) {
			last = e.Received
		}
	})
	return first, last
}

func eachLine(t *testing.T, path string, each func(string)) {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			each(l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

func hasNote(notes []string, s string) bool {
	return slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, s) })
}
