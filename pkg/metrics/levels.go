package metrics

import (
	"math"
	"sort"
	"time"
)

// Family names used below (k8s.io/apiserver
// pkg/util/flowcontrol/metrics/metrics.go). The older names are fallbacks
// for older servers: request_concurrency_limit (deprecated in 1.30 for
// nominal_limit_seats) and request_concurrency_in_use (deprecated in 1.31 for
// current_executing_seats) are hidden by default since and no longer exist in
// the v0.37 source at all.
const (
	NominalLimitSeats         = FlowcontrolPrefix + "nominal_limit_seats"
	RequestConcurrencyLimit   = FlowcontrolPrefix + "request_concurrency_limit" // deprecated 1.30, hidden since
	CurrentLimitSeats         = FlowcontrolPrefix + "current_limit_seats"
	LowerLimitSeats           = FlowcontrolPrefix + "lower_limit_seats"
	UpperLimitSeats           = FlowcontrolPrefix + "upper_limit_seats"
	CurrentExecutingSeats     = FlowcontrolPrefix + "current_executing_seats" // 1.28+
	RequestConcurrencyInUse   = FlowcontrolPrefix + "request_concurrency_in_use"
	CurrentExecutingRequests  = FlowcontrolPrefix + "current_executing_requests"
	CurrentInqueueRequests    = FlowcontrolPrefix + "current_inqueue_requests"
	CurrentInqueueSeats       = FlowcontrolPrefix + "current_inqueue_seats" // 1.29+
	DispatchedRequestsTotal   = FlowcontrolPrefix + "dispatched_requests_total"
	RejectedRequestsTotal     = FlowcontrolPrefix + "rejected_requests_total"
	RequestWaitDurationSecond = FlowcontrolPrefix + "request_wait_duration_seconds"
	// RequestExecutionSeconds is the histogram of the executions APF
	// measured, from the request's start to its handler's return, by
	// flow schema, level and type ("regular", or "watch" for a watch's
	// initialisation): apiserverRequestExecutionSeconds, observed in
	// k8s.io/apiserver pkg/util/flowcontrol/apf_filter.go (Handle) from
	// the very duration httplog writes as apf_execution_time.
	RequestExecutionSeconds = FlowcontrolPrefix + "request_execution_seconds"
	// SeatUtilization is a timing ratio histogram of seats in use over
	// the level's current limit, observed at the end of every nanosecond
	// (phase="executing"): its count is nanoseconds, its sum the integral
	// of the ratio over them, its buckets the time spent at or below each
	// bound (k8s.io/apiserver pkg/util/flowcontrol/metrics: timing ratio
	// histograms; k8s.io/component-base prometheusextension). Alpha to
	// 1.37, beta from 1.38.
	SeatUtilization = FlowcontrolPrefix + "priority_level_seat_utilization"
)

