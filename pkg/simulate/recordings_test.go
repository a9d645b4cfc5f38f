package simulate

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
)

// rejected sums the rejections of level in the replay, after the change
// with after.
func rejected(r *Result, after bool, level string) int64 {
	ls := r.Levels
	if after {
		ls = r.After.Levels
	}
	for _, l := range ls {
		if l.Name == level {
			var n int64
			for _, v := range l.Rejected {
				n += v
			}
			return n
		}
	}
	return 0
}

// spared are the recordings of a server held to a small CPU quota whose
// recorded run the collector spared: too few stalls for a level short of
// CPU (TestSimulateRecordings), the CPU model built all the same.
var spared = map[string]bool{"starved-seed8": true}

// heldOut are the kept recordings neither the model (docs/simulate.md) nor
// the bound of a prediction without CPU evidence (CPUComparison.Bound) was
// developed on: recorded after the model's last rule and the bound's
// stretch, margin and fit widening were fixed, read only to report them.
// The ablation (TestEveryRuleEarnsItsPlace) and the range
// (TestRangeHoldsWithoutEvidence) both read this one list.
var heldOut = []string{"crowded-30", "crowded-30-seed7", "crowded-30-seed8", "crowded-30-seed9", "crowded-30-seed14", "crowded-30-seed19", "crowded-30-seed21", "crowded-60", "crowded-60-seed2", "crowded-95-seed2", "noisy-pages-heavy-seed7", "noisy-pages-heavy-seed8", "noisy-pages-heavy-seed9", "noisy-pages-heavy-seed10", "noisy-pages-heavy-seed11", "starved-seed2", "starved-seed3", "starved-seed6", "starved-seed7", "starved-seed8", "starved-seed9", "starved-seed10", "starved-seed11", "starved-seed12", "starved-seed13", "starved-seed14", "starved-seed15", "starved-seed16", "starved-seed17", "starved-seed18", "starved-seed19", "starved-seed20", "starved-seed21", "starved-seed22", "starved-seed23", "starved-seed24", "starved-seed25", "starved-seed26", "starved-seed27", "starved-seed30", "starved-seed31", "starved-seed32", "starved-seed33", "starved-seed36", "starved-seed37"}

// TestHeldOutAreKept: every recording named held out is kept, so that a
// misspelt or removed name cannot move a recording into the development
// set unnoticed.
func TestHeldOutAreKept(t *testing.T) {
	var kept []string
	for _, dir := range recordingDirs(t) {
		kept = append(kept, filepath.Base(dir))
	}
	for _, name := range heldOut {
		if !slices.Contains(kept, name) {
			t.Errorf("held-out recording %q is not under testdata/simulate/recordings (kept: %s)", name, strings.Join(kept, ", "))
		}
	}
}

// recordingDirs lists the recordings under testdata/simulate/recordings.
func recordingDirs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(fixture.Path("simulate", "recordings"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, fixture.Path("simulate", "recordings", e.Name()))
		}
	}
	return dirs
}

// whatIfReportedOnly are the recordings whose what-if TestSimulateRecordings
// reports but does not hold to the band; their fit is checked as every
// recording's. None today: crowded's (a kube-apiserver without quota
// crowded off its cores, whose bundle holds no process CPU) used to be
// (the shared-CPU model predicted tiny at 785 429s with 3 seats against
// a mean of 610 over three re-runs); simulate now says it cannot choose
// and gives a bound, 496–1,105 (the range it gave before, from the CPU
// saturated, 905, to the recorded execution times, 536, held them only
// within the band of its ends), which every re-run falls in.
var whatIfReportedOnly = []string{}

// servedAfter returns level's figures in the replay of the change, and how
// many of its requests the re-runs served, from the real 429s: the
// requests the change puts in the level (the replay classifies them as
// the server does), less the 429s. Not the level's requests before the
// change, which a change that moves requests between levels alters (the
// users isolated in a level of their own leave theirs). ok is false where
// the change's replay has no such level.
func servedAfter(wi *Result, level string, real int64) (a fairqueue.LevelResult, served int64, ok bool) {
	for _, a := range wi.After.Levels {
		if a.Name == level {
			return a, a.Dispatched + rejected(wi, true, level) - real, true
		}
	}
	return fairqueue.LevelResult{}, 0, false
}

