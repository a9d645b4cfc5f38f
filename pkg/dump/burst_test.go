package dump

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeRejectingBundle writes a bundle of one or two instances whose k-th
// scrapes (at longAt(k)) count rejected[i][k] rejections, with the debug
// dumps of its end.
func writeRejectingBundle(t *testing.T, out string, rejected ...[]float64) {
	t.Helper()
	c := &Capture{}
	for i, counts := range rejected {
		s := &Snapshot{Instance: fmt.Sprintf("https://10.0.0.%d:6443", i+1), CapturedAt: longAt(len(counts) - 1), Raw: map[string][]byte{
			FilePriorityLevels: readFixture(t, "v1.37.1-load", FilePriorityLevels),
		}}
		for k, v := range counts {
			s.Raw[MetricsFile(k)] = fmt.Appendf(nil, "# TYPE apiserver_flowcontrol_rejected_requests_total counter\napiserver_flowcontrol_rejected_requests_total{flow_schema=\"f\",priority_level=\"tiny\",reason=\"queue-full\"} %g\n", v)
			s.Raw[MetricsTimeKey(k)] = []byte(longAt(k).Format(time.RFC3339Nano))
		}
		c.Snapshots = append(c.Snapshots, s)
	}
	if err := WriteBundle(out, c, Manifest{CreatedAt: longAt(100)}); err != nil {
		t.Fatal(err)
	}
}

// TestLargestBurst: of a watch's bundle whose latest scrapes show no 429,
// CaptureOptions.LargestBurst reads the scrapes around the largest burst
// of rejections (of any instance, the same window for every one; a lull of
// 10s or less does not end a burst), without the debug dumps, and says so;
// of one still rejecting at its end, the burst it ends in, with the end's
// dumps; of one that rejected only between its latest two, or never, its
// latest two.
func TestLargestBurst(t *testing.T) {
	saved := heldBodies
	heldBodies = 64 // a tarball's bodies are streamed
	defer func() { heldBodies = saved }()
	tests := []struct {
		name      string
		rejected  [][]float64
		wantKs    []int
		wantCount string
		// dumps: the end's debug dumps are kept (they are of the scrapes)
		dumps bool
	}{
		// 5s between scrapes: a burst ends after 10s without a 429
		{"two bursts, the second larger", [][]float64{{0, 3, 3, 3, 3, 3, 5, 20, 40, 40, 40}}, []int{5, 8}, "37 429s", false},
		{"one burst with a lull", [][]float64{{0, 10, 10, 20, 20, 20, 20}}, []int{0, 3}, "20 429s", false},
		{"a counter that restarted", [][]float64{{0, 5, 5, 5, 5, 2, 9, 9, 9}}, []int{4, 6}, "9 429s", false},
		{"the other instance's burst", [][]float64{{0, 1, 1, 1, 1, 1, 1, 1}, {7, 7, 7, 7, 30, 60, 60, 60}}, []int{3, 5}, "53 429s", false},
		{"rejecting at the end", [][]float64{{0, 0, 0, 10, 20, 30}}, []int{2, 5}, "the burst it ends in, 30 429s", true},
		{"rejecting at the end since a lull", [][]float64{{0, 10, 10, 10, 11}}, []int{0, 4}, "the burst it ends in, 11 429s", true},
		{"rejecting between the latest two only", [][]float64{{0, 0, 0, 0, 5}}, []int{3, 4}, "", true},
		{"never rejecting", [][]float64{{4, 4, 4, 4}}, []int{2, 3}, "", true},
	}
	for _, tt := range tests {
		for _, tarball := range []bool{false, true} {
			name := tt.name
			p := filepath.Join(t.TempDir(), "watch")
			if tarball {
				name, p = name+" (tarball)", p+".tar.gz"
			}
			t.Run(name, func(t *testing.T) {
				writeRejectingBundle(t, p, tt.rejected...)
				c, err := (&BundleSource{Path: p}).Capture(context.Background(), CaptureOptions{Parts: PartAll, LargestBurst: true})
				if err != nil {
					t.Fatal(err)
				}
				// the burst's note, by words of its own: a note that
				// names the bundle holds its temporary path, whose
				// random digits can hold "429"
				var note string
				for _, n := range c.Notes {
					if strings.Contains(n, "429s between the scrapes") {
						note += n
					}
				}
				for _, s := range c.Snapshots {
					if got := scrapeKs(t, times(s)); !slices.Equal(got, tt.wantKs) {
						t.Errorf("%s: scrapes %v, want %v", s.Instance, got, tt.wantKs)
					}
					if kept := s.PriorityLevelDump != nil; kept != tt.dumps {
						t.Errorf("%s: the debug dumps kept: %v, want %v", s.Instance, kept, tt.dumps)
					}
				}
				if tt.wantCount == "" && note != "" || tt.wantCount != "" && !strings.Contains(note, tt.wantCount) {
					t.Errorf("notes %q, want %q", note, tt.wantCount)
				}
			})
		}
	}
}

