package simulate

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// figure is one prediction of a kept recording held to what the server
// did: a calibrated fit's 429s (levels with 20 or more recorded), a
// what-if's 429s against its re-runs' mean, or a what-if's dispatches
// (20 or more served in the re-runs), from httplog + audit or from the
// audit log alone. A what-if's level simulate calls not known gives none.
type figure struct {
	key string
	// same names the figure with the input left out: the same figure from
	// the other input has the same same
	same     string
	audit    bool // from the audit log alone
	ratio    float64
	ok       bool // within the band TestSimulateRecordings holds it to
	dispatch bool
	// fit: the replay of the recorded configuration, which the
	// calibration is made to reproduce
	fit     bool
	heldOut bool
	// notKnown: simulate calls the level's figures not known (prints
	// "?"): the replay's figure is no prediction, and no score counts it
	// (noisy-pages-heavy's what-ifs from the audit log alone without
	// APF's measured executions, 0.03 to 0.52 of the re-runs)
	notKnown bool
}

// executions are, by audit ID, the execution times the calibrations of a
// kept recording give its executed requests (calibrate.Result.Executions):
// from httplog + audit, httplog's as recorded; from the audit log alone,
// as the rules estimate them.
type executions struct {
	heldOut    bool
	log, audit map[string]time.Duration
}

// recordingFigures predicts every figure of a kept recording under the
// calibration's Params (kr.calibration), and gives the executions its
// calibrations read.
func recordingFigures(t *testing.T, kr keptRecording, dir string) ([]figure, executions) {
	t.Helper()
	name := filepath.Base(dir)
	held := slices.Contains(heldOut, name)
	var out []figure
	ex := executions{heldOut: held, log: map[string]time.Duration{}, audit: map[string]time.Duration{}}
	// a figure's key is what it is, the input, then what it counts
	add := func(what, mode, counts string, pred, real int64, ok, dispatch bool) {
		out = append(out, figure{key: name + " " + what + " " + mode + counts, same: name + " " + what + counts, audit: mode == "audit",
			ratio: float64(max(pred, 1)) / float64(max(real, 1)), ok: ok, dispatch: dispatch, fit: strings.HasPrefix(what, "fit "), heldOut: held})
	}
	notKnown := func(what, mode, counts string) {
		out = append(out, figure{key: name + " " + what + " " + mode + counts, same: name + " " + what + counts, audit: mode == "audit", heldOut: held, notKnown: true})
	}
	modes := []struct {
		name  string
		files []string
	}{{"httplog+audit", []string{kr.logFile, kr.auditFile}}, {"audit", []string{kr.auditFile}}}
	for _, m := range modes {
		into := ex.log
		if m.name == "audit" {
			into = ex.audit
		}
		kr := kr
		kr.calibrated = func(cal *calibrate.Result, tape *workload.Tape) error {
			return cal.Executions(tape.Reader(), func(w *workload.Request, exec time.Duration) {
				if w.AuditID != "" {
					into[w.AuditID] = exec
				}
			})
		}
		for _, f := range kr.simulate(t, m.files, true).Fit {
			if f.Recorded >= 20 {
				r := float64(f.Predicted) / float64(f.Recorded)
				add("fit "+f.Level, m.name, "", f.Predicted, f.Recorded, r >= 0.75 && r <= 1.25, false)
			}
		}
	}
	rec := kr.rec
	if rec.WhatIf == nil {
		return out, ex
	}
	whatIfs := append([]recording.WhatIfRuns{{About: rec.WhatIfAbout, File: recording.WhatIfFile, Runs: append([]recording.Run{*rec.WhatIf}, rec.WhatIfMore...)}}, rec.MoreWhatIfs...)
	for _, w := range whatIfs {
		// held to the re-runs at their machine's speed, as
		// TestSimulateRecordings holds them
		kr := kr
		if sp, how := kr.rerunSpeed(t, w); how != "" {
			kr.speed = sp
		}
		for _, m := range modes {
			wi := kr.simulate(t, m.files, true, filepath.Join(dir, w.File))
			for _, l := range whatIfLevels(w.Runs, rec.Recorded) {
				real, pred := w.Real(l), rejected(wi, true, l)
				what := fmt.Sprintf("what-if %q %s", w.About, l)
				if slices.Contains(wi.NotKnown, l) {
					// simulate prints the level's figures as not known
					// ("?"): the replay's figure is no prediction to
					// judge a rule by
					notKnown(what, m.name, " 429s")
					if _, served, ok := servedAfter(wi, l, real); ok && served >= 20 {
						notKnown(what, m.name, " dispatches")
					}
					continue
				}
				ok := recording.WhatIfAgrees(pred, real)
				if lo, hi, in := wi.CPUComparison.RangeOf(l); in {
					ok = runsWithin(lo, hi, w.Runs, l)
				}
				add(what, m.name, " 429s", pred, real, ok, false)
				if a, served, ok := servedAfter(wi, l, real); ok && served >= 20 {
					add(what, m.name, " dispatches", a.Dispatched, served, true, true)
				}
			}
		}
	}
	return out, ex
}