// knownMisses are the what-if figures of kept recordings that miss the
// band today, by recording, what-if, level and input (httplog+audit or
// audit): limits of the model that docs/simulate.md states, kept so that
// the held-out set measures them. Each is reported with its reason and
// held to no band, and is an error where it agrees with the band: the list
// says what the model misses, no more. The replays are deterministic, so
// the list does not depend on the machine.
var knownMisses = map[string]string{
	// recorded after the model's last change, held out
	// (their re-runs' speed read since 2026-12-06: the recorded run's
	// executions alone from its log, the re-runs' from recording.json)
	knownMiss("crowded-30-seed8", "tiny with queues 6 long instead of 2", "tiny", "audit"):         "170 429s predicted, the re-runs 105, 159 and 134, which ran at 1.16× the recorded run's speed: the speed spread (120–219) leaves the band, and simulate says the figure is not known closer; httplog + audit 145 (1.09); " + queuesSixLong,
	knownMiss("crowded-30-seed9", "tiny with queues 6 long instead of 2", "tiny", "httplog+audit"): "193 429s predicted, the re-runs 160, 139 and 164, which ran at 0.83× the recorded run's speed: the speed spread (144–248) leaves the band, and simulate says the figure is not known closer; " + queuesSixLong,
	knownMiss("crowded-30-seed9", "tiny with queues 6 long instead of 2", "tiny", "audit"):         "196 429s predicted, the re-runs 160, 139 and 164, which ran at 0.83× the recorded run's speed: the speed spread (149–256) leaves the band, and simulate says the figure is not known closer; " + queuesSixLong,
	// recorded after the ablation study's criterion for the rules of the
	// audit log alone became their executions (2026-12-06), held out and
	// read once
	knownMiss("crowded-30-seed21", "tiny with queues 6 long instead of 2", "tiny", "audit"): "43 429s predicted, the re-runs 47, 75 and 63, which ran at 1.30× the recorded run's speed: the speed spread (29–67) leaves the band, and simulate says the figure is not known closer; httplog + audit 48 (0.77)",
	// recorded after the CPU evidence's cores on a CFS quota (2026-12-06),
	// held out, read once
	knownMiss("starved-seed8", "apf-load with queues 4 long instead of 2", "apf-load", "httplog+audit"): "40 429s predicted, the five re-runs 64, 57, 64, 51 and 51 (mean 57, 0.70), which ran at 1.10× the recorded run's speed: the collector spared the recorded run (8 stalled executions, 25% of the level's execution time; 366 429s where the other starved seeds recorded 410–524), so the CFS model has little of the quota's stalls to place where the re-runs of queues 4 long met more of them; the audit log alone 50 (0.88)",
	// recorded after the arrivals' cost (2026-12-06), held out, read once
	knownMiss("starved-seed12", "apf-load with 50 shares (3 seats) instead of 1 (1 seat)", "apf-load", "audit"): "147 429s predicted, the re-runs 203, 209 and 232 (mean 215, 0.68); httplog + audit 180 (0.84), and 141 before the arrivals' cost: the audit log's estimated executions of apf-load came to 1.40 times the time APF measured for them (the most of any starved seed, 1.14–1.30), and the CPU evidence's model divides the executions by that ratio after the CFS model has replaced the stalled ones by the level's median (readApplied), which took most of the estimates' excess off already: it reads 1.787 s of executions where httplog records 2.559 s for the same ones (calibrate.DeriveShared's mwork), where the estimates as replayed, 2.416 s, were within 6% of it before the division: the ratio is computed on the estimates before the replacement (Measured.Estimated). A cause found on this held-out recording, not fixed: dividing by the replayed executions' ratio instead (at least 1) brought it to 0.90 but raised every other starved seed's by 10–20% and read the held-out starved-seed13 at 1.27; the estimates held to APF's histogram of the same executions (ratio 1.22; httplog's outside the stalls 1.15) brought it to 0.80, but read the held-out starved-seed14 to -seed17 no better (docs/simulate.md): not kept; the replay with the recorded execution times on the CFS model gives 179",
	// the replay of the recorded configuration without --cpu-limit
	// (TestCalibrationNeverContradictsTheRecordings), from the running per
	// period read from the marks' stalls (2026-12-07)
	knownMiss("starved-seed14", dispatchMiss, "apf-load-reject", "httplog+audit"): "49 dispatched for the server's 42 (52 from the middle of all the stalls, 2026-12-06), and 51 with --cpu-limit 0.2: not the quota read from the stalls but a level whose 160 requests the server mostly rejected (118), where 7 more dispatched are 4% of its requests; its 429s' fit holds (0.94)",
	// recorded unread, held out, read once for the CPU per work fitted (2026-12-07)
	knownMiss("starved-seed22", "apf-load with queues 4 long instead of 2", "apf-load", "httplog+audit"): "170 429s predicted, the five re-runs 248, 276, 214, 317 and 137 (mean 238, 0.71), which ran at 1.12× the recorded run's speed: at the recorded run's speed the prediction is 235 (0.99), and ±10% of it spreads 140–226, beyond the band, so simulate says the figure is not known closer; 142 (0.60) before the CPU per work was fitted (176 at the recorded run's speed); the audit log alone 199 (0.84)",
	// recorded unread, held out, read once for the reconstruction's dispatch
	// at once of a short wait on an idle level (2026-12-07), which moves no
	// simulate figure
	knownMiss("starved-seed30", "apf-load with 50 shares (3 seats) instead of 1 (1 seat)", "apf-load", "audit"): "303 429s predicted, the re-runs 497, 436 and 389 (mean 441, 0.69); httplog + audit 346 (0.78; 376 before the join took the audit events' arrivals): the audit log's estimated executions of apf-load came to 1.32 times the time APF measured for them, the most of any starved seed after seed12's 1.40, whose miss of the same what-if (0.68) has the same cause: the CPU evidence's model divides the executions by that ratio after the CFS model has replaced the stalled estimates by the level's median (starved-seed12's entry); over the 28 starved recordings the ratio and the audit log alone's 1 → 3 seats below httplog + audit's go together (r = -0.56)",
	// recorded unread, held out, read once for the join's arrival
	// (2026-12-08), a miss with it and without it
	knownMiss("starved-seed36", "apf-load with queues 4 long instead of 2", "apf-load", "httplog+audit"): "143 429s predicted, the five re-runs 261, 181, 180, 176 and 169 (mean 193, 0.74; 0.81 of the four after the first), which ran at 1.04× the recorded run's speed: ±10% of it spreads 122–187, beyond the band, so simulate says the figure is not known closer; 140 (0.73) with the httplog's arrivals, before the join took the audit events'; the audit log alone 189 (0.98)",
	// the noisy-neighbour storm on a server held to 1 CPU: its re-runs'
	// server moves more than the band (docs/simulate.md, noisy-pages-heavy)
	knownMiss("noisy-pages-heavy-seed6", noisySeats, "apf-team", "httplog+audit"): "one of the three re-runs got 718 429s, 0.59 of the other two's mean, as the repeat of the recorded run got 867 against its 1,385: the machine's speed moved that much between runs with nothing changed; against the other two the prediction is 1.13",
	// recorded after the seed6 recording and the stretch's correction, held out
	knownMiss("noisy-pages-heavy-seed7", fitMiss, "apf-team", "httplog+audit"):        "a light storm, 297 429s of 4,963 requests: the replay dispatches 1.8% more than the server did, inside the dispatch check's 10%, which is 28% of so small a remainder",
	knownMiss("noisy-pages-heavy-seed7", noisySeats, "apf-team", "httplog+audit"):     noisyServedLess,
	knownMiss("noisy-pages-heavy-seed7", noisyIsolated, "apf-noisy", "httplog+audit"): noisyServedLess,
	// the audit log alone on the CPU evidence's model, its executions at
	// APF's measure (RuleMeasured, since 2026-12-05): near httplog +
	// audit's figures (200 and 282 for 203 and 251), and their misses
	knownMiss("noisy-pages-heavy-seed7", noisySeats, "apf-team", "audit"):     noisyServedLess,
	knownMiss("noisy-pages-heavy-seed7", noisyIsolated, "apf-noisy", "audit"): noisyServedLess,
	// recorded after the correction on an idle machine, held out
	knownMiss("noisy-pages-heavy-seed9", noisySeats, "apf-team", "httplog+audit"): seed9Slower,
	knownMiss("noisy-pages-heavy-seed9", noisySeats, "apf-team", "audit"):         seed9Slower,
	// recorded after the measured executions of the audit log alone
	// (RuleMeasured), held out for it and read once (2026-12-05)
	knownMiss("noisy-pages-heavy-seed10", noisyIsolated, "apf-noisy", "httplog+audit"): "818 429s predicted, the re-runs 545, 629 and 755: they met a faster server than the recorded one, as the repeat of the recorded run on the unchanged configuration did (581 429s against the recorded 756)",
	knownMiss("noisy-pages-heavy-seed11", fitMiss, "apf-team", "httplog+audit"):        "a light storm, 280 429s of 4,805 requests: the replay dispatches 1.8% more than the server did (4,607 against 4,525), inside the dispatch check's 10%, which is 29% of so small a remainder",
	knownMiss("noisy-pages-heavy-seed11", noisySeats, "apf-team", "httplog+audit"):     seed11Slower,
	knownMiss("noisy-pages-heavy-seed11", noisySeats, "apf-team", "audit"):             seed11Slower,
	knownMiss("noisy-pages-heavy-seed11", noisyIsolated, "apf-noisy", "httplog+audit"): seed11Slower,
	knownMiss("noisy-pages-heavy-seed11", noisyIsolated, "apf-noisy", "audit"):         seed11Slower,
	knownMiss("noisy-pages-heavy-seed9", noisyIsolated, "apf-noisy", "audit"):          "the replay dispatched 4,638 of the change's requests where the re-runs did 4,398 and httplog + audit's replay 4,482: the audit log's executions, each its kind's mean at APF's total, leave 5% more dispatched, which is 42% of so small a remainder (332 429s predicted, 572 on average in the re-runs, 488 from httplog + audit)",
}

