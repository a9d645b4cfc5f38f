package tune

import (
	"os"
	"strings"
	"testing"
)

func TestScratch(t *testing.T) {
	name := os.Getenv("TUNE_REC")
	if name == "" {
		t.Skip()
	}
	r := openRec(t, name)
	rep := r.search(t, Options{NoPrune: os.Getenv("NOPRUNE") != ""})
	t.Logf("verdict: %s\n why: %s", rep.Verdict, strings.Join(rep.Why, "\n  "))
	t.Logf("starved %v written %d replayed %d pruned %d refused %v", rep.Starved, rep.Written, rep.Replayed, rep.Pruned, rep.Refused)
	for _, c := range rep.Clients {
		t.Logf("client %s fs=%s level=%s prot=%v req=%d rec429=%d seatsec=%.1f rej=%d", c.Name, c.FlowSchema, c.Level, c.Protected, c.Requests, c.Recorded429, c.SeatSeconds, c.Rejected)
	}
	for _, f := range r.prepared.Baseline().Fit {
		t.Logf("fit %s %s rec %d pred %d", f.Level, f.Quality, f.Recorded, f.Predicted)
	}
	for i, c := range rep.Candidates {
		if i >= 12 {
			break
		}
		t.Logf("#%d id %d met=%v ver=%v short=%d add429=%d addw=%.3f seats=%d objs=%d prot %d->%d others %d->%d %s %v", c.Rank, c.ID, c.GoalMet, c.Verified, c.Shortfall, c.Added429, c.AddedWaitSeconds, c.SeatsMoved, c.ObjectsChanged, c.Protected.RejectedBefore, c.Protected.RejectedAfter, c.Others.RejectedBefore, c.Others.RejectedAfter, strings.Join(c.Changes, " + "), c.Unverified)
	}
}

func init() {
	seen := map[string]int{}
	debugRefusals = func(s string) {
		k := refusalKind(s)
		if seen[k] < 2 {
			println("REFUSED:", s)
		}
		seen[k]++
	}
}

func TestScratchTiers(t *testing.T) {
	name := os.Getenv("TUNE_REC")
	if name == "" {
		t.Skip()
	}
	r := openRec(t, name)
	rep := r.search(t, Options{NoPrune: true})
	t.Logf("verdict: %s\n why: %s", rep.Verdict, strings.Join(rep.Why, "\n  "))
	t.Logf("written %d replayed %d refused %v", rep.Written, rep.Replayed, rep.Refused)
	for _, c := range rep.Candidates {
		if c.GoalMet || c.SeatsMoved > 5 {
			t.Logf("id %d met=%v ver=%v short=%d add429=%d addw=%.3f seats=%d prot->%d others->%d %s %v", c.ID, c.GoalMet, c.Verified, c.Shortfall, c.Added429, c.AddedWaitSeconds, c.SeatsMoved, c.Protected.RejectedAfter, c.Others.RejectedAfter, strings.Join(c.Changes, " + "), c.Unverified)
		}
	}
}
