package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testprom"
	"github.com/kubectl-apf/kubectl-apf/pkg/simulate"
)

// The what-if check's evidence mode (issue 56: predictions from the
// evidence users already hold). KUBECTL_APF_WHATIF_EVIDENCE=prometheus,watch
// (either or both) records each scenario with its evidence: from the end
// of the set-up, a real Prometheus (internal/testharness/testprom) scrapes
// the apiserver every second ("prometheus"), and kubectl apf dump bundle
// --watch 1h --interval 1s records it ("watch"), until a few seconds after
// the load. simulate then predicts each what-if from the server's FULL logs
// (its start-up, the set-up requests, the load and the recorders' own
// reads, nothing cut by hand): with --prometheus pointed at the store
// (beside the recording's bundle, for the configuration) and, separately,
// with --from the watch's bundle; from httplog + audit and from audit
// alone. Each prediction is held to the re-runs as the bundle's is
// (judgeWhatIf), and its fit to the recorded 429s; the report says which
// window the evidence covered and which part of the log that was.
//
// The recorders run beside the re-runs and the control too
// (besideRecorders), as an operator's Prometheus keeps scraping after a
// change: at one scrape a second each, their /metrics GETs took about a
// fifth of crowded-30's kube-apiserver CPU, and re-runs without them ran
// 1.12-1.13 times as fast as the recorded run.
// Without the variable nothing of this runs, and make test's what-if check
// is unchanged.
const evidenceEnv = "KUBECTL_APF_WHATIF_EVIDENCE"

// evidenceKinds are the evidence modes, in the report's order.
var evidenceKinds = []string{"prometheus", "watch"}

// whatIfEvidence returns the evidence modes KUBECTL_APF_WHATIF_EVIDENCE
// picks (none without it).
func whatIfEvidence(t *testing.T) []string {
	t.Helper()
	v := os.Getenv(evidenceEnv)
	if v == "" {
		return nil
	}
	var out []string
	for _, k := range strings.Split(v, ",") {
		if !slices.Contains(evidenceKinds, k) {
			t.Fatalf("%s: no evidence mode %q (want prometheus, watch or both, comma-separated)", evidenceEnv, k)
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return slices.Index(evidenceKinds, a) - slices.Index(evidenceKinds, b) })
	return out
}

// whatIfPick resolves a name of KUBECTL_APF_WHATIF_SCENARIOS: a scenario
// (seed 1, as make e2e-whatif records), or NAME-seedN, the scenario with
// the load's seed N (crowded-95-seed2, as its recording in
// testdata/simulate/recordings was made).
func whatIfPick(name string) (recording.Scenario, uint64, bool) {
	if sc, ok := recording.ByName(name); ok {
		return sc, 1, true
	}
	i := strings.LastIndex(name, "-seed")
	if i < 0 {
		return recording.Scenario{}, 0, false
	}
	seed, err := strconv.ParseUint(name[i+len("-seed"):], 10, 64)
	if err != nil || seed == 0 {
		return recording.Scenario{}, 0, false
	}
	sc, ok := recording.ByName(name[:i])
	if !ok {
		return recording.Scenario{}, 0, false
	}
	return sc, seed, true
}

// seededName is the scenario's name as KUBECTL_APF_WHATIF_SCENARIOS gives
// it (whatIfPick): NAME-seedN for a seed other than 1.
func seededName(sc recording.Scenario, seed uint64) string {
	if seed == 1 {
		return sc.Name
	}
	return fmt.Sprintf("%s-seed%d", sc.Name, seed)
}

// evidenceRecorders are the recorders of one recorded run: the store and
// the watch, and the files of the server's full logs once copied.
type evidenceRecorders struct {
	kinds []string
	// prom scrapes the server while it runs; promDir keeps its TSDB, read
	// again by a Prometheus without targets (storeURL) after the server
	// stops
	prom    *testprom.Prometheus
	promDir string
	// watch is dump bundle --watch, spooling to watchFile
	watch     *exec.Cmd
	watchErr  *lockedBuffer
	watchFile string
	// fullLog and fullAudit are the server's whole httplog and audit log
	fullLog, fullAudit string
}

