//go:build unix

package simulate

import (
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
)

// TestSimulateReadsTheWorkloadOnce replays a recorded audit log alone, the
// case whose calibration iterates to a fixed point, from a named pipe that
// carries it once, and checks that the calibration did iterate and that
// the result is the one the regular file gives: calibration costs no extra
// pass over the input.
func TestSimulateReadsTheWorkloadOnce(t *testing.T) {
	dir := fixture.Path("simulate", "recordings", "starved")
	tmp := t.TempDir()
	audit := fixture.Gunzip(t, filepath.Join(dir, recording.AuditLogFile), tmp)
	bundle := filepath.Join(dir, recording.BundleFile)
	fifo := filepath.Join(tmp, "audit.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	// the pipe carries the log once; a second opening finds a writer that
	// closes at once, so a second pass over the input would read nothing
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // blocks until the plugin opens it
		if err != nil {
			return
		}
		if f, err := os.Open(audit); err == nil {
			_, _ = io.Copy(w, f)
			f.Close()
		}
		w.Close()
		for !stop.Load() {
			if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	simulate := func(workload string) *Result {
		t.Helper()
		cfg := commandDefaults()
		cfg.Workloads = []string{workload}
		return simulateT(t, stateInput{from: bundle}, cfg)
	}
	fromPipe, fromFile := simulate(fifo), simulate(audit)
	if est := fromPipe.Calibration.Estimated; est.FixedPointIterations < 1 || est.ExecutionFromReplay == 0 {
		t.Errorf("the calibration of an audit log alone did not iterate (%+v): the test shows nothing", est)
	}
	if asJSON(t, fromPipe) != asJSON(t, fromFile) {
		t.Errorf("the replay from a pipe that can be read once differs from the replay of the same file")
	}
	stop.Store(true)
	<-done
}
