// Package rejections is the one answer of "kubectl apf explain 429",
// whatever it was computed from: a cluster or a bundle read now
// (pkg/explain), a Prometheus-compatible store over a window (pkg/history),
// or an apiserver log. Every source fills the same Report; a figure the
// source cannot give is absent (a nil pointer or an empty list, omitted
// from JSON), never 0. docs/explain-429-schema.md describes the schema.
//
// The package is a leaf: types and names only, so that every source can
// import it.
package rejections

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// Schema names this version of the schema in Report.Schema.
const Schema = "kubectl-apf.explain-429/v1"

// The kinds of Source.
const (
	// SourceCluster: the live state of one or more apiservers, read now.
	SourceCluster = "cluster"
	// SourceBundle: a bundle or raw dump files (--from).
	SourceBundle = "bundle"
	// SourcePrometheus: a Prometheus-compatible store over a window
	// (--prometheus, --prometheus-service).
	SourcePrometheus = "prometheus"
	// SourceLog: apiserver logs (httplog lines, audit events).
	SourceLog = "log"
)

// The units of the counts of a Report (Report.Counts).
const (
	// CountsPerSecond: rates over two scrapes (Window.Start to Window.End).
	CountsPerSecond = "per-second"
	// CountsInWindow: requests counted between Window.Start and Window.End.
	CountsInWindow = "in-window"
	// CountsSinceStart: counter totals since the apiserver started (one
	// scrape, or the level dump alone); Window.End is when they were read.
	CountsSinceStart = "since-start"
	// CountsPerInstance: some instances gave rates, others totals; each
	// Instance's HasRates says which.
	CountsPerInstance = "per-instance"
)

// The reasons of apiserver_flowcontrol_rejected_requests_total
// (queueset.go: StartRequest, (*request).wait; "cancelled" only from 1.26
// to 1.28). ReasonAny is a rejection whose reason the source does not give
// (the level dump's RejectedRequests counter).
const (
	ReasonQueueFull        = "queue-full"
	ReasonConcurrencyLimit = "concurrency-limit"
	ReasonTimeOut          = "time-out"
	ReasonCancelled        = "cancelled"
	ReasonAny              = "any"
)

// The kinds of Cause: the one set of cause names of every source.
const (
	// CauseNoQueues: a level without queues (limitResponse Reject) turns
	// requests away when its seats are in use.
	CauseNoQueues = "no-queues"
	// CauseTooLittleConcurrency: the level as a whole is short of seats;
	// many clients saturate it (or it is not in the configuration read).
	CauseTooLittleConcurrency = "too-little-concurrency"
	// CauseElephantFlow: one flow fills the queues of its hand, and every
	// flow dealt those queues is rejected with it.
	CauseElephantFlow = "elephant-flow"
	// CauseWideRequests: requests of several seats each (LISTs).
	CauseWideRequests = "wide-requests"
	// CauseTimeOuts: requests waited longer than their wait limit.
	CauseTimeOuts = "time-outs"
	// CauseNotAPF: 429 answers APF did not give.
	CauseNotAPF = "not-apf"
	// CauseUnclear: the source does not tell.
	CauseUnclear = "unclear"
)

// The names of an Incident's Series (a store's series of the level around
// a burst, summed over the apiservers): rejections and dispatches per step,
// seats in use against the lower, nominal, current and upper limits and the
// demand (borrowing: apf_controller.go updateBorrowingLocked), waiting
// requests, the queue wait p99 and the queue lengths requests found (p50
// and p99 of request_queue_length_after_enqueue).
const (
	SeriesRejected   = "rejected"
	SeriesDispatched = "dispatched"
	SeriesSeats      = "seatsInUse"
	SeriesNominal    = "nominalLimit"
	SeriesLower      = "lowerLimit"
	SeriesUpper      = "upperLimit"
	SeriesCurrent    = "currentLimit"
	SeriesDemand     = "demandHighWatermark"
	SeriesWaiting    = "waitingRequests"
	SeriesWaitP99    = "waitP99Seconds"
	SeriesQueueP50   = "queueLengthP50"
	SeriesQueueP99   = "queueLengthP99"
)

