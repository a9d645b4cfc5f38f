// Package calibrate derives, from a recorded workload alone, how long the
// recorded apiserver really held a seat per dispatch, and prepares the
// workload's requests for the fair-queuing replay (package fairqueue)
// accordingly. It is a stage of its own between reading the workload and
// replaying it: Derive reads the workload once, Apply wraps the second
// reading.
//
// Why: upstream's queue set counts a dispatched request's seats from the
// dispatch decision, but apf_execution_time starts only when the waiting
// goroutine has been woken and scheduled. On a CPU-starved server that gap
// (scheduling, GC pauses) dwarfs the execution, and a replay that holds
// seats for apf_execution_time alone dispatches far too many requests.
//
// The evidence, per priority level:
//
//   - saturated time: while any request of the level waits in a queue, all
//     of its seats are held, and every dispatch is of a waiting request.
//     Over the union of the waiting intervals (arrival + τ to dispatch) of
//     length T in N spans, a level of C seats whose waiting requests took S
//     seats in all held C·T seat-seconds, so a seat is held for
//     C·T / (S + N·(C−1)/2) per dispatch (the second term for the requests
//     already running when a span starts and still running when it ends);
//     what their recorded execution times do not cover is the per-dispatch
//     overhead. The
//     threshold τ separates a queue wait from the time the filters ahead of
//     APF take; it is read from requests that never queue (the exempt
//     level);
//   - the dispatch time of each request, from what each source records:
//     where the apiserver wrote the filters' audit annotations (requests
//     slower than 500 ms; k8s.io/apiserver pkg/endpoints/filters/audit.go,
//     writeLatencyToAnnotation), the time ahead of APF
//     (apiserver.latency.k8s.io/authentication and .../impersonation) and
//     in its queue (.../apf-queue-wait, observed for queued requests only:
//     pkg/util/flowcontrol/apf_filter.go); .../authorization runs after the
//     dispatch, inside the execution (pkg/server/config.go,
//     DefaultBuildHandlerChain). Elsewhere it is estimated: httplog's
//     latency minus apf_execution_time, which also holds the filters ahead
//     of APF and the time after the handler, or the replay's own wait (an
//     audit log alone). Result.DispatchTimes counts each source;
//   - a level without saturated time of its own, or whose limit moves
//     with borrowing, has none (SourceUnmeasured): a server-wide figure
//     given to such levels changed no prediction of any kept recording
//     (TestEveryRuleEarnsItsPlace), and went.
//
// A calibration never contradicts the recording: bound.go holds each
// level's calibrated seat time to the time it was busy, and the replay of
// the recorded configuration to the recorded dispatches, and refuses an
// estimate that breaks either (Level.Refused).
//
// An audit log alone records neither the execution time nor, for requests
// faster than 500 ms, the queue wait: those are estimated, the queue wait
// from the replay itself by iterating to a fixed point (DeriveAuditOnly;
// the execution times so estimated are averaged per kind of request),
// and the result says how many fields were estimated and how.
//
// The composition (Calibrate, estimate.go): each estimator is one value
// of one type, estimator: what it estimates (Kind) and a function that
// reads its evidence and the models the estimators before it set, and
// sets its own model with its provenance. They run in two loops, not
// one, because they read two kinds of evidence:
//
//   - passEstimators (the threshold τ, the levels' overheads, the CFS
//     model, the seat-time check, the server-wide summary) read what one
//     observation pass over the workload gathered; they run at the end of
//     every pass, and an audit log's fixed point runs the pass again with
//     each iteration's waits;
//   - workloadEstimators (that fixed point, the shared-CPU model) each read
//     the workload again as the estimates before them prepare it (Apply):
//     the shared-CPU model is fitted to the executions as the replay will
//     take them, which exist only once the pass's estimates do; the same
//     reading gives the CFS model the CPU those executions spend
//     (CPUModel.CPUPerWork).
//
// The dispatch check (CheckDispatches) is no estimator of Calibrate's: it
// holds the calibration to the caller's own replays of the recorded
// configuration, which the caller runs.
//
// Result is the calibration: its Report, a plain value (what simulate
// prints and returns in JSON), and the working state that Apply, the
// checks and the replay's servers (Server, ServerAt) read.
package calibrate

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// Duration is a time.Duration that encodes as a Go duration string in JSON.
type Duration time.Duration

// MarshalJSON encodes d as "1.5ms".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Options describe the recorded server.
type Options struct {
	// Config is the configuration the workload was recorded under.
	Config *engine.Config
	// ServerConcurrencyLimit of the recorded server (default 600).
	ServerConcurrencyLimit int
	// RequestTimeout of the recorded server (default 1 minute).
	RequestTimeout time.Duration
	// Counts are the object counts per resource of the recorded server's
	// scrapes, for the seats of LISTs that record none, each from the
	// scrape before it (engine.ListSeatsAt); nil when unknown.
	Counts engine.CountsSeries
	// Release is the recorded server's release, whose LIST estimator sizes
	// LISTs from Counts (engine.ListSeats); zero means engine.NewestRelease.
	Release engine.Release
	// Disabled derives nothing: Apply then only fills the estimated
	// fields of audit-only records.
	Disabled bool
	// NoCPUModel builds no CPU model even with Evidence.Runtime.
	NoCPUModel bool
	// Params are the calibration's thresholds; nil runs with
	// DefaultParams.
	Params *Params
	// Evidence is what the server's metrics and its operator tell of its
	// CPU, read once before the workload.
	Evidence
}

// Evidence is what the recorded server's metrics and its operator tell of
// its CPU, beyond the workload: a plain value, read once (by pkg/simulate
// from the state's metrics and --cpu-limit). A zero field is unknown.
type Evidence struct {
	// Runtime is what the server's Go runtime counted between two
	// scrapes, the CFS model's evidence.
	Runtime *Runtime
	// CPUUse is what the server's process and scheduler counted between
	// the same scrapes, the shared-CPU model's evidence.
	CPUUse *metrics.CPUUse
	// MetricsWindow is the window between those two scrapes. When it does
	// not cover the workload's arrivals, neither Runtime nor CPUUse is
	// used (Result.Uncovered).
	MetricsWindow TimeRange
	// Executions are, per priority level, the executions APF measured
	// between the same two scrapes (metrics.ExecutionsBetween): what an
	// audit log's estimated execution times are checked against
	// (measured.go).
	Executions map[string]metrics.Executions
	// ExecutionsWindow is the window between the scrapes Executions were
	// read between: MetricsWindow's, or the widest pair of scrapes inside
	// the window replayed where that was cut inside the metrics'
	// (zero: MetricsWindow).
	ExecutionsWindow TimeRange
	// ExecutionsGathering is how long the scrapes at ExecutionsWindow's
	// ends took (a store's scrape_duration_seconds; 0 where not known):
	// a store stamps a scrape when it starts, and the server counts the
	// executions at a moment during it, so APF's count runs from a
	// moment within the first's to one within the last's.
	ExecutionsGathering [2]time.Duration
	// CPULimit is the recorded server's CPU limit in cores (its CFS
	// quota over its period). The CFS model then takes its RunPerPeriod
	// from it instead of from the stalls, and the shared-CPU model its
	// cores.
	CPULimit float64
}