// The noisy-pages-heavy recordings' what-ifs, and why seed 7 (held out)
// misses: the model holds a level's throughput to what the cores allowed
// the recording, and this server, which used 0.95 of its 1 CPU in the
// recording, used 0.97–0.99 and served fewer requests a second when it ran
// more at once.
const (
	seed11Slower    = "the repeat of the recorded run on the same configuration got 649 429s against its 280 (0.98 of its CPU against 0.94): the servers after the recording ran slower than the recorded one by more than the band, and the re-runs served 4-12% fewer requests than the model holds the level to"
	seed9Slower     = "the repeat of the recorded run on the same configuration got 608 429s against its 379: the servers after the recording ran slower than the recorded one by more than the band (one 6-seat re-run's used 0.64 of its CPU and got 1,011)"
	noisySeats      = "apf-team with 60 shares (6 seats) instead of 20 (3 seats)"
	noisyIsolated   = "a FlowSchema that isolates the five noisy users (load-1 to load-5) in a level of their own (apf-noisy, 40 shares, 4 seats)"
	noisyServedLess = "the server, at 0.95 of its 1 CPU in the recording, served 3% fewer requests with 6 seats and 15% fewer with the users isolated (0.97–0.99 CPU), where the model holds the level's throughput to the recording's (docs/simulate.md, noisy-pages-heavy)"
)

