package dump

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// longT0 is when the first scrape of a long bundle was taken.
var longT0 = time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)

// longAt is when the k-th scrape of a long bundle was taken: 5s apart.
func longAt(k int) time.Time { return longT0.Add(time.Duration(k) * 5 * time.Second) }

// writeLongBundle writes a bundle of one instance holding n scrapes (the
// v1.37.1 load's /metrics each, taken at longAt) to out: a directory, or a
// .tar.gz.
func writeLongBundle(t testing.TB, out string, n int) {
	t.Helper()
	body := readFixtureMetrics(t, "v1.37.1-load.txt")
	s := &Snapshot{Instance: "https://10.0.0.1:6443", CapturedAt: longAt(n - 1), Raw: map[string][]byte{}}
	for k := range n {
		s.Raw[MetricsFile(k)] = body
		s.Raw[MetricsTimeKey(k)] = []byte(longAt(k).Format(time.RFC3339Nano))
	}
	if err := WriteBundle(out, &Capture{Snapshots: []*Snapshot{s}}, Manifest{CreatedAt: longAt(n)}); err != nil {
		t.Fatal(err)
	}
}

// scrapeKs are the k (longAt) of the scrapes' times.
func scrapeKs(t *testing.T, times []time.Time) []int {
	t.Helper()
	var ks []int
	for _, at := range times {
		d := at.Sub(longT0)
		if d%(5*time.Second) != 0 {
			t.Fatalf("a scrape at %v, not one of the bundle's", at)
		}
		ks = append(ks, int(d/(5*time.Second)))
	}
	return ks
}

// TestLongBundleReadsTheScrapesAskedFor: of a bundle of many scrapes
// (dump bundle --watch), a capture gives the latest two, AllScrapes every
// one in order, and ScrapesAround the pair around a window and the widest
// pair inside it, with the first and the last; a tarball whose bodies pass
// heldBodies keeps none of them in memory.
func TestLongBundleReadsTheScrapesAskedFor(t *testing.T) {
	const n = 60
	saved := heldBodies
	heldBodies = 1 << 20 // about ten of the fixture's bodies
	defer func() { heldBodies = saved }()
	tmp := t.TempDir()
	for _, p := range []string{filepath.Join(tmp, "watch"), filepath.Join(tmp, "watch.tar.gz")} {
		t.Run(filepath.Base(p), func(t *testing.T) {
			writeLongBundle(t, p, n)
			src := &BundleSource{Path: p}
			c, err := src.Capture(context.Background(), CaptureOptions{Parts: PartMetrics})
			if err != nil {
				t.Fatal(err)
			}
			if got := scrapeKs(t, times(c.Snapshots[0])); !slices.Equal(got, []int{n - 2, n - 1}) {
				t.Errorf("a capture gives scrapes %v, want the latest two", got)
			}
			if held := heldScrapeBodies(src.in.bundle); held != 0 {
				t.Errorf("%d scrape bodies held in memory after the capture, want none", held)
			}
			all, err := src.Capture(context.Background(), CaptureOptions{Parts: PartMetrics, AllScrapes: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := scrapeKs(t, times(all.Snapshots[0])); len(got) != n || got[0] != 0 || got[n-1] != n-1 {
				t.Errorf("AllScrapes gives %d scrapes (%v), want every one of the %d in order", len(got), got, n)
			}
			if got := src.MostScrapes(); got != n {
				t.Errorf("MostScrapes = %d, want %d", got, n)
			}
			for _, w := range []struct {
				name     string
				from, to time.Time
				want     []int
			}{
				{"inside", longAt(10).Add(time.Second), longAt(20).Add(-time.Second), []int{0, 10, 11, 19, 20, n - 1}},
				{"on the scrapes", longAt(10), longAt(20), []int{0, 10, 20, n - 1}},
				{"between two scrapes", longAt(10).Add(time.Second), longAt(11).Add(-time.Second), []int{0, 10, 11, n - 1}},
				{"before every scrape", longT0.Add(-time.Hour), longT0.Add(-time.Minute), []int{0, n - 1}},
				{"after every scrape", longAt(n), longAt(n + 10), []int{0, n - 1}},
				{"no time", time.Time{}, time.Time{}, []int{0, n - 1}},
			} {
				got, err := src.ScrapesAround(w.from, w.to)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 1 || len(got[0].Times) != n {
					t.Fatalf("%s: ScrapesAround gives %d instances, want 1 with the times of its %d scrapes", w.name, len(got), n)
				}
				var ts []time.Time
				for _, sc := range got[0].Scrapes {
					ts = append(ts, sc.Time)
				}
				if ks := scrapeKs(t, ts); !slices.Equal(ks, w.want) {
					t.Errorf("%s: ScrapesAround parses scrapes %v, want %v", w.name, ks, w.want)
				}
			}
		})
	}
}

// TestLongBundleScrapeGone: a scrape body that left the bundle directory
// after it was read is an error that names it, when it is asked for.
func TestLongBundleScrapeGone(t *testing.T) {
	p := filepath.Join(t.TempDir(), "watch")
	writeLongBundle(t, p, 5)
	src := &BundleSource{Path: p}
	if _, err := src.Capture(context.Background(), CaptureOptions{Parts: PartMetrics}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(p, "instance-0", MetricsFile(2))); err != nil {
		t.Fatal(err)
	}
	_, err := src.ScrapesAround(longAt(2), longAt(3))
	if err == nil || !strings.Contains(err.Error(), MetricsFile(2)) {
		t.Errorf("ScrapesAround with a scrape gone: %v, want an error naming %s", err, MetricsFile(2))
	}
}

func times(s *Snapshot) []time.Time {
	var ts []time.Time
	for _, m := range s.Metrics {
		ts = append(ts, m.Time)
	}
	return ts
}

func heldScrapeBodies(f *bundleFiles) int {
	n := 0
	for name := range f.held {
		if isScrapeBody(name) {
			n++
		}
	}
	return n
}

// BenchmarkLongBundle reads a bundle of a watch's 500 scrapes (about 42
// minutes at 5s, 50 MB) as top levels does (the latest two) and as every
// command read a bundle before: every file, every scrape parsed. Each
// iteration runs both, so the ratio (latest-two/every-scrape) holds on a
// busy machine; the heap each leaves live is reported too.
func BenchmarkLongBundle(b *testing.B) {
	p := filepath.Join(b.TempDir(), "watch")
	writeLongBundle(b, p, 500)
	heap := func() float64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapAlloc) / (1 << 20)
	}
	var latest, every time.Duration
	var latestMB, everyMB float64
	for b.Loop() {
		base := heap()
		t0 := time.Now()
		c, err := (&BundleSource{Path: p}).Capture(context.Background(), CaptureOptions{Parts: PartAll})
		if err != nil || len(c.Snapshots[0].Metrics) != 2 {
			b.Fatalf("latest two: %v", err)
		}
		t1 := time.Now()
		latestMB += heap() - base
		runtime.KeepAlive(c)
		base = heap()
		t2 := time.Now()
		files, err := ReadBundleFiles(p)
		if err != nil {
			b.Fatal(err)
		}
		all, _, err := CaptureFromFiles(files, CaptureOptions{Parts: PartAll, AllScrapes: true})
		if err != nil || len(all.Snapshots[0].Metrics) != 500 {
			b.Fatalf("every scrape: %v", err)
		}
		t3 := time.Now()
		everyMB += heap() - base
		runtime.KeepAlive(all)
		runtime.KeepAlive(files)
		latest, every = latest+t1.Sub(t0), every+t3.Sub(t2)
	}
	n := float64(b.N)
	b.ReportMetric(float64(latest.Microseconds())/n/1000, "latest-two-ms/op")
	b.ReportMetric(float64(every.Microseconds())/n/1000, "every-scrape-ms/op")
	b.ReportMetric(float64(latest)/float64(every), "latest-two/every-scrape")
	b.ReportMetric(latestMB/n, "latest-two-heap-MB")
	b.ReportMetric(everyMB/n, "every-scrape-heap-MB")
}

