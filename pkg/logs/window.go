package logs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/history"
)

// Window is --since/--until over a recorded log: the part of the log to
// read. Relative times count back from the log's own end (its last
// request's arrival), never from the wall clock, so that the same flags
// cut the same requests out of a log of last year as out of one of today.
//
//   - Until is RFC 3339 (2026-11-23T03:10:00Z), "now" (the log's end), or
//     relative: "-2h" or "2h ago" before the log's end. Empty: the log's end.
//   - Since is a duration, the window's length before Until ("10m", "1d"),
//     or a time as Until takes it (RFC 3339, "-2h", "2h ago"): the window's
//     start. Empty: the log's start.
type Window struct {
	Since, Until string
}

// IsZero reports whether no window was given: the whole log is read.
func (w Window) IsZero() bool { return w.Since == "" && w.Until == "" }

// Relative reports whether resolving the window needs the log's end.
func (w Window) Relative() bool {
	if w.Until == "" {
		return w.Since != "" && !isAbsolute(w.Since)
	}
	return !isAbsolute(w.Until) || w.Since != "" && !isAbsolute(w.Since)
}

// Year is the year of the window's absolute bound (--until's, else
// --since's), 0 when it gives none: the year of a log whose klog headers
// carry none, read with it (Spec.Year), so that the window cuts the log
// the user meant.
func (w Window) Year() int {
	for _, s := range []string{w.Until, w.Since} {
		if t, ok := absolute(s); ok {
			return t.Year()
		}
	}
	return 0
}

// isAbsolute says whether s is an RFC 3339 time.
func isAbsolute(s string) bool {
	_, ok := absolute(s)
	return ok
}

// absolute is s read as an RFC 3339 time; ok is false where it is not one.
func absolute(s string) (t time.Time, ok bool) {
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(s))
	return t, err == nil
}

// Validate checks the flags' syntax without the log: one actionable
// error. Whether the window is empty is known once the log is read
// (Resolve).
func (w Window) Validate() error {
	end := time.Unix(1<<32, 0)
	_, _, err := w.resolve(end.Add(-time.Hour), end)
	return err
}

// Resolve returns the window's bounds over a log whose requests arrived
// from first to last. A bound not given is the log's own (first or last).
func (w Window) Resolve(first, last time.Time) (from, to time.Time, err error) {
	if from, to, err = w.resolve(first, last); err != nil {
		return from, to, err
	}
	if from.After(to) {
		return time.Time{}, time.Time{}, startsAfterEnd(from, to)
	}
	return from, to, nil
}

func startsAfterEnd(from, to time.Time) error {
	return fmt.Errorf("--since/--until: the window starts at %s, after its end %s", from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano))
}

func (w Window) resolve(first, last time.Time) (from, to time.Time, err error) {
	from, to = first, last
	if w.Until != "" {
		if to, err = history.ParseTime(w.Until, last); err != nil {
			return time.Time{}, time.Time{}, fmt.Errorf("--until: %w", err)
		}
	}
	if s := strings.TrimSpace(w.Since); s != "" {
		if d, derr := history.ParseDuration(s); derr == nil {
			from = to.Add(-d)
		} else if from, err = history.ParseTime(s, last); err != nil {
			return time.Time{}, time.Time{}, fmt.Errorf("--since %q is neither a duration (the window's length before --until: 10m, 2h, 1d) nor a time (RFC 3339, -2h or \"2h ago\" before the log's end)", s)
		}
	}
	return from, to, nil
}

// Span is the window of a log's arrivals, and how many requests it read.
type Span struct {
	First, Last time.Time
	Requests    int64
}

// Add counts a request's arrival (one without a time is counted, but
// moves neither end).
func (s *Span) Add(r *workload.Request) {
	s.Requests++
	if r.TimeUnknown || r.Arrival.IsZero() {
		return
	}
	if s.First.IsZero() || r.Arrival.Before(s.First) {
		s.First = r.Arrival
	}
	if r.Arrival.After(s.Last) {
		s.Last = r.Arrival
	}
}