// LevelStats is what "kubectl apf top levels" shows for one priority level
// of one apiserver, computed from one scrape (gauges) or two (rates). A
// figure the scrape does not give is NaN (Levels).
type LevelStats struct {
	Name string `json:"name"`
	// NominalLimit is nominal_limit_seats, or request_concurrency_limit on
	// servers older than 1.28 (same value: the nominal concurrency limit).
	NominalLimit float64 `json:"nominalLimit"`
	// CurrentLimit is current_limit_seats (after borrowing); NominalLimit
	// where the server does not export it (1.20 to 1.25).
	CurrentLimit float64 `json:"currentLimit"`
	// SeatsInUse is current_executing_seats summed over flow schemas, or
	// request_concurrency_in_use, or current_executing_requests on 1.20
	// (where every request took one seat).
	SeatsInUse float64 `json:"seatsInUse"`
	// Utilisation is SeatsInUse / CurrentLimit; NaN when the limit is zero
	// (a level that lent everything), never a division by zero, and for
	// exempt, which is never limited.
	Utilisation     float64 `json:"utilisation"`
	WaitingRequests float64 `json:"waitingRequests"`
	// WaitingSeats is current_inqueue_seats (1.29+); NaN before.
	WaitingSeats float64 `json:"waitingSeats"`
	// HasRates is true when two scrapes gave the rates below.
	HasRates         bool               `json:"hasRates"`
	DispatchedPerSec float64            `json:"dispatchedPerSec"`
	RejectedPerSec   map[string]float64 `json:"rejectedPerSec,omitempty"`
	// WaitP99 is the 99th percentile of request_wait_duration_seconds over
	// the interval between the scrapes (since start with one scrape), in
	// seconds; NaN without observations.
	WaitP99 float64 `json:"waitP99"`
	// MeanUtilisation is the time-weighted mean of seat_utilization over
	// the interval between the scrapes (since the level's histogram began
	// with one scrape), and FullFraction the fraction of that time the
	// ratio was above 0.99 (every seat in use); NaN where the server does
	// not export the family (or its 0.99 bucket).
	MeanUtilisation float64 `json:"meanUtilisation"`
	FullFraction    float64 `json:"fullFraction"`
}

// utilisationOf is the mean and the fraction of time above 0.99 of a
// seat_utilization histogram.
func utilisationOf(h *Histogram) (mean, full float64) {
	if h == nil || h.Count <= 0 {
		return math.NaN(), math.NaN()
	}
	mean, full = h.Sum/h.Count, math.NaN()
	for _, b := range h.Buckets {
		if b.UpperBound == 0.99 {
			full = math.Max(0, 1-b.Count/h.Count)
		}
	}
	return mean, full
}

// RejectedTotalPerSec sums the rejection rates of every reason.
func (l LevelStats) RejectedTotalPerSec() float64 {
	t := 0.0
	for _, v := range l.RejectedPerSec {
		t += v
	}
	return t
}

// familySums are the sums by level of one family.
type familySums struct {
	family string
	sums   map[string]float64
}

// present are the families of one figure the scrape holds, in the order
// given (a newer name before its older ones), each summed by level.
func present(s *Scrape, families ...string) []familySums {
	var out []familySums
	for _, f := range families {
		if s.Has(f) {
			out = append(out, familySums{f, s.SumBy(f, "priority_level")})
		}
	}
	return out
}

// figureOf is a level's figure from the first of fs that speaks for it
// (Scrape.Speaks): a limit only where the family names the level (a limit
// is per level), requests or seats also where it holds no series of the
// level (then none: 0). NaN when no family gives it.
func figureOf(s *Scrape, fs []familySums, level string, limit bool) float64 {
	for _, f := range fs {
		if !s.Speaks(f.family, level) {
			continue
		}
		if v, ok := f.sums[level]; ok || !limit {
			return v
		}
	}
	return math.NaN()
}

// LevelNames are the values of the priority_level label of every series
// of cur, of any family: the levels the scrape speaks of.
func LevelNames(cur *Scrape) map[string]bool {
	names := map[string]bool{}
	if cur == nil {
		return names
	}
	for _, mf := range cur.Families {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "priority_level" && lp.GetValue() != "" {
					names[lp.GetValue()] = true
				}
			}
		}
	}
	return names
}