// Report is the answer of "kubectl apf explain 429".
type Report struct {
	// Schema is the Schema constant.
	Schema string `json:"schema"`
	Source Source `json:"source"`
	// Release is the Kubernetes release replayed ("1.31"), ReleaseFrom
	// where it came from; absent when no configuration was replayed.
	Release     string `json:"release,omitempty"`
	ReleaseFrom string `json:"releaseFrom,omitempty"`
	// Window is the time the counts cover; Counts their unit (Counts*).
	Window Window `json:"window"`
	Counts string `json:"counts"`
	// Rejected is APF's rejections by priority level, over every instance.
	Rejected map[string]float64 `json:"rejected"`
	// All429 counts every HTTP 429 answer (apiserver_request_total
	// {code="429"}), Other429 those APF did not give (All429 minus APF's
	// rejections: evictions blocked by a PodDisruptionBudget, a watch cache
	// initialising, another filter); absent when the source does not have
	// apiserver_request_total.
	All429   *float64 `json:"all429,omitempty"`
	Other429 *float64 `json:"other429,omitempty"`
	// Other429Series is Other429 per step of the window, Other429Bursts its
	// bursts (a store only).
	Other429Series []Point    `json:"other429Series,omitempty"`
	Other429Bursts []Burst    `json:"other429Bursts,omitempty"`
	Instances      []Instance `json:"instances"`
	// Incidents are the rejecting levels (per instance when read now; per
	// burst over a window), the largest first.
	Incidents []Incident `json:"incidents"`
	// Undetailed counts the incidents found but not detailed
	// (--max-incidents).
	Undetailed int `json:"undetailed,omitempty"`
	// Notes say what the source lacked and what was done instead.
	Notes []string `json:"notes,omitempty"`
}

// Source says what a Report was computed from.
type Source struct {
	// Kind is one of the Source* constants.
	Kind string `json:"kind"`
	// Name is the cluster URL or the bundle or log path. A store has none:
	// the same store answers the same through any address (a URL, the
	// apiserver's service proxy); Selector picks its series instead.
	Name     string `json:"name,omitempty"`
	Selector string `json:"selector,omitempty"`
}

// Window is a time range. A Report read now from one scrape has only End.
type Window struct {
	Start *time.Time `json:"start,omitempty"`
	End   *time.Time `json:"end,omitempty"`
	// StepSeconds is the resolution of the series (a store).
	StepSeconds float64 `json:"stepSeconds,omitempty"`
}

// Instance is what was read of one apiserver instance.
type Instance struct {
	Name string `json:"name"`
	// HasRates is true when two scrapes gave rates over IntervalSeconds.
	HasRates        bool    `json:"hasRates"`
	IntervalSeconds float64 `json:"intervalSeconds,omitempty"`
	// Other429 is as in Report, for this instance.
	Other429 *float64 `json:"other429,omitempty"`
	// RejectionsUnknown says why the input cannot tell whether a level of
	// this instance rejects (no rejection counter in it: neither
	// apiserver_flowcontrol_rejected_requests_total nor a
	// dump_priority_levels with RejectedRequests); "" when it can.
	RejectionsUnknown string   `json:"rejectionsUnknown,omitempty"`
	Notes             []string `json:"notes,omitempty"`
	// ServerConcurrencyLimit is the limit the instance was reconstructed
	// with (a log of several instances: each has its own APF and limit).
	ServerConcurrencyLimit int `json:"serverConcurrencyLimit,omitempty"`
	// Fates is how far the instance's reconstructed fates agree with the
	// log's answers (a log of several instances).
	Fates *Fates `json:"fates,omitempty"`
	// Incidents are the instance's own incidents, as reconstructed on it
	// alone (a log of several instances; the Report's incidents merge
	// them across instances).
	Incidents []Incident `json:"incidents,omitempty"`
}

// Fates counts the requests whose reconstructed fate (429 or not) agrees
// with the log's answer, of those compared.
type Fates struct {
	Agreeing int64 `json:"agreeing"`
	Total    int64 `json:"total"`
}

