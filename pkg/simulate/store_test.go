package simulate

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// fakeStore answers the evidence's scrapes as a store would: given
// scrapes, or none.
type fakeStore struct {
	scrapes  []*metrics.Scrape
	asked    [][2]time.Time
	instance string
}

func (f *fakeStore) Scrapes(_ context.Context, from, to time.Time) ([]StoreScrapes, error) {
	f.asked = append(f.asked, [2]time.Time{from, to})
	if f.scrapes == nil {
		return nil, nil
	}
	return []StoreScrapes{{Instance: f.instance, Scrapes: f.scrapes, Interval: time.Second}}, nil
}

func (f *fakeStore) Describe() string { return "http://prometheus.test:9090" }

// TestStoreEvidenceIsPreferred (the starved recording and its what-if):
// a store whose scrapes around the window replayed are the bundle's own
// (a store that scraped at the same moments) gives the bundle's
// prediction exactly, read from the store (the evidence says so, and a
// note says the store is preferred to the bundle given beside it); a
// store whose scrapes are a second wider either side is the evidence
// read (its window is the store's); a store holding nothing leaves the
// bundle's evidence, and says so. The replay is asked about the
// workload's own window. About 3 s of CPU (four replays of a small
// recording).
func TestStoreEvidenceIsPreferred(t *testing.T) {
	dir := filepath.Join(recordingsDir(t), "starved")
	kr := openRecording(t, dir)
	whatIf := filepath.Join(dir, "whatif.yaml")
	run := func(store EvidenceStore) *Result {
		t.Helper()
		cfg := commandDefaults()
		cfg.Workloads, cfg.CPULimit, cfg.Store = []string{kr.logFile, kr.auditFile}, kr.rec.APIServerCPUs, store
		return simulateT(t, stateInput{from: kr.bundle, files: []string{whatIf}}, cfg)
	}
	bundle := run(nil)
	if bundle.Evidence == nil || bundle.Evidence.Store != "" {
		t.Fatalf("the bundle's evidence: %+v", bundle.Evidence)
	}
	st := loadState(t, stateInput{from: kr.bundle}, commandDefaults())
	ms := st.Snapshots[0].Metrics
	first, last := ms[0], ms[len(ms)-1]
	levels := whatIfLevels(nil, kr.rec.Recorded)

	same := &fakeStore{scrapes: []*metrics.Scrape{first, last}, instance: st.Snapshots[0].Instance}
	got := run(same)
	if len(same.asked) != 1 {
		t.Fatalf("the store was asked %d times, want once", len(same.asked))
	}
	if got.Evidence == nil || got.Evidence.Store != same.Describe() || !got.Evidence.Metrics.From.Equal(first.Time) || !got.Evidence.Metrics.To.Equal(last.Time) {
		t.Errorf("evidence %+v: want the store's scrapes", got.Evidence)
	}
	if !hasNote(got.Notes, "given both, the store is preferred") || !hasNote(got.Notes, "scraped the apiserver every 1s") {
		t.Errorf("notes %q: want the store preferred, and what its scrape interval limits", got.Notes)
	}
	for _, l := range levels {
		for _, after := range []bool{false, true} {
			if g, w := rejected(got, after, l), rejected(bundle, after, l); g != w {
				t.Errorf("%s (after the change: %v): the store's scrapes predict %d 429s, the bundle's same scrapes %d", l, after, g, w)
			}
		}
	}

	wider := func(s *metrics.Scrape, d time.Duration) *metrics.Scrape {
		c := *s
		c.Time = s.Time.Add(d)
		return &c
	}
	w := run(&fakeStore{scrapes: []*metrics.Scrape{wider(first, -time.Second), wider(last, time.Second)}, instance: st.Snapshots[0].Instance})
	if w.Evidence == nil || !w.Evidence.Metrics.From.Equal(first.Time.Add(-time.Second)) || !w.Evidence.Metrics.To.Equal(last.Time.Add(time.Second)) {
		t.Errorf("evidence %+v: want the wider store's scrapes", w.Evidence)
	}

	none := run(&fakeStore{})
	if none.Evidence == nil || none.Evidence.Store != "" || !hasNote(none.Notes, "the bundle's scrapes are read instead") {
		t.Errorf("an empty store: evidence %+v, notes %q; want the bundle's, and a note", none.Evidence, none.Notes)
	}
	for _, l := range levels {
		if g, w := rejected(none, true, l), rejected(bundle, true, l); g != w {
			t.Errorf("%s: an empty store predicts %d, the bundle %d", l, g, w)
		}
	}
}

func hasNote(notes []string, s string) bool {
	for _, n := range notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}
