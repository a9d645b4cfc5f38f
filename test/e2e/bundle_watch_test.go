package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
)

// lockedBuffer is a buffer a process writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDumpBundleWatch records the local control plane with dump bundle
// --watch for a few seconds, ends it with SIGINT as Ctrl-C does, and reads
// the bundle back: it holds a scrape of every second, and top levels and
// simulate read it (simulate over a window inside the watch, whose CPU
// evidence it then covers).
func TestDumpBundleWatch(t *testing.T) {
	c := cluster(t)
	kc := kubeconfig(t, c)
	bin := pluginBinary(t)
	bundle := filepath.Join(t.TempDir(), "watch.tar.gz")
	const want = 5
	errOut := watchUntil(t, exec.Command(bin, "dump", "bundle", "--kubeconfig", kc, "--watch", "5m", "--interval", "1s", "--to", bundle),
		"a progress line with 5 scrapes", func(stderr string) bool { return strings.Contains(stderr, ": 5 scrapes,") })
	if !strings.Contains(errOut.String(), "wrote "+bundle) {
		t.Errorf("stderr does not say the bundle was written:\n%s", errOut.String())
	}

	capt, err := (&dump.BundleSource{Path: bundle}).Capture(context.Background(), dump.CaptureOptions{Parts: dump.PartAll, AllScrapes: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(capt.Snapshots) == 0 {
		t.Fatal("the bundle holds no instance")
	}
	s := capt.Snapshots[0]
	// the five the progress line counted (the start's among them), and
	// the end's
	if len(s.Metrics) < want+1 {
		t.Fatalf("the bundle holds %d scrapes of %s, want at least %d", len(s.Metrics), s.Instance, want+1)
	}
	for i := 1; i < len(s.Metrics); i++ {
		if !s.Metrics[i].Time.After(s.Metrics[i-1].Time) {
			t.Errorf("scrape %d at %v is not after scrape %d at %v", i, s.Metrics[i].Time, i-1, s.Metrics[i-1].Time)
		}
	}
	if _, ok := s.Raw[dump.FilePriorityLevels]; !ok {
		t.Error("the bundle holds no priority-level dump of the end")
	}
	if _, ok := s.Raw["start-"+dump.FilePriorityLevels]; !ok {
		t.Error("the bundle holds no priority-level dump of the start")
	}

	mustApf(t, "top", "levels", "--from", bundle)

	if ahead := os.Getenv("KUBECTL_APF_CLOCK_AHEAD"); ahead != "" {
		// make test-clock-ahead moves the plugin's clock, which stamps
		// the scrapes, and not the server's, which stamps the logs: the
		// two are a year apart, and no window holds both
		t.Skipf("KUBECTL_APF_CLOCK_AHEAD=%s: the scrapes are stamped by the plugin's clock, moved ahead, and the logs by the server's: simulate over a window of both is checked without it", ahead)
	}
	// simulate over a window inside the watch: the log's requests of
	// the second to the second-last scrape, evidence the bundle covers
	time.Sleep(time.Second) // let the audit backend flush its last batch
	a := c.APIServers[0]
	logFile, auditLog := copyFile(t, a.LogFile), copyFile(t, a.AuditLog)
	since := s.Metrics[1].Time.UTC().Format(time.RFC3339Nano)
	until := s.Metrics[len(s.Metrics)-2].Time.UTC().Format(time.RFC3339Nano)
	res := mustApf(t, "simulate", "--from", bundle, "--workload", logFile, "--workload", auditLog, "--since", since, "--until", until, "-o", "json")
	var got struct {
		Window *struct {
			Requests, Of int64
		} `json:"window"`
		Evidence *struct {
			Requests, Total int64
			Scrapes         int
		} `json:"evidence"`
	}
	if err := json.Unmarshal([]byte(res), &got); err != nil {
		t.Fatalf("simulate -o json: %v\n%s", err, res)
	}
	if got.Window == nil || got.Window.Requests == 0 || got.Window.Requests >= got.Window.Of {
		t.Errorf("window %+v: want some of the log's requests, not all", got.Window)
	}
	if got.Evidence == nil || got.Evidence.Scrapes != len(s.Metrics) || got.Evidence.Requests != got.Evidence.Total {
		t.Errorf("evidence %+v: want the %d scrapes' evidence covering every request of the window", got.Evidence, len(s.Metrics))
	}
	text := mustApf(t, "simulate", "--from", bundle, "--workload", logFile, "--workload", auditLog, "--since", since, "--until", until)
	t.Logf("simulate over the window:\n%s", text)
}

// TestDumpBundleWatchKeep records the local control plane with dump bundle
// --watch --keep (a flight recorder) for longer than it keeps, ends it with
// SIGINT, and reads the bundle back: it holds the scrapes of the last
// --keep only, the older ones removed from the disk as the watch went on,
// and top levels reads it.
func TestDumpBundleWatchKeep(t *testing.T) {
	c := cluster(t)
	kc := kubeconfig(t, c)
	bin := pluginBinary(t)
	bundle := filepath.Join(t.TempDir(), "recorder")
	// ten scrapes (a progress line each), 5s: more than twice what it keeps
	watchUntil(t, exec.Command(bin, "dump", "bundle", "--kubeconfig", kc, "--watch", "5m", "--interval", "500ms", "--keep", "2s", "--to", bundle),
		"a tenth progress line", func(stderr string) bool { return strings.Count(stderr, "(those of the last 2s)") >= 10 })
	c2, err := (&dump.BundleSource{Path: bundle}).Capture(t.Context(), dump.CaptureOptions{Parts: dump.PartAll, AllScrapes: true})
	if err != nil {
		t.Fatal(err)
	}
	ms := c2.Snapshots[0].Metrics
	// the scrapes of the 2s before the end's: five at 500ms, fewer when
	// scrapes come late, and never fewer than two (a pair gives rates)
	if len(ms) < 2 || len(ms) > 6 {
		t.Fatalf("the bundle holds %d of the watch's 11 or more scrapes, want those of the last 2s (about 5)", len(ms))
	}
	if span := ms[len(ms)-1].Time.Sub(ms[0].Time); span > 2*time.Second && len(ms) > 2 {
		t.Errorf("the bundle's %d scrapes span %v, more than the 2s kept", len(ms), span)
	}
	bodies, err := filepath.Glob(filepath.Join(bundle, "instance-0", "metrics-*.txt"))
	if err != nil || len(bodies) != len(ms) {
		t.Errorf("%d scrape bodies on disk (%v), want the %d kept", len(bodies), err, len(ms))
	}
	mustApf(t, "top", "levels", "--from", bundle)
}

// watchUntil runs a dump bundle --watch until its stderr says done (within
// 2 minutes), ends it with SIGINT as Ctrl-C does, and returns its stderr.
func watchUntil(t *testing.T, cmd *exec.Cmd, what string, done func(stderr string) bool) *lockedBuffer {
	t.Helper()
	var out, errOut lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !done(errOut.String()) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no %s after 2 minutes; stderr:\n%s", what, errOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("dump bundle --watch after SIGINT: %v\nstderr:\n%s", err, errOut.String())
	}
	t.Logf("stderr:\n%s", errOut.String())
	return &errOut
}
