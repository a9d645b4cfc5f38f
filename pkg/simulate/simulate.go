// Package simulate replays a recorded workload through APF's classification
// and fair queuing ("kubectl apf simulate"): once with the configuration
// the state was loaded with and, with a change (-f applied by package
// state, --set given here), once with the changed one. It calibrates the
// replay from the recording (package calibrate), compares the replay of
// the recorded configuration with the 429s the server answered, and warns
// where a change leaves the recorded regime.
//
// It is glue between the loaded state (package state, which read the
// cluster or bundle once, metrics included), the workload files (package
// workload) and the compute packages (fairqueue, calibrate); it prints
// nothing. Run is the one entry point.
package simulate

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/capacity"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// Config is what to replay and how.
type Config struct {
	// Workloads are the files of recorded traffic: httplog lines, audit
	// events or JSONL; "-" reads Stdin (the process's standard input when
	// Stdin is nil).
	Workloads []string
	Stdin     io.Reader
	// Strict fails on the first line that cannot be read as a request
	// instead of skipping it with a count.
	Strict bool
	// Instances say which apiserver instance served each file's requests
	// (by default, the instance the input names, else one per file).
	Instances workload.InstanceOptions
	// Sets are the --set changes, applied over the state's configuration
	// (which has the -f files applied).
	Sets []capacity.Setting
	// RequestTimeout is the apiserver's --request-timeout, which sets the
	// wait limit in the queues.
	RequestTimeout time.Duration
	// NoBorrowing keeps every level at its nominal limit.
	NoBorrowing bool
	// Calibrate infers from the recording how long each level held a seat
	// per dispatch from a queue, and estimates what an audit log lacks.
	Calibrate bool
	// CPUModel replays a server its CPU limit throttled with the model of
	// its garbage collector's stalls (calibrate.CPUModel); CPULimit is its
	// limit in cores, 0 when unknown.
	CPUModel bool
	CPULimit float64
	// ServerSpeed is how fast the changed configuration's server executes
	// requests against the recorded one (fairqueue.ReplayConfig.Speed): 2
	// halves every execution and seat hold, 0.5 doubles them; 0 or 1 is
	// the recorded server. Other than 1, it is a change on its own: the
	// recorded configuration is replayed again at that speed.
	ServerSpeed float64
	// Source names where the state was read from, for notes
	// (dump.Source.Describe).
	Source string

	// Logs opens Workloads (package input's Logs, which the commands hand
	// in): this package opens nothing itself.
	Logs logs.Opener
	// Open, when set, opens the workload instead of Workloads (the audit
	// events of a log store).
	Open func() (*workload.Files, error)
	// Window is --since/--until: the part of the workload replayed,
	// relative times counted back from its last request.
	Window logs.Window
	// Recorded, when set, reads the scrapes around a window of the bundle
	// the state was loaded from, when it holds more of an instance than the
	// latest two the state does (dump bundle --watch): the CPU evidence is
	// then read from them, as it would be from every scrape.
	Recorded func(from, to time.Time) ([]RecordedScrapes, error)
	// Store, when set, is the metrics store whose scrapes around the
	// window replayed are the CPU evidence (--prometheus), preferred to
	// the state's.
	Store EvidenceStore
	// Params are the thresholds of simulate's own judgements; nil runs
	// with DefaultParams.
	Params *Params
	// Calibration are the calibration's thresholds; nil runs with
	// calibrate.DefaultParams.
	Calibration *calibrate.Params

	// calibrated, where a test sets it, is called with each instance's
	// calibration, as the replay of the recorded configuration last read
	// it, and the tape of its workload, before the tape is closed: the
	// ablation study reads the executions it gives
	// (calibrate.Result.Executions).
	calibrated func(cal *calibrate.Result, tape *workload.Tape) error
}

// calibration are the calibrate.Params cfg runs with.
func (cfg *Config) calibration() calibrate.Params {
	if cfg.Calibration != nil {
		return *cfg.Calibration
	}
	return calibrate.DefaultParams()
}

