package calibrate

import "time"

// Params are every threshold, tolerance and search step of the
// calibration, in one place. DefaultParams holds the figures the
// calibration runs with; each field says what it decides. None was fitted
// to a recording's result: each is a floor of evidence (how many
// observations a figure rests on), a tolerance of a check, a fact of the
// platform (the CFS period) or the step of a search.
//
// What is not here: the bounds on memory (maxSerial, maxKinds, maxLong,
// maxFit, maxDemands), which cap what is kept, not what is decided.
type Params struct {
	// Window is the length of the time windows over which the overhead
	// is also inferred: a busy machine's load changes during a recording.
	Window time.Duration
	// MinEvidence is the fewest waiting dispatches a level's own overhead
	// rests on (else it has none), the fewest recorded
	// executions of a level of one seat its stalled gaps are read from,
	// and the fewest recorded dispatches the dispatch check holds.
	MinEvidence int
	// MinWindowEvidence is the fewest seats dispatched from a queue in a
	// window for the window's overhead to be its own.
	MinWindowEvidence int64
	// QueuedThresholds are the candidate waits τ above which a request
	// counts as queued; the smallest above the lag of requests that never
	// queue is used.
	QueuedThresholds [nThresholds]time.Duration
	// LagSamples is the fewest exempt requests whose LagQuantile (the
	// 90th percentile) of latency − execution gives the lag;
	// FewLagSamples the fewest whose FewLagQuantile (the largest) does.
	// Below both, AllLagFactor (twice) the AllLagQuantile (the 10th
	// percentile) of all requests' (with LagSamples of them), else none.
	LagSamples, FewLagSamples                   int64
	LagQuantile, FewLagQuantile, AllLagQuantile float64
	AllLagFactor                                int
	// ClockSlack is how far the clock of the metrics' scrapes and that of
	// the server's log may differ: metrics whose scrapes cover the
	// workload's arrivals to within it at each end are evidence of the
	// recorded time (coverEvidence).
	ClockSlack time.Duration
	// MinCoveredArrivals is the least share of the workload's arrivals
	// that must fall between the metrics' scrapes (widened by ClockSlack)
	// for them to be evidence of the recorded time when the scrapes do not
	// span every arrival: a few requests before or after the load (a
	// lease renewed before it, a bundle's own reads after it) do not
	// refuse the evidence; a bundle captured before or after the load, or
	// over part of it, is refused.
	MinCoveredArrivals float64
	// MinExecution bounds an estimated execution time from below.
	MinExecution time.Duration
	// MeasuredCountTolerance is how far, as a share of APF's count, the
	// workload's executions of a level that ended between the metrics'
	// scrapes may be from the executions APF measured between them for
	// the two to be the same requests (measured.go): the log's end of a
	// request and APF's end of its execution straddle a scrape for the
	// few running at that moment.
	MeasuredCountTolerance float64

	// StallFactor and StallMin: an execution stalled when it took at
	// least StallFactor times its level's median and StallMin more.
	StallFactor int
	StallMin    time.Duration
	// StallShareShort is the share of a level's execution time in stalls
	// from which the recorded server counts as short of CPU, with at least
	// MinStalls stalls.
	StallShareShort float64
	MinStalls       int64
	// CFSPeriod is the CFS bandwidth period Linux uses unless configured
	// (cpu.cfs_period_us); PeriodSlack how near a period's start a stall
	// ends to count as ending there.
	CFSPeriod, PeriodSlack time.Duration
	// AtBoundaryThrottled is the share of stalls ending at one phase of
	// the period from which they are a CPU limit's throttling (by chance,
	// the 11 ms around one phase hold 11%), with at least
	// MinThrottledStalls stalls.
	AtBoundaryThrottled float64
	MinThrottledStalls  int64
	// MinFullPeriodStalls is the fewest stalls of about a period the CFS
	// model's running per period is read from.
	MinFullPeriodStalls int
	// RunStallShare is the share of those stalls, the longest, and
	// RunStallsAtLeast the fewest of them, the CFS model's running per
	// period is read from where its CPU limit is not given: the stall at
	// their middle (cpuModel).
	RunStallShare    float64
	RunStallsAtLeast int
	// MinRunPerPeriod bounds the CFS model's running per period from
	// below.
	MinRunPerPeriod time.Duration
	// CPUPhases is the number of replays of a CFS model, each with its
	// first collection at another share of its collections' pace.
	CPUPhases int

	// FitWindow is the length of the fit's windows. A level's fit is good
	// when predicted/recorded 429s lie within GoodBand (or both are below
	// FewRejections) with at least GoodAgreement of its requests' fates
	// agreeing, fair within FairBand, else poor.
	FitWindow          time.Duration
	GoodBand, FairBand [2]float64
	GoodAgreement      float64
	FewRejections      int64
	// DispatchTolerance is how far, as a share of the recorded count, the
	// replay of the recorded configuration may dispatch from the server
	// before the calibration is refused; ScaledDispatchTolerance the same
	// for a level whose estimated execution times were already scaled to
	// the seat time the recording allows.
	DispatchTolerance, ScaledDispatchTolerance float64
	// CFSDispatchTolerance is how far beyond the server the replay of the
	// recorded configuration may dispatch the CPU model's level before
	// its CPU per work is fitted to the server's dispatches (fitPerWork).
	CFSDispatchTolerance float64
	// ReboundPasses bounds the passes of the seat-time check after the
	// execution times were scaled.
	ReboundPasses int
	// ConvergedChange and ConvergedShare: the audit-only fixed point has
	// converged when no level's mean queue wait moved by more than
	// ConvergedChange or by more than ConvergedShare of itself (of
	// ConvergedChange at least) from one iteration to the next.
	ConvergedChange time.Duration
	ConvergedShare  float64
	// FixedPointIterations bounds the iterations of that fixed point.
	FixedPointIterations int

	// MinFitted is the fewest recorded executions the shared-CPU model
	// is fitted on.
	MinFitted int
	// MaxEstimatedShare is the largest share of the executions that may
	// be an audit log's estimates (latency less the replay's own wait,
	// averaged per kind) for the CPU evidence to give its model
	// (SharedFromCPUEvidence): above it, the CPU per execution and the
	// concurrency the recording held rest on estimates, and a change that
	// runs more at once is not known (Headroom.Estimated).
	MaxEstimatedShare float64
	// MinStretched is the least share of the recorded executions that
	// must have started with more in flight than the fitted capacity, and
	// MinImprovement the least share of their spread within their kind
	// the stretch must explain, for the shared-CPU model to be kept.
	MinStretched, MinImprovement float64
	// CoarseShareStep is the step of the shares of an execution the
	// coarse fit tries; ShareStep that of the fine fit, within ShareSpan
	// of the coarse fit's share.
	CoarseShareStep, ShareStep, ShareSpan float64
	// CapacityStep is the factor between the capacities the coarse fit
	// tries; FineCapacityStep that of the fine fit, within FineCapacitySpan
	// of the coarse fit's capacity.
	CapacityStep, FineCapacityStep, FineCapacitySpan float64
	// CoresSlack is how far above the server's cores the fitted capacity
	// times the share may go before the executions are said to wait for
	// something other than the CPU.
	CoresSlack float64
	// SaturatedRunnableWait is the mean time the server's goroutines
	// waited runnable for a P (go_sched_latencies_seconds over the
	// workload's window) from which its CPU counts as saturated: the
	// process used all the CPU it could get, and its executions shared
	// what its requests' other work left (SharedFromSaturated). Half a
	// millisecond is a few of Go's scheduling quanta and far below a
	// CFS period; chosen before any recording was read against it.
	SaturatedRunnableWait time.Duration

	// Without are the model's rules it runs without: none in
	// DefaultParams. The ablation study removes each in turn, and a rule
	// stays only where its removal makes the predictions of the kept
	// recordings worse (pkg/simulate, TestEveryRuleEarnsItsPlace).
	Without Rule
}

