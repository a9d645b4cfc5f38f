// Package history computes what APF looked like in the past from a
// Prometheus-compatible store (Prometheus, Thanos, Mimir, VictoriaMetrics):
// it builds the PromQL that pushes every aggregation to the store (sum by,
// increase, histogram_quantile, subqueries), so that only answers travel,
// never raw series, and turns the answers into incidents, level tables and
// the scrapes the live view and "top levels" already render.
//
// The package is pure: it reads the store through the Querier interface
// (pkg/promfetch implements it over HTTP) and takes every time it needs.
package history

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseTime reads an absolute or relative time: RFC 3339
// ("2026-11-23T03:10:00Z"), "now", a negative duration ("-2h", "-90m") or a
// duration followed by "ago" ("2h ago"). Relative times count back from now.
// Durations take Go's units plus d (days) and w (weeks).
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return time.Time{}, fmt.Errorf("empty time: want RFC 3339 (2026-11-23T03:10:00Z), now, -2h or \"2h ago\"")
	case s == "now":
		return now, nil
	case strings.HasPrefix(s, "-"):
		d, err := ParseDuration(s[1:])
		if err != nil {
			return time.Time{}, fmt.Errorf("time %q: %w", s, err)
		}
		return now.Add(-d), nil
	case strings.HasSuffix(s, "ago"):
		d, err := ParseDuration(strings.TrimSpace(strings.TrimSuffix(s, "ago")))
		if err != nil {
			return time.Time{}, fmt.Errorf("time %q: %w", s, err)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q is neither RFC 3339 (2026-11-23T03:10:00Z) nor relative (now, -2h, \"2h ago\")", s)
	}
	return t, nil
}

// maxDuration is the longest duration ParseDuration gives (about 146
// years): half of time.Duration's range, so that adding one more term of
// at most as much cannot overflow.
const maxDuration = math.MaxInt64 / 2

// ParseDuration is time.ParseDuration with d (24h) and w (7d) units too, as
// in PromQL ("30d", "1w2d", "1d12h"). It refuses negative durations, and
// those longer than maxDuration.
func ParseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	rest := s
	var total time.Duration
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		j := i
		for j < len(rest) && (rest[j] < '0' || rest[j] > '9') && rest[j] != '.' {
			j++
		}
		if i == 0 || j == i {
			return 0, fmt.Errorf("duration %q: want a number and a unit, like 30m, 24h or 7d", s)
		}
		num, unit := rest[:i], rest[i:j]
		rest = rest[j:]
		var mult time.Duration
		switch unit {
		case "d":
			mult = 24 * time.Hour
		case "w":
			mult = 7 * 24 * time.Hour
		default:
			d, err := time.ParseDuration(num + unit)
			if err != nil {
				return 0, fmt.Errorf("duration %q: unknown unit %q (want ms, s, m, h, d or w)", s, unit)
			}
			if total += d; total > maxDuration {
				return 0, fmt.Errorf("duration %q is too long", s)
			}
			continue
		}
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || math.IsInf(f, 0) || f*float64(mult) > maxDuration {
			return 0, fmt.Errorf("duration %q: %q is not a number of %s", s, num, unit)
		}
		if total += time.Duration(f * float64(mult)); total > maxDuration {
			return 0, fmt.Errorf("duration %q is too long", s)
		}
	}
	return total, nil
}

// Window is the time range a history command looks at: [Start, End] with
// one point every Step.
type Window struct {
	Start, End time.Time
	Step       time.Duration
}

// Duration is End - Start.
func (w Window) Duration() time.Duration { return w.End.Sub(w.Start) }

// steps is the usual number of points of an automatic step: enough to draw
// a terminal-wide timeline, few enough for a small answer.
const steps = 240

// niceSteps are the automatic steps, the smallest at least the wanted one.
var niceSteps = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second,
	30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute,
	30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour}

// AutoStep returns the step of a window of duration d: about 240 points,
// rounded up to a round step, and never shorter than two scrape intervals
// (an increase over one step needs two samples).
func AutoStep(d, scrapeInterval time.Duration) time.Duration {
	want := max(d/steps, 2*scrapeInterval)
	for _, s := range niceSteps {
		if s >= want {
			return s
		}
	}
	return want.Truncate(time.Hour) + time.Hour
}

// WindowOptions are the time flags of the history commands.
type WindowOptions struct {
	// Since is how far back the window starts from Until (or from At).
	Since time.Duration
	// Until ends the window ("" is now); At is one moment ("" is none).
	Until, At string
	// Step is the resolution (0: AutoStep).
	Step time.Duration
	// ScrapeInterval is the store's scrape interval of the apiservers, the
	// smallest step that makes sense.
	ScrapeInterval time.Duration
}

// Resolve turns the options into a Window at now. With At (and no Since),
// Start and End are both At.
func (o WindowOptions) Resolve(now time.Time) (Window, error) {
	if o.At != "" && o.Until != "" {
		return Window{}, fmt.Errorf("--at and --until are mutually exclusive")
	}
	if o.Since < 0 || o.Step < 0 || o.ScrapeInterval < 0 {
		return Window{}, fmt.Errorf("--since, --step and --scrape-interval must not be negative")
	}
	end := now
	var err error
	switch {
	case o.At != "":
		if end, err = ParseTime(o.At, now); err != nil {
			return Window{}, fmt.Errorf("--at: %w", err)
		}
	case o.Until != "":
		if end, err = ParseTime(o.Until, now); err != nil {
			return Window{}, fmt.Errorf("--until: %w", err)
		}
	}
	if end.After(now.Add(time.Minute)) {
		return Window{}, fmt.Errorf("the window ends at %s, in the future", end.UTC().Format(time.RFC3339))
	}
	w := Window{Start: end.Add(-o.Since), End: end, Step: o.Step}
	if w.Step == 0 {
		w.Step = AutoStep(o.Since, o.ScrapeInterval)
	}
	return w, nil
}
