package reconstruct

import (
	"fmt"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// Stories joins a log to the incidents another source found (a store's):
// fed the fates of one reconstruction of the log (Options.OnFate), it
// tells, for each incident, who the log says was rejected on its level in
// its window, who held the level's seats and who waited in its queues. One
// pass, memory by client, not by request.
type Stories struct {
	spans   []span
	byLevel map[string][]int
}

// span is one incident's window and what was gathered over it.
type span struct {
	level      string
	start, end time.Time
	// rejected counts the recorded 429s by client; held and queued the
	// seat-seconds in the window, heldN and queuedN the requests
	rejected               map[clientKey]float64
	held, queued           map[clientKey]float64
	heldN, queuedN         map[clientKey]float64
	total, heldSum, queSum float64
}

// NewStories starts the stories of incidents, each over its window moved
// back by lead: a store's incident starts at the first scrape that saw a
// rejection, so its first 429s came up to one scrape interval before.
// Incidents without a window (read at one moment) get no story.
func NewStories(incidents []rejections.Incident, lead time.Duration) *Stories {
	s := &Stories{spans: make([]span, len(incidents)), byLevel: map[string][]int{}}
	for i, in := range incidents {
		if in.Start == nil || in.End == nil {
			continue
		}
		s.spans[i] = span{level: in.Level, start: in.Start.Add(-lead), end: *in.End,
			rejected: map[clientKey]float64{}, held: map[clientKey]float64{}, queued: map[clientKey]float64{},
			heldN: map[clientKey]float64{}, queuedN: map[clientKey]float64{}}
		s.byLevel[in.Level] = append(s.byLevel[in.Level], i)
	}
	return s
}

// Add counts one fate in the windows of its level: a recorded 429 that
// arrived in a window (as the log's own incidents count them), the seats a
// request the reconstruction served held from its dispatch to its end, and
// those a request waited for in a queue, each clipped to the window.
func (s *Stories) Add(f *Fate) {
	ix := s.byLevel[f.Level]
	if len(ix) == 0 || f.Class == ClassNotAPF {
		return
	}
	k := clientKey{fs: f.FlowSchema, dist: f.Distinguisher}
	if f.Record != nil {
		k.user, k.userAgent = f.Record.User, f.Record.UserAgent
	}
	wait := f.Wait
	if f.Rejected && f.Reason != "time-out" {
		wait = 0 // turned away at arrival
	} else if f.Rejected && wait == 0 {
		wait = f.WaitLimit
	}
	dispatch := f.At.Add(wait)
	for _, i := range ix {
		sp := &s.spans[i]
		if f.Status == 429 && f.Reason != "" && !f.At.Before(sp.start) && !f.At.After(sp.end) {
			sp.rejected[k]++
			sp.total++
		}
		if v := float64(f.Seats) * overlap(f.At, dispatch, sp.start, sp.end); v > 0 {
			sp.queued[k] += v
			sp.queuedN[k]++
			sp.queSum += v
		}
		if f.Rejected {
			continue
		}
		if v := float64(f.Seats) * overlap(dispatch, dispatch.Add(f.Execution), sp.start, sp.end); v > 0 {
			sp.held[k] += v
			sp.heldN[k]++
			sp.heldSum += v
		}
	}
}

// overlap is the seconds [a, b) and [c, d] have in common.
func overlap(a, b, c, d time.Time) float64 {
	if a.Before(c) {
		a = c
	}
	if b.After(d) {
		b = d
	}
	if !b.After(a) {
		return 0
	}
	return b.Sub(a).Seconds()
}

// Attach gives each incident its story from the log whose arrivals span
// logStart to logEnd, clipped to the part of the window the log covers,
// and returns what the report should note: incidents the log does not
// cover (they get no clients), or covers only in part, or where it records
// no 429 at all.
func (s *Stories) Attach(incidents []rejections.Incident, logStart, logEnd time.Time) []string {
	var notes []string
	for i := range incidents {
		sp := &s.spans[i]
		in := &incidents[i]
		if sp.rejected == nil {
			continue
		}
		name := fmt.Sprintf("incident %d's window (%s, %s to %s)", i+1, in.Level, stamp(sp.start), stamp(sp.end))
		from, to := maxTime(sp.start, logStart), minTime(sp.end, logEnd)
		if logStart.IsZero() || to.Before(from) {
			notes = append(notes, fmt.Sprintf("the log (%s to %s) does not cover %s: no client is named", stamp(logStart), stamp(logEnd), name))
			continue
		}
		cl := &rejections.Clients{Window: &rejections.Window{Start: &from, End: &to}}
		if from.After(sp.start) || to.Before(sp.end) {
			notes = append(notes, fmt.Sprintf("the log covers only %s to %s of %s: its clients are those of that part", stamp(from), stamp(to), name))
		}
		for k, n := range sp.rejected {
			c := shareOf(k)
			c.Count, c.Share = n, n/sp.total
			cl.Rejected = append(cl.Rejected, c)
		}
		cl.HeldSeats = shares(sp.held, sp.heldN, sp.heldSum)
		cl.Queued = shares(sp.queued, sp.queuedN, sp.queSum)
		sortShares(cl.Rejected, func(c rejections.ClientShare) float64 { return c.Count })
		if sp.total == 0 {
			notes = append(notes, fmt.Sprintf("the log records no 429 in %s", name))
		}
		in.Clients = cl
	}
	return notes
}

// shares are the clients' seat-seconds with their requests and shares,
// largest first.
func shares(v, n map[clientKey]float64, sum float64) []rejections.ClientShare {
	var out []rejections.ClientShare
	for k, x := range v {
		c := shareOf(k)
		c.Count, c.SeatSeconds, c.Share = n[k], rejections.Of(x), x/sum
		out = append(out, c)
	}
	sortShares(out, func(c rejections.ClientShare) float64 { return *c.SeatSeconds })
	return out
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
