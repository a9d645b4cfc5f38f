package dump

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	clocktesting "k8s.io/utils/clock/testing"
)

// spoolSource is a fake cluster of one instance for dump bundle --watch:
// each capture is new, its scrape a distinct 16 kB body. At each capture
// it checks that every capture it handed out before is gone from the heap (weak pointers, after a collection): the watch holds one
// scrape at a time, by design. And at chosen captures it reads the
// bundle the watch is writing, as a killed watch would leave it.
type spoolSource struct {
	t       *testing.T
	clk     *clocktesting.FakeClock
	spool   string
	readAt  map[int]bool
	mu      sync.Mutex
	calls   int
	handed  []weak.Pointer[byte]
	scraped chan struct{}
	// leaked counts the bodies still reachable when they should not be
	leaked int
	// held, when set, is how many scrapes the bundle holds at capture n
	// (n-1: the start's and one per capture since but the last)
	held func(n int) int
	// gzipped says the spool writes the scrapes' bodies gzipped (a
	// tarball's), else as they are
	gzipped bool
}

const spoolUser = "alice@example.com"

func (f *spoolSource) Describe() string { return "https://fake:6443" }

func (f *spoolSource) Capture(_ context.Context, opts CaptureOptions) (*Capture, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	n := f.calls
	if n > 2 {
		runtime.GC()
		// every capture handed out before is written: none of their
		// bodies may be reachable
		for i, p := range f.handed {
			if p.Value() != nil {
				f.leaked++
				f.t.Errorf("capture %d: the body of capture %d is still held", n, i+1)
			}
		}
	}
	if f.readAt[n] {
		files, err := ReadBundleFiles(f.spool)
		if err != nil {
			f.t.Fatalf("capture %d: the watch's bundle so far: %v", n, err)
		}
		c, _, err := CaptureFromFiles(files, CaptureOptions{Parts: PartAll, AllScrapes: true})
		if err != nil {
			f.t.Fatalf("capture %d: the watch's bundle so far: %v", n, err)
		}
		// the start's scrape, and one per capture since but the last,
		// which was written before this one began
		want := n - 1
		if f.held != nil {
			want = f.held(n)
		}
		if got := len(c.Snapshots[0].Metrics); got != want {
			f.t.Errorf("capture %d: the bundle so far holds %d scrapes, want %d", n, got, want)
		}
		gz, _ := filepath.Glob(filepath.Join(f.spool, "instance-0", "metrics-*.txt.gz"))
		plain, _ := filepath.Glob(filepath.Join(f.spool, "instance-0", "metrics-*.txt"))
		if f.gzipped && (len(gz) != want || len(plain) != 0) || !f.gzipped && (len(gz) != 0 || len(plain) != want) {
			f.t.Errorf("capture %d: %d scrape bodies gzipped and %d not; want all %d gzipped: %v", n, len(gz), len(plain), want, f.gzipped)
		}
	}
	body := []byte(fmt.Sprintf("# TYPE apiserver_flowcontrol_dispatched_requests_total counter\napiserver_flowcontrol_dispatched_requests_total{flow_schema=\"a\",priority_level=\"b\"} %d\n", n))
	body = append(body, bytes.Repeat([]byte("# filler of a real scrape's size\n"), 16<<10/33)...)
	f.handed = append(f.handed, weak.Make(&body[0]))
	at := f.clk.Now().UTC()
	s := &Snapshot{Instance: "https://fake:6443", CapturedAt: at, Raw: map[string][]byte{
		MetricsFile(0):    body,
		MetricsTimeKey(0): []byte(at.Format(time.RFC3339Nano)),
	}}
	if opts.Parts != PartMetrics {
		s.Raw[FilePriorityLevels] = []byte("PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests\n")
		s.Raw[FileRequests] = []byte("PriorityLevelName, FlowSchemaName, QueueIndex, RequestIndexInQueue, FlowDistingsher, ArriveTime, InitialSeats, FinalSeats, AdditionalLatency, StartTime, UserName, Verb, APIPath, Namespace, Name, APIVersion, Resource, SubResource\n" +
			"exempt, exempt, -1, -1, , " + at.Format(time.RFC3339Nano) + ", 1, 0, 0s, " + at.Format(time.RFC3339Nano) + ", " + spoolUser + ", get, /api/v1/namespaces/team-a/pods, team-a, , v1, pods, \n")
	}
	if err := s.ParseRaw(); err != nil {
		f.t.Fatal(err)
	}
	if opts.Parts == PartMetrics {
		f.scraped <- struct{}{}
	}
	return &Capture{Snapshots: []*Snapshot{s}}, nil
}

