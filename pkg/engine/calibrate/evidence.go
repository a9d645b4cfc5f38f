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
}

// Why says it in a sentence.
func (u *Uncovered) Why() string {
	return fmt.Sprintf("the metrics' scrapes cover %v, the workload arrived over %v: what the server counted between them is not evidence of the recorded load", u.Metrics, u.Workload)
}

// coverEvidence returns opts without the metrics' CPU evidence when the
// metrics' window does not cover the workload's arrivals, and what it
// refused; opts as it is when either window is unknown or it covers.
func coverEvidence(opts Options, workload TimeRange) (Options, *Uncovered) {
	if opts.Runtime == nil && opts.CPUUse == nil || opts.MetricsWindow.IsZero() || workload.IsZero() {
		return opts, nil
	}
	if opts.MetricsWindow.covers(workload, params.ClockSlack) {
		return opts, nil
	}
	u := &Uncovered{Metrics: opts.MetricsWindow, Workload: workload}
	opts.Runtime, opts.CPUUse = nil, nil
	return opts, u
}
