package calibrate

import (
	"maps"
	"slices"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// Kind names what one of the calibration's estimators estimates.
type Kind uint8

// The calibration's estimators, in the order it runs them
// (passEstimators, then workloadEstimators).
const (
	// KindThreshold: the wait τ above which a request counts as queued
	// (Report.Threshold, ThresholdFrom).
	KindThreshold Kind = iota
	// KindOverheads: each level's evidence and the overhead of those with
	// saturated time of their own (Level.Source).
	KindOverheads
	// KindCFS: the model of a CFS quota and the Go runtime's collections
	// (Report.CPU, CPUWhy, CPUNeeds); the stalls it places come off its
	// level's overhead.
	KindCFS
	// KindSeatTime: the overheads as the seat-time check bounds them
	// (Level.Refused, CheckSeatTime).
	KindSeatTime
	// KindServerOverhead: the server-wide overhead, a summary given to no
	// level (Report.ServerOverhead).
	KindServerOverhead
	// KindAuditWaits: the waits and execution times an audit log alone
	// lacks, by a fixed point of replays (Estimated).
	KindAuditWaits
	// KindMeasured: the estimated execution times set beside those APF
	// measured (Level.Measured), which the CPU evidence's model reads.
	KindMeasured
	// KindShared: the model of the server's CPU shared by every execution
	// (Report.Shared, SharedWhy).
	KindShared
)

// estimator is one of the calibration's estimators: what it estimates,
// and the function that reads its evidence (in) and the models the
// estimators before it set on r, and sets its own model, with its
// provenance, on r. A value, not an interface: the set is closed, and
// each estimator is one function.
type estimator struct {
	kind     Kind
	estimate func(r *Result, in *inputs) error
}

// inputs are what the estimators read besides r: the observation pass's
// accumulation for the estimators of the pass, a fresh reader of the
// workload for those over the workload as the calibration prepares it.
type inputs struct {
	// opts are the calibration's options: for the pass's estimators
	// without the metrics' CPU evidence when it does not cover the
	// workload (uncovered), for the fixed point as the caller gave them
	// (each of its passes reads them afresh)
	opts      Options
	limits    map[string]engine.LevelLimits
	uncovered *Uncovered
	// pass is the observation pass's evidence (passEstimators)
	pass *observer
	// open, recorded and maxIter: a fresh reader of the workload at every
	// call, the recorded configuration the fixed point replays and its
	// bound on iterations (workloadEstimators)
	open     func() (workload.Reader, error)
	recorded fairqueue.ReplayConfig
	maxIter  int
}

// passEstimators run, in this order, at the end of every observation pass
// (Derive, and each iteration of an audit log's fixed point), over the
// evidence the pass gathered.
var passEstimators = []estimator{
	{KindThreshold, queuedThreshold},
	{KindOverheads, levelOverheads},
	{KindCFS, cfsQuota},
	{KindSeatTime, seatTimeBound},
	{KindServerOverhead, serverOverhead},
}

// workloadEstimators run, in this order, once, after the observation pass,
// each over the workload read again as the calibration prepares it: what
// they read is the estimates before them applied to every record.
var workloadEstimators = []estimator{
	{KindAuditWaits, auditWaits},
	{KindMeasured, measuredExecutions},
	{KindShared, sharedCPU},
}

// estimate runs the estimators in order on r.
func estimate(r *Result, in *inputs, es []estimator) error {
	for _, e := range es {
		if err := e.estimate(r, in); err != nil {
			return err
		}
	}
	return nil
}

// queuedThreshold estimates τ from the lag of requests that never queue.
func queuedThreshold(r *Result, in *inputs) error {
	ti, from := in.pass.threshold()
	r.Threshold, r.ThresholdFrom = Duration(r.params.QueuedThresholds[ti]), from
	return nil
}

// levelOverheads sets each level's evidence at τ, where its overhead comes
// from, and the overhead of those with saturated time of their own.
func levelOverheads(r *Result, in *inputs) error {
	ti := slices.Index(r.params.QueuedThresholds[:], time.Duration(r.Threshold))
	for _, n := range slices.Sorted(maps.Keys(in.pass.levels)) {
		la := in.pass.levels[n]
		lim, known := in.limits[n]
		if known && !lim.Exempt && seatLimit(lim) == 1 && la.exec.n == 0 && r.params.runs(RuleSerialEnds) {
			// an audit log alone: no execution time of its own
			la.serialExecutions(r)
		}
		lv := la.level(ti, lim)
		lv.Source, lv.Why = r.source(lv, lim, known)
		if lv.Source == SourceSaturated && r.params.runs(RuleLevelOverhead) {
			r.saturated(&lv, la, ti, float64(lim.NominalCL))
		}
		r.Levels = append(r.Levels, lv)
	}
	return nil
}

// cfsQuota builds the CFS model from the level whose stalls tell a
// quota's throttling, before the seat-time check and the server's
// figures: the stalls it places come off its level's overhead first.
func cfsQuota(r *Result, in *inputs) error {
	if !r.Enabled || !r.params.runs(RuleCFS) {
		return nil
	}
	r.CPU, r.CPUWhy, r.CPUNeeds = cpuModel(r.params, r.Levels, in.pass.levels, in.opts.Runtime, in.opts.NoCPUModel, in.opts.CPULimit, in.uncovered)
	if r.CPU != nil && r.params.runs(RuleStalledGaps) {
		r.stalledGaps(in.pass.levels[r.CPU.Level], in.limits)
		r.stallThresholds()
	}
	return nil
}

// seatTimeBound holds the levels' own overheads to the seat time the
// recording allows, before they count towards the server's summary.
func seatTimeBound(r *Result, in *inputs) error {
	if !r.params.runs(RuleSeatTime) {
		return nil
	}
	sts := map[string]*seatTime{}
	for n, la := range in.pass.levels {
		sts[n] = &la.seatTime
	}
	r.bound(sts, in.limits, func(lv *Level) bool { return lv.Source == SourceSaturated }, false)
	return nil
}

// serverOverhead sets the server-wide overhead, the seat-weighted mean of
// the levels' own: a summary, given to no level.
func serverOverhead(r *Result, _ *inputs) error {
	r.serverFigures()
	return nil
}

// auditWaits gives an audit log alone the waits and execution times it
// lacks (fixedPoint), and holds them to the seat time the recording
// allows.
func auditWaits(r *Result, in *inputs) error {
	if !r.AuditOnly {
		return nil
	}
	return r.fixedPoint(in.open, in.recorded, in.opts, in.maxIter)
}

// sharedCPU fits the shared-CPU model (DeriveShared).
func sharedCPU(r *Result, in *inputs) error {
	src, err := in.open()
	if err != nil {
		return err
	}
	return r.DeriveShared(src)
}