// fitMiss is the what-if of knownMisses' keys that names the fit (the
// replay of the recorded configuration), and boundMiss prefixes a
// what-if's to name its bound without CPU evidence.
const (
	fitMiss   = "the fit"
	boundMiss = "the bound without evidence: "
	// dispatchMiss: the recorded configuration's replay, as a user runs
	// it without --cpu-limit, dispatches more than 10% from the server
	// (TestCalibrationNeverContradictsTheRecordings)
	dispatchMiss = "the recorded configuration's dispatches"
)

// modeKey is the mode of knownMisses' keys for the name of an input the
// tests print.
func modeKey(name string) string {
	if strings.HasPrefix(name, "audit") {
		return "audit"
	}
	return "httplog+audit"
}

// queuesSixLong is the reason of the known misses of tiny's queues 6 long.
const queuesSixLong = "tiny's queues 6 long on crowded-30 leaves a remainder below what the model resolves (docs/simulate.md)"

// knownMissHolds looks key up in knownMisses: why it is a known miss, and
// whether it is one. A known miss whose figure holds (ok: within its band
// or bound) fails t with what, so that the list says what the model misses
// and no more.
func knownMissHolds(t *testing.T, key string, ok bool, what string) (why string, known bool) {
	t.Helper()
	why, known = knownMisses[key]
	if known && ok {
		t.Errorf("%s: no longer a known miss (remove it from knownMisses)", what)
	}
	return why, known
}

// knownMiss is the key of knownMisses.
func knownMiss(recording, about, level, mode string) string {
	return recording + " | " + about + " | " + level + " | " + mode
}

// rerunSpeed is the machine's speed in w's re-runs against the recorded
// run (recording.RerunSpeed), and how it was measured; "" where the
// recording cannot tell it. A recording made since the runs' AtOnce holds
// it for every what-if in recording.json. One made before keeps the log
// of one re-run, its first what-if's first (recording.WhatIfHTTPLogFile),
// and that one re-run's speed stands for the first what-if's; the other
// what-ifs' re-runs hold their executions alone in recording.json, where
// the recorded run's are not, and those are read from its log (a change
// that keeps every level's concurrency: recording.Speed).
func (kr keptRecording) rerunSpeed(t *testing.T, w recording.WhatIfRuns) (float64, string) {
	t.Helper()
	key := kr.dir + "|" + w.File
	if m, ok := rerunSpeeds.Load(key); ok {
		m := m.(measuredSpeed)
		return m.speed, m.how
	}
	sc, err := recording.ScenarioOf(kr.dir)
	if err != nil {
		t.Fatal(err)
	}
	change := recording.WhatIf{Change: sc.WhatIf}
	for i, m := range sc.MoreWhatIfs {
		if w.File == recording.MoreWhatIfFile(i) {
			change = m
		}
	}
	recorded, runs := kr.rec.Recorded, w.Runs
	rerunLog := filepath.Join(kr.dir, recording.WhatIfHTTPLogFile)
	switch {
	case recorded.AtOnce != nil:
	case w.File == recording.WhatIfFile && fileExists(rerunLog):
		var rerun recording.Run
		if err := recorded.ReadExecutions(kr.logFile, 0); err != nil {
			t.Fatal(err)
		}
		if err := rerun.ReadExecutions(fixture.Gunzip(t, rerunLog, t.TempDir()), 0); err != nil {
			t.Fatal(err)
		}
		runs = []recording.Run{rerun}
	case recorded.Alone == nil && slices.ContainsFunc(runs, func(r recording.Run) bool { return r.Alone != nil }):
		// the re-runs' executions alone are in recording.json, the
		// recorded run's were not yet kept: read them from its log
		if err := recorded.ReadExecutions(kr.logFile, 0); err != nil {
			t.Fatal(err)
		}
	default:
		return 1, ""
	}
	sp, how, ok := recording.RerunSpeed(sc, change, recorded, runs)
	if !ok {
		sp, how = 1, ""
	}
	rerunSpeeds.Store(key, measuredSpeed{sp, how})
	return sp, how
}

// rerunSpeeds are the speeds rerunSpeed measured, by recording directory
// and what-if (the ablation study asks once per rule).
var rerunSpeeds sync.Map

type measuredSpeed struct {
	speed float64
	how   string
}

// fileExists says whether path names a file.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// runsWithin says whether every one of runs got level's 429s within lo–hi:
// a bound (CPUComparisonLevel.Range) holds each re-run, not only their mean.
func runsWithin(lo, hi int64, runs []recording.Run, level string) bool {
	for _, r := range runs {
		if n := int64(r.Rejected429[level]); n < lo || n > hi {
			return false
		}
	}
	return len(runs) > 0
}

// whatIfLevels are the levels with 429s in the recorded run or any of runs.
func whatIfLevels(runs []recording.Run, recorded recording.Run) []string {
	return recording.Levels(append([]recording.Run{recorded}, runs...)...)
}

