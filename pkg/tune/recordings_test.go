package tune

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
	"github.com/kubectl-apf/kubectl-apf/pkg/simulate"
)

// The recordings of testdata/simulate/recordings the search was designed
// on (lists) and those it is only checked against (borrowing, held out;
// crowded-95, whose seats what-if's re-runs got as many 429s as the
// recorded run, for "more seats buy nothing").

// TestFirstCandidateOnRecordings: on each recording the first candidate
// meets the default goal (the clients answered 429 get none, nobody else
// gets more), and what tune predicts for it is what simulate predicts
// when the candidate's objects are given to it with -f.
func TestFirstCandidateOnRecordings(t *testing.T) {
	if testing.Short() {
		t.Skip("replays each recording some hundred times")
	}
	// lists was the recording the search was designed on; borrowing is
	// held out: on it no verified candidate meets the default goal today
	// (the closest leaves 699 429s), which the test records rather than
	// hides: it holds borrowing's first candidate to simulate's prediction
	// alone.
	for _, name := range []string{"lists", "borrowing"} {
		t.Run(name, func(t *testing.T) {
			r := openRec(t, name)
			rep := r.search(t, Options{})
			if len(rep.Candidates) == 0 {
				t.Fatalf("no candidate: %s", rep.Verdict)
			}
			first := rep.Candidates[0]
			if name == "borrowing" {
				t.Logf("held out: %s %v", rep.Verdict, rep.Why)
			} else if !first.GoalMet || !first.Verified {
				t.Fatalf("the first candidate does not meet the goal: %s %v", rep.Verdict, rep.Why)
			}
			var protBefore int64
			for _, c := range rep.Clients {
				if c.Protected {
					protBefore += c.Rejected
				}
			}
			if protBefore == 0 || (name != "borrowing" && first.Protected.RejectedAfter != 0) {
				t.Fatalf("protected 429s %d → %d", protBefore, first.Protected.RejectedAfter)
			}
			// simulate, from the files, with the candidate as -f
			change := candidateFile(t, first)
			st, _ := loadState(t, r.bundle, []string{change})
			res, err := simulate.Run(context.Background(), st, r.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.After == nil {
				t.Fatal("simulate saw no change")
			}
			sim := map[string]int64{}
			for _, l := range res.After.Levels {
				sim[l.Name] = total(l.Rejected)
			}
			for _, l := range first.Levels {
				if sim[l.Name] != l.RejectedAfter {
					t.Errorf("%s: tune predicts %d 429s, simulate %d", l.Name, l.RejectedAfter, sim[l.Name])
				}
			}
			t.Logf("%s: %s: %s", name, rep.Verdict, strings.Join(first.Changes, "; "))
		})
	}
}

// TestCrowdedMoreSeatsBuyNothing: on crowded-95 (a kube-apiserver that
// shares two cores with 200 client processes: 27,890 of 28,733 requests
// answered 429, and the re-runs of its seats what-if, tiny at 60 shares,
// 3 seats instead of 1, got 11,268 of tiny's 429s against 11,438
// recorded) no candidate meets the goal, and tune says that more seats buy
// nothing.
func TestCrowdedMoreSeatsBuyNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("replays a recording of 28,733 requests")
	}
	r := openRec(t, "crowded-95")
	rep := r.search(t, Options{MaxCandidates: 60})
	if len(rep.Candidates) > 0 && rep.Candidates[0].GoalMet && rep.Candidates[0].Verified {
		t.Fatalf("a candidate meets the goal on a server short of CPU: %s", rep.Verdict)
	}
	if !strings.Contains(strings.Join(rep.Why, "\n"), "more seats buy nothing") {
		t.Fatalf("tune does not say that more seats buy nothing: %s %v", rep.Verdict, rep.Why)
	}
	// the recorded what-if's re-runs agree: 3 seats for tiny left its
	// 429s within 2% of the recorded run's
	rec, rerun := r.result.Recorded.Rejected429["tiny"], r.result.WhatIf.Rejected429["tiny"]
	if rerun < rec*9/10 {
		t.Fatalf("the re-runs of the seats what-if got %d of tiny's 429s against %d recorded: more seats did buy something", rerun, rec)
	}
	t.Log(rep.Verdict, rep.Why)
}

