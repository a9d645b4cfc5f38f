package capacity

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/history"
	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
)

// Report is the answer of "kubectl apf capacity".
type Report struct {
	// ServerConcurrencySource says where the limit came from: flag,
	// metrics or default.
	ServerConcurrencySource string `json:"serverConcurrencySource"`
	// Release is the Kubernetes release replayed (the limit arithmetic is
	// the same in every release the engine knows; the release picks
	// --defaults' objects), ReleaseFrom where it came from.
	Release     string `json:"release"`
	ReleaseFrom string `json:"releaseFrom"`
	// Current is the configured levels' arithmetic; nil when the input
	// holds no PriorityLevelConfigurations (a raw dump or metrics file),
	// and then Unconfigured says so instead of imagining a cluster with
	// only the mandatory levels.
	Current      *Table `json:"current,omitempty"`
	Unconfigured string `json:"unconfigured,omitempty"`
	// Assumed says what Current was assumed to be when the input held no
	// PriorityLevelConfigurations and -f changes them (AssumeBase).
	Assumed  string `json:"assumed,omitempty"`
	Proposed *Table `json:"proposed,omitempty"`
	// Now is what each level of each instance holds in the state read
	// (pkg/levels: the dumps, then the metrics, then the configuration);
	// empty without live state (--defaults, a bundle of objects alone).
	Now NowLevels `json:"now,omitempty"`
	// Observed is what the levels used over the window of --prometheus.
	Observed []history.LevelWindow `json:"observed,omitempty"`
}

// NowLevels are the levels of each instance now: levels.NowColumns in a
// table, levels.NowFields in JSON and YAML (an absent figure is null).
type NowLevels []levels.Row

// MarshalJSON writes the levels' levels.NowFields.
func (n NowLevels) MarshalJSON() ([]byte, error) {
	return json.Marshal(levels.Views(n, levels.NowFields))
}

// UnmarshalJSON fails with levels.ErrViewOnly: the JSON shows rows and
// does not give them back.
func (n *NowLevels) UnmarshalJSON([]byte) error { return levels.ErrViewOnly }