// checkWhatIf predicts a what-if from the recording (httplog + audit,
// calibrated) and holds it to the mean of its re-runs, returning the
// report's lines.
func checkWhatIf(t *testing.T, kr keptRecording, dir, name string, w recording.WhatIfRuns, nf noiseFloor) []string {
	t.Helper()
	rec := kr.rec
	report := []string{fmt.Sprintf("  what-if: %s", w.About)}
	var atOne *Result
	if sp, how := kr.rerunSpeed(t, w); how != "" {
		atOne = kr.simulate(t, []string{kr.logFile, kr.auditFile}, true, filepath.Join(dir, w.File))
		kr.speed = sp
		report = append(report, fmt.Sprintf("    the re-run ran at %.2f× the recorded run's speed (%s): the predictions checked are made at that speed", sp, how))
	}
	wi := kr.simulate(t, []string{kr.logFile, kr.auditFile}, true, filepath.Join(dir, w.File))
	if wi.After == nil {
		t.Fatal("-f gave no after run")
	}
	audit := kr.simulate(t, []string{kr.auditFile}, true, filepath.Join(dir, w.File))
	for _, x := range wi.Warnings {
		report = append(report, "    "+x.Text)
	}
	without := map[string]int64{}
	if c := wi.CPUComparison; c != nil {
		report = append(report, fmt.Sprintf("    CPU comparison (%s): %s", c.Model, c.Applies))
		for _, l := range c.Levels {
			without[l.Level] = l.RejectedWithout
			// the comparison's figure with the CPU model is the one
			// the tables show, the CPU evidence's where the change is
			// replayed on it (until 2026-12-06 the CFS model's alone)
			if c.Model != "" && l.RejectedWith != rejected(wi, true, l.Level) {
				t.Errorf("what-if %q, %s: the CPU comparison gives %d 429s with the CPU model, the tables %d", w.About, l.Level, l.RejectedWith, rejected(wi, true, l.Level))
			}
		}
	}
	for _, l := range whatIfLevels(w.Runs, rec.Recorded) {
		real, pred := w.Real(l), rejected(wi, true, l)
		ratio := float64(pred) / float64(max(real, 1))
		// the re-runs' 429s, for the line and the re-runs' noise floor
		var runs []int64
		var each []string
		for _, r := range w.Runs {
			runs = append(runs, int64(r.Rejected429[l]))
			each = append(each, fmt.Sprint(r.Rejected429[l]))
		}
		got := fmt.Sprintf("re-run got %5d 429s", real)
		if len(w.Runs) > 1 {
			got = fmt.Sprintf("re-runs got %s 429s, mean %d", strings.Join(each, ", "), real)
		}
		line := fmt.Sprintf("    %-16s %s (recorded run %5d)  predicted %5d (ratio %.2f)", l, got, rec.Recorded.Rejected429[l], pred, ratio)
		if atOne != nil {
			line += fmt.Sprintf(" (at the recorded run's speed %d)", rejected(atOne, true, l))
		}
		if n, ok := without[l]; ok {
			line += fmt.Sprintf(", without the CPU model %d (%.2f)", n, float64(n)/float64(max(real, 1)))
		}
		// where nearly every request is rejected the 429s hardly move: the
		// dispatches say more
		if a, served, ok := servedAfter(wi, l, real); ok {
			line += fmt.Sprintf("; dispatched: re-runs %d, predicted %d (%.2f)", served, a.Dispatched, float64(a.Dispatched)/float64(max(served, 1)))
		}
		// simulate cannot choose: it gives a bound, which every re-run
		// must fall in
		agrees := recording.WhatIfAgrees(pred, real)
		if lo, hi, ok := wi.CPUComparison.RangeOf(l); ok {
			agrees = runsWithin(lo, hi, w.Runs, l)
			line += fmt.Sprintf("; simulate cannot choose: bound %d–%d (every re-run in it: %v)", lo, hi, agrees)
		}
		line += spreadOf(t, wi, l)
		report = append(report, line)
		// from the audit log alone
		ap := rejected(audit, true, l)
		aAgrees := recording.WhatIfAgrees(ap, real)
		if lo, hi, ok := audit.CPUComparison.RangeOf(l); ok {
			aAgrees = runsWithin(lo, hi, w.Runs, l)
			report = append(report, fmt.Sprintf("      from the audit log alone: simulate cannot choose: bound %d–%d (every re-run in it: %v)", lo, hi, aAgrees))
		} else {
			report = append(report, fmt.Sprintf("      from the audit log alone: predicted %5d (ratio %.2f)%s", ap, float64(ap)/float64(max(real, 1)), spreadOf(t, audit, l)))
		}
		// the figures simulate gives, for the re-runs' noise floor
		given := func(res *Result, n int64) int64 {
			if _, _, bound := res.CPUComparison.RangeOf(l); bound || slices.Contains(res.NotKnown, l) {
				return 0
			}
			return n
		}
		nf.add(rec.Scenario, w.About, l, runs, given(wi, pred), given(audit, ap))
		if slices.Contains(whatIfReportedOnly, name) {
			report = append(report, fmt.Sprintf("      reported, not checked (whatIfReportedOnly; agrees with the band: %v)", agrees))
			continue
		}
		for _, c := range []struct {
			mode   string
			res    *Result
			agrees bool
			pred   int64
		}{{"httplog+audit", wi, agrees, pred}, {"audit", audit, aAgrees, ap}} {
			from := ""
			if c.mode == "audit" {
				from = ", from the audit log alone"
			}
			// what simulate itself says of the figure, as the e2e what-if
			// check reads it: figures it prints as not known ("?") are
			// not its answer, and one it warns falls short because the
			// recorded server was short of CPU and the change adds work
			// (WarnShortOfCPU) is no figure a band would hold honestly.
			// Both are reported, not held. The other warning the e2e
			// check excuses a figure by (WarnStretchUnknown) is not read
			// here: the one kept figure it marks (borrowing's
			// apf-borrow-a from the audit log alone) agrees with the
			// band, and stays held to it.
			if slices.Contains(c.res.NotKnown, l) {
				warn, _ := FindWarning(c.res.Warnings, WarnBeyondCores, l)
				report = append(report, fmt.Sprintf("      %s: not checked, simulate says not known: %s", c.mode, warn.Text))
				continue
			}
			if warn, ok := FindWarning(c.res.Warnings, WarnShortOfCPU, l); ok {
				report = append(report, fmt.Sprintf("      %s: not checked, simulate warns that its prediction falls short (agrees with the band: %v): %s", c.mode, c.agrees, warn.Text))
				continue
			}
			if why, known := knownMissHolds(t, knownMiss(name, w.About, l, c.mode), c.agrees, fmt.Sprintf("what-if %q, %s%s: predicted %d rejections after the change, the re-runs got %d: within the band", w.About, l, from, c.pred, real)); known {
				report = append(report, fmt.Sprintf("      %s: a known miss, not held to the band (knownMisses): %s", c.mode, why))
				continue
			}
			if !c.agrees {
				t.Errorf("what-if %q, %s%s: predicted %d rejections after the change, the re-runs got %d", w.About, l, from, c.pred, real)
			}
		}
	}
	return report
}