// TestIgnoredClientIsNotJudged: on testdata/tune/noisy-wait (the
// recording on which main's CI failed on 2026-12-02), moving the
// controller off the flood's level leaves the flood's p99 wait longer in
// the replay (the re-runs of the move on two other recordings saw it
// longer too). Judged to the microsecond, no candidate then meets the
// goal for the controller; with the flood ignored (--ignore user=load-1)
// the move does, and with the default tolerance too, and ranks first: it
// changes one object and adds the flood no 429 beyond the tolerance. The
// controller's 429s are judged either way, and an --ignore that names no
// client, or only a protected one, is an error.
//
// By the default tolerance (5% and 5 ms) the move's lengthening is near
// the edge on this recording (160 → 190 ms with the httplog's arrivals,
// 160 → 169 ms since the join takes the audit events' earlier ones, seven
// of them by more than a millisecond: testdata/tune/README.md), so the
// test does not rest on which side of it the replay falls.
func TestIgnoredClientIsNotJudged(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the recording some hundred times")
	}
	r := openRecAt(t, fixture.Path("tune", "noisy-wait"))
	ctrl := []Target{{TargetUser, "load-7"}}
	strict := WaitTolerance{Absolute: time.Microsecond}
	plain := r.search(t, Options{Goal: Goal{Protect: ctrl, WaitTolerance: strict}})
	for _, c := range plain.Candidates {
		if c.GoalMet && c.Verified {
			t.Fatalf("candidate %d (%s) meets the goal without --ignore: the flood's wait is judged (%s)", c.ID, strings.Join(c.Changes, "; "), plain.Verdict)
		}
	}
	var move *Candidate
	for _, c := range plain.Candidates {
		if len(c.Changes) == 1 && strings.HasPrefix(c.Changes[0], "move FlowSchema apf-ctrl ") {
			move = c
			break
		}
	}
	if move == nil || move.AddedWaitSeconds == 0 || move.Protected.RejectedAfter != 0 {
		t.Fatalf("without --ignore, the move: %+v", move)
	}
	for _, tol := range []WaitTolerance{strict, DefaultWaitTolerance} {
		rep := r.search(t, Options{Goal: Goal{Protect: ctrl, Ignore: []Target{{TargetUser, "load-1"}}, WaitTolerance: tol}})
		if len(rep.Candidates) == 0 {
			t.Fatalf("tolerance %+v: no candidate: %s", tol, rep.Verdict)
		}
		first := rep.Candidates[0]
		if !first.GoalMet || !first.Verified || first.Protected.RejectedAfter != 0 || first.Added429 != 0 || first.AddedWaitSeconds != 0 {
			t.Fatalf("tolerance %+v: with --ignore user=load-1 the first candidate: %s: %+v (%s %v)", tol, strings.Join(first.Changes, "; "), first, rep.Verdict, rep.Why)
		}
		if len(first.Changes) != 1 || !strings.HasPrefix(first.Changes[0], "move FlowSchema apf-ctrl ") {
			t.Errorf("tolerance %+v: with --ignore user=load-1 the first candidate is %q, want the move of apf-ctrl", tol, first.Changes)
		}
		if !strings.Contains(rep.Verdict, "but those --ignore names") {
			t.Errorf("tolerance %+v: the verdict does not say that the ignored clients were not judged: %s", tol, rep.Verdict)
		}
	}
	for _, g := range []Goal{
		{Protect: ctrl, Ignore: []Target{{TargetUser, "nobody"}}},
		{Protect: ctrl, Ignore: []Target{{TargetUser, "load-7"}}},
	} {
		if _, err := Search(context.Background(), r.prepared, r.input(), Options{Goal: g}); err == nil {
			t.Errorf("--ignore %s: no error", g.Ignore[0])
		} else {
			t.Logf("--ignore %s: %v", g.Ignore[0], err)
		}
	}
}

// TestRejectTolerance: another client may get 1% more 429s, rounded down,
// than the replay of the recorded configuration gave it: none more below
// 100.
func TestRejectTolerance(t *testing.T) {
	for _, c := range []struct {
		before, after int64
		more          bool
	}{
		{0, 0, false}, {0, 1, true}, {99, 100, true}, {100, 101, false}, {100, 102, true},
		{2352, 2353, false}, {2352, 2375, false}, {2352, 2376, true}, {50, 40, false},
	} {
		if got := DefaultRejectTolerance.more(c.before, c.after); got != c.more {
			t.Errorf("%d → %d: more %v, want %v", c.before, c.after, got, c.more)
		}
	}
}
