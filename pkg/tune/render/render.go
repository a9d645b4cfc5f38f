// Package render prints "kubectl apf tune": the best candidates in words
// with the protected clients and the others before → after, one
// candidate explained level by level and client by client, and a
// candidate's objects as YAML to apply.
package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/config"
	"github.com/kubectl-apf/kubectl-apf/pkg/tune"
)

// Write prints the goal, the verdict and the first top candidates.
func Write(w io.Writer, rep *tune.Report, top int) error {
	fmt.Fprintln(w, "Goal:    "+goalText(rep))
	fmt.Fprintln(w, "Verdict: "+sanitize.Line(rep.Verdict))
	for _, y := range rep.Why {
		fmt.Fprintln(w, "         "+sanitize.Line(y))
	}
	fmt.Fprintf(w, "Search:  %d candidates written, %d replayed, %d pruned (their bounds could not enter the first %d)%s%s\n",
		rep.Written, rep.Replayed, rep.Pruned, max(top, tune.DefaultShow), refusedText(rep), droppedText(rep))
	if none, redundant := buyNothing(rep); none+redundant > 0 {
		var parts []string
		if none > 0 {
			parts = append(parts, fmt.Sprintf("%d %s nothing in the replay (-o json: noEffect)", none, textfmt.Plural(none, "candidate changes", "candidates change")))
		}
		if redundant > 0 {
			parts = append(parts, fmt.Sprintf("%d %s more than another and no better (redundantOf)", redundant, textfmt.Plural(redundant, "candidate changes", "candidates change")))
		}
		fmt.Fprintf(w, "         ranked after the rest: %s\n", strings.Join(parts, ", "))
	}
	for i, c := range rep.Candidates {
		if i == top {
			break
		}
		fmt.Fprintln(w)
		writeCandidate(w, c)
	}
	if len(rep.Candidates) > 0 {
		fmt.Fprintf(w, "\nkubectl apf tune ... --explain %d says why candidate %d ranks first; -o yaml prints its objects.\n", rep.Candidates[0].ID, rep.Candidates[0].ID)
	}
	return nil
}

func goalText(rep *tune.Report) string {
	g := rep.Goal
	var prot []string
	for _, c := range rep.Clients {
		if c.Protected {
			prot = append(prot, sanitize.Line(c.Name))
		}
	}
	who := "the clients answered 429 in the incident"
	if len(g.Protect) > 0 {
		who = "the clients of " + targetsText(g.Protect)
	}
	if len(prot) > 6 {
		prot = append(prot[:6], fmt.Sprintf("%d more", len(prot)-6))
	}
	s := fmt.Sprintf("%s (%s) get no 429", who, strings.Join(prot, ", "))
	if g.Max429 > 0 {
		s = fmt.Sprintf("%s (%s) get at most %d %s", who, strings.Join(prot, ", "), g.Max429, textfmt.Plural(g.Max429, "429", "429s"))
	}
	if g.MaxWait > 0 {
		s += fmt.Sprintf(" and a p99 wait of at most %v", g.MaxWait)
	}
	others := "no other client"
	if len(g.Ignore) > 0 {
		others += " (but " + targetsText(g.Ignore) + ")"
	}
	return s + "; " + others + " gets more 429s or a longer p99 wait than the replay of the recorded configuration gives it"
}

// targetsText lists the goal's targets, each KIND=NAME, sanitized.
func targetsText(ts []tune.Target) string {
	var out []string
	for _, t := range ts {
		out = append(out, sanitize.Line(t.String()))
	}
	return strings.Join(out, ", ")
}