// params are the Params cfg runs with.
func (cfg *Config) params() Params {
	if cfg.Params != nil {
		return *cfg.Params
	}
	return DefaultParams()
}

// Result is a replay's answer. It encodes as "simulate -o json" prints it.
type Result struct {
	// Report holds the levels (and flows) replayed, before and after the
	// change, what the workload held, and the agreement of the predicted
	// rejections with the recorded 429s.
	*fairqueue.Report
	// ServerConcurrencyLimit and where it came from (flag, metrics or
	// default).
	ServerConcurrencyLimit  int             `json:"serverConcurrencyLimit"`
	ServerConcurrencySource ConcurrencyFrom `json:"serverConcurrencySource"`
	// Join counts how httplog lines met audit events, when both were given.
	Join *workload.JoinStats `json:"join,omitempty"`
	// Release is the Kubernetes release whose APF was replayed,
	// ReleaseFrom where it came from.
	Release     string `json:"release"`
	ReleaseFrom string `json:"releaseFrom"`
	// Calibration is what was inferred from the recording (absent without
	// Config.Calibrate); Fit, the reproduction, how the replay of the
	// recorded configuration reproduced the recorded 429s.
	Calibration *calibrate.Report    `json:"calibration,omitempty"`
	Fit         []calibrate.LevelFit `json:"fit,omitempty"`
	// CPUReplays are the replays of a CPU model (Calibration.CPU), one
	// per phase of its collections; Report is the one nearest their mean.
	CPUReplays *CPUReplays `json:"cpuReplays,omitempty"`
	// CPUComparison sets the prediction without the CPU model beside the
	// one with it, for a change that adds concurrency on a server the
	// recording shows CPU-bound.
	CPUComparison *CPUComparison `json:"cpuComparison,omitempty"`
	// ServerSpeed is Config.ServerSpeed, the speed of the changed
	// configuration's server against the recorded one's (absent: 1).
	ServerSpeed float64 `json:"serverSpeed,omitempty"`
	// Window is the part of the workload replayed, when not all of it:
	// --since/--until's, or the window of the metrics' evidence
	// (Evidence.Cut).
	Window *ReplayWindow `json:"window,omitempty"`
	// Evidence says which window the metrics' CPU evidence covers and
	// which part of the workload that is (absent without evidence).
	Evidence *EvidenceCoverage `json:"evidence,omitempty"`
	// Warnings say where a change leaves the recorded regime.
	Warnings []Warning `json:"warnings,omitempty"`
	// NotKnown are the levels whose figures after the change are not
	// known (WarnBeyondCores): After still holds the replay's figures for
	// them, which are not a prediction, and the table prints "?".
	NotKnown []string `json:"notKnown,omitempty"`
	// BeyondCPU, where the change runs more at once than the recording
	// did beyond what the cores allow, says that its figures after the
	// change rest on the CPU evidence's model (WarnCPUEvidence).
	BeyondCPU *BeyondCPU `json:"beyondCPU,omitempty"`
	// SpeedSpread is every level's rejections after the change on a
	// server RangeMargin faster and slower (a single instance's replay);
	// its Steep levels are not known closer than that.
	SpeedSpread *SpeedSpread `json:"speedSpread,omitempty"`
	// Notes say what of the input could not be used as given, "note: ..."
	// each, for stderr (the state's own notes are the state's).
	Notes []string `json:"-"`
	// Instances are the apiserver instances of a workload of several,
	// each replayed on its own (its own calibration, server concurrency
	// limit and queues) with the change applied to each; the levels,
	// agreement and fit above then sum them (instances.go).
	Instances []InstanceResult `json:"instances,omitempty"`
}

