package calibrate

// The provenance of the calibration's figures: what each estimate was read
// from, as values a caller compares and a printer words. They encode in
// JSON as their string.

// LevelSource is what a level's overhead was read from.
type LevelSource string

// The sources of a level's overhead.
const (
	// SourceSaturated: the level's own saturated time.
	SourceSaturated LevelSource = "saturated"
	// SourceUnmeasured: no saturated time of its own to read an overhead
	// from (Level.Why says why): none. (A server-wide figure given to such
	// levels changed no prediction of any kept recording, and went.)
	SourceUnmeasured LevelSource = "unmeasured"
	// SourceNone: an exempt level, never queued.
	SourceNone LevelSource = "none"
	// SourceDisabled: no calibration.
	SourceDisabled LevelSource = "disabled"
)

// ThresholdSource is what the threshold τ was read from
// (Report.ThresholdFrom): the sentence printed and returned in JSON; ""
// without a calibration.
type ThresholdSource string

// The sources of τ, from the most evidence to none (observer.threshold).
const (
	// ThresholdExemptP90: LagSamples exempt requests or more.
	ThresholdExemptP90 ThresholdSource = "90th percentile of latency − execution of exempt requests"
	// ThresholdExemptLargest: FewLagSamples exempt requests or more.
	ThresholdExemptLargest ThresholdSource = "largest latency − execution of the few exempt requests"
	// ThresholdAllP10: too few exempt requests, LagSamples requests or
	// more of any level.
	ThresholdAllP10 ThresholdSource = "twice the 10th percentile of latency − execution: too few exempt requests"
	// ThresholdUnmeasured: no lag could be measured (too few requests
	// with an execution time): τ is then the smallest candidate, which
	// the filters' own time may well exceed.
	ThresholdUnmeasured ThresholdSource = "too few requests with an execution time"
)

// Check is one of the checks the recording holds a calibration to.
type Check string

// The checks of bound.go.
const (
	// CheckSeatTime: the seat time a level's executed requests hold as
	// calibrated fits in its seats over its busy time.
	CheckSeatTime Check = "seat time"
	// CheckDispatches: the replay of the recorded configuration dispatches
	// as many requests as the server did, within DispatchTolerance.
	CheckDispatches Check = "dispatches"
)

// SharedFrom is what the shared-CPU model rests on (SharedCPU.From).
type SharedFrom string

// The evidence of a shared-CPU model.
const (
	// SharedFromExecutions: share and capacity fitted to how the recorded
	// executions stretched.
	SharedFromExecutions SharedFrom = "executions"
	// SharedFromSaturated: the server's CPU was saturated over the
	// workload's window (its goroutines waited runnable for a P); every
	// execution is on the CPU (share 1) and the executions shared the CPU
	// the process used less what its requests cost before APF, their 429s
	// included.
	SharedFromSaturated SharedFrom = "saturated"
	// SharedFromAssumedSaturated: no evidence; the server's CPU assumed
	// saturated through the recorded time, so that the executions shared
	// what they had and no change runs more of them in the same time
	// (Result.AssumingSaturated, one end of a range).
	SharedFromAssumedSaturated SharedFrom = "assumed saturated"
	// SharedFromCPUEvidence: the recorded executions did not stretch with
	// the requests in flight, and the metrics give the process's CPU and
	// the cores: every execution is on the CPU (share 1), needing the
	// process's CPU less its requests' cost before APF over the executions'
	// time, and they share the cores that cost leaves. It models a change
	// that runs more at once than the recording did, not the recorded
	// configuration (Headroom.Shared, Result.ServerBeyond).
	SharedFromCPUEvidence SharedFrom = "cpu evidence"
)

// CoresSource is where the server's cores (SharedCPU.Cores) came from.
type CoresSource string

// The sources of the server's cores.
const (
	// CoresUnknown: no figure.
	CoresUnknown CoresSource = ""
	// CoresGOMAXPROCS: the Go runtime's GOMAXPROCS, from the metrics.
	CoresGOMAXPROCS CoresSource = "GOMAXPROCS"
	// CoresCPULimit: the CPU limit the caller gave (Options.CPULimit).
	CoresCPULimit CoresSource = "cpu-limit"
	// CoresWithinPeriod: the Go runtime's GOMAXPROCS, from the metrics,
	// on a server whose CFS quota the CPU model (CPUModel) spends period
	// by period: its Ps run side by side until a period's quota is spent,
	// and the CPU model then stalls them, so the quota is not counted as
	// cores too (cpuEvidenceShared).
	CoresWithinPeriod CoresSource = "GOMAXPROCS within a CFS period"
)

// words names the source in a sentence of the engine's own.
func (c CoresSource) words() string {
	if c == CoresCPULimit {
		return "the CPU limit given"
	}
	return string(c)
}

// Need is the evidence a missing model lacks, for the caller to name the
// flag or capture that gives it (Result.CPUNeeds).
type Need string

// The evidence a CPU model may lack.
const (
	// NeedNothing: nothing a capture could give (no model was called
	// for, it was turned off, or the evidence contradicts itself).
	NeedNothing Need = ""
	// NeedScrapes: two /metrics scrapes around the recorded time, from a
	// server that exports the Go runtime's metrics.
	NeedScrapes Need = "scrapes"
	// NeedCoveringScrapes: scrapes that cover the workload's window (the
	// metrics' do not: Result.Uncovered).
	NeedCoveringScrapes Need = "covering-scrapes"
	// NeedCPULimit: the server's CPU limit.
	NeedCPULimit Need = "cpu-limit"
)

// DispatchVerdict is the dispatch check's verdict on a level: whether the
// replay of the recorded configuration dispatched, within
// Params.DispatchTolerance, as many of its requests as the server did.
type DispatchVerdict string

// The dispatch check's verdicts.
const (
	// DispatchUnchecked: the server dispatched fewer than
	// Params.MinEvidence of the level's requests, or no replay was
	// checked.
	DispatchUnchecked DispatchVerdict = ""
	// DispatchHeld: within the tolerance.
	DispatchHeld DispatchVerdict = "held"
	// DispatchTooMany: the replay dispatched more: the server held its
	// seats longer than the calibration explains.
	DispatchTooMany DispatchVerdict = "too-many"
	// DispatchTooFew: the replay dispatched fewer, after the calibration
	// refused what it could.
	DispatchTooFew DispatchVerdict = "too-few"
)

// Holds reports whether the replay reproduced the level's dispatches.
func (v DispatchVerdict) Holds() bool { return v == DispatchHeld || v == DispatchUnchecked }
