package logs

import (
	"strings"
	"testing"
	"time"
)

func TestWindowResolve(t *testing.T) {
	first := time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC)
	last := first.Add(3 * time.Hour)
	for _, c := range []struct {
		w        Window
		from, to time.Time
		err      string
	}{
		{w: Window{}, from: first, to: last},
		{w: Window{Since: "10m"}, from: last.Add(-10 * time.Minute), to: last},
		{w: Window{Since: "1h", Until: "-1h"}, from: last.Add(-2 * time.Hour), to: last.Add(-time.Hour)},
		{w: Window{Since: "2h ago", Until: "now"}, from: last.Add(-2 * time.Hour), to: last},
		{w: Window{Since: "2026-11-23T02:00:00Z", Until: "2026-11-23T03:00:00Z"}, from: first.Add(time.Hour), to: first.Add(2 * time.Hour)},
		{w: Window{Until: "2026-11-23T00:00:00Z"}, err: "after its end"},
		{w: Window{Since: "-1h", Until: "-2h"}, err: "after its end"},
		{w: Window{Since: "yesterday"}, err: `--since "yesterday" is neither a duration`},
		{w: Window{Until: "+1h"}, err: "--until:"},
	} {
		from, to, err := c.w.Resolve(first, last)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: %v %v, %v; want an error with %q", c.w, from, to, err, c.err)
			}
			continue
		}
		if err != nil || !from.Equal(c.from) || !to.Equal(c.to) {
			t.Errorf("%+v: %v–%v, %v; want %v–%v", c.w, from, to, err, c.from, c.to)
		}
	}
}

// FuzzWindow: any --since/--until resolves over any log to a window that
// starts no later than it ends, or to an error; Validate refuses no window
// that a log can resolve; and a window of relative times moves with the
// log (it counts back from the log's end, never from the wall clock).
func FuzzWindow(f *testing.F) {
	for _, s := range [][2]string{{"10m", ""}, {"1h", "-1h"}, {"2h ago", "now"}, {"2026-11-23T02:00:00Z", "2026-11-23T03:00:00Z"}, {"", "-2h"}, {"1w2d", "3h ago"}, {"-1h", "-2h"}, {"1d12h", "2026-11-23T03:00:00+01:00"}} {
		f.Add(s[0], s[1], int64(3*time.Hour), int64(24*time.Hour))
	}
	f.Fuzz(func(t *testing.T, since, until string, span, shift int64) {
		w := Window{Since: since, Until: until}
		first := time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC)
		last := first.Add(time.Duration(span % int64(365*24*time.Hour)))
		if last.Before(first) {
			first, last = last, first
		}
		from, to, err := w.Resolve(first, last)
		if err != nil {
			if strings.Contains(strings.TrimSpace(err.Error()), "\n") {
				t.Fatalf("%+v: the error is not one line: %q", w, err)
			}
			return
		}
		if from.After(to) {
			t.Fatalf("%+v over %v–%v: %v after %v", w, first, last, from, to)
		}
		if verr := w.Validate(); verr != nil {
			t.Fatalf("%+v resolves over %v–%v, but Validate says %v", w, first, last, verr)
		}
		if isAbsolute(since) || isAbsolute(until) {
			return
		}
		d := time.Duration(shift % int64(100*365*24*time.Hour))
		f2, t2, err := w.Resolve(first.Add(d), last.Add(d))
		if err != nil || !f2.Equal(from.Add(d)) || !t2.Equal(to.Add(d)) {
			t.Fatalf("%+v: over the log moved by %v, %v–%v, %v; want %v–%v", w, d, f2, t2, err, from.Add(d), to.Add(d))
		}
	})
}

// TestFormatWindow: both ends to the millisecond, the end's date only when
// it is another day's.
func TestFormatWindow(t *testing.T) {
	from := time.Date(2026, 11, 28, 2, 40, 9, 690771706, time.UTC)
	for _, c := range []struct {
		to   time.Time
		want string
	}{
		{time.Date(2026, 11, 28, 2, 40, 38, 308000000, time.UTC), "2026-11-28T02:40:09.69Z–02:40:38.308Z"},
		{time.Date(2026, 11, 29, 0, 0, 1, 0, time.UTC), "2026-11-28T02:40:09.69Z–2026-11-29T00:00:01Z"},
	} {
		if got := FormatWindow(from, c.to); got != c.want {
			t.Errorf("FormatWindow(%v, %v) = %q, want %q", from, c.to, got, c.want)
		}
	}
}