// Run replays the workload against the state's configuration and, when
// cfg.Sets or the state's -f files change it, the changed one.
func Run(ctx context.Context, st *state.State, cfg Config) (*Result, error) {
	if !(cfg.ServerSpeed >= 0) || math.IsInf(cfg.ServerSpeed, 1) {
		return nil, fmt.Errorf("the server's speed must be a number above 0 (1 is the recorded server's), not %g", cfg.ServerSpeed)
	}
	before, after, notes, err := configurations(st, cfg.Sets)
	if err != nil {
		return nil, err
	}
	if after == nil && cfg.ServerSpeed > 0 && cfg.ServerSpeed != 1 {
		// the server's speed is the change
		after = before
	}
	files, yearNote, err := openWorkload(ctx, st, cfg)
	if err != nil {
		return nil, err
	}
	defer files.Close()
	if yearNote != "" {
		notes = append(notes, yearNote)
	}
	src := logs.Cancellable(ctx, files.Reader)
	split, err := splitInstances(ctx, src, files)
	if err != nil {
		return nil, err
	}
	var (
		m        serverMetrics
		window   *ReplayWindow
		coverage *EvidenceCoverage
	)
	if split != nil {
		defer split.tape.Close()
		if window, err = resolveWindow(cfg, &split.arrivals); err != nil {
			return nil, err
		}
		target := calibrate.TimeRange{From: split.arrivals.span.First, To: split.arrivals.span.Last}
		if window != nil {
			target = calibrate.TimeRange{From: window.From, To: window.To}
		}
		if m, err = readServerMetrics(ctx, st, cfg, target); err != nil {
			return nil, err
		}
		coverage, window = coverEvidence(cfg.calibration(), m, &split.arrivals, window)
		split.window = window
		if err := settleExecutions(ctx, cfg, &m, &split.arrivals, window); err != nil {
			return nil, err
		}
		if len(split.names) > 1 {
			res, err := runInstances(ctx, st, cfg, before, after, notes, m, files, split)
			if res != nil {
				res.Window = window
			}
			return res, err
		}
		src = split.reader(ctx)
	} else {
		if m, err = readServerMetrics(ctx, st, cfg, calibrate.TimeRange{}); err != nil {
			return nil, err
		}
	}
	res, err := runOne(ctx, st, cfg, before, after, m, src)
	if err != nil {
		return nil, err
	}
	res.Window, res.Evidence = window, coverage
	if res.Workload.Records == 0 {
		return nil, fmt.Errorf("the workload holds no request to replay: %s", emptyWorkloadReason(files))
	}
	res.Join = files.Join
	res.Notes = slices.Concat(notes, m.notes, workloadNotes(res.Report, files))
	return res, nil
}

// runOne calibrates and replays the workload of one apiserver instance.
func runOne(ctx context.Context, st *state.State, cfg Config, before, after *engine.Config, m serverMetrics, src workload.Reader) (*Result, error) {
	rc := newReplayConfigs(st, cfg, before, after, m.counts)
	src, cal, err := prepareWorkload(ctx, src, &rc, m, cfg)
	if err != nil {
		return nil, err
	}
	if rc.tape != nil {
		defer rc.tape.Close()
	}
	res, err := replay(ctx, src, cal, rc)
	if err != nil {
		return nil, err
	}
	// after the dispatch check, which may scale the estimated executions
	// and replay again: the calibration as the fit's replay read it
	if cfg.calibrated != nil && cal != nil {
		if err := cfg.calibrated(cal, rc.tape); err != nil {
			return nil, err
		}
	}
	if res.Workload.Records == 0 {
		return res, nil
	}
	res.ServerConcurrencyLimit, res.ServerConcurrencySource = st.ServerConcurrency, ConcurrencyFrom{Source: st.ServerConcurrencySource}
	res.Release, res.ReleaseFrom = st.Release.String(), st.ReleaseFrom
	if cal != nil {
		// the report alone: the calibration's working state stays here
		report := cal.Report
		res.Calibration = &report
	}
	if cfg.ServerSpeed != 1 {
		res.ServerSpeed = cfg.ServerSpeed
	}
	res.Warnings = Regime(cfg.params(), before, after, st.ServerConcurrency, res.Report, res.Calibration)
	if err := replayBeyond(ctx, res, cal, rc); err != nil {
		return nil, err
	}
	// after the replay on the CPU evidence's model, whose figures the
	// tables show: the comparison's figure with the CPU model is theirs
	// (it set the replay with the recorded execution times on the CFS
	// model, 228 429s, beside tables that showed 245)
	if res.CPUComparison, err = compareCPU(ctx, res, cal, rc, st.ServerConcurrency, cfg); err != nil {
		return nil, err
	}
	res.NotKnown = NotKnownLevels(res.Warnings)
	if res.SpeedSpread, err = speedSpread(ctx, res, cal, rc, cfg.params()); err != nil {
		return nil, err
	}
	return res, nil
}

