package simulate

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/golden"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// TestRecordingsPinned pins, for every kept recording
// (testdata/simulate/recordings), the figures simulate derives from it: per
// mode (httplog + audit, audit alone; calibrated and not), each level's
// predicted dispatches and rejections, the fit against the recorded 429s,
// the calibration (overheads, their sources, the dispatch check and what
// it refused), the CPU models and their replays; and the prediction of the
// recording's what-if. The golden files
// (testdata/simulate/pinned/NAME.txt) hold what the code predicted when
// they were written: they pin behaviour across a restructuring of the
// calibration, and say nothing of whether the figures are right (that is
// TestSimulateRecordings' band against the recorded and re-run 429s). A
// change of model that moves a figure rewrites them with -update, and
// its commit says why each moved.
func TestRecordingsPinned(t *testing.T) {
	for _, dir := range recordingDirs(t) {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			kr := openRecording(t, dir)
			rec, logFile, auditFile := kr.rec, kr.logFile, kr.auditFile
			sim := func(files []string, calibrate bool, changes ...string) *Result {
				t.Helper()
				return kr.simulate(t, files, calibrate, changes...)
			}
			var out strings.Builder
			for _, mode := range []struct {
				name  string
				files []string
			}{
				{"httplog+audit", []string{logFile, auditFile}},
				{"audit only", []string{auditFile}},
			} {
				for _, cal := range []bool{true, false} {
					fmt.Fprintf(&out, "== %s, calibrated %v\n", mode.name, cal)
					pinResult(&out, sim(mode.files, cal))
				}
			}
			if rec.WhatIf != nil {
				fmt.Fprintf(&out, "== what-if (httplog+audit, calibrated): %s\n", rec.WhatIfAbout)
				pinResult(&out, sim([]string{logFile, auditFile}, true, filepath.Join(dir, recording.WhatIfFile)))
			}
			golden.AssertString(t, fixture.Path("simulate", "pinned", name+".txt"), out.String())
		})
	}
}

// pinResult writes the figures of a result that a restructuring must keep.
func pinResult(out *strings.Builder, r *Result) {
	p := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	levels := func(side string, rep []levelFigures) {
		for _, l := range rep {
			if l.dispatched == 0 && l.rejected == "" {
				continue
			}
			p("  %s %s: dispatched %d, rejected %v", side, l.name, l.dispatched, l.rejected)
		}
	}
	levels("before", figuresOf(r, false))
	if r.After != nil {
		levels("after", figuresOf(r, true))
	}
	for _, f := range r.Fit {
		p("  fit %s: requests %d, recorded %d, predicted %d, agreement %.6f, %s", f.Level, f.Requests, f.Recorded, f.Predicted, f.Agreement, f.Quality)
	}
	if c := r.Calibration; c != nil {
		p("  calibration: threshold %v (%s), server overhead %v, audit only %v, estimated %+v", time.Duration(c.Threshold), c.ThresholdFrom, time.Duration(c.ServerOverhead), c.AuditOnly, c.Estimated)
		for _, l := range c.Levels {
			p("  level %s: overhead %v (%s), limit %d, dispatches %d, seats %d, mean exec %v, hold %v, stalls %d, short %v, dispatches recorded %d replayed %d, stalled gaps %d %v, windows %d",
				l.Level, time.Duration(l.Overhead), l.Source, l.ConcurrencyLimit, l.Dispatches, l.Seats, time.Duration(l.MeanExecution), time.Duration(l.HoldTime), l.Stalls, l.ShortOfCPU,
				l.RecordedDispatches, l.ReplayedDispatches, l.StalledGaps, time.Duration(l.StalledGapTime), len(l.Windows))
			if x := l.Refused; x != nil {
				p("    refused: overhead %v (%s check), execution scale %.6f, dispatched %.6f", time.Duration(x.Overhead), x.Check, x.ExecutionScale, x.Dispatched)
			}
		}
		if m := c.Shared; m != nil {
			p("  shared CPU: from %s, capacity %.6f, share %.6f, cores %g (%s), executions %d, requests CPU %v",
				m.From, m.Capacity, m.Share, m.Cores, CoresName(m.CoresFrom), m.Executions, time.Duration(m.RequestsCPU))
		} else {
			p("  shared CPU: none (%s)", c.SharedWhy)
		}
		if m := c.CPU; m != nil {
			p("  CFS model: level %s, period %v, phase %v, run per period %v, quota %v, mark %v, every %.3f dispatches, CPU per work %.6f, background %.6f, a request %v",
				m.Level, time.Duration(m.Period), time.Duration(m.Phase), time.Duration(m.RunPerPeriod), time.Duration(m.Quota), time.Duration(m.Mark), m.ExecutionsPerCollection, m.CPUPerWork, m.Background, time.Duration(m.RequestCost))
		} else {
			p("  CFS model: none (%s)", c.CPUWhy)
		}
	}
	if x := r.CPUReplays; x != nil {
		p("  CPU replays: %d, chosen %d, mean %.3f", len(x.Replays), x.Chosen, x.Mean)
	}
	if x := r.CPUComparison; x != nil {
		p("  CPU comparison: %s, applies %s", x.Model, x.Applies)
		for _, l := range x.Levels {
			sat := ""
			if l.RejectedSaturated != nil {
				sat = fmt.Sprintf("; CPU saturated: rejected %d, dispatched %d", *l.RejectedSaturated, *l.DispatchedSaturated)
			}
			p("    %s %d->%d: rejected with %d, without %d; dispatched with %d, without %d%s", l.Level, l.LimitBefore, l.LimitAfter, l.RejectedWith, l.RejectedWithout, l.DispatchedWith, l.DispatchedWithout, sat)
			if lo, hi, ok := l.Range(); ok {
				p("      bound %d–%d, fit error %.6f, wide %v", lo, hi, l.FitError, l.Wide)
			}
		}
		if b := x.Bound; b != nil {
			p("    bound: stretch %.6f, margin %.2f", b.Stretch, b.Margin)
		}
	}
	for _, w := range r.Warnings {
		p("  warning %s %s", w.Kind, w.Level)
	}
}