// TestWatchWritesAsItGoes runs Record (dump bundle --watch) over 100 scrapes of a
// fake instance, driven by a fake clock: each scrape is on disk before the
// next is taken, the watch never holds more than the scrape it is writing
// (the fake source checks every earlier body is collectable), the bundle
// is readable at any moment as a killed watch would leave it, and the
// tarball at the end holds every scrape, in order, with the start's dumps
// redacted as the end's are. About 0.6 s of CPU, 1.5 s of wall time and 2 MB of disk.
func TestWatchWritesAsItGoes(t *testing.T) {
	const scrapes = 100
	dir := t.TempDir()
	to := filepath.Join(dir, "incident.tar.gz")
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	src := &spoolSource{t: t, clk: clk, spool: to + PartialSuffix, readAt: map[int]bool{3: true, 50: true, scrapes + 1: true}, scraped: make(chan struct{}), gzipped: true}
	o := RecordOptions{To: to, Redactor: NewRedactor([]byte("key")), Duration: scrapes*time.Second + time.Second/2, Interval: time.Second, Clock: clk}
	var progressed int
	rec := recordOnFakeClock(t, src, clk, o, scrapes, RecordEvents{Progress: func(int, int, int, time.Duration, int64) { progressed++ }})
	if src.leaked > 0 {
		t.Fatalf("%d bodies were held after they were written", src.leaked)
	}
	if _, err := os.Stat(to + PartialSuffix); !os.IsNotExist(err) {
		t.Errorf("the spool %s is left after the tarball was written (%v)", to+PartialSuffix, err)
	}
	files, err := ReadBundleFiles(to)
	if err != nil {
		t.Fatal(err)
	}
	c, m, err := CaptureFromFiles(files, CaptureOptions{Parts: PartAll, AllScrapes: true})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Snapshots[0]
	if got, want := len(s.Metrics), scrapes+2; got != want {
		t.Fatalf("the bundle holds %d scrapes, want %d (the start's, %d, the end's)", got, want, scrapes)
	}
	for i := 1; i < len(s.Metrics); i++ {
		if !s.Metrics[i].Time.After(s.Metrics[i-1].Time) {
			t.Fatalf("scrape %d at %v is not after scrape %d at %v", i, s.Metrics[i].Time, i-1, s.Metrics[i-1].Time)
		}
	}
	if m.Instances[0].Scrapes != 0 || len(m.Instances[0].Files) < 2*(scrapes+2) {
		t.Errorf("the finished manifest lists %d files (scrapes counted: %d); want every file listed", len(m.Instances[0].Files), m.Instances[0].Scrapes)
	}
	for _, name := range []string{FileRequests, StartDumpPrefix + FileRequests} {
		b, ok := s.Raw[name]
		if !ok {
			t.Errorf("no %s in the bundle", name)
		}
		if strings.Contains(string(b), spoolUser) || strings.Contains(string(b), "team-a") {
			t.Errorf("%s is not redacted:\n%s", name, b)
		}
	}
	if rec.Instances != 1 || rec.Scrapes != scrapes+2 || progressed != scrapes {
		t.Errorf("Record says %d instance(s) of %d scrapes, after %d progress calls; want 1 of %d after %d", rec.Instances, rec.Scrapes, progressed, scrapes+2, scrapes)
	}
}