func refusedText(rep *tune.Report) string {
	n := 0
	for _, v := range rep.Refused {
		n += v
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d refused before any replay (-o json says why)", n)
}

func droppedText(rep *tune.Report) string {
	if rep.Dropped == 0 {
		return ""
	}
	return fmt.Sprintf("; %d past --max-candidates", rep.Dropped)
}

func status(c *tune.Candidate) string {
	var s []string
	if c.Verified {
		s = append(s, "verified")
	} else {
		s = append(s, "UNVERIFIED")
	}
	if c.GoalMet {
		s = append(s, "meets the goal")
	} else {
		s = append(s, "misses the goal")
	}
	switch {
	case c.NoEffect:
		s = append(s, "changes nothing in the replay")
	case c.RedundantOf != 0:
		s = append(s, fmt.Sprintf("redundant: candidate %d does as well changing less", c.RedundantOf))
	}
	return strings.Join(s, ", ")
}

func writeCandidate(w io.Writer, c *tune.Candidate) {
	fmt.Fprintf(w, "#%d  candidate %d  %s  (seats moved %d, shares moved %d, objects %d)\n", c.Rank, c.ID, status(c), c.SeatsMoved, c.SharesMoved, c.ObjectsChanged)
	for _, ch := range c.Changes {
		fmt.Fprintln(w, "    "+sanitize.Line(ch))
	}
	fmt.Fprintf(w, "    protected (%d): 429s %d → %d, worst p99 wait %s → %s\n", c.Protected.Clients, c.Protected.RejectedBefore, c.Protected.RejectedAfter, secs(c.Protected.WorstP99Before), secs(c.Protected.WorstP99After))
	fmt.Fprintf(w, "    others (%d):    429s %d → %d, worst p99 wait %s → %s", c.Others.Clients, c.Others.RejectedBefore, c.Others.RejectedAfter, secs(c.Others.WorstP99Before), secs(c.Others.WorstP99After))
	if c.Added429 > 0 || c.AddedWaitSeconds > 0 {
		fmt.Fprintf(w, "; adds %d 429s and %s of p99 wait", c.Added429, secs(&c.AddedWaitSeconds))
	}
	fmt.Fprintln(w)
	for _, u := range c.Unverified {
		fmt.Fprintln(w, "    unverified: "+sanitize.Line(u))
	}
	if s := c.Slower; s != nil {
		fmt.Fprintf(w, "    on a server %.0f%% slower: %s\n", 100*s.Margin, slowerText(s))
	}
}

// slowerText says how a candidate does on a slower server (the goal's
// words: rankKeys').
func slowerText(s *tune.SlowerServer) string {
	if s.GoalMet {
		return "meets the goal too"
	}
	var miss []string
	if s.Shortfall > 0 {
		miss = append(miss, fmt.Sprintf("the protected clients keep %d 429s beyond --max-429 (%d in all)", s.Shortfall, s.ProtectedRejected))
	}
	if s.WaitShortfallSeconds > 0 {
		miss = append(miss, fmt.Sprintf("their p99 waits pass --max-wait by %s", secs(&s.WaitShortfallSeconds)))
	}
	if s.Added429 > 0 || s.AddedWaitSeconds > 0 {
		miss = append(miss, fmt.Sprintf("it adds %d 429s and %s of p99 wait to the others", s.Added429, secs(&s.AddedWaitSeconds)))
	}
	return "misses the goal: " + strings.Join(miss, "; ") + "; it meets it only at the recorded speed"
}

// buyNothing counts the candidates ranked after the rest: those that
// change nothing in the replay, and the others that change more than
// another without doing better.
func buyNothing(rep *tune.Report) (none, redundant int) {
	for _, c := range rep.Candidates {
		switch {
		case c.NoEffect:
			none++
		case c.RedundantOf != 0:
			redundant++
		}
	}
	return none, redundant
}

// secs prints a time in seconds, "-" when absent.
func secs(v *float64) string {
	if v == nil {
		return "-"
	}
	switch {
	case *v == 0:
		return "0s"
	case *v < 1:
		return fmt.Sprintf("%.0fms", *v*1000)
	}
	return fmt.Sprintf("%.2fs", *v)
}

func seats(v *int) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}

// Explain prints why candidate c ranks where it does: its tier and keys
// against the candidate above it, each level and each client before →
// after.
func Explain(w io.Writer, rep *tune.Report, c *tune.Candidate) error {
	writeCandidate(w, c)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Why it ranks #"+fmt.Sprint(c.Rank)+":")
	fmt.Fprintln(w, "  "+rankKeys(c))
	if c.Rank > 1 {
		above := rep.Candidates[c.Rank-2]
		fmt.Fprintf(w, "  below candidate %d: %s\n", above.ID, why(above, c))
	}
	for _, u := range c.Unverified {
		fmt.Fprintln(w, "  unverified: "+sanitize.Line(u))
	}
	for _, x := range c.Warnings {
		fmt.Fprintln(w, "  "+sanitize.Line(x))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-32s %14s %14s %16s\n", "LEVEL", "NOMINAL SEATS", "429s", "P99 WAIT")
	for _, l := range c.Levels {
		fmt.Fprintf(w, "%-32s %14s %14s %16s\n", sanitize.Line(l.Name), seats(l.NominalSeatsBefore)+" → "+seats(l.NominalSeatsAfter),
			fmt.Sprintf("%d → %d", l.RejectedBefore, l.RejectedAfter), secs(l.WaitP99Before)+" → "+secs(l.WaitP99After))
	}
	fmt.Fprintln(w)
	row := func(format string, a ...any) { fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf(format, a...), " ")) }
	row("%-40s %-24s %-10s %14s %18s", "CLIENT", "LEVEL (RECORDED)", "PROTECTED", "429s", "P99 WAIT")
	for i, cl := range rep.Clients {
		if i >= len(c.ClientsAfter) {
			break
		}
		a := c.ClientsAfter[i]
		mark := ""
		switch {
		case cl.Protected && a.Rejected > rep.Goal.Max429:
			mark = "still rejected"
		case !cl.Protected && a.Rejected > cl.Rejected:
			mark = "more 429s"
		}
		protected := "no"
		if cl.Protected {
			protected = "yes"
		}
		row("%-40s %-24s %-10s %14s %18s  %s", sanitize.Line(cl.Name), sanitize.Line(cl.Level), protected,
			fmt.Sprintf("%d → %d", cl.Rejected, a.Rejected), secs(cl.WaitP99Seconds)+" → "+secs(a.WaitP99Seconds), mark)
	}
	return nil
}

