package reconstruct

import (
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// Options describe the recorded server and what to report.
type Options struct {
	// Config is the configuration the workload was recorded under.
	Config *engine.Config
	// ServerConcurrencyLimit of the recorded server (default 600).
	ServerConcurrencyLimit int
	// RequestTimeout of the recorded server (default 1 minute): it sets the
	// wait limits.
	RequestTimeout time.Duration
	// Release is the recorded server's release (borrowing, LIST sizes);
	// zero means engine.NewestRelease.
	Release engine.Release
	// Counts are the object counts of the recorded server's scrapes, for
	// the seats of LISTs that record none (calibrate.Options.Counts).
	Counts engine.CountsSeries
	// NoBorrowing keeps every level at its nominal limit.
	NoBorrowing bool
	// Calibration, if set, is used instead of deriving one.
	Calibration *calibrate.Result
	// OnFate receives every request's reconstructed fate, in the order the
	// fates were decided. The Fate, its Hand and its Record are reused
	// after the call: a copy of the Fate must copy its Hand too.
	OnFate func(*Fate)
	// Focus, if set, asks for the state around a request (Fate.Snapshot):
	// the queues of its hand and who held the seats.
	Focus func(*workload.Request) bool
	// Identify, if set, gives the identity of a record (ok true) in place
	// of the one it carries, if any: explain request's identity (given by
	// flags, or read from the audit event) for the request it explains,
	// whose httplog line names no user. The record's flow and hand are
	// then those of that identity, as explain shows them.
	Identify func(*workload.Request) (engine.Identity, bool)
	// Progress, if set, is called with the records read so far and the
	// stage ("calibrating", "reconstructing") every 65,536 records.
	Progress func(stage string, records int64)
	// IncidentGap ends an incident of a level after this long without a
	// 429 (default 10 s).
	IncidentGap time.Duration
}

// Fate is the reconstruction of one request.
type Fate struct {
	// Record is the request as read (with the estimates of the calibration
	// applied); Index its position in the workload, from 0.
	Record *workload.Request
	Index  int64
	// Level, FlowSchema and Distinguisher are its classification (by the
	// engine when the identity is known, else as recorded).
	Level, FlowSchema, Distinguisher string
	// At is when it reached APF.
	At time.Time
	// Rejected is the reconstructed fate, with Reason (queue-full,
	// concurrency-limit, time-out). For a recorded 429 that the
	// reconstruction does not reject, Reason is still the likeliest one
	// and Agrees is false.
	Rejected bool
	Reason   string
	// Status is what the server answered (0 unknown); Agrees says whether
	// the reconstructed fate is that answer (429 or not), Class names the
	// disagreement when it is not.
	Status int
	Agrees bool
	Class  string
	// Wait is the time in a queue (0 when dispatched at once); WaitFrom
	// says where it came from.
	Wait     time.Duration
	WaitFrom WaitSource
	// Execution is the execution time as recorded or estimated.
	Execution time.Duration
	// Seats are the request's seats (InitialSeats), SeatsEstimated when the
	// log did not record them.
	Seats          int
	SeatsEstimated bool
	// Queue is the queue the request was put in (-1 for levels without
	// queues); Hand its flow's queues.
	Queue int
	Hand  []int
	// SeatsInUse, Limit, Waiting are the level's at the request's arrival
	// (before it).
	SeatsInUse, Limit, Waiting int
	// NominalLimit is the level's nominal limit (from the configuration);
	// Limit, its current limit, differs from it by borrowing.
	// LimitFromLog is false while no borrowing pass has run on the log's
	// demand (its first 10 s): Limit is then what borrowing gives the
	// level when no level has any demand, not a figure of the log.
	NominalLimit int
	LimitFromLog bool
	// WaitLimit is the request's wait limit.
	WaitLimit time.Duration
	// Snapshot is the state around the request, when Options.Focus asked.
	Snapshot *Snapshot
}

// Snapshot is the state of a level at one request's arrival.
type Snapshot struct {
	QueueLengthLimit int `json:"queueLengthLimit"`
	// Queues are the queues of the request's hand.
	Queues []QueueState `json:"queues,omitempty"`
	// Holders are the flows holding the level's seats, most seats first.
	Holders []FlowCount `json:"holders"`
}

// QueueState is one queue and what waited in it.
type QueueState struct {
	Index int `json:"index"`
	// Length is the requests waiting; Flows who they were.
	Length int         `json:"length"`
	Flows  []FlowCount `json:"flows,omitempty"`
	// Chosen is the queue shuffle sharding picked for the request.
	Chosen bool `json:"chosen,omitempty"`
}

// FlowCount is a flow's requests and seats.
type FlowCount struct {
	Flow     string `json:"flow"`
	Requests int    `json:"requests"`
	Seats    int    `json:"seats"`
}

// Result is what a reconstruction found.
type Result struct {
	// Records read, Reconstructed those that went through APF (not
	// bypassed nor skipped), Skipped those that could not be classified
	// (FirstSkip says why).
	Records, Reconstructed, Skipped int64
	FirstSkip                       string
	// BeforeAPF counts the requests answered ahead of APF: 401s, and 403s
	// whose httplog line carries no priority level (a refused
	// impersonation).
	BeforeAPF int64
	// EstimatedWaits counts requests whose log recorded no wait (their
	// dispatch is the reconstruction's), EstimatedSeats those whose seats
	// were not recorded.
	EstimatedWaits, EstimatedSeats int64
	// Threshold is the calibration's τ: a later dispatch was a wait.
	Threshold time.Duration
	// AuditOnly is true when no record had an execution time.
	AuditOnly bool
	// Levels are the per-level figures, by name.
	Levels []LevelResult
	// Incidents are the windows of 429s, by level and time.
	Incidents []rejections.Incident
	// Start and End span the arrivals.
	Start, End time.Time
	// Instances are the apiserver instances reconstructed, each on its own
	// (RunInstances), by name; the figures above sum them. With
	// Options.Focus, only those that hold a focused request.
	Instances []InstanceResult
	// InstancesRead are the names of every instance the workload held
	// (RunInstances), reconstructed or not.
	InstancesRead []string
}

// LevelResult is the reconstruction of one priority level.
type LevelResult struct {
	Level string
	// Agreement is the reconstructed fate against the recorded status
	// (requests with a status only).
	Agreement Agreement
	// Reasons are the reconstructed reasons of the recorded 429s.
	Reasons map[string]int64
	// Disagreements counts the disagreements by class.
	Disagreements map[string]int64
}

// Agreement is the confusion matrix of the reconstructed fate against the
// recorded status.
type Agreement struct {
	BothRejected, OnlyReconstructed, OnlyRecorded, BothServed int64
}

func (a *Agreement) add(reconstructed, recorded bool) {
	switch {
	case reconstructed && recorded:
		a.BothRejected++
	case reconstructed:
		a.OnlyReconstructed++
	case recorded:
		a.OnlyRecorded++
	default:
		a.BothServed++
	}
}

// Total is the requests compared.
func (a Agreement) Total() int64 {
	return a.BothRejected + a.OnlyReconstructed + a.OnlyRecorded + a.BothServed
}

// Agreeing is the requests whose fates agree.
func (a Agreement) Agreeing() int64 { return a.BothRejected + a.BothServed }

// Fraction is Agreeing over Total (1 when empty).
func (a Agreement) Fraction() float64 {
	if a.Total() == 0 {
		return 1
	}
	return float64(a.Agreeing()) / float64(a.Total())
}

// Sum adds the agreements of every level.
func (r *Result) Sum() Agreement {
	var s Agreement
	for _, l := range r.Levels {
		s.BothRejected += l.Agreement.BothRejected
		s.OnlyReconstructed += l.Agreement.OnlyReconstructed
		s.OnlyRecorded += l.Agreement.OnlyRecorded
		s.BothServed += l.Agreement.BothServed
	}
	return s
}

// The disagreement classes.
const (
	// ClassRoomInQueue: the server answered 429 but the chosen queue had
	// room in the reconstruction (a request left it earlier there than on
	// the server, or another queue of the hand was picked).
	ClassRoomInQueue = "429 with room in the reconstructed queue"
	// ClassSeatsFree: the server answered 429 but the reconstruction had a
	// seat free at that moment.
	ClassSeatsFree = "429 with a seat free in the reconstruction"
	// ClassFullButServed: the server served a request that arrived, in the
	// reconstruction, at a full queue with every seat taken.
	ClassFullButServed = "served though the reconstructed queue was full"
	// ClassNoRoomButServed: a level without queues served a request when
	// the reconstruction had no room for it.
	ClassNoRoomButServed = "served though the reconstructed level had no room"
	// ClassTimeOutDispatchable: a request that waited its wait limit while
	// the reconstruction had a seat free when it timed out.
	ClassTimeOutDispatchable = "time-out with a seat free in the reconstruction"
	// ClassNotAPF: a 429 on a request APF did not hold (exempt, or
	// answered after executing): not APF's.
	ClassNotAPF = "429 not given by APF"
)

// WaitSource is where a fate's wait in a queue came from (Fate.WaitFrom):
// the word printed after the wait.
type WaitSource string

// The sources of a wait.
const (
	// WaitNone: the request did not wait, or was rejected.
	WaitNone WaitSource = ""
	// WaitHTTPLog: the httplog line's latency less its execution (or the
	// audit's apf-queue-wait beside it).
	WaitHTTPLog WaitSource = "httplog"
	// WaitAudit: the audit event's apf-queue-wait annotation.
	WaitAudit WaitSource = "audit"
	// WaitEstimated: the log tells only when the request ended; the wait
	// is reconstructed from the seats that freed before it.
	WaitEstimated WaitSource = "estimated"
)