// spreadOf is the report's note of level's speed spread in res (simulate's
// SpeedSpread), checked: a server 10% faster rejects no more than the
// prediction, and one 10% slower no fewer (to within the replay's own
// noise, 2% and 2 requests: a CPU model's phases), and Steep is the band's
// verdict on them.
func spreadOf(t *testing.T, res *Result, level string) string {
	t.Helper()
	if res.SpeedSpread == nil {
		return ""
	}
	for _, l := range res.SpeedSpread.Levels {
		if l.Level != level {
			continue
		}
		slack := int64(math.Ceil(0.02*float64(l.Rejected))) + 2
		if l.Faster > l.Rejected+slack || l.Slower < l.Rejected-slack {
			t.Errorf("%s: %d 429s after the change, %d on a faster server and %d on a slower one: not monotone in the server's speed", level, l.Rejected, l.Faster, l.Slower)
		}
		if l.Steep != SpreadBeyondBand(l.Rejected, min(l.Faster, l.Slower), max(l.Faster, l.Slower)) {
			t.Errorf("%s: steep %v for %+v", level, l.Steep, l)
		}
		steep := ""
		if l.Steep {
			steep = ", beyond the band: simulate says it is not known closer"
		}
		return fmt.Sprintf("; at ±%.0f%% speed %d-%d%s", 100*res.SpeedSpread.Margin, l.Faster, l.Slower, steep)
	}
	return ""
}