// FuzzBundleManifest: a bundle directory whose manifest says anything (its
// instances, their files, a watch's count of scrapes) is read as a capture,
// its latest two scrapes, every scrape and those around a window, or one
// line of error; never a panic, and never a loop over a count no file
// backs.
func FuzzBundleManifest(f *testing.F) {
	f.Add([]byte(`{"format":1,"instances":[{"dir":"instance-0","instance":"a","files":["metrics-0.txt","metrics-0.time","metrics-1.txt"]}]}`), int64(0))
	f.Add([]byte(`{"format":1,"instances":[{"dir":"instance-0","instance":"a","files":[],"scrapes":3}]}`), int64(10))
	f.Add([]byte(`{"format":1,"instances":[{"dir":"instance-0","instance":"a","files":["metrics-7.txt"],"scrapes":1000000000}]}`), int64(-5))
	f.Add([]byte(`{"format":1,"instances":[{"dir":"../x","instance":"a","files":["metrics--1.txt","metrics-x.txt"]}]}`), int64(3))
	body := []byte("apiserver_flowcontrol_nominal_limit_seats{priority_level=\"a\"} 3\n")
	f.Fuzz(func(t *testing.T, manifest []byte, at int64) {
		dir := t.TempDir()
		write := func(name string, b []byte) {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write(manifestFile, manifest)
		for k := range 3 {
			write(filepath.Join("instance-0", MetricsFile(k)), body)
			write(filepath.Join("instance-0", MetricsTimeKey(k)), []byte(longAt(k).Format(time.RFC3339Nano)))
		}
		src := &BundleSource{Path: dir}
		for _, opts := range []CaptureOptions{{Parts: PartAll}, {Parts: PartMetrics, AllScrapes: true}, {Parts: PartAll, LargestBurst: true}} {
			if _, err := src.Capture(context.Background(), opts); err != nil {
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("error of several lines: %q", err)
				}
				return
			}
		}
		_ = src.MostScrapes()
		if _, _, err := src.WatchFrames(); err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("error of several lines: %q", err)
		}
		w := longAt(int(at % 10))
		if _, err := src.ScrapesAround(w, w.Add(5*time.Second)); err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("error of several lines: %q", err)
		}
	})
}