// Incident is the rejections of one priority level: on one instance at one
// moment, or in one burst of a window.
type Incident struct {
	Level string `json:"level"`
	// Start and End bound the burst (to about one scrape interval); absent
	// when the source saw one moment.
	Start *time.Time `json:"start,omitempty"`
	End   *time.Time `json:"end,omitempty"`
	// Rejected counts the rejections in Report.Counts' unit; Reasons by
	// reason (Reason*).
	Rejected float64            `json:"rejected"`
	Reasons  map[string]float64 `json:"reasons"`
	// FlowSchemas are the rejections by FlowSchema and reason, Instances by
	// apiserver instance; largest first.
	FlowSchemas []SchemaCount   `json:"flowSchemas,omitempty"`
	Instances   []InstanceCount `json:"instances"`
	// State is the level's figures when the incident was seen (read now),
	// or at its peak (a store).
	State LevelState `json:"state"`
	// Series are the level's series around the burst (a store), by the
	// Series* names; SeriesWindow the time they cover and their step;
	// Peaks their peaks in the burst.
	Series       map[string][]Point `json:"series,omitempty"`
	SeriesWindow *Window            `json:"seriesWindow,omitempty"`
	Peaks        map[string]float64 `json:"peaks,omitempty"`
	// Flows are the heaviest flows in the request dump.
	Flows []FlowLoad `json:"flows,omitempty"`
	// Clients are who was rejected and who held the seats (a log).
	Clients *Clients `json:"clients,omitempty"`
	// Summary is the diagnosis in one sentence; Causes the likely causes,
	// the most likely first.
	Summary string  `json:"summary,omitempty"`
	Causes  []Cause `json:"causes"`
}

// SchemaCount is the rejections of one FlowSchema for one reason.
type SchemaCount struct {
	FlowSchema string  `json:"flowSchema"`
	Reason     string  `json:"reason"`
	Count      float64 `json:"count"`
}

// InstanceCount is the rejections one apiserver instance gave.
type InstanceCount struct {
	Instance string  `json:"instance"`
	Count    float64 `json:"count"`
}

// LevelState is a level's figures, each from the best input present (the
// dumps, then the metrics, then the configuration; pkg/levels). A figure no
// input gave is nil. From names the input of each figure present, by its
// JSON name ("waiting": "dump_priority_levels").
type LevelState struct {
	LimitResponse    string   `json:"limitResponse,omitempty"`
	NominalLimit     *float64 `json:"nominalLimit,omitempty"`
	CurrentLimit     *float64 `json:"currentLimit,omitempty"`
	SeatsInUse       *float64 `json:"seatsInUse,omitempty"`
	Waiting          *float64 `json:"waiting,omitempty"`
	WaitingSeats     *float64 `json:"waitingSeats,omitempty"`
	Executing        *float64 `json:"executing,omitempty"`
	Queues           int32    `json:"queues,omitempty"`
	HandSize         int32    `json:"handSize,omitempty"`
	QueueLengthLimit int32    `json:"queueLengthLimit,omitempty"`
	WaitP99Seconds   *float64 `json:"waitP99Seconds,omitempty"`
	// MeanUtilisation and FullFraction are read from
	// priority_level_seat_utilization: the mean of seats in use over the
	// current limit, and the fraction of the time every seat was in use,
	// over the scrapes' interval (since start with one scrape).
	MeanUtilisation *float64 `json:"meanUtilisation,omitempty"`
	FullFraction    *float64 `json:"fullFraction,omitempty"`
	// WaitLimitSeconds is the default wait limit in a queue (a quarter of
	// the request deadline, at most a minute).
	WaitLimitSeconds float64           `json:"waitLimitSeconds,omitempty"`
	From             map[string]string `json:"from,omitempty"`
}

// FlowLoad is one flow's share of a level in the request dump.
type FlowLoad struct {
	FlowSchema    string `json:"flowSchema"`
	Distinguisher string `json:"distinguisher"`
	Waiting       int    `json:"waiting"`
	Executing     int    `json:"executing"`
	Seats         int    `json:"seats"`
	// Hand is the flow's queues (recomputed from its FlowSchema and
	// distinguisher); Full counts those at the queue length limit, nil
	// when no queue dump of the level was read.
	Hand []int `json:"hand,omitempty"`
	Full *int  `json:"full"`
}

