// Package render prints the table of "kubectl apf top levels": the rows
// of pkg/levels, in the formats of pkg/dump/render's tables. It sits above
// both, so pkg/dump/render does not import pkg/levels.
package render

import (
	"io"
	"math"
	"sort"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
)

// TopLevelRow is one printed row of "kubectl apf top levels": a
// levels.Row (each figure from the best input present; null when absent).
type TopLevelRow struct {
	Instance          string                      `json:"instance"`
	Level             string                      `json:"level"`
	NominalLimit      render.JSONFloat            `json:"nominalLimit"`
	CurrentLimit      render.JSONFloat            `json:"currentLimit"`
	SeatsInUse        render.JSONFloat            `json:"seatsInUse"`
	Utilisation       render.JSONFloat            `json:"utilisation"`
	WaitingRequests   render.JSONFloat            `json:"waitingRequests"`
	WaitingSeats      render.JSONFloat            `json:"waitingSeats"`
	ExecutingRequests render.JSONFloat            `json:"executingRequests"`
	HasRates          bool                        `json:"hasRates"`
	DispatchedPerS    render.JSONFloat            `json:"dispatchedPerSecond"`
	RejectedPerS      map[string]render.JSONFloat `json:"rejectedPerSecond,omitempty"`
	WaitP99Seconds    render.JSONFloat            `json:"waitP99Seconds"`
	rejectedTotal     float64
}

// TopSortKeys are the accepted --sort-by values of "top levels".
var TopSortKeys = []string{"utilisation", "name", "waiting", "rejected", "dispatched"}

func topRow(l levels.Row) TopLevelRow {
	r := TopLevelRow{Instance: l.Instance, Level: l.Name, NominalLimit: render.JSONFloat(l.NominalLimit), CurrentLimit: render.JSONFloat(l.CurrentLimit),
		SeatsInUse: render.JSONFloat(l.SeatsInUse), Utilisation: render.JSONFloat(l.Utilisation), WaitingRequests: render.JSONFloat(l.Waiting),
		WaitingSeats: render.JSONFloat(l.WaitingSeats), ExecutingRequests: render.JSONFloat(l.Executing), HasRates: l.HasRates,
		DispatchedPerS: render.JSONFloat(l.DispatchedPerSec), WaitP99Seconds: render.JSONFloat(l.WaitP99), rejectedTotal: l.RejectedTotal}
	for k, v := range l.RejectedPerSec {
		if r.RejectedPerS == nil {
			r.RejectedPerS = map[string]render.JSONFloat{}
		}
		r.RejectedPerS[k] = render.JSONFloat(v)
	}
	return r
}

// TopLevelRows computes the rows of each snapshot (levels.Compute) and,
// for several instances, merged rows (levels.Merge: sums, utilisation of
// the sums, the wait p99 of the worst instance).
func TopLevelRows(snaps []*dump.Snapshot, level, sortBy string) []TopLevelRow {
	var out []TopLevelRow
	var all []levels.Row
	for _, s := range snaps {
		for _, l := range levels.Compute(levels.Input{Snapshot: s}) {
			if level != "" && l.Name != level {
				continue
			}
			out = append(out, topRow(l))
			all = append(all, l)
		}
	}
	less := topLess(sortBy)
	sort.SliceStable(out, func(i, j int) bool { return less(out[i], out[j]) })
	if len(snaps) > 1 {
		var ms []TopLevelRow
		for _, m := range levels.Merge(render.AllInstances, all) {
			ms = append(ms, topRow(m))
		}
		sort.SliceStable(ms, func(i, j int) bool { return less(ms[i], ms[j]) })
		out = append(out, ms...)
	}
	return out
}

// nanLow orders NaN below every number, so levels without data sort last
// in a descending order.
func nanLow(f render.JSONFloat) float64 {
	if math.IsNaN(float64(f)) {
		return math.Inf(-1)
	}
	return float64(f)
}

func topLess(sortBy string) func(a, b TopLevelRow) bool {
	key := func(r TopLevelRow) float64 {
		switch sortBy {
		case "waiting":
			return nanLow(r.WaitingRequests)
		case "rejected":
			return nanLow(render.JSONFloat(r.rejectedTotal))
		case "dispatched":
			return nanLow(r.DispatchedPerS)
		}
		return nanLow(r.Utilisation)
	}
	return func(a, b TopLevelRow) bool {
		if sortBy != "name" {
			if ka, kb := key(a), key(b); ka != kb {
				return ka > kb
			}
		}
		if a.Level != b.Level {
			return a.Level < b.Level
		}
		return a.Instance < b.Instance
	}
}

func rejectedCell(r TopLevelRow) string {
	if !r.HasRates {
		return "-"
	}
	if len(r.RejectedPerS) == 0 {
		return "0"
	}
	keys := make([]string, 0, len(r.RejectedPerS))
	for k := range r.RejectedPerS {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+render.Num(float64(r.RejectedPerS[k])))
	}
	return strings.Join(parts, ",")
}

// PrintTopLevels prints "kubectl apf top levels".
func PrintTopLevels(w io.Writer, f *output.Flags, snaps []*dump.Snapshot, level, sortBy string) error {
	rows := TopLevelRows(snaps, level, sortBy)
	return render.Print(w, f, rows, func(bool) *render.Table { return topLevelsTable(rows, len(snaps) > 1) })
}

// topLevelsTable is the table of PrintTopLevels.
func topLevelsTable(rows []TopLevelRow, multi bool) *render.Table {
	t := render.NewTable(multi, "LEVEL", "NOMINAL", "CURRENT", "SEATS-IN-USE", "UTIL", "WAITING", "WAITING-SEATS", "EXECUTING", "DISPATCHED/S", "REJECTED/S", "WAIT-P99")
	for _, r := range rows {
		var cells []string
		if multi {
			cells = append(cells, r.Instance)
		}
		disp := "-"
		if r.HasRates {
			disp = render.Num(float64(r.DispatchedPerS))
		}
		cells = append(cells, r.Level, render.Num(float64(r.NominalLimit)), render.Num(float64(r.CurrentLimit)), render.Num(float64(r.SeatsInUse)), render.Pct(float64(r.Utilisation)),
			render.Num(float64(r.WaitingRequests)), render.Num(float64(r.WaitingSeats)), render.Num(float64(r.ExecutingRequests)), disp, rejectedCell(r), render.Seconds(float64(r.WaitP99Seconds)))
		t.Add(cells...)
	}
	return t
}
