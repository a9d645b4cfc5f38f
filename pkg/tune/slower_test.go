package tune

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/simulate"
)

// TestSlowerServer: each of the first candidates shown that meets the goal
// is replayed on a server 10% slower (Candidate.Slower), and what tune
// says of it there is simulate's prediction for that server: the
// candidate's objects given to simulate with -f and --server-speed 1/1.1
// (another path through the speed: Run's replay of a change, not
// Prepared's). A candidate that misses the goal is not checked there.
func TestSlowerServer(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the lists recording some hundred times")
	}
	r := openRec(t, "lists")
	rep := r.search(t, Options{})
	margin := simulate.DefaultParams().RangeMargin
	var checked *Candidate
	for i, c := range rep.Candidates {
		switch {
		case i >= DefaultShow || !c.GoalMet:
			if c.Slower != nil {
				t.Errorf("candidate %d (rank %d, goal met %v) was checked on a slower server", c.ID, c.Rank, c.GoalMet)
			}
		case c.Slower == nil:
			t.Errorf("candidate %d meets the goal at rank %d and was not checked on a slower server", c.ID, c.Rank)
		case checked == nil:
			checked = c
		}
	}
	if checked == nil {
		t.Fatalf("no candidate checked: %s", rep.Verdict)
	}
	s := checked.Slower
	if s.Margin != margin || s.GoalMet != (s.Shortfall == 0 && s.WaitShortfallSeconds == 0 && s.Added429 == 0 && s.AddedWaitSeconds == 0) {
		t.Errorf("slower server: %+v", s)
	}

	// simulate's prediction of the same candidate on a server 10% slower
	change := candidateFile(t, checked)
	st, _ := loadState(t, r.bundle, []string{change})
	cfg := r.cfg
	cfg.ServerSpeed = 1 / (1 + margin)
	res, err := simulate.Run(context.Background(), st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	at, _, err := r.prepared.ReplayAt(context.Background(), checked.config, 1/(1+margin), nil)
	if err != nil {
		t.Fatal(err)
	}
	sim, tuned := map[string]int64{}, map[string]int64{}
	for _, l := range res.After.Levels {
		sim[l.Name] = total(l.Rejected)
	}
	var slowerAll int64
	for _, l := range at.After.Levels {
		tuned[l.Name] = total(l.Rejected)
		slowerAll += total(l.Rejected)
	}
	for n, v := range sim {
		if tuned[n] != v {
			t.Errorf("%s on a server 10%% slower: tune replays %d 429s, simulate --server-speed %d", n, tuned[n], v)
		}
	}
	if s.ProtectedRejected > slowerAll {
		t.Errorf("the protected clients keep %d 429s on the slower server, more than its %d in all", s.ProtectedRejected, slowerAll)
	}
	t.Logf("candidate %d (%s) on a server 10%% slower: %+v; simulate: %v", checked.ID, strings.Join(checked.Changes, "; "), *s, sim)

	// the verdict: the first candidate meets the goal at the recorded
	// speed alone (lists: 11 429s on the slower server), and the verdict
	// names the first shown that meets it there too
	first := rep.Candidates[0]
	if first.Slower == nil || first.Slower.GoalMet {
		t.Fatalf("lists' first candidate on a slower server: %+v", first.Slower)
	}
	var room *Candidate
	for _, c := range rep.Candidates {
		if c.Slower != nil && c.Slower.GoalMet {
			room = c
			break
		}
	}
	why := strings.Join(rep.Why, "\n")
	if !strings.Contains(why, "but not on a server 10% slower") || room == nil || !strings.Contains(why, fmt.Sprintf("candidate %d (#%d: ", room.ID, room.Rank)) {
		t.Errorf("verdict %q, why %q; the first that meets the goal on a slower server: %+v", rep.Verdict, why, room)
	}
}