// Level is what was inferred for one priority level.
type Level struct {
	Level string `json:"level"`
	// Overhead is the extra seat hold per dispatch from a queue.
	Overhead Duration `json:"overhead"`
	// Source is what Overhead was read from.
	Source LevelSource `json:"source"`
	// Why explains a Source other than saturated.
	Why string `json:"why,omitempty"`
	// ConcurrencyLimit is the seats the evidence assumes.
	ConcurrencyLimit int `json:"concurrencyLimit"`
	// SaturatedTime is the length of the union of waiting intervals, in
	// SaturatedSpans separate spans.
	SaturatedTime  Duration `json:"saturatedTime"`
	SaturatedSpans int      `json:"saturatedSpans"`
	// Dispatches (and their Seats) of requests that waited.
	Dispatches int64 `json:"dispatches"`
	Seats      int64 `json:"seats"`
	// MeanExecution of those dispatches, and the seat hold time inferred
	// for them (MeanExecution + Overhead).
	MeanExecution Duration `json:"meanExecution"`
	HoldTime      Duration `json:"holdTime"`
	// Requests of the level in the workload, Rejected the recorded 429s.
	Requests int64 `json:"requests"`
	Rejected int64 `json:"rejected"`
	// Annotated requests carried apf-queue-wait; QueueWaitP50 is their
	// median.
	Annotated    int64    `json:"annotated"`
	QueueWaitP50 Duration `json:"queueWaitP50,omitempty"`
	// LatencyMinusExecutionP50 is the median of httplog latency minus
	// apf_execution_time over the level's executed requests.
	LatencyMinusExecutionP50 Duration `json:"latencyMinusExecutionP50,omitempty"`
	// MedianExecution is the median recorded execution time of the level's
	// executed requests (httplog's apf_execution_time; an audit log records
	// none, so an audit-only workload tells nothing here). Stalls counts those whose execution took at least
	// ten times as long and 20 ms more (a goroutine that could not run: a
	// CPU limit's throttling, a machine crowded out, long GC pauses), and
	// StallShare is their share of the level's execution time; with
	// StallShareShort or more, the server was short of CPU.
	MedianExecution Duration `json:"medianExecution,omitempty"`
	Stalls          int64    `json:"stalls"`
	StallShare      float64  `json:"stallShare"`
	// ShortOfCPU: at least minStalls stalls took StallShareShort of the
	// level's execution time; a change that adds work is warned about
	// (Regime).
	ShortOfCPU bool `json:"shortOfCPU,omitempty"`
	// StallsAtPeriodStart is the largest share of the stalls that ended
	// within 5 ms of one phase modulo 100 ms, the period of the Linux CFS
	// bandwidth control: from AtBoundaryThrottled on, the server's CPU
	// limit (a cgroup quota) throttled it, and each stall lasted until the
	// next period gave it CPU again.
	StallsAtPeriodStart float64  `json:"stallsAtPeriodStart,omitempty"`
	PeriodPhase         Duration `json:"periodPhase,omitempty"`
	// Windows are the overheads of the time windows (Window long) with
	// enough evidence of their own; requests arriving in the others get
	// the level's figure.
	Windows []WindowOverhead `json:"windows,omitempty"`
	// BusyTime is the time the level had an executed request in the
	// server (the union of arrival to end), SeatLimit the most seats it
	// could hold, and ImpliedSeatTime the seat time its executed requests
	// hold as calibrated (Σ seats × (execution + overhead)), which never
	// exceeds SeatLimit × BusyTime (bound.go). Absent when the recording
	// holds no latencies.
	BusyTime        Duration `json:"busyTime,omitempty"`
	SeatLimit       int      `json:"seatLimit,omitempty"`
	ImpliedSeatTime Duration `json:"impliedSeatTime,omitempty"`
	// RecordedDispatches are the level's executed requests in the
	// recording, ReplayedDispatches in the replay of the recorded
	// configuration (CheckDispatches).
	RecordedDispatches int64 `json:"recordedDispatches,omitempty"`
	ReplayedDispatches int64 `json:"replayedDispatches,omitempty"`
	// Dispatch is the dispatch check's verdict on the last replay: where
	// it is not DispatchHeld, the replay does not reproduce the level's
	// throughput, and no prediction for it holds.
	Dispatch DispatchVerdict `json:"dispatchCheck,omitempty"`
	// Refused is the estimate of the overhead the recording contradicts,
	// when it did: Overhead is then what the recording supports.
	Refused *Refusal `json:"refused,omitempty"`
	// StalledGaps are the gaps between the recorded executions of the
	// CPU model's level (one seat) in which the next one, dispatched, could
	// not start: the quota ran out as it was woken. Their time beyond the
	// median gap, StalledGapTime, is the model's to place, and is not in
	// Overhead (stalledGaps).
	StalledGaps    int64    `json:"stalledGaps,omitempty"`
	StalledGapTime Duration `json:"stalledGapTime,omitempty"`
	// Measured is what APF measured of the level's executions between
	// the metrics' scrapes, against the workload's estimates of the same
	// executions (measured.go); absent without estimates or evidence.
	Measured *Measured `json:"measured,omitempty"`
}

// WindowOverhead is the overhead inferred from one time window.
type WindowOverhead struct {
	Start    Duration `json:"start"`
	Overhead Duration `json:"overhead"`
	// Seats dispatched from a queue in the window.
	Seats int64 `json:"seats"`
}