// Rule is one rule of the calibration's model, as a bit of a set
// (Params.Without).
type Rule uint16

// The rules of the model, each a case of how the server's CPU and the
// time a request holds its seats are read from the evidence
// (docs/simulate.md).
const (
	// RuleSaturated: the metrics show the server's CPU saturated over the
	// workload's window, and the executions shared what its requests'
	// other work left (SharedFromSaturated).
	RuleSaturated Rule = 1 << iota
	// RuleFitted: the shared CPU's share and capacity fitted to how the
	// recorded executions stretched with the requests in flight
	// (SharedFromExecutions).
	RuleFitted
	// RuleCFS: the CFS model of a server throttled by its CPU limit.
	RuleCFS
	// RuleStalledGaps: the CFS model's stalls taken out of the level's
	// recorded executions and overhead, to be put back where the model
	// places them.
	RuleStalledGaps
	// RuleSerialEnds: the executions of a one-seat level that an audit log
	// alone records without timing, read back to back from their ends.
	RuleSerialEnds
	// RuleLevelOverhead: a level's own overhead per dispatch from a queue,
	// read from its throughput while it was saturated.
	RuleLevelOverhead
	// RuleSeatTime: the overheads and estimated execution times held to
	// the seat time the recording allows.
	RuleSeatTime
	// RuleRooms: an audit record without timing of its own that found its
	// level with room was dispatched on arrival, and its latency is its
	// execution (the fitted stretch reads it so).
	RuleRooms
	// RuleMeasured: the CPU evidence's model reads an audit log's
	// estimated executions of a level at the time APF measured for them
	// between the metrics' scrapes, and takes them to it in the replay of
	// a change on that model (measured.go).
	RuleMeasured
	// RuleArrivals: the CFS model spends each request's cost before APF
	// from the quota of the period it arrives in (CPUModel.RequestCost),
	// not at the even pace of the rest of the server.
	RuleArrivals
	// RulePerWorkFit: the CFS model's CPU per work, which the process's
	// CPU reads from below, raised towards 1 until the replay of the
	// recorded configuration dispatches the model's level as the server
	// did (fitPerWork).
	RulePerWorkFit
	// RuleCostFit: the CFS model's arrivals' cost, which the process's CPU
	// holds from below, raised towards the median latency of the recorded
	// 429s once an execution spends all its work, until the replay of the
	// recorded configuration dispatches the model's level as the server
	// did (fitCost).
	RuleCostFit
)

