package simulate

// Params are the thresholds of simulate's own judgements, in one place:
// where a what-if leaves the recorded regime (Regime). DefaultParams
// holds the figures simulate runs with; each field says what it decides.
// The calibration's thresholds are calibrate.Params.
type Params struct {
	// SeatsFactor: a level whose nominal seats grow or shrink by more
	// than this factor runs that much more or less at once than was
	// recorded (WarnSeats).
	SeatsFactor int
	// QueueFactor: a level whose queues hold more than this factor of the
	// requests they held has requests wait that the server rejected at
	// once (WarnQueueCapacity).
	QueueFactor int
	// ExecutionsFactor: a level that would execute more than this factor
	// of its recorded dispatches, on a server that paid an overhead per
	// dispatch, runs at a load never recorded (WarnMoreExecutions).
	ExecutionsFactor int64
	// MoreWork is the share of the recorded dispatches that the change
	// must add, over all levels, for a level short of CPU to be warned
	// about (WarnShortOfCPU), or one that runs more at once than the
	// cores allow (WarnBeyondCores).
	MoreWork float64
	// RangeMargin is how much faster or slower than the recorded server
	// the ends of the bound replay the server where no evidence tells its
	// CPU (Bound): two runs of one load on one server differ so.
	RangeMargin float64
	// RangeFitRecorded is the fewest recorded 429s for a level's own fit
	// to widen its bound (CPUComparisonLevel.FitError); a level with fewer
	// takes the worst of the levels with as many.
	RangeFitRecorded int64
	// RangeWide: a bound whose high end is more than this factor of its
	// low end is said to be too wide to say much (CPUComparisonLevel.Wide).
	RangeWide float64
	// BeyondCoresFactor: a level that the change has run more at once
	// than it did, on a server whose executions did not stretch in the
	// recording, is warned about when the CPU the server's executions
	// need at once after the change (calibrate.Headroom) is more than
	// this factor of its cores (WarnBeyondCores).
	BeyondCoresFactor float64
}

// DefaultParams are the figures simulate runs with.
func DefaultParams() Params {
	return Params{SeatsFactor: 2, QueueFactor: 2, ExecutionsFactor: 2, MoreWork: 0.10, RangeMargin: 0.10, RangeFitRecorded: 20, RangeWide: 2, BeyondCoresFactor: 1}
}
