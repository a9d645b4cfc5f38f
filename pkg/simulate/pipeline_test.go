package simulate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
)

// TestSimulateStdinCalibrated replays a recorded audit log alone, the case
// whose calibration iterates to a fixed point, from standard input and
// from the file, and checks that standard input is calibrated (the fixed
// point iterated) and gives the file's result: the calibration's later
// passes read the tape of the one reading of the input.
func TestSimulateStdinCalibrated(t *testing.T) {
	dir := fixture.Path("simulate", "recordings", "starved")
	audit := fixture.Gunzip(t, filepath.Join(dir, recording.AuditLogFile), t.TempDir())
	in := stateInput{from: filepath.Join(dir, recording.BundleFile)}
	cfg := commandDefaults()
	cfg.Workloads = []string{audit}
	fromFile := simulateT(t, in, cfg)
	f, err := os.Open(audit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg.Workloads, cfg.Stdin = []string{"-"}, f
	fromStdin := simulateT(t, in, cfg)
	if est := fromStdin.Calibration.Estimated; est.FixedPointIterations < 1 || est.ExecutionFromReplay == 0 {
		t.Errorf("standard input was not calibrated: %+v", est)
	}
	if asJSON(t, fromStdin) != asJSON(t, fromFile) {
		t.Errorf("the calibrated replay of standard input differs from the replay of the same file")
	}
}

// TestSimulateInterrupted checks that a cancelled context (SIGINT) stops a
// long replay with an error instead of reading on.
func TestSimulateInterrupted(t *testing.T) {
	cfg := commandDefaults()
	cfg.Workloads = []string{(&jsonl{}).burst("0s", "alice", "get", "/api/v1/namespaces/default/pods/a", "1ms", 10000).write(t)}
	st := loadState(t, stateInput{defaults: true}, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, st, cfg)
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("Run with a cancelled context = %v, want interrupted", err)
	}
	if res != nil {
		t.Errorf("a partial result: %+v", res)
	}
}

// TestSimulateSaysWhyLinesWereSkipped: when lines cannot be read as
// requests, simulate says why, counted by reason, without --strict: in
// the error when no request is left, and in the note when some are. The
// lines are a kubelet's httplog line as a log viewer shows it, from the
// source file on (without klog's severity, date and time, so without a
// timestamp), and one cut short.
func TestSimulateSaysWhyLinesWereSkipped(t *testing.T) {
	const (
		good      = `I1121 14:15:17.980328       1 httplog.go:134] "HTTP" verb="GET" URI="/api/v1/namespaces/default/configmaps/app" latency="2.5ms" userAgent="kubelet" audit-ID="aaaaaaaa-0000-0000-0000-000000000001" srcIP="10.0.0.5:53422" apf_pl="system" apf_fs="system-nodes" apf_iseats=1 apf_fseats=0 apf_additionalLatency="0s" apf_execution_time="1.9ms" resp=200`
		noHeader  = `httplog.go:134] "HTTP" verb="GET" URI="/api/v1/namespaces/default/configmaps/app" latency="2.5ms" userAgent="kubelet" audit-ID="aaaaaaaa-0000-0000-0000-000000000002" srcIP="10.0.0.5:53422" apf_pl="system" apf_fs="system-nodes" resp=200`
		truncated = `I1121 14:15:17.980328       1 httplog.go:134] "HTTP" verb="GET" URI="/api/v1/namespaces/default/configmaps/app" latency="2.5ms" userAgent="kubelet" audit-ID="cccccccc-0000-0000-0000-000000000003" srcIP="10.0.0.5:53422" apf_pl="system"`
	)
	cfg := commandDefaults()
	cfg.Workloads = []string{writeFile(t, "pasted.log", strings.Join([]string{noHeader, truncated, noHeader, noHeader}, "\n")+"\n")}
	_, err := simulateE(context.Background(), stateInput{defaults: true}, cfg)
	want := "pasted.log: none of its 4 lines could be read as a request: 3 httplog lines without a timestamp, 1 httplog line without resp= (cut short?)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("simulate on lines it cannot read: %v\nwant %s", err, want)
	}
	cfg.Workloads = []string{writeFile(t, "some.log", strings.Join([]string{good, noHeader, truncated}, "\n")+"\n")}
	res := simulateT(t, stateInput{defaults: true}, cfg)
	var note string
	for _, n := range res.Notes {
		if strings.Contains(n, "skipped") {
			note = n
		}
	}
	if want := "skipped 2 lines that could not be read as a request (1 httplog line without a timestamp, 1 httplog line without resp= (cut short?); --strict refuses them)"; !strings.Contains(note, want) {
		t.Errorf("the note on skipped lines: %q\nwant it to say %q", note, want)
	}
}

// countingSource is a bundle that counts its captures and, with
// failMetrics, fails any capture of the metrics as a server that forbids
// /metrics does.
type countingSource struct {
	dump.BundleSource
	captures    int
	failMetrics bool
}

func (s *countingSource) Capture(ctx context.Context, opts dump.CaptureOptions) (*dump.Capture, error) {
	s.captures++
	if s.failMetrics && opts.Parts&dump.PartMetrics != 0 {
		return nil, errors.New("forbidden: /metrics")
	}
	return s.BundleSource.Capture(ctx, opts)
}

// TestSimulateReadsTheStateOnce: with --server-concurrency (nothing to
// infer from the metrics), the calibration still gets the object counts,
// from the one capture of the state; when the metrics cannot be read, the
// replay goes on without them and says so.
func TestSimulateReadsTheStateOnce(t *testing.T) {
	dir := fixture.Path("simulate", "recordings", "lists")
	cfg := commandDefaults()
	cfg.Workloads = []string{fixture.Gunzip(t, filepath.Join(dir, recording.AuditLogFile), t.TempDir())}
	for _, failMetrics := range []bool{false, true} {
		src := &countingSource{BundleSource: dump.BundleSource{Path: filepath.Join(dir, recording.BundleFile)}, failMetrics: failMetrics}
		o := load.NewOptions(nil, load.Config)
		o.Source = src
		st, err := o.Load(context.Background(), load.Request{ServerConcurrency: 30, InferConcurrency: true, Metrics: true})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Source = src.Describe()
		res, err := Run(context.Background(), st, cfg)
		if err != nil {
			t.Fatal(err)
		}
		seats := res.Calibration.Estimated.SeatsFromObjectCounts
		notes := strings.Join(res.Notes, "\n")
		switch {
		case !failMetrics && src.captures != 1:
			t.Errorf("the state was captured %d times, want once", src.captures)
		case !failMetrics && seats == 0:
			t.Errorf("no LIST was sized from the object counts of the one capture: %+v", res.Calibration.Estimated)
		case failMetrics && (seats != 0 || !strings.Contains(notes, "note: no object counts: forbidden: /metrics")):
			t.Errorf("without metrics: %d seats from object counts, notes %q", seats, notes)
		}
	}
}
