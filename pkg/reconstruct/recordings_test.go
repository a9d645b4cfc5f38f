package reconstruct_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	testfixture "github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
)

const recordings = "../../testdata/simulate/recordings"

// starvedRecordings are recordings kept for the reconstruction alone
// (testdata/reconstruct/recordings/README.md): simulate does not replay
// them.
const starvedRecordings = "../../testdata/reconstruct/recordings"

// fixture is one recording: its configuration, server concurrency limit,
// and the server's own rejections by level and reason between the bundle's
// first and last scrapes.
type fixture struct {
	name     string
	dir      string
	config   *engine.Config
	scl      int
	counts   engine.CountsSeries
	rejected map[[2]string]float64 // level, reason
}

func loadFixture(t testing.TB, dir string) fixture {
	t.Helper()
	name := filepath.Base(dir)
	capture, err := (&dump.BundleSource{Path: filepath.Join(dir, recording.BundleFile)}).Capture(context.Background(), dump.CaptureOptions{Parts: dump.PartObjects | dump.PartMetrics})
	if err != nil {
		t.Fatal(err)
	}
	snap := capture.Snapshots[0]
	fss, pls := snap.Objects()
	f := fixture{name: name, dir: dir, config: engine.NewConfig(fss, pls), rejected: map[[2]string]float64{}}
	sc, err := recording.ScenarioOf(dir)
	if err != nil {
		t.Fatal(err)
	}
	f.scl = sc.Inflight + sc.Mutating
	last := snap.Metrics[len(snap.Metrics)-1]
	cur := last.SumBy2(metrics.RejectedRequestsTotal, "priority_level", "reason")
	var prev map[[2]string]float64
	if len(snap.Metrics) > 1 {
		prev = snap.Metrics[0].SumBy2(metrics.RejectedRequestsTotal, "priority_level", "reason")
	}
	for k, v := range cur {
		f.rejected[k] = v - prev[k]
	}
	f.counts = logs.SeriesOf(snap.Metrics)
	return f
}

// reconstructFiles reconstructs the workload files against f.
func reconstructFiles(t *testing.T, f fixture, opts reconstruct.Options, paths ...string) *reconstruct.Result {
	t.Helper()
	files, err := input.OpenFiles(paths, input.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	opts.Config, opts.ServerConcurrencyLimit, opts.Counts = f.config, f.scl, f.counts
	res, err := reconstruct.RunReader(files, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// reasonAgreement compares the reconstructed reasons of the recorded 429s
// with the server's counts by level and reason: the share of the server's
// rejections matched by a reconstructed one of the same level and reason.
func reasonAgreement(res *reconstruct.Result, server map[[2]string]float64) (matched, total float64) {
	for k, v := range server {
		total += v
		var got float64
		for _, l := range res.Levels {
			if l.Level == k[0] {
				got = float64(l.Reasons[k[1]])
			}
		}
		matched += min(got, v)
	}
	return matched, total
}

// TestReconstructRecordings reconstructs every recording under
// testdata/simulate/recordings and testdata/reconstruct/recordings, from
// the httplog joined to the audit log and from the audit log alone. The
// goal is that the reconstructed fate of at least 95% (joined) and 90%
// (audit alone) of the requests is what the server answered, on every
// recording (docs/reconstruct.md names the closest).
// Every reconstructed reason must be one the server counted (no level and
// reason reconstructed more often than
// apiserver_flowcontrol_rejected_requests_total{reason} rose between the
// bundle's scrapes), and at least 85% of the server's rejections must be
// reconstructed with their reason. The disagreements are logged by class.
func TestReconstructRecordings(t *testing.T) {
	entries, err := os.ReadDir(recordings)
	if err != nil {
		t.Fatal(err)
	}
	// every scenario has its recording here (the Reject level and
	// time-outs of timeouts, the three borrowing levels of
	// borrowing-three are measured nowhere else)
	for _, sc := range recording.Scenarios() {
		if !slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.IsDir() && e.Name() == sc.Name }) {
			t.Errorf("scenario %s has no recording under %s", sc.Name, recordings)
		}
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(recordings, e.Name()))
		}
	}
	starved, err := os.ReadDir(starvedRecordings)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range starved {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(starvedRecordings, e.Name()))
		}
	}
	var report []string
	for _, dir := range dirs {
		f := loadFixture(t, dir)
		tmp := t.TempDir()
		httplog := testfixture.Gunzip(t, filepath.Join(f.dir, recording.HTTPLogFile), tmp)
		audit := testfixture.Gunzip(t, filepath.Join(f.dir, recording.AuditLogFile), tmp)
		for _, in := range []struct {
			name  string
			paths []string
			goal  float64
		}{{"httplog+audit", []string{httplog, audit}, 0.95}, {"audit", []string{audit}, 0.90}} {
			res := reconstructFiles(t, f, reconstruct.Options{}, in.paths...)
			sum := res.Sum()
			matched, total := reasonAgreement(res, f.rejected)
			line := fmt.Sprintf("%-10s %-14s requests %5d/%5d agree (%.3f)  429s reconstructed %4d/%4d  reasons %4.0f/%4.0f of the server's",
				f.name, in.name, sum.Agreeing(), sum.Total(), sum.Fraction(), sum.BothRejected, sum.BothRejected+sum.OnlyRecorded, matched, total)
			var classes []string
			for _, l := range res.Levels {
				for c, n := range l.Disagreements {
					classes = append(classes, fmt.Sprintf("    %s: %s: %d", l.Level, c, n))
				}
			}
			slices.Sort(classes)
			report = append(report, line)
			report = append(report, classes...)
			if sum.Total() == 0 || total == 0 {
				t.Errorf("%s %s: nothing to compare (%d requests, %v server rejections)", f.name, in.name, sum.Total(), total)
				continue
			}
			if sum.Fraction() < in.goal {
				t.Errorf("%s %s: the reconstructed fate agrees with the server on %.1f%% of the requests, below %.0f%%", f.name, in.name, 100*sum.Fraction(), 100*in.goal)
			}
			if matched/total < 0.85 {
				t.Errorf("%s %s: the reconstructed reasons match %.0f of the server's %.0f rejections, below 85%%", f.name, in.name, matched, total)
			}
			for _, l := range res.Levels {
				for reason, n := range l.Reasons {
					if float64(n) > f.rejected[[2]string{l.Level, reason}] {
						t.Errorf("%s %s: %d rejections of %s reconstructed as %s, the server counted %.0f", f.name, in.name, n, l.Level, reason, f.rejected[[2]string{l.Level, reason}])
					}
				}
			}
		}
	}
	t.Logf("reconstruction of the recordings:\n%s", strings.Join(report, "\n"))
}
