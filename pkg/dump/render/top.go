package render

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
)

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
		if s.RequestsWaitingOnly() {
			out = append(out, s.Instance)
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
func PrintTopFlows(w io.Writer, f *output.Flags, snaps []*dump.Snapshot, level string, limit int) error {
	rows := FlowRows(snaps, level, limit)
	return Print(w, f, rows, func(wide bool) *Table { return flowsTable(rows, len(snaps) > 1, wide) })
}

// flowsTable is the table of PrintTopFlows.
func flowsTable(rows []FlowRow, multi, wide bool) *table {
	t := newTable(multi, "LEVEL", "FLOWSCHEMA", "FLOW", "WAITING", "WAITING-SEATS", "EXECUTING", "EXECUTING-SEATS")
	if wide {
		t.header = append(t.header, "QUEUES")
	}
	for _, r := range rows {
		var cells []string
		if multi {
			cells = append(cells, r.Instance)
		}
		cells = append(cells, r.Level, r.FlowSchema, dash(r.Distinguisher), strconv.Itoa(r.WaitingRequests), strconv.Itoa(r.WaitingSeats),
			r.ExecutingCell(r.ExecutingRequest), r.ExecutingCell(r.ExecutingSeats))
		if wide {
			var qs []string
			for _, q := range r.Queues {
				qs = append(qs, strconv.Itoa(q))
			}
			cells = append(cells, dash(strings.Join(qs, ",")))
		}
		t.add(cells...)
	}
	return t
}

// PrintFailures prints one line per unreachable instance (to stderr, by
// the caller's choice of w).
func PrintFailures(w io.Writer, failures []dump.InstanceError) {
	for _, f := range failures {
		fmt.Fprintf(w, "warning: apiserver %s could not be read: %s\n", sanitize.Line(f.Instance), sanitize.Line(f.Error()))
	}
}

// PrintWhois prints "kubectl apf whois".
func PrintWhois(w io.Writer, f *output.Flags, res []dump.Resolution) error {
	return Print(w, f, res, func(bool) *Table { return whoisTable(res) })
}

// whoisTable is the table of PrintWhois.
func whoisTable(res []dump.Resolution) *table {
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
	return t
}