// Estimated counts the fields that were not recorded but estimated.
type Estimated struct {
	// ExecutionFromAnnotations: audit-only requests whose execution time is
	// latency − apf-queue-wait − authentication.
	ExecutionFromAnnotations int64 `json:"executionFromAnnotations"`
	// ExecutionFromReplay: audit-only requests whose execution time is
	// latency − the queue wait the replay gave them (fixed point),
	// averaged over the requests of their kind (level, verb, resource,
	// query).
	ExecutionFromReplay int64 `json:"executionFromReplay"`
	// ExecutionFromEnds: audit-only requests of a level of one seat whose
	// execution time is their end less their dispatch as the level's ends
	// tell it (DispatchTimes.FromEnds), each its own.
	ExecutionFromEnds int64 `json:"executionFromEnds,omitempty"`
	// SeatsFromObjectCounts: LISTs and WATCHes sized from object counts.
	SeatsFromObjectCounts int64 `json:"seatsFromObjectCounts"`
	// SeatsBetweenCounts: of those, the ones the scrapes around them size
	// differently (the server's count refreshed between them): each is
	// sized from the scrape before it.
	SeatsBetweenCounts int64 `json:"seatsBetweenCounts,omitempty"`
	// SeatsAssumedOne: requests without a recorded estimate given 1 seat
	// (no object count, or a write whose watch count is not exposed).
	SeatsAssumedOne int64 `json:"seatsAssumedOne"`
	// WritesWithoutWatchCount: writes whose final seats and additional
	// latency (from the number of watchers) could not be known: the
	// apiserver does not export its watch counts.
	WritesWithoutWatchCount int64 `json:"writesWithoutWatchCount"`
	// FixedPointIterations and FixedPointChange (the largest change of a
	// level's mean estimated queue wait in the last iteration), for
	// audit-only workloads.
	FixedPointIterations int `json:"fixedPointIterations,omitempty"`
	// StallsReplaced: recorded executions that stalled, given their
	// level's median execution time because the CPU model places the
	// stalls (Result.CPU).
	StallsReplaced   int64    `json:"stallsReplaced,omitempty"`
	FixedPointChange Duration `json:"fixedPointChange,omitempty"`
}

// Report is what a calibration found, with its evidence: per-level
// overheads, the CPU models and their provenance. It is what simulate
// prints and returns in JSON, a plain value: the state that Apply, the
// checks and the replay's servers read is Result's, not the report's.
type Report struct {
	Enabled bool `json:"enabled"`
	// Threshold τ: a request whose dispatch came later than this after its
	// arrival waited in a queue. ThresholdFrom says what it was read from.
	Threshold     Duration        `json:"threshold"`
	ThresholdFrom ThresholdSource `json:"thresholdFrom"`
	// ServerOverhead is the seat-weighted mean of the overheads of the
	// levels with evidence of their own: a summary of the server (the
	// warning of a change that executes more), given to no level.
	ServerOverhead Duration `json:"serverOverhead"`
	// AuditOnly is true when no record had an execution time.
	AuditOnly bool      `json:"auditOnly"`
	Levels    []Level   `json:"levels"`
	Estimated Estimated `json:"estimated"`
	// CPU is the model of a server whose CPU limit throttled it, when a
	// level was short of CPU for that reason and the metrics tell the
	// garbage collector's pace; CPUWhy says why there is none when such a
	// level has no model.
	CPU    *CPUModel `json:"cpu,omitempty"`
	CPUWhy string    `json:"cpuWhy,omitempty"`
	// CPUNeeds is the evidence that would give the missing CPU model.
	CPUNeeds Need `json:"cpuNeeds,omitempty"`
	// Shared is the model of the server's CPU shared by every request it
	// executes (DeriveShared), SharedWhy why there is none.
	Shared    *SharedCPU `json:"sharedCPU,omitempty"`
	SharedWhy string     `json:"sharedCPUWhy,omitempty"`
	// Headroom, where there is no shared-CPU model because the recorded
	// executions did not stretch with the requests in flight (so that
	// their times are replayed as recorded), is the metrics' evidence of
	// the CPU they needed, for simulate.Regime to tell a change that runs
	// more at once than the server's CPU allows; nil without that
	// evidence.
	Headroom *Headroom `json:"-"`
	// Workload is the window of the workload's arrivals (zero when they
	// carry no time). Uncovered, when the metrics' window does not cover
	// it: their CPU evidence was then not used.
	Workload  TimeRange  `json:"workload,omitzero"`
	Uncovered *Uncovered `json:"uncovered,omitempty"`
	// DispatchTimes says where the requests' dispatch times came from
	// (of the last Apply; absent when none was known).
	DispatchTimes *DispatchTimes `json:"dispatchTimes,omitempty"`
}

// Result is a calibration: its Report, and the working state the
// estimators leave for Apply, the checks and the replay's servers, which
// the report does not carry.
type Result struct {
	// params are the calibration's thresholds
	params *Params
	Report
	working
}

// working is the calibration's working state: what the estimators leave for
// Apply, the checks and the replay's servers, none of it in the report
// (Result's exported fields).
type working struct {
	overhead map[string]time.Duration
	// stallAt: per level, the execution time from which a recorded
	// execution stalled, and the median it is replaced with under CPU
	stallAt map[string][2]time.Duration
	windows map[string]map[int64]time.Duration
	// capped: levels whose overhead the recording bounded (Refused), which
	// keep their own figure in every window
	capped map[string]bool
	// execScale: per level, the factor its estimated execution times are
	// scaled by (Refusal.ExecutionScale)
	execScale map[string]float64
	// perWorkStep and costStep: how far fitPerWork and fitCost have gone
	perWorkStep, costStep fitStep
	prep                  *preparer
	// serialWaits: by record index, the waits the ends of a level of one
	// seat tell its audit-only records (placeSerial), which the
	// derivations after the first give them instead of the replay's
	serialWaits map[int]time.Duration
	// saturatedEnd is the shared CPU with the server's CPU assumed
	// saturated (AssumingSaturated), the end of a range where no evidence
	// tells the CPU; nil without recorded executions
	saturatedEnd *SharedCPU
}

// OverheadAt returns the overhead applied to a request of level arriving
// at offset at (since the workload's start): the figure of its time window
// when the window holds enough evidence, else the level's.
func (r *Result) OverheadAt(level string, at time.Duration) time.Duration {
	if r == nil || !r.Enabled {
		return 0
	}
	k := int64(at / r.params.Window)
	if w, ok := r.windows[level][k]; ok {
		return w
	}
	return r.levelOverhead(level)
}

// overheadOf is the per-dispatch overhead of a level of c seats whose
// waiting requests, S seats in all with Σ seats·execution seatExec, were
// dispatched over saturated time t in n spans. C·T counts, besides the
// holds of the waiting requests, the C requests running when a span starts
// (whose holds lie mostly inside it) less the C running when it ends (the
// last just dispatched, the others half done on average): (C−1)/2 holds per
// span more than the dispatches counted.
func overheadOf(c float64, t time.Duration, n int, seats int64, seatExec float64) float64 {
	hold := c * float64(t) / (float64(seats) + float64(n)*(c-1)/2)
	return max(hold-seatExec/float64(seats), 0)
}

// Overhead returns the overhead the calibration gives a request of level:
// the level's own figure, else none.
func (r *Report) Overhead(level string) time.Duration {
	if r == nil || !r.Enabled {
		return 0
	}
	for _, l := range r.Levels {
		if l.Level == level {
			return time.Duration(l.Overhead)
		}
	}
	return 0
}