// Rules are every Rule, in the order of their constants.
var Rules = []Rule{RuleSaturated, RuleFitted, RuleCFS, RuleStalledGaps, RuleSerialEnds, RuleLevelOverhead, RuleSeatTime, RuleRooms, RuleMeasured, RuleArrivals, RulePerWorkFit, RuleCostFit}

// String names the rule as docs/simulate.md does.
func (r Rule) String() string {
	switch r {
	case RuleSaturated:
		return "saturated CPU"
	case RuleFitted:
		return "fitted stretch"
	case RuleCFS:
		return "CFS model"
	case RuleStalledGaps:
		return "stalled gaps"
	case RuleSerialEnds:
		return "serial ends"
	case RuleLevelOverhead:
		return "level overhead"
	case RuleSeatTime:
		return "seat-time check"
	case RuleRooms:
		return "rooms"
	case RuleMeasured:
		return "measured executions"
	case RuleArrivals:
		return "arrivals' cost"
	case RulePerWorkFit:
		return "CPU per work fitted"
	case RuleCostFit:
		return "arrivals' cost fitted"
	}
	return "rules"
}

// runs reports whether the model runs rule r.
func (p *Params) runs(r Rule) bool { return p.Without&r == 0 }

// DefaultParams are the figures the calibration runs with.
func DefaultParams() Params {
	return Params{
		Window:            10 * time.Second,
		MinEvidence:       20,
		MinWindowEvidence: 10,
		QueuedThresholds: [nThresholds]time.Duration{500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
			10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond},
		LagSamples:             20,
		FewLagSamples:          5,
		LagQuantile:            0.9,
		FewLagQuantile:         1,
		AllLagQuantile:         0.1,
		AllLagFactor:           2,
		ClockSlack:             time.Second,
		MinCoveredArrivals:     0.9,
		MinExecution:           100 * time.Microsecond,
		MeasuredCountTolerance: 0.02,

		StallFactor:         10,
		StallMin:            20 * time.Millisecond,
		StallShareShort:     0.25,
		MinStalls:           10,
		CFSPeriod:           100 * time.Millisecond,
		PeriodSlack:         5 * time.Millisecond,
		AtBoundaryThrottled: 0.5,
		MinThrottledStalls:  5,
		MinFullPeriodStalls: 1,
		RunStallShare:       0.5,
		RunStallsAtLeast:    8,
		MinRunPerPeriod:     100 * time.Microsecond,
		CPUPhases:           8,

		FitWindow:     5 * time.Second,
		GoodBand:      [2]float64{0.75, 1.25},
		FairBand:      [2]float64{0.5, 2},
		GoodAgreement: 0.8,
		FewRejections: 5,

		DispatchTolerance:       0.10,
		ScaledDispatchTolerance: 0.01,
		CFSDispatchTolerance:    0.005,
		ReboundPasses:           3,
		ConvergedChange:         time.Millisecond,
		ConvergedShare:          0.02,
		FixedPointIterations:    8,

		MinFitted:         20,
		MaxEstimatedShare: 0.5,
		MinStretched:      0.05,
		MinImprovement:    0.15,
		CoarseShareStep:   0.25,
		ShareStep:         0.05,
		ShareSpan:         0.2,
		CapacityStep:      1.1,
		FineCapacityStep:  1.01,
		FineCapacitySpan:  1.15,
		CoresSlack:        1.05,

		SaturatedRunnableWait: 500 * time.Microsecond,
	}
}

// paramsOf are the Params opts run with: a copy of opts.Params, or
// DefaultParams.
func paramsOf(opts Options) *Params {
	p := DefaultParams()
	if opts.Params != nil {
		p = *opts.Params
	}
	return &p
}