// Levels computes per-level statistics from cur, using prev (which may be
// nil) for rates. Levels are those that appear in any family (LevelNames:
// a grep of one family names its levels too), sorted by name. A figure
// whose family the scrape lacks or does not speak for (Scrape.Speaks) is
// NaN, and so is a limit of a level its family does not name; a level
// without series in a family of requests or seats the scrape holds has
// none (0).
func Levels(prev, cur *Scrape) []LevelStats {
	const pl = "priority_level"
	nominal := present(cur, NominalLimitSeats, RequestConcurrencyLimit)
	current := present(cur, CurrentLimitSeats)
	inUse := present(cur, CurrentExecutingSeats, RequestConcurrencyInUse, CurrentExecutingRequests)
	waiting := present(cur, CurrentInqueueRequests)
	waitingSeats := present(cur, CurrentInqueueSeats)

	names := LevelNames(cur)
	var interval time.Duration
	hasRates := prev != nil && cur != nil && cur.Time.After(prev.Time)
	if hasRates {
		interval = cur.Time.Sub(prev.Time)
	}
	dispCur, dispPrev := cur.SumBy(DispatchedRequestsTotal, pl), prev.SumBy(DispatchedRequestsTotal, pl)
	rejCur, rejPrev := cur.SumBy2(RejectedRequestsTotal, pl, "reason"), prev.SumBy2(RejectedRequestsTotal, pl, "reason")
	for k := range dispCur {
		if k != "" {
			names[k] = true
		}
	}
	// Quirk: request_wait_duration_seconds records in-queue time-outs with
	// execute="true" too (apf_filter.go: Handle passes req != nil); all
	// observations are waits, so merge both values of "execute".
	waitCur := cur.HistogramsBy(RequestWaitDurationSecond, pl, nil)
	waitPrev := prev.HistogramsBy(RequestWaitDurationSecond, pl, nil)
	utilCur := cur.HistogramsBy(SeatUtilization, pl, nil)
	utilPrev := prev.HistogramsBy(SeatUtilization, pl, nil)

	out := make([]LevelStats, 0, len(names))
	for name := range names {
		st := LevelStats{Name: name, NominalLimit: figureOf(cur, nominal, name, true),
			WaitingRequests: figureOf(cur, waiting, name, false), SeatsInUse: figureOf(cur, inUse, name, false),
			WaitingSeats: figureOf(cur, waitingSeats, name, false), WaitP99: math.NaN(),
			Utilisation: math.NaN(), MeanUtilisation: math.NaN(), FullFraction: math.NaN()}
		st.CurrentLimit = st.NominalLimit
		if len(current) > 0 {
			st.CurrentLimit = figureOf(cur, current, name, true)
		}
		// Exempt requests are never limited, so a ratio to exempt's limit
		// means nothing (1.37 exports current_limit_seats 1 for it, and
		// seats in use above it). Only the level named "exempt" can have
		// type Exempt (ValidatePriorityLevelConfigurationSpec).
		if st.CurrentLimit > 0 && name != "exempt" {
			st.Utilisation = st.SeatsInUse / st.CurrentLimit
		}
		if hasRates {
			st.HasRates = true
			st.DispatchedPerSec = Rate(dispPrev[name], dispCur[name], interval)
			for k, v := range rejCur {
				if k[0] != name {
					continue
				}
				if st.RejectedPerSec == nil {
					st.RejectedPerSec = map[string]float64{}
				}
				st.RejectedPerSec[k[1]] = Rate(rejPrev[k], v, interval)
			}
		}
		if h := waitCur[name]; h != nil {
			if hasRates {
				h = h.Sub(waitPrev[name])
			}
			st.WaitP99 = h.Quantile(0.99)
		}
		if h := utilCur[name]; h != nil && name != "exempt" {
			if hasRates {
				h = h.Sub(utilPrev[name])
			}
			st.MeanUtilisation, st.FullFraction = utilisationOf(h)
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Throttled429PerSec is the rate of HTTP 429 answers from
// apiserver_request_total{code="429"} between two scrapes, by request kind
// (verb); it counts every 429, APF's and others' (see the 429 triage).
func Throttled429PerSec(prev, cur *Scrape) map[string]float64 {
	if prev == nil || cur == nil || !cur.Time.After(prev.Time) {
		return nil
	}
	c, p := cur.SumBy(FamilyRequestTotal, "verb"), prev.SumBy(FamilyRequestTotal, "verb")
	out := map[string]float64{}
	for k, v := range c {
		out[k] = Rate(p[k], v, cur.Time.Sub(prev.Time))
	}
	return out
}