// levelOverhead is Report.Overhead from the working state's map, for the
// lookups of every request.
func (r *Result) levelOverhead(level string) time.Duration {
	if r == nil || !r.Enabled {
		return 0
	}
	return r.overhead[level]
}

// nThresholds candidate thresholds τ; the smallest above the non-queued
// lag is used
const nThresholds = 9

// winAcc is the evidence of one level in one time window.
type winAcc struct {
	t        time.Duration // saturated time in the window
	n        int           // spans starting in it
	seats    int64         // of dispatches from a queue in it
	seatExec float64
}

// span is an online union of intervals whose starts come in order; each
// closed span's time is also spread over the windows it overlaps.
type span struct {
	// params are the calibration's thresholds
	params     *Params
	start, end time.Duration
	open       bool
	total      time.Duration
	n          int
	win        map[int64]*winAcc
}

func (s *span) window(k int64) *winAcc {
	if s.win == nil {
		s.win = map[int64]*winAcc{}
	}
	w := s.win[k]
	if w == nil {
		w = &winAcc{}
		s.win[k] = w
	}
	return w
}

func (s *span) add(a, b time.Duration) {
	if b <= a {
		return
	}
	if s.open && a <= s.end {
		s.end = max(s.end, b)
		return
	}
	s.close()
	s.start, s.end, s.open = a, b, true
}

func (s *span) close() {
	if s.open {
		s.total += s.end - s.start
		s.n++
		s.open = false
		s.window(int64(s.start/s.params.Window)).n++
		for t := s.start; t < s.end; {
			k := int64(t / s.params.Window)
			next := min(time.Duration(k+1)*s.params.Window, s.end)
			s.window(k).t += next - t
			t = next
		}
	}
}

type levelAcc struct {
	// params are the calibration's thresholds
	params             *Params
	name               string
	spans              [nThresholds]span
	seats, dispatches  [nThresholds]int64
	seatExec           [nThresholds]float64 // Σ seats × execution, ns
	requests, rejected int64
	annotated          int64
	qwait, lme         quantiles
	exec               quantiles // of executed requests
	// where in a CFS period the long executions ended
	ends phases
	// the executions of StallMin or more (at most maxLong)
	long []time.Duration
	// what the seat-time check reads (bound.go)
	seatTime seatTime
	// the arrivals and ends of the executions without a recorded time
	// (audit-only), for a level of one seat (serialExecutions)
	serial blocks[serialExec]
	// the recorded executions (their arrivals, starts and ends), for the
	// gaps between them on a level of one seat (stalledGaps)
	recorded blocks[serialExec]
}

// serialExec is an execution of a level of one seat: its arrival and
// end, and the start placeSerial gives it; i is the caller's own index.
type serialExec struct {
	arrival, start, end time.Duration
	i                   int
}

// placeSerial sorts the executions of a level of one seat by their ends
// and starts each when it arrived or when the one before it ended,
// whichever came later: one execution at a time, so that the ends an
// audit log records tell each execution's time.
func placeSerial(xs []serialExec) {
	slices.SortFunc(xs, func(a, b serialExec) int { return cmp.Compare(a.end, b.end) })
	for j := range xs {
		xs[j].start = xs[j].arrival
		if j > 0 {
			xs[j].start = max(xs[j].start, xs[j-1].end)
		}
	}
}

// maxSerial bounds the executions kept per level for serialExecutions.
const maxSerial = 1 << 20

// blocks collects values in blocks (of up to maxBlock), so that collecting
// many copies none: append's growth of one slice, by a quarter at a time
// once large, copies each value four times on average. all gives them in
// one slice.
type blocks[T any] struct {
	bs [][]T
	n  int
}

const maxBlock = 1 << 12

func (b *blocks[T]) add(v T) {
	if k := len(b.bs); k == 0 || len(b.bs[k-1]) == cap(b.bs[k-1]) {
		size := maxBlock
		if k < 6 {
			size = 64 << k
		}
		b.bs = append(b.bs, make([]T, 0, size))
	}
	last := &b.bs[len(b.bs)-1]
	*last = append(*last, v)
	b.n++
}

// all returns the values in the order they were added.
func (b *blocks[T]) all() []T {
	if len(b.bs) == 1 {
		return b.bs[0]
	}
	out := make([]T, 0, b.n)
	for _, s := range b.bs {
		out = append(out, s...)
	}
	return out
}

// obs is one recorded request reduced to what calibration needs.
type obs struct {
	level    string
	arrival  time.Duration // since the workload's start
	latency  time.Duration
	exec     time.Duration
	hasExec  bool
	wait     time.Duration // dispatch − arrival, when known
	hasWait  bool
	seats    uint64
	rejected bool
	timedOut bool
	exempt   bool
	// annotated: the request carried the apf-queue-wait annotation annWait
	annotated bool
	annWait   time.Duration
	// execFrom says how exec was estimated (audit-only records), waitFrom
	// where wait comes from
	execFrom, waitFrom uint8
	// index of the record in the workload (0-based)
	index int
	// room: the request found its level with room (rooms), by the
	// recorded arrivals and latencies
	room bool
}

const (
	fromRecord uint8 = iota
	fromAnnotations
	fromReplay
	// fromEnds: the end of an execution of a level of one seat less when
	// it arrived or when the one before it ended (placeSerial)
	fromEnds
)

// Where a request's dispatch time (its wait) comes from.
const (
	_ uint8 = iota // unknown
	// the audit annotations of the filters ahead of APF
	// (apiserver.latency.k8s.io/authentication, .../impersonation) and of
	// APF's queue (.../apf-queue-wait), written on requests slower than
	// 500 ms
	waitAnnotated
	// httplog's latency − apf_execution_time: an estimate, which also
	// holds the time after the handler
	waitLatency
	// the queue wait the replay of the recorded configuration gave it
	// (the fixed point of an audit log alone): an estimate
	waitReplay
	// a level of one seat's ends in an audit log alone (placeSerial): when
	// the execution before it ended, if after its arrival
	waitEnds
)

// DispatchTimes counts where the dispatch times of the requests the replay
// executed (the waits the calibration reads) came from.
type DispatchTimes struct {
	// Annotated: recorded by the filters' own audit annotations
	// (authentication, impersonation, apf-queue-wait); the apiserver writes
	// them on requests slower than 500 ms only.
	Annotated int64 `json:"annotated"`
	// FromLatency: estimated as httplog latency − apf_execution_time,
	// which also counts the filters ahead of APF and the time after the
	// handler.
	FromLatency int64 `json:"fromLatency"`
	// FromReplay: estimated from the replay's own queue wait (an audit
	// log alone, requests faster than 500 ms).
	FromReplay int64 `json:"fromReplay"`
	// FromEnds: an audit log alone's requests faster than 500 ms of a
	// level of one seat, whose ends tell when each was dispatched: when
	// it arrived or when the execution before it ended, whichever was
	// later. This also counts the filters around APF: those ahead of it
	// for a request that found the seat free, the writing of the
	// response before for one that waited.
	FromEnds int64 `json:"fromEnds,omitempty"`
	// SlowUnannotated counts the requests of FromReplay and FromEnds
	// slower than 500 ms: the apiserver annotates those, but 1.34 (and
	// 1.35 before its fix) annotates none (kubernetes/kubernetes#135684).
	SlowUnannotated int64 `json:"slowUnannotated,omitempty"`
}