// why says what ranks above before b.
// rankKeys says, in the ranking's order, the figures a candidate ranks
// by (it read "goal met false, verified true; protected 429s above
// --max-429 411; …").
func rankKeys(c *tune.Candidate) string {
	goal, verified := "it misses the goal", "verified"
	if c.GoalMet {
		goal = "it meets the goal"
	}
	if !c.Verified {
		verified = "unverified"
	}
	left := fmt.Sprintf("the protected clients keep %s beyond --max-429", textfmt.Count(c.Shortfall, "429", "429s"))
	if c.WaitShortfallSeconds > 0 {
		left += fmt.Sprintf(" and %s of p99 wait beyond --max-wait", secs(&c.WaitShortfallSeconds))
	}
	return fmt.Sprintf("%s, %s; %s; it adds %s and %s of p99 wait to the others; it moves %s and changes %s",
		goal, verified, left, textfmt.Count(c.Added429, "429", "429s"), secs(&c.AddedWaitSeconds),
		textfmt.Count(c.SeatsMoved, "seat", "seats"), textfmt.Count(c.ObjectsChanged, "object", "objects"))
}

func why(a, b *tune.Candidate) string {
	switch {
	case b.NoEffect && !a.NoEffect && a.RedundantOf == 0:
		return "it changes nothing in the replay, and ranks after every candidate that changes something"
	case b.RedundantOf != 0 && !a.NoEffect && a.RedundantOf == 0:
		return fmt.Sprintf("candidate %d does as well changing less, and a redundant candidate ranks after every other", b.RedundantOf)
	case a.Verified && a.GoalMet && !(b.Verified && b.GoalMet):
		return "it is verified and meets the goal"
	case a.Verified && !b.Verified:
		return "it is verified (an unverified candidate never ranks above a verified one)"
	case a.GoalMet && !b.GoalMet:
		return "it meets the goal"
	case a.Shortfall != b.Shortfall:
		return fmt.Sprintf("it leaves the protected clients fewer 429s (%d against %d)", a.Shortfall, b.Shortfall)
	case a.WaitShortfallSeconds != b.WaitShortfallSeconds:
		return "it leaves the protected clients shorter waits"
	case a.Added429 != b.Added429:
		return fmt.Sprintf("it adds fewer 429s to the others (%d against %d)", a.Added429, b.Added429)
	case a.AddedWaitSeconds != b.AddedWaitSeconds:
		return "it adds less p99 wait to the others"
	case a.SeatsMoved != b.SeatsMoved:
		return fmt.Sprintf("it moves fewer seats (%d against %d)", a.SeatsMoved, b.SeatsMoved)
	case a.ObjectsChanged != b.ObjectsChanged:
		return fmt.Sprintf("it changes fewer objects (%d against %d)", a.ObjectsChanged, b.ObjectsChanged)
	}
	return "they tie, and it was written first"
}

// YAML prints the candidate's objects, ready for kubectl diff -f - and
// kubectl apply --server-side -f -.
func YAML(w io.Writer, c *tune.Candidate) error {
	fmt.Fprintf(w, "# kubectl apf tune: candidate %d (%s)\n", c.ID, status(c))
	for _, ch := range c.Changes {
		fmt.Fprintln(w, "#   "+sanitize.Line(ch))
	}
	for _, o := range c.RuntimeObjects() {
		b, err := config.CleanYAML(o)
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "---")
		if _, err := io.WriteString(w, b); err != nil {
			return err
		}
	}
	return nil
}
