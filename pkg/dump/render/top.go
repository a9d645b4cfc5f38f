package render

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
)

// TopLevelRow is one printed row of "kubectl apf top levels": a
// levels.Row (each figure from the best input present; null when absent).
type TopLevelRow struct {
	Instance          string               `json:"instance"`
	Level             string               `json:"level"`
	NominalLimit      jsonFloat            `json:"nominalLimit"`
	CurrentLimit      jsonFloat            `json:"currentLimit"`
	SeatsInUse        jsonFloat            `json:"seatsInUse"`
	Utilisation       jsonFloat            `json:"utilisation"`
	WaitingRequests   jsonFloat            `json:"waitingRequests"`
	WaitingSeats      jsonFloat            `json:"waitingSeats"`
	ExecutingRequests jsonFloat            `json:"executingRequests"`
	HasRates          bool                 `json:"hasRates"`
	DispatchedPerS    jsonFloat            `json:"dispatchedPerSecond"`
	RejectedPerS      map[string]jsonFloat `json:"rejectedPerSecond,omitempty"`
	WaitP99Seconds    jsonFloat            `json:"waitP99Seconds"`
	rejectedTotal     float64
}

// TopSortKeys are the accepted --sort-by values of "top levels".
var TopSortKeys = []string{"utilisation", "name", "waiting", "rejected", "dispatched"}

func topRow(l levels.Row) TopLevelRow {
	r := TopLevelRow{Instance: l.Instance, Level: l.Name, NominalLimit: jsonFloat(l.NominalLimit), CurrentLimit: jsonFloat(l.CurrentLimit),
		SeatsInUse: jsonFloat(l.SeatsInUse), Utilisation: jsonFloat(l.Utilisation), WaitingRequests: jsonFloat(l.Waiting),
		WaitingSeats: jsonFloat(l.WaitingSeats), ExecutingRequests: jsonFloat(l.Executing), HasRates: l.HasRates,
		DispatchedPerS: jsonFloat(l.DispatchedPerSec), WaitP99Seconds: jsonFloat(l.WaitP99), rejectedTotal: l.RejectedTotal}
	for k, v := range l.RejectedPerSec {
		if r.RejectedPerS == nil {
			r.RejectedPerS = map[string]jsonFloat{}
		}
		r.RejectedPerS[k] = jsonFloat(v)
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
		for _, m := range levels.Merge(AllInstances, all) {
			ms = append(ms, topRow(m))
		}
		sort.SliceStable(ms, func(i, j int) bool { return less(ms[i], ms[j]) })
		out = append(out, ms...)
	}
	return out
}

// nanLow orders NaN below every number, so levels without data sort last
// in a descending order.
func nanLow(f jsonFloat) float64 {
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
			return nanLow(jsonFloat(r.rejectedTotal))
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
		parts = append(parts, k+"="+num(float64(r.RejectedPerS[k])))
	}
	return strings.Join(parts, ",")
}

// PrintTopLevels prints "kubectl apf top levels".
func PrintTopLevels(w io.Writer, o Options, snaps []*dump.Snapshot, level, sortBy string) error {
	rows := TopLevelRows(snaps, level, sortBy)
	if o.isData() {
		return o.writeData(w, rows)
	}
	multi := len(snaps) > 1
	t := newTable(multi, "LEVEL", "NOMINAL", "CURRENT", "SEATS-IN-USE", "UTIL", "WAITING", "WAITING-SEATS", "EXECUTING", "DISPATCHED/S", "REJECTED/S", "WAIT-P99")
	for _, r := range rows {
		var cells []string
		if multi {
			cells = append(cells, r.Instance)
		}
		disp := "-"
		if r.HasRates {
			disp = num(float64(r.DispatchedPerS))
		}
		cells = append(cells, r.Level, num(float64(r.NominalLimit)), num(float64(r.CurrentLimit)), num(float64(r.SeatsInUse)), pct(float64(r.Utilisation)),
			num(float64(r.WaitingRequests)), num(float64(r.WaitingSeats)), num(float64(r.ExecutingRequests)), disp, rejectedCell(r), seconds(float64(r.WaitP99Seconds)))
		t.add(cells...)
	}
	return t.write(w, o.NoHeaders)
}

// FlowRow is one printed row of "kubectl apf top flows": the requests of
// one flow (flow schema and distinguisher) of one level in the request
// dump.
type FlowRow struct {
	Instance         string `json:"instance"`
	Level            string `json:"level"`
	FlowSchema       string `json:"flowSchema"`
	Distinguisher    string `json:"distinguisher"`
	WaitingRequests  int    `json:"waitingRequests"`
	WaitingSeats     int    `json:"waitingSeats"`
	ExecutingRequest int    `json:"executingRequests"`
	ExecutingSeats   int    `json:"executingSeats"`
	Queues           []int  `json:"queues,omitempty"`
	// ExecutingUnknown is true when the request dump lists no executing
	// requests (its layout is older than 1.28): the executing figures are
	// then unknown, printed "-" and null, not 0.
	ExecutingUnknown bool `json:"-"`
}

// MarshalJSON prints the executing figures as null when the dump does not
// list executing requests.
func (f FlowRow) MarshalJSON() ([]byte, error) {
	out := struct {
		Instance         string `json:"instance"`
		Level            string `json:"level"`
		FlowSchema       string `json:"flowSchema"`
		Distinguisher    string `json:"distinguisher"`
		WaitingRequests  int    `json:"waitingRequests"`
		WaitingSeats     int    `json:"waitingSeats"`
		ExecutingRequest *int   `json:"executingRequests"`
		ExecutingSeats   *int   `json:"executingSeats"`
		Queues           []int  `json:"queues,omitempty"`
	}{Instance: f.Instance, Level: f.Level, FlowSchema: f.FlowSchema, Distinguisher: f.Distinguisher, WaitingRequests: f.WaitingRequests, WaitingSeats: f.WaitingSeats, Queues: f.Queues}
	if !f.ExecutingUnknown {
		out.ExecutingRequest, out.ExecutingSeats = &f.ExecutingRequest, &f.ExecutingSeats
	}
	return json.Marshal(out)
}