// annotationThreshold is the latency above which the apiserver writes its
// latency annotations (endpoints/filters/audit.go:writeLatencyToAnnotation).
const annotationThreshold = 500 * time.Millisecond

// observer accumulates the evidence of one pass.
type observer struct {
	// params are the calibration's thresholds
	params *Params
	levels map[string]*levelAcc
	// limits are the recorded configuration's, which cap a level's seat
	// time (seatTime.cap)
	limits map[string]engine.LevelLimits
	lag    quantiles // latency − execution of exempt requests (the time ahead of APF where annotated)
	lagAll quantiles // of every executed request with an execution time (the same)
}

func newObserver(params *Params, limits map[string]engine.LevelLimits) *observer {
	return &observer{levels: map[string]*levelAcc{}, params: params, limits: limits}
}

func (o *observer) add(x *obs) {
	la := o.levels[x.level]
	if la == nil {
		la = &levelAcc{name: x.level, params: o.params}
		la.seatTime.params = o.params
		la.seatTime.cap = seatCap(o.limits, x.level)
		for i := range la.spans {
			la.spans[i].params = o.params
		}
		o.levels[x.level] = la
	}
	la.requests++
	if x.rejected {
		la.rejected++
	}
	if x.annotated {
		la.annotated++
		la.qwait.add(x.annWait)
	}
	if !x.rejected && x.hasExec && x.execFrom == fromRecord && !x.exempt {
		// recorded execution times only: an estimated one (latency − an
		// estimated wait) holds whatever wait the estimate missed
		la.exec.add(x.exec)
		la.ends.add(o.params, x.exec, x.arrival+x.latency)
		if x.exec >= o.params.StallMin && len(la.long) < maxLong {
			la.long = append(la.long, x.exec)
		}
		if x.latency > 0 && la.recorded.n < maxSerial {
			end := x.arrival + x.latency
			la.recorded.add(serialExec{arrival: x.arrival, start: end - min(x.exec, x.latency), end: end})
		}
	}
	if !x.rejected && x.hasExec && x.execFrom != fromRecord && !x.exempt && x.latency > 0 && la.serial.n < maxSerial {
		la.serial.add(serialExec{arrival: x.arrival, end: x.arrival + x.latency, i: x.index})
	}
	if !x.rejected && x.hasExec && x.hasWait {
		// the lag ahead of APF: where the filters' annotations split the
		// dispatch time, the time ahead of APF without the queue wait
		// (the annotated requests, slower than 500 ms, are on a queuing
		// level mostly the ones that queued long: their dispatch times
		// would make τ a queue wait)
		lag := x.wait
		if x.waitFrom == waitAnnotated && x.annotated {
			lag = max(lag-x.annWait, 0)
		}
		if x.exempt {
			o.lag.add(lag)
		}
		o.lagAll.add(lag)
		la.lme.add(x.wait)
	}
	if x.exempt {
		return
	}
	if !x.rejected && x.hasExec {
		la.seatTime.add(x)
	}
	for i, tau := range o.params.QueuedThresholds {
		switch {
		case x.timedOut:
			la.spans[i].add(x.arrival+tau, x.arrival+x.latency)
		case !x.rejected && x.waitFrom == waitAnnotated:
			// the filters' own timing: it entered APF after the filters
			// ahead of it, and waited in a queue only if apf-queue-wait
			// says so (upstream observes it for queued requests alone)
			if !x.annotated || x.annWait <= 0 {
				continue
			}
			la.spans[i].add(x.arrival+x.wait-x.annWait, x.arrival+x.wait)
			la.dispatch(i, x)
		case !x.rejected && x.hasWait && x.wait > tau:
			la.spans[i].add(x.arrival+tau, x.arrival+x.wait)
			la.dispatch(i, x)
		}
	}
}

// dispatch counts x, which waited in a queue, as a dispatch from a queue
// at threshold index i.
func (la *levelAcc) dispatch(i int, x *obs) {
	la.dispatches[i]++
	la.seats[i] += int64(x.seats)
	la.seatExec[i] += float64(x.seats) * float64(x.exec)
	w := la.spans[i].window(int64((x.arrival + x.wait) / la.params.Window))
	w.seats += int64(x.seats)
	w.seatExec += float64(x.seats) * float64(x.exec)
}

// finish turns the evidence into a Result: the pass's estimators
// (passEstimators), in order.
func (o *observer) finish(opts Options, uncovered *Uncovered) *Result {
	res := &Result{params: o.params, Report: Report{Enabled: !opts.Disabled}, working: working{overhead: map[string]time.Duration{}, windows: map[string]map[int64]time.Duration{}}}
	// the pass's estimators read what the pass gathered and fail on nothing
	_ = estimate(res, &inputs{opts: opts, limits: levelLimits(opts), uncovered: uncovered, pass: o}, passEstimators)
	return res
}

// threshold returns the index in thresholds of τ, the smallest candidate
// above the lag of requests that never queue, and what the lag was read
// from.
func (o *observer) threshold() (int, ThresholdSource) {
	var lag time.Duration
	var from ThresholdSource
	switch {
	case o.lag.n >= o.params.LagSamples:
		lag, from = o.lag.quantile(o.params.LagQuantile), ThresholdExemptP90
	case o.lag.n >= o.params.FewLagSamples:
		lag, from = o.lag.quantile(o.params.FewLagQuantile), ThresholdExemptLargest
	case o.lagAll.n >= o.params.LagSamples:
		// most requests of a saturated level queue: the fastest tenth
		// stands for those dispatched on arrival
		lag, from = time.Duration(o.params.AllLagFactor)*o.lagAll.quantile(o.params.AllLagQuantile), ThresholdAllP10
	default:
		lag, from = 0, ThresholdUnmeasured
	}
	for i, t := range o.params.QueuedThresholds {
		if t >= lag {
			return i, from
		}
	}
	return len(o.params.QueuedThresholds) - 1, from
}