// startEvidence starts the recorders of kinds against the session's
// server (set up, before its load) and waits until each has two scrapes.
func startEvidence(t *testing.T, s *recording.Session, kinds []string, dir string) *evidenceRecorders {
	t.Helper()
	e := &evidenceRecorders{kinds: kinds}
	if slices.Contains(kinds, "prometheus") {
		e.promDir = filepath.Join(dir, "prometheus")
		if err := os.RemoveAll(e.promDir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(e.promDir, 0o755); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		p, err := testprom.Start(ctx, testprom.Options{Dir: e.promDir, Targets: testprom.TargetsOf(s.Cluster), ScrapeInterval: time.Second})
		if err != nil {
			t.Fatalf("starting Prometheus: %v", err)
		}
		e.prom = p
		t.Cleanup(func() { _ = e.stopStore() })
		for deadline := time.Now().Add(time.Minute); !promHasSamples(t, p.URL, "process_cpu_seconds_total", 2); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("Prometheus holds no two samples of the apiserver's process_cpu_seconds_total after a minute; its log:\n%s", tailFile(p.LogFile))
			}
		}
	}
	if slices.Contains(kinds, "watch") {
		e.watchFile = filepath.Join(dir, "watch.tar.gz")
		_ = os.Remove(e.watchFile)
		e.watch = exec.Command(pluginBinary(t), "dump", "bundle", "--kubeconfig", s.Cluster.Kubeconfig, "--watch", "1h", "--interval", "1s", "--to", e.watchFile)
		e.watchErr = &lockedBuffer{}
		e.watch.Stdout, e.watch.Stderr = &lockedBuffer{}, e.watchErr
		if err := e.watch.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if e.watch.ProcessState == nil {
				_ = e.watch.Process.Kill()
				_ = e.watch.Wait()
			}
		})
		for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(e.watchErr.String(), ": 2 scrapes,"); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("dump bundle --watch took no two scrapes in 2 minutes; stderr:\n%s", e.watchErr.String())
			}
		}
	}
	return e
}