// TestWatchEndRates: a real watch's bundle (make demo's, testdata
// simulate/demo-watch) ends with a scrape taken with its end's dumps, 80 ms
// after the last of its 5 s interval. Read at its end, its rates are over
// the last interval (the scrape 5 s before the end's), not those 80 ms, and
// with AtWatchEnd a note says what is shown; the played-back frames pair
// each scrape the same way.
func TestWatchEndRates(t *testing.T) {
	p := filepath.Join("..", "..", "testdata", "simulate", "demo-watch", "bundle.tar.gz")
	src := &BundleSource{Path: p}
	c, err := src.Capture(context.Background(), CaptureOptions{Parts: PartMetrics, AtWatchEnd: true})
	if err != nil {
		t.Fatal(err)
	}
	ts := times(c.Snapshots[0])
	if len(ts) != 2 {
		t.Fatalf("%d scrapes read, want 2", len(ts))
	}
	if gap := ts[1].Sub(ts[0]); gap < 4*time.Second || gap > 6*time.Second {
		t.Errorf("rates over %v (%v to %v), want the last 5 s interval", gap, ts[0], ts[1])
	}
	want := "note: bundle " + p + " is a watch of 14 scrapes of each apiserver, from 2026-12-06T00:59:40Z to 2026-12-06T01:00:40Z: shown are the rates over its last 5.1s of scrapes (2026-12-06T01:00:35Z to 2026-12-06T01:00:40Z); 'kubectl apf explain 429 --from " + p + "'"
	if len(c.Notes) == 0 || !slices.ContainsFunc(c.Notes, func(n string) bool { return strings.HasPrefix(n, want) }) {
		t.Errorf("notes %q, want one starting %q", c.Notes, want)
	}
	// with the dumps, those of its end
	all, err := src.Capture(context.Background(), CaptureOptions{Parts: PartAll, AtWatchEnd: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(all.Notes, func(n string) bool {
		return strings.Contains(n, ": shown are the dumps taken at its end and the rates over its last 5.1s")
	}) {
		t.Errorf("with its dumps: notes %q", all.Notes)
	}
	plain, err := src.Capture(context.Background(), CaptureOptions{Parts: PartMetrics})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(plain.Notes, func(n string) bool { return strings.Contains(n, "is a watch") }) {
		t.Errorf("a capture without AtWatchEnd notes %q", plain.Notes)
	}
	frames, _, err := src.WatchFrames()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		back, _, err := CaptureFromFiles(f.Files, CaptureOptions{Parts: PartMetrics, AllScrapes: true})
		if err != nil {
			t.Fatal(err)
		}
		ts := times(back.Snapshots[0])
		if gap := ts[len(ts)-1].Sub(ts[0]); gap < 2*time.Second {
			t.Errorf("the frame at %v has rates over %v", f.At, gap)
		}
	}
}

// TestWatchEndNoteOfAKilledWatch: a killed watch's directory holds its
// start's dumps alone (the instance's capture time is the start's); the
// note says so, where it said "the dumps taken then" of its end.
func TestWatchEndNoteOfAKilledWatch(t *testing.T) {
	p := filepath.Join("..", "..", "testdata", "simulate", "demo-watch", "bundle.tar.gz")
	all, err := (&BundleSource{Path: p}).Capture(context.Background(), CaptureOptions{Parts: PartAll, AllScrapes: true})
	if err != nil {
		t.Fatal(err)
	}
	// the watch's first scrape's time, as a killed watch's manifest keeps
	all.Snapshots[0].CapturedAt = time.Date(2026, 12, 6, 0, 59, 40, 0, time.UTC)
	dir := filepath.Join(t.TempDir(), "watch.tar.gz.partial")
	if err := WriteBundle(dir, all, Manifest{CreatedAt: all.Snapshots[0].CapturedAt}); err != nil {
		t.Fatal(err)
	}
	c, err := (&BundleSource{Path: dir}).Capture(context.Background(), CaptureOptions{Parts: PartAll, AtWatchEnd: true})
	if err != nil {
		t.Fatal(err)
	}
	want := "shown are its start's dumps (2026-12-06T00:59:40Z; it ended without taking its end's) and the rates over its last 5.1s of scrapes"
	if !slices.ContainsFunc(c.Notes, func(n string) bool { return strings.Contains(n, want) }) {
		t.Errorf("notes %q, want one that says %q", c.Notes, want)
	}
}