// TestWatchKeepsTheLastScrapes runs Record with Keep (dump bundle --watch
// --keep, a flight recorder) over 100 scrapes a second apart, keeping 10s:
// the bundle holds the scrapes of the last 10s at every moment, readable
// as a killed watch would leave it, and at the end; the older ones are
// gone from the disk.
func TestWatchKeepsTheLastScrapes(t *testing.T) {
	const scrapes = 100
	to := filepath.Join(t.TempDir(), "recorder")
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	// at capture n the bundle holds the scrapes at 0 to n-2 s; those of
	// the last 10s are the 11 at n-12 s to n-2 s
	src := &spoolSource{t: t, clk: clk, spool: to, readAt: map[int]bool{5: true, 13: true, 60: true}, scraped: make(chan struct{}), held: func(n int) int { return min(n-1, 11) }}
	o := RecordOptions{To: to, Duration: scrapes*time.Second + time.Second/2, Interval: time.Second, Keep: 10 * time.Second, Clock: clk}
	var size int64
	rec := recordOnFakeClock(t, src, clk, o, scrapes, RecordEvents{Progress: func(_, _, _ int, _ time.Duration, n int64) { size = n }})
	c, err := (&BundleSource{Path: to}).Capture(context.Background(), CaptureOptions{Parts: PartMetrics, AllScrapes: true})
	if err != nil {
		t.Fatal(err)
	}
	// the end's scrape at 100.5 s keeps those at 91 s to 100 s
	ms := c.Snapshots[0].Metrics
	start := clk.Now().Add(-scrapes*time.Second - time.Second/2)
	if len(ms) != 11 || !ms[0].Time.Equal(start.Add(91*time.Second)) || !ms[len(ms)-1].Time.Equal(start.Add(100*time.Second+time.Second/2)) {
		var at []time.Duration
		for _, m := range ms {
			at = append(at, m.Time.Sub(start))
		}
		t.Fatalf("the bundle holds scrapes at %v, want the 11 from 91s to 100.5s", at)
	}
	bodies, err := filepath.Glob(filepath.Join(to, "instance-0", "metrics-*.txt"))
	if err != nil || len(bodies) != 11 {
		t.Errorf("%d scrape bodies on disk (%v), want the 11 kept", len(bodies), err)
	}
	if rec.Scrapes != 11 || size > 20*(16<<10) {
		t.Errorf("Record says %d scrapes, its progress %d bytes; want 11 scrapes of about 16 kB each", rec.Scrapes, size)
	}
}

// TestRedactAWatchsStartDump: a watch's bundle read back (dump bundle
// --from WATCH --redact) holds the start's request dump beside the end's;
// both are redacted (the start's was written as it was read).
func TestRedactAWatchsStartDump(t *testing.T) {
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339Nano)
	dumpRequests := []byte("PriorityLevelName, FlowSchemaName, QueueIndex, RequestIndexInQueue, FlowDistingsher, ArriveTime, InitialSeats, FinalSeats, AdditionalLatency, StartTime, UserName, Verb, APIPath, Namespace, Name, APIVersion, Resource, SubResource\n" +
		"exempt, exempt, -1, -1, " + spoolUser + ", " + at + ", 1, 0, 0s, " + at + ", " + spoolUser + ", get, /api/v1/namespaces/team-a/pods, team-a, , v1, pods, \n")
	s := &Snapshot{Instance: "https://fake:6443", Raw: map[string][]byte{FileRequests: dumpRequests, StartDumpPrefix + FileRequests: dumpRequests}}
	if err := s.ParseRaw(); err != nil {
		t.Fatal(err)
	}
	if err := NewRedactor([]byte("key")).RedactCapture(&Capture{Snapshots: []*Snapshot{s}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{FileRequests, StartDumpPrefix + FileRequests} {
		if b := string(s.Raw[name]); strings.Contains(b, spoolUser) || strings.Contains(b, "team-a") || !strings.Contains(b, "exempt") {
			t.Errorf("%s is not redacted:\n%s", name, b)
		}
	}
}

// recordOnFakeClock runs Record over src, stepping clk a second for each of
// the scrapes and half a second more to end it.
func recordOnFakeClock(t *testing.T, src *spoolSource, clk *clocktesting.FakeClock, o RecordOptions, scrapes int, ev RecordEvents) Recorded {
	t.Helper()
	var rec Recorded
	done := make(chan error)
	go func() {
		var err error
		rec, err = Record(context.Background(), src, o, ev)
		done <- err
	}()
	for range scrapes {
		waitForWaiters(t, clk)
		clk.Step(time.Second)
		<-src.scraped
	}
	waitForWaiters(t, clk)
	clk.Step(time.Second / 2)
	if err := <-done; err != nil {
		t.Fatalf("Record: %v", err)
	}
	return rec
}