// score sums a set's figures: the figures outside their band, and the
// mean absolute log-ratio of its 429s and of its dispatches.
type score struct {
	n, failed, failedFits int
	log429, logDispatch   float64
}

func scoreOf(fs []figure, held bool) score {
	var s score
	var n429, nd int
	for _, f := range fs {
		if f.heldOut != held || f.notKnown {
			continue
		}
		s.n++
		if !f.ok {
			s.failed++
			if f.fit {
				s.failedFits++
			}
		}
		if f.dispatch {
			s.logDispatch += math.Abs(math.Log(f.ratio))
			nd++
		} else {
			s.log429 += math.Abs(math.Log(f.ratio))
			n429++
		}
	}
	s.log429 /= float64(max(n429, 1))
	s.logDispatch /= float64(max(nd, 1))
	return s
}

// readsWhatHTTPLogRecords are the rules that read from an audit log alone
// what httplog records, the execution times: their target is httplog's,
// and they are judged by how near the executions they give come to it
// (executionNearness), or, for a rule that makes figures known, by
// madeKnown. The other rules of the audit log alone (the seat-time check)
// hold it to the recording, and are judged against the server like the
// rest.
var readsWhatHTTPLogRecords = map[calibrate.Rule]bool{calibrate.RuleSerialEnds: true, calibrate.RuleRooms: true, calibrate.RuleMeasured: true}

// madeKnown compares, over one set, the audit log alone's figures that a
// rule makes known (not known without it) with httplog + audit's same
// figures: how many of each lie within their band. A rule that turns
// "not known" into figures earns its place where they are within their
// band no less often than the figures of the recorded execution times
// are: it reads, from the evidence, what httplog records.
func madeKnown(base, abl []figure, held bool) (n, auditOK, logOK int) {
	withLog := map[string]figure{}
	for _, f := range base {
		if !f.audit {
			withLog[f.same] = f
		}
	}
	for i, f := range base {
		if !f.audit || f.heldOut != held || f.notKnown || !abl[i].notKnown {
			continue
		}
		n++
		if f.ok {
			auditOK++
		}
		if g, ok := withLog[f.same]; ok && !g.notKnown && g.ok {
			logOK++
		}
	}
	return n, auditOK, logOK
}

// executionNearness is the mean |log(audit alone / httplog)| of the
// execution times of the requests both inputs execute, over one set's
// recordings: how near the audit log alone reads what httplog records,
// request by request, the target of a rule of the audit log alone.
func executionNearness(es []executions, held bool) float64 {
	var sum float64
	var n int
	for _, e := range es {
		if e.heldOut != held {
			continue
		}
		for id, a := range e.audit {
			if l, ok := e.log[id]; ok && a > 0 && l > 0 {
				sum += math.Abs(math.Log(float64(a) / float64(l)))
				n++
			}
		}
	}
	return sum / float64(max(n, 1))
}