// BeyondCPU says that the figures after the change of the levels it names
// come from the replay of the change on the CPU evidence's model
// (calibrate.SharedFromCPUEvidence; WarnCPUEvidence says why), and what
// the replay with the recorded execution times gave them.
type BeyondCPU struct {
	Model  *calibrate.SharedCPU `json:"model"`
	Levels []string             `json:"levels"`
	// RejectedRecorded and DispatchedRecorded are, by level, the replay's
	// figures after the change with the recorded execution times.
	RejectedRecorded   map[string]int64 `json:"rejectedRecorded"`
	DispatchedRecorded map[string]int64 `json:"dispatchedRecorded"`
	// OnCFS says that replay ran on the CFS model (calibrate.CPUModel),
	// which the replay on the CPU evidence's model runs on too.
	OnCFS bool `json:"onCFS,omitempty"`
}

// beyondOf is the BeyondCPU of a change whose warnings, of its replay
// with the recorded execution times (after), say that it runs beyond the
// recording on the CPU evidence's model (WarnCPUEvidence), or nil.
func beyondOf(ws []Warning, cal *calibrate.Result, after *fairqueue.Result) *BeyondCPU {
	if cal == nil || after == nil {
		return nil
	}
	if _, ok := cal.ServerBeyond(0, 1); !ok {
		return nil
	}
	b := &BeyondCPU{Model: cal.Headroom.Shared, RejectedRecorded: map[string]int64{}, DispatchedRecorded: map[string]int64{}, OnCFS: cal.CPU != nil}
	for _, w := range ws {
		if w.Kind == WarnCPUEvidence {
			b.Levels = append(b.Levels, w.Level)
		}
	}
	if len(b.Levels) == 0 {
		return nil
	}
	for _, l := range after.Levels {
		b.RejectedRecorded[l.Name], b.DispatchedRecorded[l.Name] = total(l.Rejected), l.Dispatched
	}
	return b
}

// replayBeyond replays the change once more on the CPU evidence's model
// where its warnings say it runs beyond the recording (beyondOf), and
// gives res that replay's figures after the change, with res.BeyondCPU.
// The recorded configuration's replay (the levels before, the fit) is
// res's: the model is the change's alone.
func replayBeyond(ctx context.Context, res *Result, cal *calibrate.Result, rc replayConfigs) error {
	if rc.after == nil || rc.tape == nil {
		return nil
	}
	b := beyondOf(res.Warnings, cal, res.After)
	if b == nil {
		return nil
	}
	rc.beyond = true
	r, err := replayOnce(ctx, cal.Apply(logs.Cancellable(ctx, rc.tape.Reader())), cal, rc)
	if err != nil {
		return err
	}
	res.Report.After = r.Report.After
	res.Workload.SkippedAfter = r.Workload.SkippedAfter
	if r.CPUReplays != nil {
		res.CPUReplays = r.CPUReplays
	}
	res.BeyondCPU = b
	return nil
}

// configurations returns the state's base configuration and, when the -f
// files or sets change it, the changed one, with notes on what of the
// change the apiserver would ignore.
func configurations(st *state.State, sets []capacity.Setting) (before, after *engine.Config, notes []string, err error) {
	before = engine.NewConfig(st.BaseFlowSchemas, st.BasePriorityLevels)
	if st.Overlay.Len() == 0 && len(sets) == 0 {
		return before, nil, nil, nil
	}
	pls, err := capacity.Apply(st.PriorityLevels, sets)
	if err != nil {
		return nil, nil, nil, err
	}
	after = engine.NewConfig(st.FlowSchemas, pls)
	for _, b := range after.Broken {
		notes = append(notes, fmt.Sprintf("note: the changed configuration's priority level %s is broken and ignored, as the apiserver would: %s", b.Name, b.Reason))
	}
	for _, d := range after.Dangling {
		notes = append(notes, fmt.Sprintf("note: the changed configuration's FlowSchema %s refers to priority level %s (%s) and is ignored, as the apiserver would", d.Name, d.PriorityLevel, d.Reason))
	}
	notes = append(notes, sameSeatsNotes(before, after, st.ServerConcurrency)...)
	return before, after, notes, nil
}

