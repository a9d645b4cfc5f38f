package engine

import (
	"fmt"
	"math"
	"sort"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// LevelLimits is the concurrency arithmetic of one priority level, as
// computed by apf_controller.go:(*cfgMeal).finishQueueSetReconfigsLocked
// and published as apiserver_flowcontrol_{nominal,lower,upper}_limit_seats.
type LevelLimits struct {
	// Name of the priority level.
	Name string
	// Exempt is true for the exempt level.
	Exempt bool
	// Queuing is true for a Limited level whose limitResponse is Queue.
	Queuing bool
	// Shares is nominalConcurrencyShares (exempt's too, default 0).
	Shares int32
	// NominalCL = ceil(serverCL * shares / Σshares).
	NominalCL int
	// LendableCL = round(NominalCL * lendablePercent / 100).
	LendableCL int
	// BorrowingCL = round(NominalCL * borrowingLimitPercent / 100), or
	// serverCL when borrowingLimitPercent is unset (effectively unbounded).
	BorrowingCL int
	// LowerCL = NominalCL - LendableCL (lower_limit_seats).
	LowerCL int
	// UpperCL = NominalCL + BorrowingCL (upper_limit_seats).
	UpperCL int
	// MaxSeats is the most seats one request may take in this level,
	// max(1, min(ceil(0.15*NominalCL), NominalCL/handSize)), for queuing
	// levels; 0 ("none", the work estimator falls back to its global caps)
	// for exempt and Reject levels.
	MaxSeats uint64
}

// priorityLevelMaxSeatsPercent mirrors apf_controller.go's constant.
const priorityLevelMaxSeatsPercent = 0.15

// ComputeLimits digests pls as NewConfig does (broken levels ignored,
// mandatory levels imagined when absent) and returns the limits of every
// live level for the given server concurrency limit, sorted by name. Levels
// that the server keeps only while they drain (quiescing) are not modelled.
func ComputeLimits(pls []*flowcontrolv1.PriorityLevelConfiguration, serverConcurrencyLimit int) []LevelLimits {
	return NewConfig(nil, pls).Limits(serverConcurrencyLimit)
}

// Limits returns the limits of every live level of c for the given server
// concurrency limit, sorted by name.
func (c *Config) Limits(serverConcurrencyLimit int) []LevelLimits {
	names := make([]string, 0, len(c.PriorityLevels))
	var shareSum float64
	for name, pl := range c.PriorityLevels {
		names = append(names, name)
		shares, _, _ := plSpecCommons(pl)
		shareSum += float64(shares)
	}
	sort.Strings(names)
	out := make([]LevelLimits, 0, len(names))
	for _, name := range names {
		pl := c.PriorityLevels[name]
		shares, lendable, borrowing := plSpecCommons(pl)
		l := LevelLimits{Name: name, Shares: shares, Exempt: pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt}
		// math.Ceil lets the nominal limits sum to a little more than the
		// server limit (602 for the defaults at 600), as upstream.
		l.NominalCL = int(math.Ceil(float64(serverConcurrencyLimit) * float64(shares) / shareSum))
		if lendable != nil {
			l.LendableCL = int(math.Round(float64(l.NominalCL) * float64(*lendable) / 100))
		}
		if borrowing != nil {
			l.BorrowingCL = int(math.Round(float64(l.NominalCL) * float64(*borrowing) / 100))
		} else {
			l.BorrowingCL = serverConcurrencyLimit
		}
		l.LowerCL = l.NominalCL - l.LendableCL
		l.UpperCL = l.NominalCL + l.BorrowingCL
		if lim := pl.Spec.Limited; lim != nil && lim.LimitResponse.Queuing != nil {
			l.Queuing = lim.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue
			handSize := lim.LimitResponse.Queuing.HandSize
			// Same float and int32 arithmetic as upstream, including the
			// integer division NominalCL/handSize.
			l.MaxSeats = uint64(math.Max(1, math.Min(math.Ceil(float64(l.NominalCL)*priorityLevelMaxSeatsPercent), float64(int32(l.NominalCL)/handSize))))
		}
		out = append(out, l)
	}
	return out
}

// plSpecCommons mirrors apf_controller.go:plSpecCommons: shares, lendable%
// and borrowing% of a level; the exempt level has no borrowing limit and
// shares 0 when unset.
func plSpecCommons(pl *flowcontrolv1.PriorityLevelConfiguration) (int32, *int32, *int32) {
	if l := pl.Spec.Limited; l != nil {
		var shares int32
		if l.NominalConcurrencyShares != nil {
			shares = *l.NominalConcurrencyShares
		}
		return shares, l.LendablePercent, l.BorrowingLimitPercent
	}
	var shares int32
	var lendable *int32
	if e := pl.Spec.Exempt; e != nil {
		if e.NominalConcurrencyShares != nil {
			shares = *e.NominalConcurrencyShares
		}
		lendable = e.LendablePercent
	}
	return shares, lendable, nil
}

// InferServerConcurrencyLimit recovers the server concurrency limit from the
// published gauges of one level that has no borrowingLimitPercent (exempt
// always qualifies): upper_limit_seats - nominal_limit_seats equals the
// server limit exactly there (finishQueueSetReconfigsLocked sets borrowingCL
// to serverConcurrencyLimit). The server exposes the limit in no other way.
func InferServerConcurrencyLimit(nominalLimitSeats, upperLimitSeats float64) (int, error) {
	d := upperLimitSeats - nominalLimitSeats
	if math.IsNaN(d) || math.IsInf(d, 0) || d != math.Trunc(d) || d <= 0 {
		return 0, fmt.Errorf("cannot infer the server concurrency limit from nominal_limit_seats %v and upper_limit_seats %v: their difference must be a positive integer (use a level without borrowingLimitPercent, such as exempt)", nominalLimitSeats, upperLimitSeats)
	}
	return int(d), nil
}

// RequestWaitLimit returns how long a request may wait in its queue on a
// v1.29+ server (server/filters/priority-and-fairness.go:getRequestWaitContext):
// a quarter of its deadline counted from its arrival, at most one minute. The
// deadline comes from endpoints/filters/request_deadline.go:withRequestDeadline:
// --request-timeout (serverRequestTimeout, default 60s), lowered by a
// ?timeout= in the URL strictly between 0 and it. Long-running requests
// (watches) have no deadline and get serverRequestTimeout/4, also capped
// at one minute.
func RequestWaitLimit(r Request, serverRequestTimeout time.Duration) (time.Duration, error) {
	if serverRequestTimeout <= 0 {
		return 0, fmt.Errorf("server request timeout %v must be positive", serverRequestTimeout)
	}
	limit := serverRequestTimeout / 4
	if r.Info.Verb != "watch" && r.Bypass == "" {
		timeout := serverRequestTimeout
		v, err := timeoutParam(r.URL)
		if err != nil {
			return 0, err
		}
		if v > 0 && v < serverRequestTimeout {
			timeout = v
		}
		limit = timeout / 4
	}
	return min(limit, MaxRequestWaitLimit), nil
}

// CandidateQueues returns the queues of hand that a new request of that flow
// could be put in, given each queue's TotalWorkSum (dump_queues column, in
// any fixed unit; queues absent from the map are empty). Upstream
// (fairqueuing/queueset/queueset.go:shuffleShardLocked) takes the first queue
// with the strictly smallest TotalWorkSum, scanning the hand from a rotating
// offset (a hidden per-level counter), so the answer is every queue with the
// minimal sum, in hand order.
func CandidateQueues(hand []int, totalWorkSum map[int]uint64) []int {
	var best []int
	var min uint64
	for i, q := range hand {
		w := totalWorkSum[q]
		switch {
		case i == 0 || w < min:
			min, best = w, append(best[:0], q)
		case w == min:
			best = append(best, q)
		}
	}
	return best
}