// endLoad lets each recorder take a scrape after the load, ends the watch
// as Ctrl-C does (it writes its bundle) and copies the server's full logs
// into dir as full-apiserver.log and full-audit.log.
func (e *evidenceRecorders) endLoad(t *testing.T, s *recording.Session, dir string) {
	t.Helper()
	time.Sleep(3 * time.Second)
	if err := e.endWatch(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the audit backend's last batch
	a := s.Cluster.APIServers[0]
	if err := copyLogs(a.LogFile, 0, a.AuditLog, 0, dir, "full-"); err != nil {
		t.Fatal(err)
	}
	e.fullLog, e.fullAudit = filepath.Join(dir, "full-apiserver.log"), filepath.Join(dir, "full-audit.log")
}

// besideRecorders is the re-runs' Beside in evidence mode: the recorders
// of kinds started on the re-run's server as on the recorded one's
// (their store and bundle in a temporary directory, not read), stopped
// after the load. nil without evidence.
func besideRecorders(t *testing.T, kinds []string) recording.Beside {
	if len(kinds) == 0 {
		return nil
	}
	return func(s *recording.Session) (func() error, error) {
		e := startEvidence(t, s, kinds, t.TempDir())
		return func() error {
			if err := e.endWatch(); err != nil {
				return fmt.Errorf("beside a re-run: %w", err)
			}
			return e.stopStore()
		}, nil
	}
}

// endWatch ends the watch, if any, as Ctrl-C does (it writes its bundle).
func (e *evidenceRecorders) endWatch() error {
	if e.watch == nil {
		return nil
	}
	if err := e.watch.Process.Signal(os.Interrupt); err != nil {
		return err
	}
	if err := e.watch.Wait(); err != nil {
		return fmt.Errorf("dump bundle --watch: %w\n%s", err, e.watchErr.String())
	}
	return nil
}

// stopStore stops the scraping Prometheus; its TSDB stays in promDir.
func (e *evidenceRecorders) stopStore() error {
	if e.prom == nil {
		return nil
	}
	p := e.prom
	e.prom = nil
	return p.Stop()
}

// storeURL is the URL of a Prometheus serving the recorded run's store:
// the scraping one while it runs, else one started on its TSDB without
// targets (the server it scraped is gone).
func (e *evidenceRecorders) storeURL(t *testing.T) string {
	t.Helper()
	if e.prom != nil {
		return e.prom.URL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := testprom.Start(ctx, testprom.Options{Dir: e.promDir})
	if err != nil {
		t.Fatalf("starting Prometheus on the recorded run's store: %v", err)
	}
	e.prom = p
	return p.URL
}

// args are simulate's inputs of evidence kind, in mode: the full logs,
// and the store (beside the recording's bundle, which gives the
// configuration) or the watch's bundle.
func (e *evidenceRecorders) args(t *testing.T, kind, mode, bundle string) []string {
	t.Helper()
	logs := []string{"-w", e.fullLog, "-w", e.fullAudit}
	if mode == whatIfModes[1] {
		logs = []string{"-w", e.fullAudit}
	}
	switch kind {
	case "prometheus":
		return append([]string{"--from", bundle, "--prometheus", e.storeURL(t)}, logs...)
	default:
		return append([]string{"--from", e.watchFile}, logs...)
	}
}

// evidenceReport describes the evidence a prediction read: which window
// its scrapes cover, and which part of the full log that is.
func evidenceReport(kind, mode string, o whatIfOutput) string {
	kind = fmt.Sprintf("%s, %s:", kind, mode)
	ev := o.Evidence
	if ev == nil {
		why := "no evidence read"
		if o.Calibration != nil && o.Calibration.CPUWhy != "" {
			why += " (" + o.Calibration.CPUWhy + ")"
		}
		return fmt.Sprintf("  evidence %-28s %s", kind, why)
	}
	src := "the bundle's scrapes"
	if ev.Store != "" {
		src = "the store's samples"
	}
	interval := ev.Interval
	if interval == "" {
		interval = "-"
	}
	cut := ""
	if ev.Cut {
		cut = "; the replay cut to it"
	}
	if w := o.Window; w != nil && !w.Given {
		cut += fmt.Sprintf(" (%d of the log's %d requests)", w.Requests, w.Of)
	}
	return fmt.Sprintf("  evidence %-28s %s, %d scrapes, every %s: %s–%s; %d of the full log's %d requests between them (%d before, %d after, %d 429s outside)%s",
		kind, src, ev.Scrapes, interval, ev.Metrics.From.UTC().Format("15:04:05.000"), ev.Metrics.To.UTC().Format("15:04:05.000"),
		ev.Requests, ev.Total, ev.Before, ev.After, ev.RejectedOutside, cut)
}

// evidenceCoverage is simulate's -o json "evidence"
// (simulate.EvidenceCoverage): the window the evidence covers and which
// part of the workload that is.
type evidenceCoverage struct {
	Metrics struct {
		From time.Time `json:"from"`
		To   time.Time `json:"to"`
	} `json:"metrics"`
	Scrapes         int    `json:"scrapes"`
	Store           string `json:"store"`
	Interval        string `json:"interval"`
	Requests        int64  `json:"requests"`
	Before          int64  `json:"before"`
	After           int64  `json:"after"`
	Total           int64  `json:"total"`
	RejectedOutside int64  `json:"rejectedOutside"`
	Cut             bool   `json:"cut"`
}

// evidencePredictions are the predictions of every what-if from each
// evidence kind in each mode: [what-if][kind][mode].
type evidencePredictions []map[string]map[string]whatIfOutput

// judgeEvidence compares the evidence predictions of what-if i (at the
// re-runs' speed when at is set) for level with the re-runs: the report's
// lines and the misses, as judgeWhatIf does for the bundle's.
func judgeEvidence(r *recorded, i int, w recording.WhatIf, level string, real int64, reals []int64, each []string, at map[string]map[string]whatIfOutput) (report, misses []string) {
	for _, kind := range r.evidence.kinds {
		for _, mode := range whatIfModes {
			pred := r.evPreds[i][kind][mode]
			if at != nil {
				pred = at[kind][mode]
			}
			p := simLevel(pred.After.Levels, level).rejected()
			ok := recording.WhatIfAgreesRuns(p, reals)
			var rng string
			if lo, hi, undecided := pred.CPUComparison.RangeOf(level); undecided {
				ok = recording.WhatIfBoundHolds(lo, hi, reals)
				rng = fmt.Sprintf("; simulate bounds it: %d to %d", lo, hi)
			}
			var recorded string
			if at != nil {
				recorded = fmt.Sprintf("; at the recorded run's speed %d", simLevel(r.evPreds[i][kind][mode].After.Levels, level).rejected())
			}
			report = append(report, fmt.Sprintf("      %-10s from %-15s %5d (ratio %.2f)%s%s%s%s", kind, mode, p, float64(p)/float64(max(real, 1)), outside(ok), pred.withoutCPUModel(level), rng, recorded))
			if w.Unchecked != "" {
				continue
			}
			if fw := simulate.FallsShortWarning(pred.Warnings, level); fw != "" {
				report = append(report, "        not checked, simulate warns: "+fw)
				continue
			}
			if !ok {
				misses = append(misses, fmt.Sprintf("%s, from %s with the %s evidence: predicted %d rejections after the change, the re-runs got %s", level, mode, kind, p, strings.Join(each, ", ")))
			}
		}
	}
	return report, misses
}

// evidenceFit holds the evidence predictions' replays of the recorded
// configuration to the recorded 429s: the report's lines and the misses.
func evidenceFit(r *recorded) (lines, errs []string) {
	for _, kind := range r.evidence.kinds {
		for _, mode := range whatIfModes {
			for _, f := range r.evPreds[0][kind][mode].Fit {
				if f.Recorded == 0 && f.Predicted == 0 {
					continue
				}
				ok := recording.WhatIfAgrees(f.Predicted, f.Recorded)
				lines = append(lines, fmt.Sprintf("  fit, %-10s %-15s %-16s recorded %5d 429s, the replay of the recorded run %5d (ratio %.2f)%s",
					kind, mode, f.Level, f.Recorded, f.Predicted, float64(f.Predicted)/float64(max(f.Recorded, 1)), outside(ok)))
				if !ok {
					errs = append(errs, fmt.Sprintf("fit with the %s evidence from %s, %s: the replay of the recorded run predicts %d 429s, the server answered %d", kind, mode, f.Level, f.Predicted, f.Recorded))
				}
			}
		}
	}
	return lines, errs
}

// promHasSamples reports whether the Prometheus at url holds n samples or
// more of the series over the last minute.
func promHasSamples(t *testing.T, url, series string, n int) bool {
	t.Helper()
	return promAnswers(url, fmt.Sprintf("count_over_time(%s[1m]) >= %d", series, n))
}

// tailFile is the end of a file, for a failure's message.
func tailFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// TestWhatIfPick: KUBECTL_APF_WHATIF_SCENARIOS names a scenario, or a
// scenario and a seed, which the report and the kept directory name again.
func TestWhatIfPick(t *testing.T) {
	for _, c := range []struct {
		name, scenario string
		seed           uint64
		ok             bool
	}{
		{"crowded-95", "crowded-95", 1, true},
		{"crowded-95-seed2", "crowded-95", 2, true},
		{"crowded-95-seed0", "", 0, false},
		{"crowded-95-seedx", "", 0, false},
		{"nosuch-seed2", "", 0, false},
	} {
		sc, seed, ok := whatIfPick(c.name)
		if ok != c.ok || sc.Name != c.scenario || seed != c.seed {
			t.Errorf("whatIfPick(%q) = %q, %d, %v; want %q, %d, %v", c.name, sc.Name, seed, ok, c.scenario, c.seed, c.ok)
		}
		if ok && seededName(sc, seed) != c.name {
			t.Errorf("seededName(%q, %d) = %q, want %q", sc.Name, seed, seededName(sc, seed), c.name)
		}
	}
}