// ExecutingCell prints an executing figure of a flow row: "-" when the
// dump does not list executing requests.
func (f FlowRow) ExecutingCell(v int) string {
	if f.ExecutingUnknown {
		return "-"
	}
	return strconv.Itoa(v)
}

// UnlistedExecuting names the instances whose request dump lists no
// executing requests (a layout before 1.28), for a note.
func UnlistedExecuting(snaps []*dump.Snapshot) []string {
	var out []string
	for _, s := range snaps {
		for _, r := range s.RequestDump {
			if r.WaitingOnly {
				out = append(out, s.Instance)
				break
			}
		}
	}
	return out
}

// FlowRows groups the request dumps by flow and sorts the heaviest first
// (seats waiting, then seats executing); limit > 0 keeps that many.
func FlowRows(snaps []*dump.Snapshot, level string, limit int) []FlowRow {
	type key struct{ inst, pl, fs, d string }
	idx := map[key]*FlowRow{}
	var out []*FlowRow
	for _, s := range snaps {
		for _, r := range s.RequestDump {
			if level != "" && r.PriorityLevel != level {
				continue
			}
			k := key{s.Instance, r.PriorityLevel, r.FlowSchema, r.FlowDistinguisher}
			f := idx[k]
			if f == nil {
				f = &FlowRow{Instance: s.Instance, Level: r.PriorityLevel, FlowSchema: r.FlowSchema, Distinguisher: r.FlowDistinguisher, ExecutingUnknown: r.WaitingOnly}
				idx[k] = f
				out = append(out, f)
			}
			if r.Executing() {
				f.ExecutingRequest++
				f.ExecutingSeats += r.Seats()
			} else {
				f.WaitingRequests++
				f.WaitingSeats += r.Seats()
			}
			if r.QueueIndex >= 0 {
				i := sort.SearchInts(f.Queues, r.QueueIndex)
				if i == len(f.Queues) || f.Queues[i] != r.QueueIndex {
					f.Queues = append(f.Queues, 0)
					copy(f.Queues[i+1:], f.Queues[i:])
					f.Queues[i] = r.QueueIndex
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.WaitingSeats != b.WaitingSeats {
			return a.WaitingSeats > b.WaitingSeats
		}
		if a.ExecutingSeats != b.ExecutingSeats {
			return a.ExecutingSeats > b.ExecutingSeats
		}
		if a.Level != b.Level {
			return a.Level < b.Level
		}
		if a.Distinguisher != b.Distinguisher {
			return a.Distinguisher < b.Distinguisher
		}
		return a.Instance < b.Instance
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	rows := make([]FlowRow, len(out))
	for i, f := range out {
		rows[i] = *f
	}
	return rows
}

// PrintTopFlows prints "kubectl apf top flows".
func PrintTopFlows(w io.Writer, o Options, snaps []*dump.Snapshot, level string, limit int) error {
	rows := FlowRows(snaps, level, limit)
	if o.isData() {
		return o.writeData(w, rows)
	}
	multi := len(snaps) > 1
	t := newTable(multi, "LEVEL", "FLOWSCHEMA", "FLOW", "WAITING", "WAITING-SEATS", "EXECUTING", "EXECUTING-SEATS")
	if o.Format == FormatWide {
		t.header = append(t.header, "QUEUES")
	}
	for _, r := range rows {
		var cells []string
		if multi {
			cells = append(cells, r.Instance)
		}
		cells = append(cells, r.Level, r.FlowSchema, dash(r.Distinguisher), strconv.Itoa(r.WaitingRequests), strconv.Itoa(r.WaitingSeats),
			r.ExecutingCell(r.ExecutingRequest), r.ExecutingCell(r.ExecutingSeats))
		if o.Format == FormatWide {
			var qs []string
			for _, q := range r.Queues {
				qs = append(qs, strconv.Itoa(q))
			}
			cells = append(cells, dash(strings.Join(qs, ",")))
		}
		t.add(cells...)
	}
	return t.write(w, o.NoHeaders)
}

// PrintFailures prints one line per unreachable instance (to stderr, by
// the caller's choice of w).
func PrintFailures(w io.Writer, failures []dump.InstanceError) {
	for _, f := range failures {
		fmt.Fprintf(w, "warning: apiserver %s could not be read: %s\n", Sanitize(f.Instance), Sanitize(f.Error()))
	}
}

// PrintWhois prints "kubectl apf whois".
func PrintWhois(w io.Writer, o Options, res []dump.Resolution) error {
	if o.isData() {
		return o.writeData(w, res)
	}
	t := &table{header: []string{"UID", "HEADER", "KIND", "NAME", "NOTE"}}
	for _, r := range res {
		header := "-"
		switch r.Kind {
		case dump.KindFlowSchema:
			header = dump.HeaderFlowSchemaUID
		case dump.KindPriorityLevel:
			header = dump.HeaderPriorityLevelUID
		}
		uid := r.UID
		if uid == "" {
			uid = `""`
		}
		t.add(uid, header, dash(r.FoundKind), dash(r.Name), dash(r.Note))
	}
	return t.write(w, o.NoHeaders)
}
