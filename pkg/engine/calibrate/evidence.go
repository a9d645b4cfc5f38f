package calibrate

import (
	"fmt"
	"time"
)

// TimeRange is a window of wall-clock time.
type TimeRange struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// IsZero reports whether the range is unknown.
func (t TimeRange) IsZero() bool { return t.From.IsZero() || t.To.IsZero() }

// covers reports whether t covers o, to within slack at each end (the
// clocks of the scrapes and of the server's log differ).
func (t TimeRange) covers(o TimeRange, slack time.Duration) bool {
	return !t.From.After(o.From.Add(slack)) && !t.To.Before(o.To.Add(-slack))
}

// String renders the range as "15:04:05.000–15:04:05.000 UTC (span)".
func (t TimeRange) String() string {
	const layout = "15:04:05.000"
	return fmt.Sprintf("%s–%s UTC (%v)", t.From.UTC().Format(layout), t.To.UTC().Format(layout), t.To.Sub(t.From).Round(10*time.Millisecond))
}

// Uncovered says that the metrics' window does not cover the workload's:
// what the server's process and Go runtime counted between the scrapes is
// then not evidence of the recorded time, and neither CPU model reads it.
type Uncovered struct {
	// Metrics is the window between the two scrapes, Workload that of the
	// recorded arrivals.
	Metrics  TimeRange `json:"metrics"`
	Workload TimeRange `json:"workload"`
	// Covered is the share of the workload's arrivals between the
	// scrapes.
	Covered float64 `json:"covered"`
}

// Why says it in a sentence.
func (u *Uncovered) Why() string {
	return fmt.Sprintf("the metrics' scrapes cover %v, the workload arrived over %v (%.0f%% of its arrivals between the scrapes): what the server counted between them is not evidence of the recorded load", u.Metrics, u.Workload, 100*u.Covered)
}

// coverEvidence returns opts without the metrics' CPU evidence when the
// metrics' window does not cover the workload's arrivals, and what it
// refused; opts as it is when either window is unknown, it covers them
// all, or it holds at least MinCoveredArrivals of them (arrivals.share).
func coverEvidence(params *Params, opts Options, workload TimeRange, arrivals arrivalCount) (Options, *Uncovered) {
	if opts.Runtime == nil && opts.CPUUse == nil || opts.MetricsWindow.IsZero() || workload.IsZero() {
		return opts, nil
	}
	if opts.MetricsWindow.covers(workload, params.ClockSlack) || arrivals.share() >= params.MinCoveredArrivals {
		return opts, nil
	}
	u := &Uncovered{Metrics: opts.MetricsWindow, Workload: workload, Covered: arrivals.share()}
	opts.Runtime, opts.CPUUse = nil, nil
	return opts, u
}

// arrivalCount counts the workload's arrivals, and those between the
// metrics' scrapes (widened by ClockSlack).
type arrivalCount struct{ all, inside int64 }

func (a *arrivalCount) add(metrics TimeRange, at time.Time, slack time.Duration) {
	if metrics.IsZero() || at.IsZero() {
		return
	}
	a.all++
	if !at.Before(metrics.From.Add(-slack)) && !at.After(metrics.To.Add(slack)) {
		a.inside++
	}
}

// share is the share of the arrivals between the scrapes (0 for none).
func (a arrivalCount) share() float64 {
	if a.all == 0 {
		return 0
	}
	return float64(a.inside) / float64(a.all)
}