// Clients is the per-client detail of an incident, from a source that
// names the clients (a log): who was rejected, and who held the level's
// seats meanwhile. Each list is largest first.
type Clients struct {
	Rejected  []ClientShare `json:"rejected,omitempty"`
	HeldSeats []ClientShare `json:"heldSeats,omitempty"`
	// Queued are who waited in the level's queues meanwhile: Count the
	// requests that waited, SeatSeconds the seats they waited for times
	// how long (a log joined to a store's incident).
	Queued []ClientShare `json:"queued,omitempty"`
	// Window is the time the clients were counted over, when they were
	// joined from a log to another source's incident: its window (a
	// store's moved back one scrape interval), clipped to the log's.
	Window *Window `json:"window,omitempty"`
}

// ClientShare is one client's part of an incident. The identifying fields
// the source has are set (a user alone, or a user with its user agent, or
// a flow); the others are empty.
type ClientShare struct {
	User           string `json:"user,omitempty"`
	ServiceAccount string `json:"serviceAccount,omitempty"`
	UserAgent      string `json:"userAgent,omitempty"`
	FlowSchema     string `json:"flowSchema,omitempty"`
	// Distinguisher is the flow distinguisher (user or namespace).
	Distinguisher string `json:"distinguisher,omitempty"`
	// Count is requests (rejected ones in Rejected, served ones in
	// HeldSeats); SeatSeconds the seats they held times how long, absent
	// when unknown; Share the client's fraction (0 to 1) of the incident's
	// rejections (Rejected) or of the seat-seconds held (HeldSeats).
	Count       float64  `json:"count"`
	SeatSeconds *float64 `json:"seatSeconds,omitempty"`
	Share       float64  `json:"share"`
}

// Cause is one likely cause of rejections.
type Cause struct {
	// Kind is one of the Cause* constants.
	Kind     string `json:"kind"`
	Evidence string `json:"evidence"`
	Fix      string `json:"fix,omitempty"`
	YAML     string `json:"yaml,omitempty"`
}

// Burst is a time range with 429s.
type Burst struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Count float64   `json:"count"`
}

// Point is one value of a series; V is NaN when the series has no value
// then (a quantile without observations), written as null.
type Point struct {
	T time.Time
	V float64
}

// MarshalJSON writes {"t": RFC 3339, "v": value or null}.
func (p Point) MarshalJSON() ([]byte, error) {
	raw := struct {
		T time.Time `json:"t"`
		V *float64  `json:"v"`
	}{T: p.T}
	if !math.IsNaN(p.V) && !math.IsInf(p.V, 0) {
		raw.V = &p.V
	}
	return json.Marshal(raw)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (p *Point) UnmarshalJSON(b []byte) error {
	var raw struct {
		T time.Time `json:"t"`
		V *float64  `json:"v"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	p.T, p.V = raw.T, math.NaN()
	if raw.V != nil {
		p.V = *raw.V
	}
	return nil
}

// New returns an empty Report of the schema, from src.
func New(src Source) *Report {
	return &Report{Schema: Schema, Source: src, Rejected: map[string]float64{}, Instances: []Instance{}, Incidents: []Incident{}}
}

// Count writes a count or a rate as every source's evidence and the text
// print it: "-" when it is no number, whole numbers in full, others to
// three significant digits but never in exponent form above 100 (1533.3/s
// is 1533, not 1.53e+03).
func Count(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case v == math.Trunc(v) && math.Abs(v) < 1e15, math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// Of returns a pointer to v: a figure that is present.
func Of(v float64) *float64 { return &v }

// Keep narrows r to the incidents that overlap since..until (a zero since
// keeps everything before until): Window becomes that span, and Rejected
// counts only the incidents kept. An incident without bounds (read now)
// is kept.
func (r *Report) Keep(since, until time.Time) {
	r.Window = Window{End: &until}
	if !since.IsZero() {
		r.Window.Start = &since
	}
	kept := r.Incidents[:0]
	r.Rejected = map[string]float64{}
	for _, in := range r.Incidents {
		if (in.End != nil && in.End.Before(since)) || (in.Start != nil && in.Start.After(until)) {
			continue
		}
		kept = append(kept, in)
		r.Rejected[in.Level] += in.Rejected
	}
	r.Incidents = kept
}