// levelFigures are one level's predicted dispatches and rejections.
type levelFigures struct {
	name       string
	dispatched int64
	rejected   string
}

func figuresOf(r *Result, after bool) []levelFigures {
	ls := r.Levels
	if after {
		ls = r.After.Levels
	}
	var out []levelFigures
	for _, l := range ls {
		var rs []string
		for _, k := range slices.Sorted(maps.Keys(l.Rejected)) {
			if l.Rejected[k] == 0 {
				continue
			}
			rs = append(rs, fmt.Sprintf("%s=%d", k, l.Rejected[k]))
		}
		out = append(out, levelFigures{l.Name, l.Dispatched, strings.Join(rs, " ")})
	}
	return out
}

// keptRecording is one recording of testdata/simulate/recordings, opened
// for a test: its result, its logs unzipped and its bundle.
type keptRecording struct {
	rec recording.Result
	// dir is the recording's directory; logFile and auditFile its logs
	// uncompressed in the opening test's temporary directory
	dir, logFile, auditFile, bundle string
	// calibration, when set, are the calibration's Params (the ablation
	// study's); nil runs with the defaults
	calibration *calibrate.Params
	// speed, when set, is the changed server's speed (--server-speed):
	// the machine's in a what-if's re-runs (rerunSpeed)
	speed float64
	// calibrated, when set, is given each calibration and its workload's
	// tape (Config.calibrated)
	calibrated func(cal *calibrate.Result, tape *workload.Tape) error
}

func openRecording(t *testing.T, dir string) keptRecording {
	t.Helper()
	var kr keptRecording
	b, err := os.ReadFile(filepath.Join(dir, recording.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &kr.rec); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	kr.dir = dir
	kr.logFile = fixture.Gunzip(t, filepath.Join(dir, recording.HTTPLogFile), tmp)
	kr.auditFile = fixture.Gunzip(t, filepath.Join(dir, recording.AuditLogFile), tmp)
	kr.bundle = filepath.Join(dir, recording.BundleFile)
	return kr
}

// simulate replays files against the recording's bundle, with changes as
// -f files. The recorder knows the quota it held kube-apiserver to, as an
// operator knows the pod's CPU limit.
//
// The package's tests replay the same kept recordings with the same
// inputs (TestRecordingsPinned pins what TestSimulateRecordings holds to
// the band), so a replay of the recording's own logs with the default
// calibration is made once and shared; the callers only read it.
func (kr keptRecording) simulate(t *testing.T, files []string, calibrate bool, changes ...string) *Result {
	t.Helper()
	key, shared := kr.replayKey(files, calibrate, changes)
	if shared {
		if r, ok := replays.Load(key); ok {
			return r.(*Result)
		}
	}
	cfg := commandDefaults()
	cfg.Workloads, cfg.Calibrate, cfg.CPULimit = files, calibrate, kr.rec.APIServerCPUs
	if os.Getenv("KUBECTL_APF_RECORDINGS_CPU_LIMIT") == "none" {
		// a report of the replays without the limit, as a user who does
		// not know it runs them (the CFS model reads it from the stalls)
		cfg.CPULimit = 0
	}
	cfg.Calibration, cfg.calibrated = kr.calibration, kr.calibrated
	if kr.speed != 0 {
		cfg.ServerSpeed = kr.speed
	}
	res := simulateT(t, stateInput{from: kr.bundle, files: changes}, cfg)
	if shared {
		replays.Store(key, res)
	}
	return res
}

// replays are the replays kr.simulate shares, by replayKey.
var replays sync.Map

// replayKey names a replay by what it reads: the recording, which of its
// logs, the bundle, the calibration and the changes. Only replays of the
// recording's own logs with the default calibration are named (shared):
// a test's own files or Params are its alone.
func (kr keptRecording) replayKey(files []string, calibrate bool, changes []string) (string, bool) {
	if kr.calibration != nil || kr.calibrated != nil {
		return "", false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%v|%v|", kr.dir, kr.bundle, calibrate, kr.speed)
	for _, f := range files {
		switch f {
		case kr.logFile:
			b.WriteString("httplog,")
		case kr.auditFile:
			b.WriteString("audit,")
		default:
			return "", false
		}
	}
	fmt.Fprintf(&b, "|%q", changes)
	return b.String(), true
}
