package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/tune"
)

// TestWriteGoalAndWhatBuysNothing: the goal says "no 429" for --max-429 0
// and counts 429s otherwise; the search line counts the candidates ranked
// last for buying nothing, and a shown one says why it is there.
func TestWriteGoalAndWhatBuysNothing(t *testing.T) {
	rep := &tune.Report{
		Clients: []tune.ClientFigures{{Protected: true}},
		Candidates: []*tune.Candidate{
			{ID: 3, Rank: 1, Verified: true, Changes: []string{"apf-load: queueLengthLimit 3→6"}},
			{ID: 7, Rank: 2, Verified: true, RedundantOf: 3, Changes: []string{"apf-load: queueLengthLimit 3→6", "x: borrowingLimitPercent 0→50"}},
			{ID: 9, Rank: 3, Verified: true, NoEffect: true, Changes: []string{"x: borrowingLimitPercent 0→100"}},
		},
	}
	rep.Clients[0].Name = "load-1"
	for _, tc := range []struct {
		max  int64
		want string
	}{{0, "(load-1) get no 429;"}, {1, "(load-1) get at most 1 429;"}, {3, "(load-1) get at most 3 429s;"}} {
		rep.Goal.Max429 = tc.max
		var b bytes.Buffer
		if err := Write(&b, rep, 5); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.Contains(out, tc.want) {
			t.Errorf("--max-429 %d: the goal does not say %q:\n%s", tc.max, tc.want, out)
		}
		for _, want := range []string{
			"ranked after the rest: 1 candidate changes nothing in the replay (-o json: noEffect), 1 candidate changes more than another and no better (redundantOf)",
			"#2  candidate 7  verified, misses the goal, redundant: candidate 3 does as well changing less",
			"#3  candidate 9  verified, misses the goal, changes nothing in the replay",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the table lacks %q:\n%s", want, out)
			}
		}
	}
	// a count of none is left out
	rep.Candidates = rep.Candidates[:2]
	var b bytes.Buffer
	if err := Write(&b, rep, 5); err != nil {
		t.Fatal(err)
	}
	if want := "ranked after the rest: 1 candidate changes more than another and no better (redundantOf)\n"; !strings.Contains(b.String(), want) {
		t.Errorf("the table lacks %q:\n%s", want, b.String())
	}
}

// TestRankKeysInWords: --explain says the keys a candidate ranks by in
// words, counts agreeing ("goal met false, verified true; protected 429s
// above --max-429 411" on the demo's recording).
func TestRankKeysInWords(t *testing.T) {
	for _, tt := range []struct {
		c    tune.Candidate
		want string
	}{
		{tune.Candidate{Verified: true, Shortfall: 411, ObjectsChanged: 1},
			"it misses the goal, verified; the protected clients keep 411 429s beyond --max-429; it adds 0 429s and 0s of p99 wait to the others; it moves 0 seats and changes 1 object"},
		{tune.Candidate{GoalMet: true, Added429: 1, SeatsMoved: 1, ObjectsChanged: 2},
			"it meets the goal, unverified; the protected clients keep 0 429s beyond --max-429; it adds 1 429 and 0s of p99 wait to the others; it moves 1 seat and changes 2 objects"},
		{tune.Candidate{Shortfall: 1, WaitShortfallSeconds: 1.5},
			"the protected clients keep 1 429 beyond --max-429 and 1.50s of p99 wait beyond --max-wait;"},
	} {
		if got := rankKeys(&tt.c); !strings.Contains(got, tt.want) {
			t.Errorf("rankKeys(%+v) = %q, want %q in it", tt.c, got, tt.want)
		}
	}
}

// TestSlowerServerLine: a candidate checked on a server 10% slower says
// how it does there, in the goal's words; one not checked says nothing.
func TestSlowerServerLine(t *testing.T) {
	rep := &tune.Report{
		Clients: []tune.ClientFigures{{Name: "load-1", Protected: true}},
		Candidates: []*tune.Candidate{
			{ID: 3, Rank: 1, Verified: true, GoalMet: true, Changes: []string{"apf-list: queueLengthLimit 2→4"},
				Slower: &tune.SlowerServer{Margin: 0.1, Shortfall: 11, ProtectedRejected: 11}},
			{ID: 5, Rank: 2, Verified: true, GoalMet: true, Changes: []string{"apf-list: queueLengthLimit 2→8"},
				Slower: &tune.SlowerServer{Margin: 0.1, GoalMet: true}},
			{ID: 7, Rank: 3, Verified: true, Changes: []string{"apf-list: queues 8→16"}},
		},
	}
	var b bytes.Buffer
	if err := Write(&b, rep, 5); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"    on a server 10% slower: misses the goal: the protected clients keep 11 429s beyond --max-429 (11 in all); it meets it only at the recorded speed\n",
		"    on a server 10% slower: meets the goal too\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "on a server 10% slower") != 2 {
		t.Errorf("a candidate not checked says how it does on a slower server:\n%s", out)
	}
}

// TestExplainClients: --explain's client table says whether a client is
// protected in words, marks those the candidate leaves rejected, and ends
// no line in spaces (it printed "true"/"false" and padded every row to
// an empty last column).
func TestExplainClients(t *testing.T) {
	rep := &tune.Report{Clients: []tune.ClientFigures{{Name: "load-8", Level: "apf-load-reject", Protected: true}, {Name: "admin", Level: "exempt"}}}
	rep.Clients[0].Rejected = 384
	var c tune.Candidate
	if err := json.Unmarshal([]byte(`{"id":5,"rank":1,"verified":true,"clientsAfter":[{"rejected":384},{"rejected":0}]}`), &c); err != nil {
		t.Fatal(err)
	}
	rep.Candidates = []*tune.Candidate{&c}
	var b bytes.Buffer
	if err := Explain(&b, rep, &c); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasSuffix(l, " ") {
			t.Errorf("a line ends in spaces: %q", l)
		}
	}
	for _, want := range []string{
		// the figures right-aligned under 429s and P99 WAIT
		"PROTECTED            429s           P99 WAIT\n",
		"load-8                                   apf-load-reject          yes             384 → 384              - → -  still rejected\n",
		"admin                                    exempt                   no                  0 → 0              - → -\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
}
