// Package render prints the table of "kubectl apf top levels": the rows
// of pkg/levels, in the formats of pkg/dump/render's tables. It sits above
// both, so pkg/dump/render does not import pkg/levels.
package render

import (
	"io"
	"sort"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
)

// TopSortKeys are the accepted --sort-by values of "top levels".
var TopSortKeys = []string{"utilisation", "name", "waiting", "rejected", "dispatched"}

// Rows computes the rows of each snapshot (levels.Compute), sorted by
// sortBy, and, for several instances, merged rows after them (levels.Merge:
// sums, utilisation of the sums, the wait p99 of the worst instance).
func Rows(snaps []*dump.Snapshot, level, sortBy string) []levels.Row {
	var out []levels.Row
	for _, s := range snaps {
		for _, l := range levels.Compute(levels.Input{Snapshot: s}) {
			if level != "" && l.Name != level {
				continue
			}
			out = append(out, l)
		}
	}
	less := levels.Less(sortBy)
	var merged []levels.Row
	if len(snaps) > 1 {
		merged = levels.Merge(render.AllInstances, out)
	}
	sort.SliceStable(out, func(i, j int) bool { return less(out[i], out[j]) })
	if len(snaps) > 1 {
		sort.SliceStable(merged, func(i, j int) bool { return less(merged[i], merged[j]) })
		out = append(out, merged...)
	}
	return out
}

// Cell is the text of column c of row r in the tables of pkg/dump/render.
func Cell(c levels.Column, r levels.Row) string {
	switch c.Kind {
	case levels.Name:
		return r.Name
	case levels.Ratio:
		return render.Pct(c.Figure(r))
	case levels.Seconds:
		return render.Seconds(c.Figure(r))
	case levels.Rate, levels.Reasons:
		if !r.HasRates {
			return "-"
		}
		if c.Kind == levels.Rate {
			return render.Num(c.Figure(r))
		}
		return rejectedCell(r)
	}
	return render.Num(c.Figure(r))
}

// rejectedCell is the rejection rates by reason, those of the interval
// alone: a reason whose counter did not move (time-out=0 beside
// queue-full=22.99) is left out, as the live view leaves it out; "0"
// when none moved.
func rejectedCell(r levels.Row) string {
	var parts []string
	for _, rr := range r.Reasons() {
		if rr.PerSec != 0 {
			parts = append(parts, rr.Reason+"="+render.Num(rr.PerSec))
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, ",")
}

// PrintTopLevels prints "kubectl apf top levels": levels.TopColumns in a
// table (levels.TopWideColumns with -o wide), levels.TopFields in JSON and
// YAML.
func PrintTopLevels(w io.Writer, f *output.Flags, snaps []*dump.Snapshot, level, sortBy string) error {
	rows := Rows(snaps, level, sortBy)
	return render.Print(w, f, levels.Views(rows, levels.TopFields), func(wide bool) *render.Table {
		cols := levels.TopColumns
		if wide {
			cols = levels.TopWideColumns
		}
		return topLevelsTable(rows, cols, len(snaps) > 1)
	})
}

// topLevelsTable is the table of PrintTopLevels.
func topLevelsTable(rows []levels.Row, cols []levels.Column, multi bool) *render.Table {
	t := render.NewTable(multi, levels.Titles(cols)...)
	for _, r := range rows {
		var cells []string
		if multi {
			cells = append(cells, r.Instance)
		}
		for _, c := range cols {
			cells = append(cells, Cell(c, r))
		}
		t.Add(cells...)
	}
	return t
}
