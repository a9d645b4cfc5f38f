package dump

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
)

// The Format functions render rows back in the layout of the current
// apiserver (k8s.io/apiserver pkg/util/flowcontrol/apf_controller_debug.go),
// with the same tabwriter settings, so a redacted bundle reads exactly like a
// captured one. Placeholder rows and extra columns are rendered too, so that
// Parse(Format(rows)) == rows.

func writeTable(header []string, rows [][]string) []byte {
	var buf bytes.Buffer
	w := textfmt.NewAPIServerDumpTable(&buf)
	for _, r := range append([][]string{header}, rows...) {
		fmt.Fprint(w, strings.Join(r, ",\t"))
		fmt.Fprint(w, "\n")
	}
	_ = w.Flush()
	return buf.Bytes()
}

func extraKeys(maps ...map[string]string) []string {
	set := map[string]bool{}
	for _, m := range maps {
		for k := range m {
			set[k] = true
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func none(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = "<none>"
	}
	return s
}

// FormatPriorityLevels renders rows as a dump_priority_levels body.
func FormatPriorityLevels(rows []PriorityLevelRow) []byte {
	header := []string{"PriorityLevelName", "ActiveQueues", "IsIdle", "IsQuiescing", "WaitingRequests", "ExecutingRequests"}
	counters := len(rows) == 0 || rows[0].HasCounters
	for _, r := range rows {
		if r.HasCounters {
			counters = true
		}
	}
	if counters {
		header = append(header, "DispatchedRequests", "RejectedRequests", "TimedoutRequests", "CancelledRequests")
	}
	return formatLevelRows(header, rows, func(r *PriorityLevelRow) (string, map[string]string, bool) {
		return r.Name, r.Extra, r.Placeholder
	}, func(r *PriorityLevelRow) []string {
		cells := []string{r.Name, strconv.Itoa(r.ActiveQueues), strconv.FormatBool(r.IsIdle), strconv.FormatBool(r.IsQuiescing),
			strconv.Itoa(r.WaitingRequests), strconv.Itoa(r.ExecutingRequests)}
		if counters {
			cells = append(cells, strconv.Itoa(r.DispatchedRequests), strconv.Itoa(r.RejectedRequests),
				strconv.Itoa(r.TimedoutRequests), strconv.Itoa(r.CancelledRequests))
		}
		return cells
	})
}

// formatSS renders seat-seconds as request.SeatSeconds.String does.
func formatSS(f float64) string { return fmt.Sprintf("%.8fss", f) }

// FormatQueues renders rows as a dump_queues body.
func FormatQueues(rows []QueueRow) []byte {
	header := []string{"PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests", "SeatsInUse", "NextDispatchR", "InitialSeatsSum", "MaxSeatsSum", "TotalWorkSum"}
	return formatLevelRows(header, rows, func(r *QueueRow) (string, map[string]string, bool) {
		return r.PriorityLevel, r.Extra, r.Placeholder
	}, func(r *QueueRow) []string {
		return []string{r.PriorityLevel, strconv.Itoa(r.Index), strconv.Itoa(r.PendingRequests), strconv.Itoa(r.ExecutingRequests),
			strconv.Itoa(r.SeatsInUse), formatSS(r.NextDispatchR), strconv.Itoa(r.InitialSeatsSum), strconv.Itoa(r.MaxSeatsSum), formatSS(r.TotalWorkSum)}
	})
}

// formatLevelRows is the loop of FormatPriorityLevels and FormatQueues, the
// reverse of parseLevelRows: header, then the rows' extra columns in
// order; a placeholder row as its name and "<none>" cells, any other as
// the cells cells gives it, then its extra cells. of says of a row its
// name, its extra cells and whether it is a placeholder.
func formatLevelRows[R any](header []string, rows []R, of func(r *R) (string, map[string]string, bool), cells func(r *R) []string) []byte {
	var ms []map[string]string
	for i := range rows {
		_, extra, _ := of(&rows[i])
		ms = append(ms, extra)
	}
	extra := extraKeys(ms...)
	header = append(header, extra...)
	out := make([][]string, 0, len(rows))
	for i := range rows {
		n, m, placeholder := of(&rows[i])
		if placeholder {
			out = append(out, append([]string{n}, none(len(header)-1)...))
			continue
		}
		row := cells(&rows[i])
		for _, k := range extra {
			row = append(row, m[k])
		}
		out = append(out, row)
	}
	return writeTable(header, out)
}

// FormatRequests renders rows as a dump_requests body; the eight detail
// columns are included when any row has details.
func FormatRequests(rows []RequestRow) []byte {
	header := []string{"PriorityLevelName", "FlowSchemaName", "QueueIndex", "RequestIndexInQueue", "FlowDistingsher", "ArriveTime"}
	details, seats, start := false, len(rows) == 0, len(rows) == 0
	var ms []map[string]string
	for _, r := range rows {
		details = details || r.HasDetails
		start = start || !r.WaitingOnly
		seats = seats || r.HasSeats || r.InitialSeats != 0 || r.FinalSeats != 0 || r.AdditionalLatency != 0
		ms = append(ms, r.Extra)
	}
	// The 1.20 layout has no seat columns: keep it so (rows built in Go
	// without HasSeats but with seats get the columns).
	// The 1.26 and 1.27 layouts have the seat columns but no StartTime
	// (they list waiting requests only).
	start = start && seats
	if seats {
		header = append(header, "InitialSeats", "FinalSeats", "AdditionalLatency")
	}
	if start {
		header = append(header, "StartTime")
	}
	if details {
		header = append(header, "UserName", "Verb", "APIPath", "Namespace", "Name", "APIVersion", "Resource", "SubResource")
	}
	extra := extraKeys(ms...)
	header = append(header, extra...)
	out := make([][]string, 0, len(rows))
	for _, r := range rows {
		cells := []string{r.PriorityLevel, r.FlowSchema, strconv.Itoa(r.QueueIndex), strconv.Itoa(r.IndexInQueue), r.FlowDistinguisher,
			r.ArriveTime.UTC().Format(time.RFC3339Nano)}
		if seats {
			cells = append(cells, strconv.Itoa(r.InitialSeats), strconv.Itoa(r.FinalSeats), r.AdditionalLatency.String())
		}
		if start {
			cells = append(cells, r.StartTime.UTC().Format(time.RFC3339Nano))
		}
		if details {
			cells = append(cells, r.UserName, r.Verb, r.APIPath, r.Namespace, r.Name, r.APIVersion, r.Resource, r.SubResource)
		}
		for _, k := range extra {
			cells = append(cells, r.Extra[k])
		}
		out = append(out, cells)
	}
	return writeTable(header, out)
}
