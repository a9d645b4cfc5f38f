package simulate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
)

// TestLongBundleReadAroundTheWindow checks that a bundle of many scrapes
// (dump bundle --watch), of which the state holds the latest two and
// Config.Recorded reads those around the window replayed, gives simulate
// the answer it gives with every scrape in the state, as it read them all
// before. The long bundle is a kept recording's, its two scrapes around the
// load with copies of the first before them and of the last after them, 5s
// apart: the pair the evidence is read from is among many, and the latest
// two alone are no evidence of the load.
func TestLongBundleReadAroundTheWindow(t *testing.T) {
	kr := openRecording(t, filepath.Join(recordingsDir(t), "crowded-30"))
	long := filepath.Join(t.TempDir(), "watch")
	const before, after = 40, 30
	writeLongBundle(t, kr.bundle, long, before, after)
	whatIf := filepath.Join(kr.dir, "whatif-3.yaml")
	cfg := commandDefaults()
	cfg.Workloads, cfg.CPULimit = []string{kr.logFile, kr.auditFile}, kr.rec.APIServerCPUs
	in := stateInput{from: long, files: []string{whatIf}}
	ctx := context.Background()
	run := func(name string, cfg Config, all bool) (string, *Result) {
		st, source, err := loadE(ctx, in, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(st.Snapshots[0].Metrics); got != 2 {
			t.Fatalf("the state holds %d scrapes of the long bundle, want its latest two", got)
		}
		if all {
			// every scrape in the state, as simulate read a bundle before
			c, err := (&dump.BundleSource{Path: long}).Capture(ctx, dump.CaptureOptions{Parts: dump.PartMetrics, AllScrapes: true})
			if err != nil {
				t.Fatal(err)
			}
			st.Snapshots[0].Metrics = c.Snapshots[0].Metrics
		}
		cfg.Source = source
		res, err := Run(ctx, st, cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := json.MarshalIndent(res, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n" + strings.Join(res.Notes, "\n"), res
	}
	every, res := run("every scrape in the state", cfg, true)
	src := &dump.BundleSource{Path: long}
	if _, err := src.Capture(ctx, dump.CaptureOptions{Parts: dump.PartMetrics}); err != nil {
		t.Fatal(err)
	}
	if got, want := src.MostScrapes(), before+2+after; got != want {
		t.Fatalf("the long bundle holds %d scrapes, want %d", got, want)
	}
	read := 0
	withRecorded := cfg
	withRecorded.Recorded = func(from, to time.Time) ([]RecordedScrapes, error) {
		got, err := src.ScrapesAround(from, to)
		var out []RecordedScrapes
		for _, g := range got {
			read += len(g.Scrapes)
			out = append(out, RecordedScrapes{Instance: g.Instance, Scrapes: g.Scrapes, Times: g.Times})
		}
		return out, err
	}
	around, _ := run("the latest two and those around the window", withRecorded, false)
	if around != every {
		t.Errorf("simulate over the long bundle read around its window differs from simulate with every scrape in the state:\n%s", firstDiff(every, around))
	}
	if read == 0 || read > 4 {
		t.Errorf("ScrapesAround parsed %d scrapes, want the pair around the window, the first and the last (at most 4)", read)
	}
	broken := cfg
	broken.Recorded = func(time.Time, time.Time) ([]RecordedScrapes, error) {
		return nil, errors.New("open instance-0/metrics-41.txt: no such file or directory")
	}
	if _, res := run("a scrape gone", broken, false); res.Evidence != nil || !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "metrics-41.txt") }) {
		t.Errorf("with the bundle's scrapes unreadable: evidence %+v, notes %q; want no evidence and a note naming the scrape", res.Evidence, res.Notes)
	}
	if latest, _ := run("the latest two alone", cfg, false); latest == every {
		t.Error("the latest two scrapes alone give the same answer as every scrape: the long bundle tests nothing")
	}
	if e := res.Evidence; e == nil || e.Scrapes != before+2+after || e.Interval != calibrate.Duration(5*time.Second) {
		t.Errorf("evidence %+v, want the long bundle's %d scrapes, 5s apart", e, before+2+after)
	}
}

// writeLongBundle writes, as the directory out, the bundle of two scrapes
// in: before copies of its first scrape ahead of it and after copies of
// its second behind it, each 5s from the next.
func writeLongBundle(t *testing.T, in, out string, before, after int) {
	t.Helper()
	files, err := dump.ReadBundleFiles(in)
	if err != nil {
		t.Fatal(err)
	}
	var m dump.Manifest
	if err := json.Unmarshal(files["bundle.json"], &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Instances) != 1 {
		t.Fatalf("the bundle holds %d instances, want 1", len(m.Instances))
	}
	mi := &m.Instances[0]
	scrapeAt := func(k int) time.Time {
		at, err := time.Parse(time.RFC3339Nano, string(files[path.Join(mi.Dir, dump.MetricsTimeKey(k))]))
		if err != nil {
			t.Fatalf("scrape %d: %v", k, err)
		}
		return at
	}
	first, last := scrapeAt(0), scrapeAt(1)
	write := func(name string, b []byte) {
		p := filepath.Join(out, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, name := range mi.Files {
		if !strings.HasPrefix(name, "metrics-") {
			names = append(names, name)
			write(path.Join(mi.Dir, name), files[path.Join(mi.Dir, name)])
		}
	}
	k := 0
	scrape := func(from int, at time.Time) {
		write(path.Join(mi.Dir, dump.MetricsFile(k)), files[path.Join(mi.Dir, dump.MetricsFile(from))])
		write(path.Join(mi.Dir, dump.MetricsTimeKey(k)), []byte(at.Format(time.RFC3339Nano)))
		names = append(names, dump.MetricsFile(k), dump.MetricsTimeKey(k))
		k++
	}
	for i := range before {
		scrape(0, first.Add(-time.Duration(before-i)*5*time.Second))
	}
	scrape(0, first)
	scrape(1, last)
	for i := range after {
		scrape(1, last.Add(time.Duration(i+1)*5*time.Second))
	}
	mi.Files = names
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	write("bundle.json", b)
}

// firstDiff shows where two texts first differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n  %s\n  %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("%d lines against %d", len(al), len(bl))
}