// levelLimits returns the limits of the recorded configuration's levels.
func levelLimits(opts Options) map[string]engine.LevelLimits {
	scl := opts.ServerConcurrencyLimit
	if scl == 0 {
		scl = engine.DefaultServerConcurrencyLimit
	}
	limits := map[string]engine.LevelLimits{}
	if opts.Config != nil {
		for _, l := range opts.Config.Limits(scl) {
			limits[l.Name] = l
		}
	}
	return limits
}

// level returns the evidence of the level at threshold index ti: its
// requests, saturated time, dispatches from a queue and stalls.
func (la *levelAcc) level(ti int, lim engine.LevelLimits) Level {
	la.spans[ti].close()
	lv := Level{Level: la.name, Requests: la.requests, Rejected: la.rejected, Annotated: la.annotated,
		QueueWaitP50: Duration(la.qwait.quantile(0.5)), LatencyMinusExecutionP50: Duration(la.lme.quantile(0.5))}
	sp := la.spans[ti]
	lv.SaturatedTime, lv.SaturatedSpans = Duration(sp.total), sp.n
	lv.Dispatches, lv.Seats = la.dispatches[ti], la.seats[ti]
	var first int
	lv.MedianExecution, lv.Stalls, lv.StallShare, first = la.exec.stalls(la.params)
	if lv.Stalls > 0 {
		lv.StallsAtPeriodStart, lv.PeriodPhase = la.ends.boundaryShare(la.params, first)
	}
	lv.ShortOfCPU = lv.Stalls >= la.params.MinStalls && lv.StallShare >= la.params.StallShareShort
	lv.ConcurrencyLimit = lim.NominalCL
	if lv.Seats > 0 {
		lv.MeanExecution = Duration(la.seatExec[ti] / float64(lv.Seats))
	}
	return lv
}

// source says where a level's overhead comes from, and why when it is not
// its own saturated time.
func (r *Result) source(lv Level, lim engine.LevelLimits, known bool) (source LevelSource, why string) {
	switch {
	case !r.Enabled:
		return SourceDisabled, ""
	case known && lim.Exempt:
		return SourceNone, "exempt: never queued"
	case !known:
		return SourceUnmeasured, "not in the configuration"
	case !lim.Queuing:
		return SourceUnmeasured, "no queues: its requests are dispatched on arrival or rejected, never woken"
	case lim.LendableCL > 0 || lim.BorrowingCL > 0:
		return SourceUnmeasured, "its limit moves with lending and borrowing, so its saturated throughput does not give the hold time"
	case lv.Dispatches < int64(r.params.MinEvidence):
		return SourceUnmeasured, "too few dispatches from a queue"
	}
	return SourceSaturated, ""
}

// saturated sets the overhead of a level of c seats from its own saturated
// time, overall and per time window with enough evidence.
func (r *Result) saturated(lv *Level, la *levelAcc, ti int, c float64) {
	sp := la.spans[ti]
	over := overheadOf(c, sp.total, sp.n, lv.Seats, la.seatExec[ti])
	lv.Overhead = Duration(over)
	r.overhead[lv.Level] = time.Duration(over)
	for k, w := range sp.win {
		if w.seats < r.params.MinWindowEvidence {
			continue
		}
		wo := overheadOf(c, w.t, w.n, w.seats, w.seatExec)
		lv.Windows = append(lv.Windows, WindowOverhead{Start: Duration(time.Duration(k) * r.params.Window), Overhead: Duration(wo), Seats: w.seats})
		if r.windows[lv.Level] == nil {
			r.windows[lv.Level] = map[int64]time.Duration{}
		}
		r.windows[lv.Level][k] = time.Duration(wo)
	}
	slices.SortFunc(lv.Windows, func(a, b WindowOverhead) int { return int(a.Start - b.Start) })
	if lv.Seats > 0 {
		lv.HoldTime = lv.MeanExecution + lv.Overhead
	}
}

// serverFigures sets the server-wide overhead, the seat-weighted mean of
// the saturated levels' own (as bounded by the recording): a summary of
// the server, given to no level.
func (r *Result) serverFigures() {
	var seats, over float64
	for _, lv := range r.Levels {
		if lv.Source == SourceSaturated {
			seats += float64(lv.Seats)
			over += float64(lv.Overhead) * float64(lv.Seats)
		}
	}
	if seats > 0 {
		r.ServerOverhead = Duration(over / seats)
	}
}

// stallThresholds sets, per level, the execution time from which a
// recorded execution stalled and the median it is replaced with under the
// CPU model.
func (r *Result) stallThresholds() {
	r.stallAt = map[string][2]time.Duration{}
	for _, lv := range r.Levels {
		if m := time.Duration(lv.MedianExecution); m > 0 {
			r.stallAt[lv.Level] = [2]time.Duration{stallThreshold(r.params, m), m}
		}
	}
}

// quantiles is a log-bucketed histogram of durations (about 9% relative
// error), so memory stays constant; it also sums each bucket.
type quantiles struct {
	b   [histBuckets]int64
	sum [histBuckets]float64
	n   int64
}

func (q *quantiles) add(d time.Duration) {
	i := bucket(d)
	q.b[i]++
	q.sum[i] += float64(d)
	q.n++
}

// The quantiles histogram: bucket 0 holds the durations up to histBase
// nanoseconds, bucket i > 0 those in (histBase·histRatio^(i-1),
// histBase·histRatio^i], the last (histBuckets-1) everything above.
const (
	histBase    = 1000 // ns
	histRatio   = 1.2
	histBuckets = 96
)

// bucket is the index of d in a quantiles histogram.
func bucket(d time.Duration) int {
	if d <= histBase {
		return 0
	}
	return min(int(math.Log(float64(d)/histBase)/math.Log(histRatio))+1, histBuckets-1)
}

// bucketTop is the upper bound of bucket i of a quantiles histogram, in
// nanoseconds.
func bucketTop(i int) float64 { return histBase * math.Pow(histRatio, float64(i)) }

// stallThreshold is the time from which an execution (or a gap) whose
// median is m stalled: StallFactor times m, and StallMin more.
func stallThreshold(params *Params, m time.Duration) time.Duration {
	return max(time.Duration(params.StallFactor)*m, m+params.StallMin)
}

// stalls returns the median of the histogram, the number of durations in
// the buckets wholly above max(StallFactor × median, median + StallMin),
// and their share of the sum of all.
func (q *quantiles) stalls(params *Params) (median Duration, n int64, share float64, first int) {
	first = len(q.b)
	if q.n == 0 {
		return 0, 0, 0, first
	}
	m := q.quantile(0.5)
	th := float64(stallThreshold(params, m))
	var all, above float64
	for i, c := range q.b {
		all += q.sum[i]
		// the bucket's durations are all above its bottom, its
		// predecessor's top
		if i > 0 && bucketTop(i-1) >= th {
			n += c
			above += q.sum[i]
			first = min(first, i)
		}
	}
	if all > 0 {
		share = above / all
	}
	return Duration(m.Round(10 * time.Microsecond)), n, share, first
}