// executionsMoved reports whether the audit log alone's executions of
// one set's recordings differ between a and b.
func executionsMoved(a, b []executions, held bool) bool {
	for i := range a {
		if a[i].heldOut == held && !maps.Equal(a[i].audit, b[i].audit) {
			return true
		}
	}
	return false
}

// nearness is the mean |log(audit alone / httplog + audit)| of one set's
// figures: how near the audit log alone's predictions come to those of
// the recorded execution times (reported beside executionNearness).
func nearness(fs []figure, held bool) float64 {
	withLog := map[string]float64{}
	for _, f := range fs {
		if !f.audit && !f.notKnown {
			withLog[f.same] = f.ratio
		}
	}
	var sum float64
	var n int
	for _, f := range fs {
		if r, ok := withLog[f.same]; ok && f.audit && !f.notKnown && f.heldOut == held {
			sum += math.Abs(math.Log(f.ratio / r))
			n++
		}
	}
	return sum / float64(max(n, 1))
}

// worse reports whether a is worse than b: more fits outside their band
// (the replay of the recorded configuration, which the calibration is
// made to reproduce: a rule whose removal takes a fit out and brings a
// what-if in is right about the what-if for a wrong reason), else more
// figures outside their band, else a larger error in all.
func (a score) worse(b score) bool {
	if a.failedFits != b.failedFits {
		return a.failedFits > b.failedFits
	}
	if a.failed != b.failed {
		return a.failed > b.failed
	}
	return a.log429+a.logDispatch > b.log429+b.logDispatch+1e-12
}

func (s score) String() string {
	return fmt.Sprintf("%d of %d outside (%d fits), |log| 429s %.4f, dispatches %.4f", s.failed, s.n, s.failedFits, s.log429, s.logDispatch)
}