// Cut reads the requests of src that arrived from from to to (both
// included; a zero bound is open); a request without a time is left out,
// and counted.
type Cut struct {
	Src      workload.Reader
	From, To time.Time
	// Kept and Outside count the requests read and left out; NoTime those
	// left out because they carry no time.
	Kept, Outside, NoTime int64
}

// Next yields the next request inside the window.
func (c *Cut) Next(r *workload.Request) error {
	for {
		if err := c.Src.Next(r); err != nil {
			return err
		}
		switch {
		case r.TimeUnknown || r.Arrival.IsZero():
			c.NoTime++
			c.Outside++
		case r.Arrival.Before(c.From) || !c.To.IsZero() && r.Arrival.After(c.To):
			c.Outside++
		default:
			c.Kept++
			return nil
		}
	}
}

// FormatWindow renders a window as "2026-11-28T02:40:09.69Z–02:40:38.308Z".
// Both ends to the millisecond: a scrape's time is read to the nanosecond,
// and one end in nine digits beside the other in three read as two clocks.
func FormatWindow(from, to time.Time) string {
	const day, clock = "2006-01-02T", "15:04:05.999Z07:00"
	f, t := from.UTC(), to.UTC()
	end := t.Format(clock)
	if f.YearDay() != t.YearDay() || f.Year() != t.Year() {
		end = t.Format(day + clock)
	}
	return f.Format(day+clock) + "–" + end
}

// ResolveFiles resolves w over the log of spec, opened by op. A window relative to the
// log's end (Relative) reads the files once to find their first and last
// requests; an absolute one reads nothing, and a bound it does not give is
// open (zero). The reader of the window is then Cut{From: from, To: to}.
func (w Window) ResolveFiles(ctx context.Context, op Opener, spec Spec) (from, to time.Time, err error) {
	if !w.Relative() {
		// the log's own ends, unknown and unneeded: open (zero), and a
		// bound not given is compared with nothing (a --since after the
		// log's end is found empty once it is read)
		if from, to, err = w.resolve(time.Time{}, time.Time{}); err == nil && w.Since != "" && w.Until != "" && from.After(to) {
			err = startsAfterEnd(from, to)
		}
		if err != nil {
			return time.Time{}, time.Time{}, err
		}
		return from, to, nil
	}
	spec.FindYear = true
	wl, err := op.Open(ctx, spec)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	defer wl.Close()
	var sp Span
	rd := wl.Cancellable()
	var r workload.Request
	for {
		err := rd.Next(&r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return time.Time{}, time.Time{}, fmt.Errorf("reading the workload: %w", err)
		}
		sp.Add(&r)
	}
	if sp.First.IsZero() {
		return time.Time{}, time.Time{}, fmt.Errorf("--since/--until: the log's %d requests carry no time (a log without its klog headers), so no window can be cut from it", sp.Requests)
	}
	return w.Resolve(sp.First, sp.Last)
}

// FormatBounds renders a window whose bounds may be open (zero): "from
// 2026-11-28T02:40:09Z to the log's end".
func FormatBounds(from, to time.Time) string {
	switch {
	case !from.IsZero() && !to.IsZero():
		return FormatWindow(from, to)
	case !from.IsZero():
		return "from " + from.UTC().Format(time.RFC3339Nano) + " to the log's end"
	case !to.IsZero():
		return "from the log's start to " + to.UTC().Format(time.RFC3339Nano)
	}
	return "the whole log"
}

// Note says which window of the log a command read, and how many of the
// log's requests it held.
func (c *Cut) Note() string {
	n := fmt.Sprintf("note: read the window %s (--since/--until): %d of the log's %d requests", FormatBounds(c.From, c.To), c.Kept, c.Kept+c.Outside)
	if c.NoTime > 0 {
		n += fmt.Sprintf(" (%d without a time left out)", c.NoTime)
	}
	return n
}