// phases counts, per histogram bucket of execution time, where in a CFS
// period (Params.CFSPeriod) the executions of StallMin or more ended, in
// 1 ms bins: as many as the period has milliseconds, rounded up.
type phases map[int][]int32

// phaseBins is the number of 1 ms bins of a period (0 for a period that is
// not positive, whose phases are not counted).
func phaseBins(period time.Duration) int {
	if period <= 0 {
		return 0
	}
	return int((period + time.Millisecond - 1) / time.Millisecond)
}

func (p *phases) add(params *Params, exec, end time.Duration) {
	if exec < params.StallMin || params.CFSPeriod <= 0 {
		return
	}
	if *p == nil {
		*p = phases{}
	}
	b := bucket(exec)
	h := (*p)[b]
	if h == nil {
		h = make([]int32, phaseBins(params.CFSPeriod))
		(*p)[b] = h
	}
	ph := end % params.CFSPeriod
	if ph < 0 {
		ph += params.CFSPeriod
	}
	h[ph/time.Millisecond]++
}

// boundaryShare returns the largest share of the executions in buckets from
// first on that ended within ±periodSlack of one phase of cfsPeriod.
func (p phases) boundaryShare(params *Params, first int) (float64, Duration) {
	nb := phaseBins(params.CFSPeriod)
	all := make([]int32, nb)
	var n int32
	for b, h := range p {
		if b < first {
			continue
		}
		for i, c := range h {
			all[i] += c
			n += c
		}
	}
	if n == 0 {
		return 0, 0
	}
	w := int(params.PeriodSlack / time.Millisecond)
	var best int32
	bi := 0
	for i := range all {
		var c int32
		for j := -w; j <= w; j++ {
			c += all[((i+j)%nb+nb)%nb]
		}
		if c > best {
			best, bi = c, i
		}
	}
	// the phase: the mean of the ends in that window (the windows that
	// hold them all tie; the first is not their centre)
	var sum float64
	for j := -w; j <= w; j++ {
		sum += float64(j) * float64(all[((bi+j)%nb+nb)%nb])
	}
	ph := (float64(bi) + 0.5 + sum/float64(best)) * float64(time.Millisecond)
	return float64(best) / float64(n), Duration((time.Duration(ph)%params.CFSPeriod + params.CFSPeriod) % params.CFSPeriod)
}

func (q *quantiles) quantile(p float64) time.Duration {
	if q.n == 0 {
		return 0
	}
	want := int64(math.Ceil(p * float64(q.n)))
	var c int64
	for i, v := range q.b {
		c += v
		if c >= want {
			if i == 0 {
				return time.Microsecond
			}
			return time.Duration(bucketTop(i))
		}
	}
	return 0
}

// preparer turns workload records into obs and fills their estimated
// fields; it is shared by Derive and Apply so that both see the same
// levels, seats and execution times.
type preparer struct {
	// params are the calibration's thresholds
	params *Params
	opts   Options
	limits map[string]engine.LevelLimits
	start  time.Time
	// last is the latest arrival read
	last time.Time
	est  *Estimated
	// waits are the queue waits the previous replay gave each record (by
	// index), for the fixed point of audit-only workloads; overheads the
	// previous iteration's calibration
	waits     []time.Duration
	overheads *Result
	// kinds accumulates a derivation's estimated execution times per kind
	// of audit-only request (nil in Apply), kindExec are the previous
	// derivation's means
	kinds    kindMeans
	kindExec map[kind]time.Duration
	// serial are the waits of Result.serialWaits
	serial  map[int]time.Duration
	sawExec bool
	parsed  engine.RequestCache
	classes engine.ClassifyMemo
	rooms   *rooms
}

func (p *preparer) overhead(level string, at time.Duration) time.Duration {
	return p.overheads.OverheadAt(level, at)
}

// serialWait reports whether the record idx has its wait from its level's
// ends (Result.serialWaits).
func (p *preparer) serialWait(idx int) bool {
	_, ok := p.serial[idx]
	return ok
}

func newPreparer(params *Params, opts Options, est *Estimated) *preparer {
	return &preparer{params: params, opts: opts, limits: levelLimits(opts), est: est, rooms: newRooms()}
}

func (p *preparer) waitLimit(er engine.Request) time.Duration {
	rt := p.opts.RequestTimeout
	if rt == 0 {
		rt = engine.DefaultServerRequestTimeout
	}
	wl, err := engine.RequestWaitLimit(er, rt)
	if err != nil {
		return engine.DefaultRequestWaitLimit(rt)
	}
	return wl
}

