package simulate

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
)

// TestClampedNotes: joined files that each record the same long-running
// requests are named in one note that counts them once (the demo
// cluster's httplog and audit log gave two notes of 43); files not joined,
// or of other counts, keep a note each.
func TestClampedNotes(t *testing.T) {
	stats := func(a, b int64) map[string]*workload.Stats {
		return map[string]*workload.Stats{"kube-apiserver.log": {Clamped: a}, "audit.log": {Clamped: b}, "quiet.log": {}}
	}
	for _, c := range []struct {
		name  string
		files *workload.Files
		want  []string
	}{
		{"joined, the same count", &workload.Files{Stats: stats(43, 43), Join: &workload.JoinStats{}},
			[]string{"note: audit.log, kube-apiserver.log: 43 long-running requests (each file's record of them, joined) arrived before the re-ordering window and were replayed at its edge"}},
		{"not joined", &workload.Files{Stats: stats(43, 43)},
			[]string{"note: audit.log: 43 long-running requests arrived before the re-ordering window and were replayed at its edge",
				"note: kube-apiserver.log: 43 long-running requests arrived before the re-ordering window and were replayed at its edge"}},
		{"joined, other counts", &workload.Files{Stats: stats(1, 2), Join: &workload.JoinStats{}},
			[]string{"note: kube-apiserver.log: 1 long-running request arrived before the re-ordering window and was replayed at its edge",
				"note: audit.log: 2 long-running requests arrived before the re-ordering window and were replayed at its edge"}},
	} {
		if got := clampedNotes(c.files); !slices.Equal(got, c.want) {
			t.Errorf("%s:\ngot  %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestHTTPLogAloneTakesItsMetricsYear: klog's headers carry no year, and
// an httplog given alone used to be read in the readers' default year
// (2000), so that a bundle whose scrapes span its load was "not evidence
// of the workload replayed" and the CPU model of starved-seed2's throttled
// server was lost. Its times now take the year its metrics were read, and
// a note says so; with the audit log, which tells the year, no note.
func TestHTTPLogAloneTakesItsMetricsYear(t *testing.T) {
	dir := fixture.Path("simulate", "recordings", "starved-seed2")
	tmp := t.TempDir()
	httplog := fixture.Gunzip(t, filepath.Join(dir, recording.HTTPLogFile), tmp)
	audit := fixture.Gunzip(t, filepath.Join(dir, recording.AuditLogFile), tmp)
	in := stateInput{from: filepath.Join(dir, recording.BundleFile)}
	const note = "note: the log's klog headers carry no year: its times are taken to be of 2026, the year its metrics were read"
	for _, tc := range []struct {
		name  string
		files []string
		note  bool
	}{
		{"httplog alone", []string{httplog}, true},
		{"httplog and audit", []string{httplog, audit}, false},
	} {
		cfg := commandDefaults()
		cfg.Workloads = tc.files
		res := simulateT(t, in, cfg)
		if got := slices.Contains(res.Notes, note); got != tc.note {
			t.Errorf("%s: the year's note %v, want %v; notes: %q", tc.name, got, tc.note, res.Notes)
		}
		for _, n := range res.Notes {
			if strings.Contains(n, "are not evidence of the workload replayed") {
				t.Errorf("%s: %s", tc.name, n)
			}
		}
		if res.Calibration == nil || res.Calibration.CPU == nil {
			t.Errorf("%s: no CPU model of the throttled server", tc.name)
		}
	}
}

// TestHTTPLogAloneTakesItsWindowsYear: without metrics (--defaults), an
// absolute --since/--until over an httplog alone cut none of it, its times
// read in the year 2000; they now take the window's year, which says when
// the log is.
func TestHTTPLogAloneTakesItsWindowsYear(t *testing.T) {
	dir := fixture.Path("simulate", "recordings", "starved-seed2")
	httplog := fixture.Gunzip(t, filepath.Join(dir, recording.HTTPLogFile), t.TempDir())
	cfg := commandDefaults()
	cfg.Workloads = []string{httplog}
	cfg.Window = logs.Window{Since: "2026-12-06T11:44:30Z", Until: "2026-12-06T11:44:50Z"}
	res, err := simulateE(context.Background(), stateInput{defaults: true}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if w := res.Window; w == nil || w.Requests == 0 || w.Requests >= w.Of || w.From.Year() != 2026 {
		t.Errorf("window %+v: want part of the log's requests, in 2026", w)
	}
	const note = "note: the log's klog headers carry no year: its times are taken to be of 2026, the year of --since/--until"
	if !slices.Contains(res.Notes, note) {
		t.Errorf("no note of the year; notes: %q", res.Notes)
	}
}

// TestHTTPLogAloneWithAStoreNeedsItsYear: an httplog alone, with neither
// an absolute --since/--until nor metrics to give its year, cannot be
// matched with a store's samples, which are found by their time: one
// actionable error, and the store is not asked; with a date in the window
// the store is asked for the log's own times.
func TestHTTPLogAloneWithAStoreNeedsItsYear(t *testing.T) {
	dir := fixture.Path("simulate", "recordings", "starved-seed2")
	httplog := fixture.Gunzip(t, filepath.Join(dir, recording.HTTPLogFile), t.TempDir())
	store := &fakeStore{}
	cfg := commandDefaults()
	cfg.Workloads, cfg.Store = []string{httplog}, store
	_, err := simulateE(context.Background(), stateInput{defaults: true}, cfg)
	if err == nil || !strings.Contains(err.Error(), "--prometheus: the log's klog headers carry no year") || len(store.asked) > 0 {
		t.Errorf("error %v, the store asked %v: want the year's error and no question", err, store.asked)
	}
	cfg.Window = logs.Window{Since: "2026-12-06T11:44:30Z", Until: "2026-12-06T11:44:50Z"}
	if _, err := simulateE(context.Background(), stateInput{defaults: true}, cfg); err != nil {
		t.Fatal(err)
	}
	if len(store.asked) == 0 || store.asked[0][0].Year() != 2026 {
		t.Errorf("the store was asked for %v, want the window's times in 2026", store.asked)
	}
}