// TestSimulateRecordings replays each overload recorded on the local control
// plane (testdata/simulate/recordings, written by "make record-simulate":
// the apiserver's httplog and audit log of a seeded load, and a bundle of its
// configuration and metrics) against the bundle, from the httplog joined to
// the audit log and from the audit log alone, calibrated and not. Per level
// with recorded 429s it compares the predicted rejections with the recorded
// ones; and it predicts the scenario's what-if change from the recording
// and compares it with the 429s the same seeded load got when it was re-run
// on the changed configuration (recording.json).
//
// The figures are logged whatever they are (-v, or
// KUBECTL_APF_RECORDINGS_REPORT=FILE; with
// KUBECTL_APF_RECORDINGS_CPU_LIMIT=none they are the replays without the
// recorded server's CPU limit, whose misses then fail the test too). The test fails when a calibrated
// prediction of the recorded run leaves 0.75–1.25 of the recorded 429s (the
// band docs/simulate.md states; levels with fewer than 20 recorded 429s are
// judged by their request-by-request agreement instead). The what-if prediction is
// held to the 429s of the re-run kept in recording.json by the rule of the
// e2e test TestSimulateWhatIfMatchesRerun ("make e2e-whatif", which re-runs
// the loads live): within 0.75–1.25 where either side has 20 or more, else
// within 10 requests, except where simulate itself warns that the recorded
// server was short of CPU and the change adds work (WarnShortOfCPU):
// those are reported and not checked. Which recordings show a server short
// of CPU is checked: those whose kube-apiserver was held to less than half
// a CPU, and no other. It is logged next to a repeat of the unchanged run
// with the same seed, whose difference from the recorded run is the noise
// of the recording (the floor of any prediction's error).
func TestSimulateRecordings(t *testing.T) {
	dirs := recordingDirs(t)
	if len(dirs) == 0 {
		t.Fatal("no recordings under testdata/simulate/recordings")
	}
	var report []string
	floor := noiseFloor{}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			kr := openRecording(t, dir)
			rec, logFile, auditFile := kr.rec, kr.logFile, kr.auditFile
			quota := "no CPU quota"
			if rec.APIServerCPUs > 0 {
				quota = fmt.Sprintf("kube-apiserver held to %.1f CPU", rec.APIServerCPUs)
			}
			report = append(report, fmt.Sprintf("== %s (load average %s before, %s after; %s; %d requests sent, %d late): %s",
				name, rec.Recorded.LoadBefore, rec.Recorded.LoadAfter, quota, rec.Recorded.Sent, rec.Recorded.Late, rec.About))
			sim := func(files []string, calibrate bool, changes ...string) *Result {
				t.Helper()
				return kr.simulate(t, files, calibrate, changes...)
			}
			for _, mode := range []struct {
				name  string
				files []string
			}{
				{"httplog+audit", []string{logFile, auditFile}},
				{"audit only", []string{auditFile}},
			} {
				cal := sim(mode.files, true)
				raw := sim(mode.files, false)
				if mode.name == "audit only" {
					report = append(report, checkMeasured(t, cal, logFile)...)
				}
				if mode.name == "httplog+audit" {
					// the stalls that tell a server short of CPU: every
					// recording at 0.2 CPU (CFS throttled it in 12–25% of
					// the periods) shows them on its queuing level but
					// starved-seed8, whose recorded run the collector
					// spared (8 stalls, 25% of the level's execution time:
					// the CPU model is built all the same, below), and no
					// recording at 1 CPU (at most 10%) does
					var short []string
					for _, l := range cal.Calibration.Levels {
						if l.Stalls > 0 {
							report = append(report, fmt.Sprintf("  %-13s %-16s %d stalled executions, %.0f%% of its execution time (short of CPU: %v)", mode.name, l.Level, l.Stalls, 100*l.StallShare, l.ShortOfCPU))
						}
						if l.ShortOfCPU {
							short = append(short, l.Level)
						}
					}
					// (a quota of 0 is none: crowded's server, which no
					// CFS quota throttles, shows no stalls either)
					starved := rec.APIServerCPUs > 0 && rec.APIServerCPUs < 0.5
					if starved != (len(short) > 0) && !spared[name] {
						t.Errorf("kube-apiserver held to %.1f CPU, levels found short of CPU: %v", rec.APIServerCPUs, short)
					}
					// the recorder scrapes /metrics when the run begins
					// and after it: a server held to a small quota gets
					// the CPU model
					if m := cal.Calibration.CPU; m != nil {
						report = append(report, fmt.Sprintf("  %-13s CPU model from %s: periods from %v, %v of running per period while marking, a collection every %.0f dispatches marking for %v; %d replays, mean %.1f rejections",
							mode.name, m.Level, time.Duration(m.Phase), time.Duration(m.RunPerPeriod), m.ExecutionsPerCollection, time.Duration(m.Mark), calibrate.DefaultParams().CPUPhases, cal.CPUReplays.Mean))
					} else if starved {
						t.Errorf("kube-apiserver held to %.1f CPU, but no CPU model: %s", rec.APIServerCPUs, cal.Calibration.CPUWhy)
					}
				}
				for _, f := range cal.Fit {
					if f.Recorded == 0 && f.Predicted == 0 {
						continue
					}
					var rawPred int64
					for _, g := range raw.Fit {
						if g.Level == f.Level {
							rawPred = g.Predicted
						}
					}
					ratio := float64(f.Predicted) / float64(max(f.Recorded, 1))
					over := ""
					for _, l := range cal.Calibration.Levels {
						if l.Level == f.Level {
							over = fmt.Sprintf("overhead %v (%s, %d queued dispatches)", time.Duration(l.Overhead), l.Source, l.Dispatches)
						}
					}
					report = append(report, fmt.Sprintf("  %-13s %-16s recorded %5d  predicted %5d (ratio %.2f, agreement %.1f%%, %s)  uncalibrated %5d  %s",
						mode.name, f.Level, f.Recorded, f.Predicted, ratio, 100*f.Agreement, f.Quality, rawPred, over))
					outside := f.Recorded >= 20 && (ratio < 0.75 || ratio > 1.25)
					if why, known := knownMissHolds(t, knownMiss(name, fitMiss, f.Level, modeKey(mode.name)), !outside, fmt.Sprintf("%s, %s: predicted %d rejections, the server answered %d 429s: within the band", mode.name, f.Level, f.Predicted, f.Recorded)); known {
						report = append(report, fmt.Sprintf("  %-13s a known miss of the fit, not held to the band (knownMisses): %s", mode.name, why))
						continue
					}
					switch {
					case outside:
						t.Errorf("%s, %s: predicted %d rejections, the server answered %d 429s", mode.name, f.Level, f.Predicted, f.Recorded)
					case f.Recorded < 20 && f.Agreement < 0.9:
						t.Errorf("%s, %s: %d recorded 429s, %d predicted, agreement only %.1f%%", mode.name, f.Level, f.Recorded, f.Predicted, 100*f.Agreement)
					}
				}
			}
			if rec.WhatIf == nil {
				return
			}
			if rec.Repeat != nil {
				var rep []string
				for _, l := range slices.Sorted(maps.Keys(rec.Repeat.Rejected429)) {
					rep = append(rep, fmt.Sprintf("%s %d (recorded %d)", l, rec.Repeat.Rejected429[l], rec.Recorded.Rejected429[l]))
				}
				report = append(report, fmt.Sprintf("  the same load again on the same configuration (load average %s): %s", rec.Repeat.LoadBefore, strings.Join(rep, ", ")))
			}
			whatIfs := []recording.WhatIfRuns{{About: rec.WhatIfAbout, File: recording.WhatIfFile, Runs: append([]recording.Run{*rec.WhatIf}, rec.WhatIfMore...)}}
			whatIfs = append(whatIfs, rec.MoreWhatIfs...)
			for _, w := range whatIfs {
				report = append(report, checkWhatIf(t, kr, dir, name, w, floor)...)
			}
			// a bundle captured before the load: its one scrape is no
			// evidence of the recorded run's CPU, which simulate must say
			// rather than use it
			if before := filepath.Join(dir, recording.BundleBeforeFile); fileExists(before) {
				kb := kr
				kb.bundle = before
				res := kb.simulate(t, []string{logFile, auditFile}, true, filepath.Join(dir, recording.WhatIfFile))
				line := fmt.Sprintf("  with the bundle captured before the load: %s", rec.WhatIfAbout)
				if c := res.CPUComparison; c != nil {
					line += fmt.Sprintf("; the CPU comparison %s (%s)", c.Applies, c.Why)
					if c.Applies == AppliesWith {
						t.Errorf("with a bundle captured before the load, simulate applied its CPU model to the what-if: %s", c.Why)
					}
				}
				report = append(report, line)
				for _, l := range whatIfLevels(whatIfs[0].Runs, rec.Recorded) {
					real := whatIfs[0].Real(l)
					line := fmt.Sprintf("    %-16s re-runs' mean %5d  predicted %5d", l, real, rejected(res, true, l))
					if lo, hi, ok := res.CPUComparison.RangeOf(l); ok {
						in := runsWithin(lo, hi, whatIfs[0].Runs, l)
						line += fmt.Sprintf("; simulate cannot choose: bound %d–%d (every re-run in it: %v)", lo, hi, in)
						if why, known := knownMissHolds(t, knownMiss(name, boundMiss+whatIfs[0].About, l, "httplog+audit"), in, fmt.Sprintf("with the bundle captured before the load, %s: every re-run is within the bound %d–%d", l, lo, hi)); known {
							line += "; a known miss (knownMisses): " + why
						} else if !in {
							t.Errorf("with the bundle captured before the load, %s: a re-run is outside the bound %d–%d simulate gives (mean %d)", l, lo, hi, real)
						}
					}
					report = append(report, line)
				}
			}
		})
	}
	report = append(report, floor.report()...)
	t.Logf("recordings:\n%s", strings.Join(report, "\n"))
	if p := os.Getenv("KUBECTL_APF_RECORDINGS_REPORT"); p != "" {
		_ = os.WriteFile(p, []byte(strings.Join(report, "\n")+"\n"), 0o644)
	}
}