// WriteNow prints the levels now as a table: an instance and
// levels.NowColumns.
func WriteNow(w io.Writer, rows []levels.Row) error {
	tw := textfmt.NewTable(w)
	fmt.Fprintln(tw, "INSTANCE\t"+strings.Join(levels.Titles(levels.NowColumns), "\t"))
	for _, r := range rows {
		cells := []string{sanitize.Line(r.Instance)}
		for _, c := range levels.NowColumns {
			cells = append(cells, nowCell(c, r))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// nowCell is the text of column c of row r in the levels now: the
// level's name, or a count in full ("-" when absent).
func nowCell(c levels.Column, r levels.Row) string {
	if c.Kind == levels.Name {
		return sanitize.Line(r.Name)
	}
	v := c.Figure(r)
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// WriteText prints the report's tables (without Observed, which the
// store's printer draws).
func WriteText(w io.Writer, rep Report) error {
	if rep.Current == nil {
		fmt.Fprintf(w, "No configured limits: %s\n", sanitize.Line(rep.Unconfigured))
		return writeNow(w, rep)
	}
	cur := *rep.Current
	if rep.Assumed != "" {
		fmt.Fprintf(w, "Assumed: %s\n", sanitize.Line(rep.Assumed))
	}
	fmt.Fprintf(w, "Replaying Kubernetes %s (%s)\n", rep.Release, sanitize.Line(rep.ReleaseFrom))
	fmt.Fprintf(w, "Server concurrency limit: %d seats (%s); nominal limits sum to %s\n",
		cur.ServerConcurrencyLimit, rep.ServerConcurrencySource, Change(fmt.Sprint(cur.NominalSum), proposedField(rep, func(t Table) string { return fmt.Sprint(t.NominalSum) })))
	fmt.Fprintf(w, "Wait limit for the default request timeout (%v): %v\n\n", cur.RequestTimeout, engine.DefaultRequestWaitLimit(cur.RequestTimeout))
	tw := textfmt.NewTable(w)
	fmt.Fprintln(tw, "LEVEL\tTYPE\tSHARES\tLEND%\tBORROW%\tNOMINAL\tLENDABLE\tBORROWING\tLOWER\tUPPER\tMAXSEATS\tQUEUES/HAND/LEN\tWAIT\tP(1 ELEPHANT)\tP(4)\tP(16)")
	proposed := map[string]Level{}
	var names []string
	seen := map[string]bool{}
	for _, l := range cur.Levels {
		names = append(names, l.Name)
		seen[l.Name] = true
	}
	if rep.Proposed != nil {
		for _, l := range rep.Proposed.Levels {
			proposed[l.Name] = l
			if !seen[l.Name] {
				names = append(names, l.Name)
			}
		}
	}
	curBy := map[string]Level{}
	for _, l := range cur.Levels {
		curBy[l.Name] = l
	}
	for _, name := range names {
		c, inCur := curBy[name]
		p, inProp := proposed[name]
		cells, label := levelCells(c, inCur), sanitize.Line(name)
		switch {
		case rep.Proposed == nil:
		case !inCur:
			cells, label = levelCells(p, true), label+" (new)"
		case !inProp:
			label += " (removed)"
		default:
			pc := levelCells(p, true)
			for i := range cells {
				cells[i] = Change(cells[i], pc[i])
			}
		}
		fmt.Fprintf(tw, "%s\t%s\n", label, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "note: UPPER is %s; the most each can reach: %s\n", UpperNote, reachable(rep))
	if capped := estimatorCapped(rep); capped != "" {
		fmt.Fprintf(w, "note: MAXSEATS with *: %s\n", capped)
	}
	for _, t := range []*Table{rep.Current, rep.Proposed} {
		if t != nil {
			for _, ig := range t.Ignored {
				fmt.Fprintf(w, "ignored (broken, the apiserver skips it): %s\n", sanitize.Line(ig))
			}
		}
	}
	return writeNow(w, rep)
}

// writeNow writes the levels now, when the state read has them.
func writeNow(w io.Writer, rep Report) error {
	if len(rep.Now) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nNow, from the state read (each figure from the dumps, then the metrics, then the configuration):\n")
	return WriteNow(w, rep.Now)
}

func proposedField(rep Report, f func(Table) string) string {
	if rep.Proposed == nil {
		return ""
	}
	return f(*rep.Proposed)
}

// Change renders "a" when b is empty or equal, else "a->b".
func Change(a, b string) string {
	if b == "" || a == b {
		return a
	}
	return a + "->" + b
}

// levelCells renders the columns after LEVEL; a missing level is all "-".
func levelCells(l Level, ok bool) []string {
	const n = 15
	cells := make([]string, n)
	if !ok {
		for i := range cells {
			cells[i] = "-"
		}
		return cells
	}
	typ := l.Type
	if l.LimitResponse != "" {
		typ = l.LimitResponse
	}
	// an unset borrowingLimitPercent is no limit on borrowing (types.go of
	// flowcontrol/v1), which "none" read as none allowed
	pct := func(p *int32, unset string) string {
		if p == nil {
			return unset
		}
		return fmt.Sprint(*p)
	}
	maxSeats := "-"
	if l.EstimatorCap > 0 {
		maxSeats = fmt.Sprintf("%d*", l.EstimatorCap)
	} else if l.MaxSeats > 0 {
		maxSeats = fmt.Sprint(l.MaxSeats)
	}
	queues, wait := "-", "-"
	probs := []string{"-", "-", "-"}
	if l.Queues > 0 {
		queues = fmt.Sprintf("%d/%d/%d", l.Queues, l.HandSize, l.QueueLengthLimit)
		wait = l.WaitLimit.String()
		for i, c := range l.Crush {
			if i < len(probs) {
				probs[i] = fmt.Sprintf("%.3g", c.Probability)
			}
		}
	}
	return []string{typ, fmt.Sprint(l.Shares), pct(l.LendablePercent, "0"), pct(l.BorrowingLimitPercent, "unlimited"),
		fmt.Sprint(l.NominalCL), fmt.Sprint(l.LendableCL), fmt.Sprint(l.BorrowingCL), fmt.Sprint(l.LowerCL), fmt.Sprint(l.UpperCL),
		maxSeats, queues, wait, probs[0], probs[1], probs[2]}
}

// reachable lists each limited level's ReachableCL, current -> proposed.
func reachable(rep Report) string {
	prop := map[string]Level{}
	if rep.Proposed != nil {
		for _, l := range rep.Proposed.Levels {
			prop[l.Name] = l
		}
	}
	var parts []string
	seen := map[string]bool{}
	add := func(l Level, p string) {
		if l.ReachableCL == nil {
			return
		}
		parts = append(parts, sanitize.Line(l.Name)+" "+Change(fmt.Sprint(*l.ReachableCL), p))
	}
	for _, l := range rep.Current.Levels {
		seen[l.Name] = true
		p := ""
		if pl, ok := prop[l.Name]; ok && pl.ReachableCL != nil {
			p = fmt.Sprint(*pl.ReachableCL)
		} else if rep.Proposed != nil {
			p = "-"
		}
		add(l, p)
	}
	if rep.Proposed != nil {
		for _, l := range rep.Proposed.Levels {
			if !seen[l.Name] {
				add(l, "")
			}
		}
	}
	return strings.Join(parts, ", ")
}

// estimatorCapped says why a level's MAXSEATS has a star, "" when none
// has: a Reject level sets no cap of its own, and a cap above the work
// estimator's yields to it, so the estimator's applies, a LIST's (a
// write's and a watch-cache LIST's are 10).
func estimatorCapped(rep Report) string {
	var none, above []string
	var cap uint64
	for _, t := range []*Table{rep.Current, rep.Proposed} {
		if t == nil {
			continue
		}
		for _, l := range t.Levels {
			if l.EstimatorCap == 0 || slices.Contains(none, l.Name) || slices.Contains(above, l.Name) {
				continue
			}
			cap = l.EstimatorCap
			if l.MaxSeats == 0 {
				none = append(none, sanitize.Line(l.Name))
			} else {
				above = append(above, fmt.Sprintf("%s's %d", sanitize.Line(l.Name), l.MaxSeats))
			}
		}
	}
	var why []string
	if len(none) > 0 {
		why = append(why, fmt.Sprintf("%s %s no hand, so no cap of %s own", strings.Join(none, ", "), textfmt.Plural(len(none), "has", "have"), textfmt.Plural(len(none), "its", "their")))
	}
	if len(above) > 0 {
		why = append(why, fmt.Sprintf("%s %s above it", strings.Join(above, ", "), textfmt.Plural(len(above), "cap is", "caps are")))
	}
	if len(why) == 0 {
		return ""
	}
	return fmt.Sprintf("the work estimator's cap holds: %s; one request there takes up to %d seats for a LIST (10 for a write, or a LIST from the watch cache), and runs alone when wider than the level",
		strings.Join(why, "; "), cap)
}