// TestEveryRuleEarnsItsPlace is the ablation study of the calibration's
// model: every kept recording's figures (recordingFigures) predicted with
// every rule, then without each rule in turn (calibrate.Params.Without).
// A rule stays only where its removal makes the predictions worse (more
// fits outside their band, else more figures, else a larger mean error;
// score.worse) on the held-out
// recordings, or, where no held-out recording exercises it (its removal
// changes none of their figures), on the development ones; a rule whose
// removal changes no figure at all, or makes the held-out set better, is
// an error. A rule that reads from an audit log alone what httplog records
// (readsWhatHTTPLogRecords) stays only where its removal takes the audit
// log alone's execution times further from httplog's, request by request
// (executionNearness), on the held-out recordings where it moves any of
// their executions, else on the development ones: its target is what
// httplog records, and a figure the model misses with the recorded
// executions, or reaches without them through an error of another kind,
// does not judge it. How near its figures come to httplog + audit's
// (nearness) is reported beside. It logs the table docs/simulate.md gives.
//
// It replays every recording eleven times, with every rule and without each
// of the ten, and reads the executions of each calibration (about nine
// minutes on two cores): "make ablation" runs it, not "make test".
func TestEveryRuleEarnsItsPlace(t *testing.T) {
	if os.Getenv("KUBECTL_APF_ABLATION") == "" {
		t.Skip("the ablation study runs with KUBECTL_APF_ABLATION=1 (make ablation)")
	}
	dirs := recordingDirs(t)
	krs := make([]keptRecording, len(dirs))
	for i, dir := range dirs {
		krs[i] = openRecording(t, dir)
	}
	figures := func(p calibrate.Params) ([]figure, []executions) {
		var (
			fs []figure
			es []executions
		)
		for i, dir := range dirs {
			kr := krs[i]
			kr.calibration = &p
			f, e := recordingFigures(t, kr, dir)
			fs, es = append(fs, f...), append(es, e)
		}
		return fs, es
	}
	base, baseEx := figures(calibrate.DefaultParams())
	baseDev, baseHeld := scoreOf(base, false), scoreOf(base, true)
	rows := []string{fmt.Sprintf("%-16s development: %s; held out: %s", "every rule", baseDev, baseHeld)}
	for _, r := range calibrate.Rules {
		p := calibrate.DefaultParams()
		p.Without = r
		abl, ablEx := figures(p)
		if len(abl) != len(base) {
			t.Fatalf("without the %s: %d figures, %d with every rule", r, len(abl), len(base))
		}
		changedHeld, changed, changedLog := false, false, false
		for i := range abl {
			if abl[i].key != base[i].key {
				t.Fatalf("without the %s: figure %d is %q, with every rule %q", r, i, abl[i].key, base[i].key)
			}
			if abl[i].ratio != base[i].ratio || abl[i].ok != base[i].ok || abl[i].notKnown != base[i].notKnown {
				changed = true
				changedHeld = changedHeld || abl[i].heldOut
				changedLog = changedLog || !abl[i].audit
			}
		}
		dev, held := scoreOf(abl, false), scoreOf(abl, true)
		verdict := "kept: the held-out recordings are worse without it"
		switch {
		case !changed:
			verdict = "changes no figure of any recording"
			t.Errorf("the %s changes no figure of any kept recording: it goes", r)
		case readsWhatHTTPLogRecords[r]:
			if changedLog {
				t.Errorf("without the %s a figure from httplog + audit changed: it is not a rule of the audit log alone", r)
			}
			set := "development"
			if changedHeld {
				set = "held-out"
			}
			if n, auditOK, logOK := madeKnown(base, abl, changedHeld); n > 0 {
				verdict = fmt.Sprintf("kept: without it %d %s figures of the audit log alone are not known; with it %d of them are within their band, as %d of httplog + audit's", n, set, auditOK, logOK)
				if auditOK < logOK {
					verdict = fmt.Sprintf("without it %d %s figures of the audit log alone are not known; with it %d of them are within their band, fewer than httplog + audit's %d", n, set, auditOK, logOK)
					t.Errorf("without the %s: %s: it goes", r, verdict)
				}
				break
			}
			// the executions themselves, on the held-out set where the
			// rule moves any of its executions
			exHeld := executionsMoved(baseEx, ablEx, true)
			exSet := "development"
			if exHeld {
				exSet = "held-out"
			}
			with, without := executionNearness(baseEx, exHeld), executionNearness(ablEx, exHeld)
			figs := fmt.Sprintf("its %s figures %.4f from httplog + audit's without it, %.4f with it", set, nearness(abl, changedHeld), nearness(base, changedHeld))
			verdict = fmt.Sprintf("kept: it reads what httplog records, and the audit log alone's executions of the %s recordings are further from httplog's without it (mean |log| %.4f, with it %.4f; %s)", exSet, without, with, figs)
			if without <= with+1e-12 {
				verdict = fmt.Sprintf("it reads what httplog records, and the audit log alone's executions of the %s recordings are no further from httplog's without it (mean |log| %.4f, with it %.4f; %s)", exSet, without, with, figs)
				t.Errorf("without the %s: %s: it goes", r, verdict)
			}
		case changedHeld && !held.worse(baseHeld):
			verdict = "the held-out recordings are no worse without it"
			t.Errorf("without the %s the held-out recordings are no worse (%s; with it %s): it goes", r, held, baseHeld)
		case !changedHeld && dev.worse(baseDev):
			verdict = "kept on the development recordings alone: no held-out recording exercises it"
		case !changedHeld:
			verdict = "the development recordings are no worse without it"
			t.Errorf("without the %s the development recordings are no worse (%s; with it %s), and no held-out recording exercises it: it goes", r, dev, baseDev)
		}
		rows = append(rows, fmt.Sprintf("%-16s development: %s; held out: %s: %s", "without "+r.String(), dev, held, verdict))
	}
	t.Logf("the ablation study (%d figures):\n%s", len(base), strings.Join(rows, "\n"))
}