// TestWatchFramesAroundTheBurst: a watch too long to play back whole is
// played back over the steps around its largest burst of 429s, and says
// so; a short one whole, one step per scrape after the first.
func TestWatchFramesAroundTheBurst(t *testing.T) {
	counts := make([]float64, 30)
	for k := range counts {
		switch {
		case k >= 12:
			counts[k] = 40
		case k >= 10:
			counts[k] = float64(20 * (k - 9))
		}
	}
	p := filepath.Join(t.TempDir(), "watch")
	writeRejectingBundle(t, p, counts)
	frames, note, err := (&BundleSource{Path: p}).WatchFrames()
	if err != nil || len(frames) != 29 || note != "" || !frames[0].At.Equal(longAt(1)) {
		t.Fatalf("the whole watch: %d frames from %v, note %q, %v; want 29 from %v", len(frames), frames[0].At, note, err, longAt(1))
	}
	saved := maxFrameBodies
	maxFrameBodies = 6 * 160 << 10
	defer func() { maxFrameBodies = saved }()
	frames, note, err = (&BundleSource{Path: p}).WatchFrames()
	if err != nil {
		t.Fatal(err)
	}
	var at []int
	for _, f := range frames {
		at = append(at, int(f.At.Sub(longT0)/(5*time.Second)))
		c, _, err := CaptureFromFiles(f.Files, CaptureOptions{Parts: PartAll, AllScrapes: true})
		if err != nil || len(c.Snapshots[0].Metrics) != 2 {
			t.Fatalf("frame at %v: %v", f.At, err)
		}
	}
	// the burst: the counter rose from scrape 9 (0) to scrape 11 (40)
	if !slices.Equal(at, []int{8, 9, 10, 11, 12, 13}) || !strings.Contains(note, "played back are the 6") {
		t.Errorf("frames at scrapes %v, note %q; want the 6 from 8 to 13 around the burst, and a note", at, note)
	}
}

// TestWatchFramesSeveralInstances: a watch of two apiservers, which it
// scrapes each in turn (the second 2s after the first) and of which the
// second went away before the end: each frame holds every instance, the
// pair ending at its latest scrape by the frame's time (the second's last
// pair once it is gone), with that pair's own bodies.
func TestWatchFramesSeveralInstances(t *testing.T) {
	const n, gone = 8, 6 // the second's scrapes end with scrape 5
	c := &Capture{}
	for i, count := range []int{n, gone} {
		s := &Snapshot{Instance: fmt.Sprintf("https://10.0.0.%d:6443", i+1), CapturedAt: longAt(n - 1), Raw: map[string][]byte{
			FilePriorityLevels: readFixture(t, "v1.37.1-load", FilePriorityLevels),
		}}
		for k := range count {
			// a counter that tells instance and scrape apart: 100i + k
			s.Raw[MetricsFile(k)] = fmt.Appendf(nil, "# TYPE apiserver_flowcontrol_rejected_requests_total counter\napiserver_flowcontrol_rejected_requests_total{flow_schema=\"f\",priority_level=\"tiny\",reason=\"queue-full\"} %d\n", 100*i+k)
			s.Raw[MetricsTimeKey(k)] = []byte(longAt(k).Add(time.Duration(i) * 2 * time.Second).Format(time.RFC3339Nano))
		}
		c.Snapshots = append(c.Snapshots, s)
	}
	p := filepath.Join(t.TempDir(), "watch")
	if err := WriteBundle(p, c, Manifest{CreatedAt: longAt(n)}); err != nil {
		t.Fatal(err)
	}
	frames, note, err := (&BundleSource{Path: p}).WatchFrames()
	if err != nil || len(frames) != n-1 || note != "" {
		t.Fatalf("%d frames, note %q, %v; want %d", len(frames), note, err, n-1)
	}
	counter := func(s *Snapshot, j int) int {
		t.Helper()
		f := s.Metrics[j].Families["apiserver_flowcontrol_rejected_requests_total"]
		if f == nil || len(f.Metric) != 1 {
			t.Fatalf("%s scrape %d: no rejection counter", s.Instance, j)
		}
		return int(f.Metric[0].GetCounter().GetValue())
	}
	for step, f := range frames {
		fc, _, err := CaptureFromFiles(f.Files, CaptureOptions{Parts: PartAll, AllScrapes: true})
		if err != nil || len(fc.Snapshots) != 2 {
			t.Fatalf("frame %d: %v, %d instances", step, err, len(fc.Snapshots))
		}
		// the frame is at the first instance's scrape step+1; the second's
		// latest by then is step (2s later each), or its last
		wantLast := []int{step + 1, min(step, gone-1)}
		for i, s := range fc.Snapshots {
			if len(s.Metrics) != 2 {
				t.Fatalf("frame %d, %s: %d scrapes", step, s.Instance, len(s.Metrics))
			}
			first, last := counter(s, 0), counter(s, 1)
			want := 100*i + max(wantLast[i], 1)
			if i == 1 && wantLast[i] == 0 {
				// its first step: no scrape yet by the frame's time; the
				// pair is its first two
				want = 101
			}
			if last != want || first != last-1 || s.Metrics[1].Time.After(f.At) && wantLast[i] != 0 {
				t.Errorf("frame %d (%v), %s: the pair %d–%d at %v; want the pair ending at %d", step, f.At, s.Instance, first, last, s.Metrics[1].Time, want)
			}
		}
	}
}