// TestListSeatsMatchTheServer sizes every LIST of the recordings from the
// object counts kept in the recording's bundle (engine.ListSeats, the
// estimate given to LISTs an audit log records without seats) and compares
// it with the seats the server itself logged for that request (httplog
// apf_iseats): the "lists" recording has LISTs of 2, 4 and 5 seats.
func TestListSeatsMatchTheServer(t *testing.T) {
	dirs := recordingDirs(t)
	var total, agree, undetermined, before int
	bySeats := map[uint64]int{}
	for _, dir := range dirs {
		bundle := filepath.Join(dir, recording.BundleFile)
		capture, err := (&dump.BundleSource{Path: bundle}).Capture(context.Background(), dump.CaptureOptions{Parts: dump.PartObjects | dump.PartMetrics})
		if err != nil {
			t.Fatal(err)
		}
		st := loadState(t, stateInput{from: bundle}, Config{Calibrate: true})
		// every scrape's counts: starved-seed2's first scrape counts 0
		// ConfigMaps and its second 101, and the server's LISTs of
		// apf-load-reject took 1 seat until 34 s into the load, then 2,
		// when its own count refreshed
		counts := logs.SeriesOf(st.Snapshots[0].Metrics)
		if len(counts) == 0 {
			t.Fatalf("%s: the bundle's metrics hold no object counts", dir)
		}
		sc, err := recording.ScenarioOf(dir)
		if err != nil {
			t.Fatal(err)
		}
		limits := recording.LevelLimits(capture.Snapshots[0], sc.Inflight+sc.Mutating)
		res, err := recording.CompareListSeats(fixture.Gunzip(t, filepath.Join(dir, recording.HTTPLogFile), t.TempDir()), engine.NewestRelease, counts, limits)
		if err != nil {
			t.Fatal(err)
		}
		total, agree, undetermined, before = total+res.Total, agree+res.Agree, undetermined+res.Undetermined, before+res.BeforeAgree
		for s, n := range res.ByServerSeats {
			bySeats[s] += n
		}
		for i, d := range res.Disagreements {
			if i < 5 {
				t.Log(d)
			}
		}
	}
	t.Logf("LIST seats from object counts agree with the server's on %d of %d LISTs (server's seats: %v); %d of them sized differently by the counts of the scrapes around them, each agreeing with one scrape's, %d with the scrape before's", agree, total, bySeats, undetermined, before)
	if total == 0 || agree != total {
		t.Errorf("estimated seats agree on %d of %d LISTs", agree, total)
	}
	if len(bySeats) < 3 {
		t.Errorf("the recordings hold LISTs of only %d different sizes: %v", len(bySeats), bySeats)
	}
}
