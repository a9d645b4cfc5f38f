package reconstruct_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// TestStories joins hand-built fates to hand-built store incidents; every
// expected figure is worked out in the comments from the fates' times.
func TestStories(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	inc := func(level string, from, to float64) rejections.Incident {
		s, e := at(from), at(to)
		return rejections.Incident{Level: level, Start: &s, End: &e}
	}
	// with a lead of 5 s the windows are tiny [5, 20], tiny [55, 70],
	// other [3595, 3610] and tiny [35, 45]; the log spans 3 to 62
	incidents := []rejections.Incident{inc("tiny", 10, 20), inc("tiny", 60, 70), inc("other", 3600, 3610), inc("tiny", 40, 45),
		{Level: "tiny"}} // read at one moment: no window, no story
	st := reconstruct.NewStories(incidents, 5*time.Second)
	fate := func(user, level string, arr float64, status int, rejected bool, reason string, wait, exec float64, seats int) *reconstruct.Fate {
		return &reconstruct.Fate{Record: &workload.Request{User: user, UserAgent: user + "-agent"}, Level: level, FlowSchema: "fs", Distinguisher: user,
			At: at(arr), Status: status, Rejected: rejected, Reason: reason, Wait: time.Duration(wait * float64(time.Second)),
			Execution: time.Duration(exec * float64(time.Second)), Seats: seats, WaitLimit: 2 * time.Second}
	}
	for _, f := range []*reconstruct.Fate{
		// holds 2 seats over [6, 10): 8 seat-seconds
		fate("alice", "tiny", 6, 200, false, "", 0, 4, 2),
		// waits [3, 4), before the window; holds 1 seat over [4, 8), of
		// which [5, 8) in the window: 3 seat-seconds
		fate("bob", "tiny", 3, 200, false, "", 1, 4, 1),
		// a queue-full 429 at 12: rejected, never queued
		fate("carol", "tiny", 12, 429, true, "queue-full", 0, 0, 1),
		// a time-out at 13 with no wait recorded: waited its 2 s limit
		fate("carol", "tiny", 13, 429, true, "time-out", 0, 0, 1),
		// a recorded 429 the reconstruction served: counted rejected (the
		// log's answer), queued [14, 17) = 3, held [17, 18) = 1
		func() *reconstruct.Fate {
			f := fate("dave", "tiny", 14, 429, false, "queue-full", 3, 1, 1)
			f.Class = reconstruct.ClassRoomInQueue
			return f
		}(),
		// a 429 APF did not give: not counted
		func() *reconstruct.Fate {
			f := fate("erin", "tiny", 15, 429, false, "queue-full", 0, 1, 1)
			f.Class = reconstruct.ClassNotAPF
			return f
		}(),
		// after the first window's end
		fate("alice", "tiny", 25, 200, false, "", 0, 1, 1),
		// another level, in the first window's time
		fate("frank", "other", 12, 429, true, "queue-full", 0, 0, 1),
		// the second window: bob rejected at 58
		fate("bob", "tiny", 58, 429, true, "queue-full", 0, 0, 1),
	} {
		st.Add(f)
	}
	notes := st.Attach(incidents, at(3), at(62))

	want := []string{
		// carol 2 of 3 rejections, dave 1; seat-seconds 8 + 3 + 1 = 12;
		// queued 3 + 2 = 5
		"counted 5-20; rejected: carol 2 0.667, dave 1 0.333; held: alice 1×8 0.667, bob 1×3 0.250, dave 1×1 0.083; queued: dave 1×3 0.600, carol 1×2 0.400",
		// the log ends at 62: covered 55 to 62
		"counted 55-62; rejected: bob 1 1.000; held: ; queued: ",
		"no clients",
		"counted 35-45; rejected: ; held: ; queued: ",
		"no clients",
	}
	for i, in := range incidents {
		if got := story(in.Clients, t0); got != want[i] {
			t.Errorf("incident %d:\n got %s\nwant %s", i+1, got, want[i])
		}
	}
	wantNotes := []string{
		"the log covers only 2026-11-01T10:00:55Z to 2026-11-01T10:01:02Z of incident 2's window (tiny, 2026-11-01T10:00:55Z to 2026-11-01T10:01:10Z): its clients are those of that part",
		"the log (2026-11-01T10:00:03Z to 2026-11-01T10:01:02Z) does not cover incident 3's window (other, 2026-11-01T10:59:55Z to 2026-11-01T11:00:10Z): no client is named",
		"the log records no 429 in incident 4's window (tiny, 2026-11-01T10:00:35Z to 2026-11-01T10:00:45Z)",
	}
	if !slices.Equal(notes, wantNotes) {
		t.Errorf("notes:\n got %q\nwant %q", notes, wantNotes)
	}
	// the identifying fields come through
	if c := incidents[0].Clients.Rejected[0]; c.User != "carol" || c.UserAgent != "carol-agent" || c.FlowSchema != "fs" || c.Distinguisher != "carol" {
		t.Errorf("carol's share names %+v", c)
	}
}

// TestStoriesEmptyLog: a log without a request covers no incident.
func TestStoriesEmptyLog(t *testing.T) {
	s := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	incidents := []rejections.Incident{{Level: "tiny", Start: &s, End: &s}}
	notes := reconstruct.NewStories(incidents, 0).Attach(incidents, time.Time{}, time.Time{})
	if incidents[0].Clients != nil || len(notes) != 1 || !strings.Contains(notes[0], "does not cover incident 1") {
		t.Errorf("clients %+v, notes %q", incidents[0].Clients, notes)
	}
}

// story writes a Clients compactly: user, requests × seat-seconds, share.
func story(c *rejections.Clients, t0 time.Time) string {
	if c == nil {
		return "no clients"
	}
	list := func(cs []rejections.ClientShare) string {
		var parts []string
		for _, x := range cs {
			if x.SeatSeconds == nil {
				parts = append(parts, fmt.Sprintf("%s %.0f %.3f", x.User, x.Count, x.Share))
			} else {
				parts = append(parts, fmt.Sprintf("%s %.0f×%g %.3f", x.User, x.Count, *x.SeatSeconds, x.Share))
			}
		}
		return strings.Join(parts, ", ")
	}
	out := fmt.Sprintf("rejected: %s; held: %s; queued: %s", list(c.Rejected), list(c.HeldSeats), list(c.Queued))
	return fmt.Sprintf("counted %g-%g; %s", c.Window.Start.Sub(t0).Seconds(), c.Window.End.Sub(t0).Seconds(), out)
}