// sameSeatsNotes say which levels the change gives other shares that
// round to the seats they had: nominalConcurrencyShares 1 → 3 of a server
// of 15 seats whose levels share 231 is still ceil(15 × 3 / 233) = 1
// seat, and the level's figures do not move.
func sameSeatsNotes(before, after *engine.Config, scl int) []string {
	if scl == 0 {
		scl = engine.DefaultServerConcurrencyLimit
	}
	old := map[string]engine.LevelLimits{}
	for _, l := range before.Limits(scl) {
		old[l.Name] = l
	}
	limits := after.Limits(scl)
	var sum int64
	for _, l := range limits {
		sum += int64(l.Shares)
	}
	var notes []string
	for _, l := range limits {
		o, ok := old[l.Name]
		if !ok || l.Exempt || o.Shares == l.Shares {
			continue
		}
		same := l
		same.Shares = o.Shares
		if same == o {
			hint := ""
			if l.Shares > o.Shares {
				hint = " (more shares are needed for another seat)"
			}
			notes = append(notes, fmt.Sprintf("note: %s's nominalConcurrencyShares %d → %d leave it the %s it had: ceil(%d × %d / %d), and its limits as they were%s",
				l.Name, o.Shares, l.Shares, textfmt.Plural(l.NominalCL, "1 nominal seat", fmt.Sprintf("%d nominal seats", l.NominalCL)), scl, l.Shares, sum, hint))
		}
	}
	return notes
}

// replayConfigs are the replays to run: of the recorded configuration, of
// the changed one (nil without a change), and the tape a calibration kept
// the requests on (nil without one).
type replayConfigs struct {
	before fairqueue.ReplayConfig
	after  *fairqueue.ReplayConfig
	tape   *workload.Tape
	// calibration are the calibration's thresholds (Config.Calibration)
	calibration calibrate.Params
	// beyond replays the change on the CPU evidence's model
	// (calibrate.Result.ServerBeyond): it runs more at once than the
	// recording did, beyond what the cores allow (WarnCPUEvidence)
	beyond bool
}

// afterServer is the CPU the change's i-th replay runs on at speed, and
// whether that replay takes the executions back to their times alone
// (fairqueue.ReplayConfig.Unstretch): on the CPU evidence's model, which
// stretches them from there.
func (rc replayConfigs) afterServer(cal *calibrate.Result, i int, speed float64) (cpu fairqueue.CPU, unstretch bool) {
	if rc.beyond {
		if cpu, ok := cal.ServerBeyond(i, speed); ok {
			return cpu, true
		}
	}
	return cal.ServerAt(i, speed), false
}

// newReplayConfigs returns the replays of before and, if not nil, after.
func newReplayConfigs(st *state.State, cfg Config, before, after *engine.Config, counts engine.CountsSeries) replayConfigs {
	rc := replayConfigs{before: replayConfig(st, cfg, before), calibration: cfg.calibration()}
	if after != nil {
		a := replayConfig(st, cfg, after)
		a.Speed = cfg.ServerSpeed
		if cfg.Calibrate {
			// the change may move requests to levels with another seat cap
			a.Work = calibrate.Work(st.Release, before, after, st.ServerConcurrency, counts)
		}
		rc.after = &a
	}
	return rc
}

// replayConfig is the replay of configuration c on the state's server.
func replayConfig(st *state.State, cfg Config, c *engine.Config) fairqueue.ReplayConfig {
	return fairqueue.ReplayConfig{Config: c, ServerConcurrencyLimit: st.ServerConcurrency, RequestTimeout: cfg.RequestTimeout, NoBorrowing: cfg.NoBorrowing, Release: st.Release}
}