// prepare fills x from w and completes w's unrecorded seats. ok is false
// for a record the replay skips too (unparsable, bypassing APF, no level).
func (p *preparer) prepare(idx int, w *workload.Request, x *obs) (er engine.Request, ok bool) {
	if p.start.IsZero() {
		p.start = w.Arrival
	}
	if w.Arrival.After(p.last) {
		p.last = w.Arrival
	}
	er, err := p.parsed.Parse(w.Method, w.URI, engine.Identity{User: w.User, Groups: w.Groups})
	if err != nil || er.Bypass != "" {
		return er, false
	}
	level := w.PriorityLevel
	if w.UserKnown && (level == "" || p.opts.Config != nil) && p.opts.Config != nil {
		level = p.classes.Classify(p.opts.Config, &er).PriorityLevel.Name
	}
	if level == "" {
		return er, false
	}
	lim, known := p.limits[level]
	*x = obs{index: idx, level: level, arrival: w.Arrival.Sub(p.start), latency: w.Latency, exempt: lim.Exempt, rejected: w.Status == 429}
	if !w.HasSeats && p.est != nil {
		p.estimateSeats(w, er, lim)
	}
	x.seats = max(w.InitialSeats, 1)
	x.room = p.rooms.arrive(x, lim, known) && p.params.runs(RuleRooms)
	x.annotated, x.annWait = w.HasQueueWait, w.QueueWait
	if x.rejected && !w.HasServiceTime && w.Latency >= p.waitLimit(er) {
		x.timedOut = true
	}
	switch {
	case w.HasServiceTime && w.HasLatencyAnnotations:
		// an httplog line joined to an audit event slower than 500 ms: the
		// filters' own timing tells the dispatch (the time ahead of APF and
		// in its queue), which latency − execution would overstate by the
		// time after the handler and whatever else the server did
		x.exec, x.hasExec = w.ServiceTime, true
		x.wait, x.hasWait, x.waitFrom = w.PreAPF, true, waitAnnotated
		if w.HasQueueWait {
			x.wait += w.QueueWait
		}
		p.sawExec = true
	case w.HasServiceTime:
		x.exec, x.hasExec = w.ServiceTime, true
		// a synthetic record has no latency: its wait is unknown
		x.wait, x.hasWait, x.waitFrom = max(w.Latency-w.ServiceTime, 0), w.Latency > 0, waitLatency
		p.sawExec = true
	case x.rejected || er.Info.Verb == "watch":
		// a 429 never executed; a watch holds its seats only until it is
		// initialised, which its latency (its whole life) does not tell
	case w.HasQueueWait || w.HasLatencyAnnotations:
		// annotated (slower than 500 ms): the queue wait is recorded, and
		// is zero when the annotation is absent (dispatched on arrival)
		x.wait, x.hasWait, x.waitFrom = w.PreAPF, true, waitAnnotated
		if w.HasQueueWait {
			x.wait += w.QueueWait
		}
		x.exec, x.hasExec, x.execFrom = max(w.Latency-x.wait, p.params.MinExecution), true, fromAnnotations
	case p.serialWait(idx):
		// audit-only and faster than 500 ms, of a level of one seat: one
		// execution at a time, so its ends tell each dispatch
		// (placeSerial). Its own time, not its kind's mean: no replay's
		// error is in it.
		x.wait, x.hasWait, x.waitFrom = min(p.serial[idx], w.Latency), true, waitEnds
		x.exec, x.hasExec, x.execFrom = max(w.Latency-x.wait, p.params.MinExecution), true, fromEnds
	default:
		// audit-only and faster than 500 ms: the queue wait is what the
		// replay of the previous iteration gave it (none before the first)
		var wait time.Duration
		if p.waits != nil && idx < len(p.waits) && p.waits[idx] > 0 {
			wait = p.waits[idx] + p.overhead(level, x.arrival)
		}
		wait = min(wait, w.Latency)
		x.wait, x.hasWait, x.waitFrom = wait, p.waits != nil, waitReplay
		x.exec, x.hasExec, x.execFrom = max(w.Latency-wait, p.params.MinExecution), true, fromReplay
		// pooled per kind of request: one request's replayed wait is off
		// by what the replay dispatched before it, and taking that error
		// into its execution time (longer where the wait is short, and
		// the reverse) makes the executions vary more than they did,
		// which makes the queues wait longer, and so on: a fixed point
		// with waits too long. The mean over requests of the same kind
		// has no such spread.
		k := kindOf(level, &er, w.URI)
		p.kinds.add(k, x.exec)
		if e, ok := p.kindExec[k]; ok {
			x.exec = min(max(e, p.params.MinExecution), max(w.Latency, p.params.MinExecution))
		}
	}
	if f, ok := p.overheads.execScaleOf(level); ok && x.hasExec && x.execFrom != fromRecord {
		x.exec = max(time.Duration(f*float64(x.exec)), p.params.MinExecution)
	}
	return er, true
}

// kind is a kind of request whose audit-only execution times are pooled:
// its level, verb, resource and query (a LIST's limit, selectors), and
// whether it names an object; a request for no resource, its path (a
// /metrics scrape is not an /openapi/v3 GET).
type kind struct {
	level, verb, group, resource, subresource, query, path string
	named                                                  bool
}

func kindOf(level string, er *engine.Request, uri string) kind {
	_, q, _ := strings.Cut(uri, "?")
	k := kind{level: level, verb: er.Info.Verb, group: er.Info.APIGroup, resource: er.Info.Resource, subresource: er.Info.Subresource, query: q, named: er.Info.Name != ""}
	if !er.Info.IsResourceRequest {
		k.path = er.Info.Path
	}
	return k
}

// maxKinds bounds the kinds pooled; requests of further kinds keep their
// own estimate.
const maxKinds = 1 << 16

// kindMeans accumulates the estimated execution times per kind; a nil
// one (the replay's passes, which only read the means) accumulates
// nothing.
type kindMeans map[kind]*[2]float64

func (m kindMeans) add(k kind, d time.Duration) {
	if m == nil {
		return
	}
	a := m[k]
	if a == nil {
		if len(m) >= maxKinds {
			return
		}
		a = new([2]float64)
		m[k] = a
	}
	a[0] += float64(d)
	a[1]++
}

func (m kindMeans) means() map[kind]time.Duration {
	out := make(map[kind]time.Duration, len(m))
	for k, a := range m {
		out[k] = time.Duration(a[0] / a[1])
	}
	return out
}

// estimateSeats sizes a request that records no work estimate the way the
// server would have, where the inputs are known.
func (p *preparer) estimateSeats(w *workload.Request, er engine.Request, lim engine.LevelLimits) {
	w.InitialSeats, w.FinalSeats, w.AdditionalLatency = 1, 0, 0
	switch er.Info.Verb {
	case "list", "watch":
		if p.opts.Counts != nil {
			if s, ok, between := engine.ListSeatsAt(p.opts.Release, er, p.opts.Counts, w.Arrival, lim.MaxSeats); ok {
				w.InitialSeats, w.HasSeats = s, true
				p.est.SeatsFromObjectCounts++
				if between {
					p.est.SeatsBetweenCounts++
				}
				return
			}
		}
	case "create", "update", "patch", "delete":
		p.est.WritesWithoutWatchCount++
	}
	p.est.SeatsAssumedOne++
}

// execScaleOf returns the factor the estimated execution times of level
// are scaled by, when the recording refused them (bound.go).
func (r *Result) execScaleOf(level string) (float64, bool) {
	if r == nil {
		return 0, false
	}
	f, ok := r.execScale[level]
	return f, ok
}

// serialExecutions adds to the level's recorded executions those of its
// audit-only records, for a level of one seat, placed by placeSerial
// (with the filters around APF for one that found the seat free, and the
// response's writing after its handler, which the next one's start does
// not wait for). The stalls, and the CFS quota's throttling where they
// end at one phase of the period, are then read from an audit log as
// from httplog's execution times. Each record's wait so placed goes into
// res.serialWaits, from which the derivations after the first give the
// replay its dispatch and execution (fromEnds).
func (la *levelAcc) serialExecutions(res *Result) {
	xs := la.serial.all()
	placeSerial(xs)
	for _, e := range xs {
		if e.start >= e.arrival && e.start < e.end {
			if res.serialWaits == nil {
				res.serialWaits = map[int]time.Duration{}
			}
			res.serialWaits[e.i] = e.start - e.arrival
		}
		exec := e.end - e.start
		if exec <= 0 {
			continue
		}
		la.exec.add(exec)
		la.ends.add(la.params, exec, e.end)
		if exec >= la.params.StallMin && len(la.long) < maxLong {
			la.long = append(la.long, exec)
		}
	}
	la.serial = blocks[serialExec]{}
}
