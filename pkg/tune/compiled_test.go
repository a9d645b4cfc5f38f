package tune

import (
	"context"
	"reflect"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/simulate"
)

// TestCompiledReplayIsTheTapes: what the search replays (the workload
// compiled once, classified by class of requests: simulate.Prepared.Replay)
// is, for a sample of candidates of every family and the recorded
// configuration, exactly what the replay of every request from the
// prepared tape gives (Prepared.ReplayTape, the path simulate's own
// replays take): the levels, the warnings, the CPU model's replays, and
// every client's 429s, dispatches and waits.
func TestCompiledReplayIsTheTapes(t *testing.T) {
	if testing.Short() {
		t.Skip("replays recordings some dozens of times")
	}
	for _, name := range []string{"lists", "borrowing"} {
		t.Run(name, func(t *testing.T) {
			r := openRec(t, name)
			rep := r.search(t, Options{NoPrune: true, MaxCandidates: 400})
			if len(rep.Candidates) < 20 {
				t.Fatalf("only %d candidates", len(rep.Candidates))
			}
			// the census, and a sample: one in ten by id, and the first
			// of every family and pair of families
			cen := newCensusObserver(r.prepared.Recorded())
			if _, _, err := r.prepared.ReplayTape(context.Background(), r.prepared.Recorded(), func() simulate.Observer { return cen }); err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			var sample []*Candidate
			for _, c := range rep.Candidates {
				fam := ""
				for _, f := range c.Families {
					fam += f + "+"
				}
				if c.ID%10 == 0 || !seen[fam] {
					sample = append(sample, c)
				}
				seen[fam] = true
			}
			for _, c := range sample {
				newTallyOf := func() simulate.Observer { return newTally(cen.c) }
				fast, fo, err := r.prepared.Replay(context.Background(), c.Config(), newTallyOf)
				if err != nil {
					t.Fatal(err)
				}
				slow, so, err := r.prepared.ReplayTape(context.Background(), c.Config(), newTallyOf)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(fast.After, slow.After) {
					t.Errorf("candidate %d (%v): the levels differ:\ncompiled %+v\ntape     %+v", c.ID, c.Changes, fast.After, slow.After)
				}
				if fast.Workload.SkippedAfter != slow.Workload.SkippedAfter || !reflect.DeepEqual(fast.Warnings, slow.Warnings) || !reflect.DeepEqual(fast.CPUReplays, slow.CPUReplays) {
					t.Errorf("candidate %d (%v): skipped %d/%d, warnings %v/%v, CPU replays %+v/%+v", c.ID, c.Changes,
						fast.Workload.SkippedAfter, slow.Workload.SkippedAfter, fast.Warnings, slow.Warnings, fast.CPUReplays, slow.CPUReplays)
				}
				n := len(cen.c.clients)
				if f, s := fo.(*tally).figures(n), so.(*tally).figures(n); !reflect.DeepEqual(f, s) {
					t.Errorf("candidate %d (%v): the clients' figures differ", c.ID, c.Changes)
				}
			}
			t.Logf("%d candidates of %d compared", len(sample), len(rep.Candidates))
		})
	}
}
