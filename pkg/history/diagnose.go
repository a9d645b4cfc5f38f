package history

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// Diagnose reads an incident the way the Kubernetes documentation of APF's
// metrics does (Flow control, "Good practices" and the metric help):
//   - request_queue_length_after_enqueue samples the length of the queue
//     each request joins: an outlier (a p99 far above the p50) means one
//     flow is flooding its queues and being throttled, while long queues
//     throughout mean the level needs more concurrency shares;
//   - waits reaching the wait limit (time-outs in the queue) mean requests
//     wait for seats that do not come: the level is short of seats;
//   - a level without queues (limitResponse Reject) answers 429 at once
//     (concurrency-limit) when its seats are in use.
//
// Seats in use against the current and upper limits say whether borrowing
// could still have helped (apf_controller.go: updateBorrowingLocked).
func Diagnose(inc *Incident, waitLimit time.Duration) Diagnosis {
	pk := inc.State.Peaks
	peak := func(n string) (float64, bool) {
		v, ok := pk[n]
		return v, ok && !math.IsNaN(v)
	}
	var ev []string
	dominant, share := dominantReason(inc.Reasons)
	if dominant != "" {
		ev = append(ev, fmt.Sprintf("%.0f%% of the %s rejections were %s", 100*share, num(inc.Rejected), dominant))
	}
	seatsFull := false
	if seats, ok := peak(StateSeats); ok {
		if cur, ok := peak(StateCurrent); ok && cur > 0 {
			seatsFull = seats >= 0.9*cur
			ev = append(ev, fmt.Sprintf("seats in use peaked at %s of a current limit of %s", num(seats), num(cur)))
			if up, ok := peak(StateUpper); ok {
				// upper_limit_seats assumes the whole server can be
				// borrowed; a level borrows only what the others lend
				// (kubernetes/kubernetes#129086, not fixed upstream).
				const overstated = " (upper_limit_seats, which overstates what borrowing can reach: kubernetes/kubernetes#129086)"
				if cur >= up {
					ev = append(ev, fmt.Sprintf("the current limit was at its upper limit %s%s: no more seats to borrow", num(up), overstated))
				} else {
					ev = append(ev, fmt.Sprintf("the current limit stayed below its upper limit %s%s: other levels had no seats to lend", num(up), overstated))
				}
			}
			if d, ok := peak(StateDemand); ok && d > cur {
				ev = append(ev, fmt.Sprintf("demand peaked at %s seats, above the current limit", num(d)))
			}
		}
	}
	waitNearLimit := false
	if w, ok := peak(StateWaitP99); ok && waitLimit > 0 {
		waitNearLimit = w >= 0.8*waitLimit.Seconds()
		ev = append(ev, fmt.Sprintf("queue wait p99 peaked at %s against a wait limit of %s", seconds(w), waitLimit))
	}
	outlier, long := false, false
	p50, ok50 := peak(StateQueueP50)
	p99, ok99 := peak(StateQueueP99)
	if ok99 {
		if !ok50 {
			p50 = 0
		}
		outlier = p99 >= 4*math.Max(p50, 1)
		long = !outlier && p50 >= 5
		ev = append(ev, fmt.Sprintf("requests joined queues of length p50 %s, p99 %s (request_queue_length_after_enqueue)", num(p50), num(p99)))
	}
	d := Diagnosis{Kind: rejections.CauseUnclear, Evidence: ev}
	switch {
	case dominant == ReasonConcurrencyLimit:
		d.Kind = rejections.CauseNoQueues
		d.Summary = fmt.Sprintf("%s has no queues: every request beyond its seats got 429 at once; give it queues or more seats", inc.Level)
	case dominant == ReasonQueueFull && outlier && !waitNearLimit:
		d.Kind = rejections.CauseElephantFlow
		d.Summary = fmt.Sprintf("one flow flooded its queues in %s (queue lengths have an outlier while the level's waits stay short): find the heavy user or namespace with \"kubectl apf top flows\" and give it a FlowSchema of its own", inc.Level)
	case waitNearLimit || dominant == ReasonTimeOut || long || (seatsFull && !outlier):
		d.Kind = rejections.CauseTooLittleConcurrency
		d.Summary = fmt.Sprintf("%s as a whole was short of seats (its queues were long throughout or waits reached the limit): raise its nominalConcurrencyShares or lendable/borrowing limits", inc.Level)
	default:
		d.Summary = "the metrics do not single out one flow or the whole level"
	}
	return d
}

func dominantReason(m map[string]float64) (string, float64) {
	total := 0.0
	keys := make([]string, 0, len(m))
	for k, v := range m {
		total += v
		keys = append(keys, k)
	}
	sort.Strings(keys)
	best, bv := "", 0.0
	for _, k := range keys {
		if m[k] > bv {
			best, bv = k, m[k]
		}
	}
	if total <= 0 {
		return "", 0
	}
	return best, bv / total
}

// num formats a count or a rate (rejections.Count).
func num(v float64) string { return rejections.Count(v) }

func seconds(v float64) string {
	return (time.Duration(v * float64(time.Second))).Round(time.Millisecond).String()
}
