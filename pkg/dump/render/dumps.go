package render

import (
	"encoding/json"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
)

// AllInstances labels the merged rows of a multi-instance view.
const AllInstances = "(all)"

// LevelRow is one printed row of "kubectl apf dump levels".
type LevelRow struct {
	Instance string `json:"instance"`
	dump.PriorityLevelRow
	Type string `json:"type,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// MarshalJSON prints as null what the table prints as "-": the four
// counters a layout before 1.27 lacks, and every figure of a pre-1.28
// "<none>" row (the exempt level, which had no queues); a 0 there would
// read as a level that dispatched or rejected nothing.
func (r LevelRow) MarshalJSON() ([]byte, error) {
	out := struct {
		Instance           string            `json:"instance"`
		Name               string            `json:"name"`
		Placeholder        bool              `json:"placeholder,omitempty"`
		ActiveQueues       *int              `json:"activeQueues"`
		IsIdle             *bool             `json:"isIdle"`
		IsQuiescing        bool              `json:"isQuiescing"`
		WaitingRequests    *int              `json:"waitingRequests"`
		ExecutingRequests  *int              `json:"executingRequests"`
		HasCounters        bool              `json:"hasCounters"`
		DispatchedRequests *int              `json:"dispatchedRequests"`
		RejectedRequests   *int              `json:"rejectedRequests"`
		TimedoutRequests   *int              `json:"timedoutRequests"`
		CancelledRequests  *int              `json:"cancelledRequests"`
		Extra              map[string]string `json:"extra,omitempty"`
		Type               string            `json:"type,omitempty"`
		UID                string            `json:"uid,omitempty"`
	}{Instance: r.Instance, Name: r.Name, Placeholder: r.Placeholder, IsQuiescing: r.IsQuiescing, HasCounters: r.HasCounters, Extra: r.Extra, Type: r.Type, UID: r.UID}
	if !r.Placeholder {
		out.ActiveQueues, out.IsIdle, out.WaitingRequests, out.ExecutingRequests = &r.ActiveQueues, &r.IsIdle, &r.WaitingRequests, &r.ExecutingRequests
		if r.HasCounters {
			out.DispatchedRequests, out.RejectedRequests, out.TimedoutRequests, out.CancelledRequests = &r.DispatchedRequests, &r.RejectedRequests, &r.TimedoutRequests, &r.CancelledRequests
		}
	}
	return json.Marshal(out)
}

// LevelRows flattens the level dumps of the snapshots, with the level's
// type and UID from the configuration objects and, for several instances,
// merged rows summing every instance.
func LevelRows(snaps []*dump.Snapshot, level string) []LevelRow {
	var out []LevelRow
	merged := map[string]*LevelRow{}
	var order []string
	for _, s := range snaps {
		types, uids := map[string]string{}, map[string]string{}
		for _, pl := range s.PriorityLevels {
			types[pl.Name], uids[pl.Name] = string(pl.Spec.Type), string(pl.UID)
		}
		for _, r := range s.PriorityLevelDump {
			if level != "" && r.Name != level {
				continue
			}
			out = append(out, LevelRow{Instance: s.Instance, PriorityLevelRow: r, Type: types[r.Name], UID: uids[r.Name]})
			m := merged[r.Name]
			if m == nil {
				m = &LevelRow{Instance: AllInstances, PriorityLevelRow: dump.PriorityLevelRow{Name: r.Name, IsIdle: true, HasCounters: true, Placeholder: true},
					Type: types[r.Name], UID: uids[r.Name]}
				merged[r.Name] = m
				order = append(order, r.Name)
			}
			m.Placeholder = m.Placeholder && r.Placeholder
			m.HasCounters = m.HasCounters && r.HasCounters
			m.ActiveQueues += r.ActiveQueues
			m.IsIdle = m.IsIdle && (r.IsIdle || r.Placeholder)
			m.IsQuiescing = m.IsQuiescing || r.IsQuiescing
			m.WaitingRequests += r.WaitingRequests
			m.ExecutingRequests += r.ExecutingRequests
			m.DispatchedRequests += r.DispatchedRequests
			m.RejectedRequests += r.RejectedRequests
			m.TimedoutRequests += r.TimedoutRequests
			m.CancelledRequests += r.CancelledRequests
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Instance < out[j].Instance
	})
	if len(snaps) > 1 {
		sort.Strings(order)
		for _, n := range order {
			out = append(out, *merged[n])
		}
	}
	return out
}

func boolStr(b bool) string { return strconv.FormatBool(b) }

// PrintLevels prints "kubectl apf dump levels".
func PrintLevels(w io.Writer, f *output.Flags, snaps []*dump.Snapshot, level string) error {
	rows := LevelRows(snaps, level)
	return Print(w, f, rows, func(wide bool) *Table { return levelsTable(rows, len(snaps) > 1, wide) })
}

// levelsTable is the table of PrintLevels.
func levelsTable(rows []LevelRow, multi, wide bool) *table {
	t := newTable(multi, "NAME", "TYPE", "ACTIVE-QUEUES", "IDLE", "WAITING", "EXECUTING", "DISPATCHED", "REJECTED", "TIMEDOUT", "CANCELLED")
	if wide {
		t.header = append(t.header, "QUIESCING", "UID")
	}
	for _, r := range rows {
		var cells []string
		if multi {
			cells = append(cells, r.Instance)
		}
		counter := func(v int) string {
			if !r.HasCounters || r.Placeholder {
				return "-"
			}
			return strconv.Itoa(v)
		}
		typ := r.Type
		if typ == "" {
			typ = "-"
		}
		if r.Placeholder {
			cells = append(cells, r.Name, typ, "-", "-", "-", "-", "-", "-", "-", "-")
		} else {
			cells = append(cells, r.Name, typ, strconv.Itoa(r.ActiveQueues), boolStr(r.IsIdle), strconv.Itoa(r.WaitingRequests), strconv.Itoa(r.ExecutingRequests),
				counter(r.DispatchedRequests), counter(r.RejectedRequests), counter(r.TimedoutRequests), counter(r.CancelledRequests))
		}
		if wide {
			uid := r.UID
			if uid == "" {
				uid = "-"
			}
			cells = append(cells, boolStr(r.IsQuiescing), uid)
		}
		t.add(cells...)
	}
	return t
}

// QueueRow is one printed row of "kubectl apf dump queues".
type QueueRow struct {
	Instance string `json:"instance"`
	dump.QueueRow
}

// MarshalJSON prints the seat columns a layout lacks (SeatsInUse and the
// three sums of the 1.20 dump_queues) as null, as the table prints them as
// "-" and every absent figure of the other -o json outputs is null: a 0
// there would read as an idle queue.
func (q QueueRow) MarshalJSON() ([]byte, error) {
	out := struct {
		Instance          string            `json:"instance"`
		PriorityLevel     string            `json:"priorityLevel"`
		Placeholder       bool              `json:"placeholder,omitempty"`
		Index             int               `json:"index"`
		PendingRequests   int               `json:"pendingRequests"`
		ExecutingRequests int               `json:"executingRequests"`
		SeatsInUse        *int              `json:"seatsInUse"`
		NextDispatchR     float64           `json:"nextDispatchR"`
		InitialSeatsSum   *int              `json:"initialSeatsSum"`
		MaxSeatsSum       *int              `json:"maxSeatsSum"`
		TotalWorkSum      *jsonFloat        `json:"totalWorkSum"`
		HasSeats          bool              `json:"hasSeats"`
		Extra             map[string]string `json:"extra,omitempty"`
	}{Instance: q.Instance, PriorityLevel: q.PriorityLevel, Placeholder: q.Placeholder, Index: q.Index, PendingRequests: q.PendingRequests,
		ExecutingRequests: q.ExecutingRequests, NextDispatchR: q.NextDispatchR, HasSeats: q.HasSeats, Extra: q.Extra}
	if q.HasSeats {
		work := jsonFloat(q.TotalWorkSum)
		out.SeatsInUse, out.InitialSeatsSum, out.MaxSeatsSum, out.TotalWorkSum = &q.SeatsInUse, &q.InitialSeatsSum, &q.MaxSeatsSum, &work
	}
	return json.Marshal(out)
}

// QueueRows flattens the queue dumps, sorted by level and index; all=false
// keeps only queues with waiting or executing requests.
func QueueRows(snaps []*dump.Snapshot, level string, all bool) []QueueRow {
	var out []QueueRow
	for _, s := range snaps {
		for _, q := range s.QueueDump {
			if q.Placeholder || (level != "" && q.PriorityLevel != level) {
				continue
			}
			if !all && q.PendingRequests == 0 && q.ExecutingRequests == 0 {
				continue
			}
			out = append(out, QueueRow{Instance: s.Instance, QueueRow: q})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.PriorityLevel != b.PriorityLevel {
			return a.PriorityLevel < b.PriorityLevel
		}
		if a.Instance != b.Instance {
			return a.Instance < b.Instance
		}
		return a.Index < b.Index
	})
	return out
}

// HiddenQueues counts the queues QueueRows leaves out without all: those
// with no waiting and no executing request.
func HiddenQueues(snaps []*dump.Snapshot, level string) int {
	return len(QueueRows(snaps, level, true)) - len(QueueRows(snaps, level, false))
}

// PrintQueues prints "kubectl apf dump queues".
func PrintQueues(w io.Writer, f *output.Flags, snaps []*dump.Snapshot, level string, all bool) error {
	rows := QueueRows(snaps, level, all)
	return Print(w, f, rows, func(wide bool) *Table { return queuesTable(rows, len(snaps) > 1, wide) })
}

// queuesTable is the table of PrintQueues.
func queuesTable(rows []QueueRow, multi, wide bool) *table {
	t := newTable(multi, "LEVEL", "QUEUE", "WAITING", "EXECUTING", "SEATS-IN-USE", "WAITING-SEATS")
	if wide {
		t.header = append(t.header, "MAX-SEATS-SUM", "NEXT-DISPATCH-R", "TOTAL-WORK")
	}
	for _, q := range rows {
		var cells []string
		if multi {
			cells = append(cells, q.Instance)
		}
		seats := func(v int) string {
			if !q.HasSeats {
				return "-"
			}
			return strconv.Itoa(v)
		}
		cells = append(cells, q.PriorityLevel, strconv.Itoa(q.Index), strconv.Itoa(q.PendingRequests), strconv.Itoa(q.ExecutingRequests),
			seats(q.SeatsInUse), seats(q.InitialSeatsSum))
		if wide {
			// The 1.20 layout has VirtualStart for NextDispatchR, but no
			// TotalWorkSum.
			work := "-"
			if q.HasSeats {
				work = strconv.FormatFloat(q.TotalWorkSum, 'f', 6, 64) + "ss"
			}
			cells = append(cells, seats(q.MaxSeatsSum), strconv.FormatFloat(q.NextDispatchR, 'f', 6, 64)+"ss", work)
		}
		t.add(cells...)
	}
	return t
}

// RequestRow is one printed row of "kubectl apf dump requests".
type RequestRow struct {
	Instance string `json:"instance"`
	dump.RequestRow
	State string `json:"state"`
	// Age is how long the request had been waiting or executing when the
	// dump was taken (capture time minus arrival).
	Age time.Duration `json:"age"`
	// ageKnown is false when the capture time is unknown (a raw dump
	// read from standard input without request times).
	ageKnown bool
}

// MarshalJSON prints as null the seat figures a layout lacks (InitialSeats,
// FinalSeats and AdditionalLatency of the dumps before their columns), as
// the other rows print an absent figure: a 0 there would read as a request
// that takes no seat. The table's SEATS shows 1 for such a request
// (dump.RequestRow.Seats), which is an assumption (SeatsAssumed).
func (r RequestRow) MarshalJSON() ([]byte, error) {
	out := struct {
		Instance          string            `json:"instance"`
		PriorityLevel     string            `json:"priorityLevel"`
		FlowSchema        string            `json:"flowSchema"`
		QueueIndex        int               `json:"queueIndex"`
		IndexInQueue      int               `json:"indexInQueue"`
		FlowDistinguisher string            `json:"flowDistinguisher"`
		ArriveTime        time.Time         `json:"arriveTime"`
		InitialSeats      *int              `json:"initialSeats"`
		FinalSeats        *int              `json:"finalSeats"`
		AdditionalLatency *time.Duration    `json:"additionalLatency"`
		StartTime         time.Time         `json:"startTime"`
		HasSeats          bool              `json:"hasSeats"`
		HasDetails        bool              `json:"hasDetails"`
		UserName          string            `json:"userName,omitempty"`
		Verb              string            `json:"verb,omitempty"`
		APIPath           string            `json:"apiPath,omitempty"`
		Namespace         string            `json:"namespace,omitempty"`
		Name              string            `json:"name,omitempty"`
		APIVersion        string            `json:"apiVersion,omitempty"`
		Resource          string            `json:"resource,omitempty"`
		SubResource       string            `json:"subResource,omitempty"`
		Extra             map[string]string `json:"extra,omitempty"`
		State             string            `json:"state"`
		Age               time.Duration     `json:"age"`
	}{Instance: r.Instance, PriorityLevel: r.PriorityLevel, FlowSchema: r.FlowSchema, QueueIndex: r.QueueIndex, IndexInQueue: r.IndexInQueue,
		FlowDistinguisher: r.FlowDistinguisher, ArriveTime: r.ArriveTime, StartTime: r.StartTime, HasSeats: r.HasSeats, HasDetails: r.HasDetails,
		UserName: r.UserName, Verb: r.Verb, APIPath: r.APIPath, Namespace: r.Namespace, Name: r.Name, APIVersion: r.APIVersion, Resource: r.Resource,
		SubResource: r.SubResource, Extra: r.Extra, State: r.State, Age: r.Age}
	if r.HasSeats {
		out.InitialSeats, out.FinalSeats, out.AdditionalLatency = &r.InitialSeats, &r.FinalSeats, &r.AdditionalLatency
	}
	return json.Marshal(out)
}

// SeatsAssumed counts the requests of the rows whose dump has no seat
// columns (the layouts before InitialSeats): the SEATS the table shows
// for them, 1 each, is assumed, not read.
func SeatsAssumed(rows []RequestRow) int {
	n := 0
	for _, r := range rows {
		if !r.HasSeats {
			n++
		}
	}
	return n
}

// RequestRows flattens the request dumps: waiting requests first (by
// level, queue and position), then executing ones.
func RequestRows(snaps []*dump.Snapshot, level string) []RequestRow {
	var out []RequestRow
	for _, s := range snaps {
		for _, r := range s.RequestDump {
			if level != "" && r.PriorityLevel != level {
				continue
			}
			state := "waiting"
			if r.Executing() {
				state = "executing"
			}
			age := s.CapturedAt.Sub(r.ArriveTime)
			if age < 0 || s.CapturedAt.IsZero() {
				age = 0
			}
			out = append(out, RequestRow{Instance: s.Instance, RequestRow: r, State: state, Age: age, ageKnown: !s.CapturedAt.IsZero()})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.State != b.State {
			return a.State == "waiting"
		}
		if a.PriorityLevel != b.PriorityLevel {
			return a.PriorityLevel < b.PriorityLevel
		}
		if a.Instance != b.Instance {
			return a.Instance < b.Instance
		}
		if a.QueueIndex != b.QueueIndex {
			return a.QueueIndex < b.QueueIndex
		}
		if a.IndexInQueue != b.IndexInQueue {
			return a.IndexInQueue < b.IndexInQueue
		}
		return a.ArriveTime.Before(b.ArriveTime)
	})
	return out
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// PrintRequests prints "kubectl apf dump requests".
func PrintRequests(w io.Writer, f *output.Flags, snaps []*dump.Snapshot, level string) error {
	rows := RequestRows(snaps, level)
	return Print(w, f, rows, func(wide bool) *Table { return requestsTable(rows, len(snaps) > 1, wide) })
}

// requestsTable is the table of PrintRequests.
func requestsTable(rows []RequestRow, multi, wide bool) *table {
	t := newTable(multi, "LEVEL", "FLOWSCHEMA", "STATE", "QUEUE", "POSITION", "FLOW", "SEATS", "AGE", "USER", "VERB", "PATH")
	if wide {
		t.header = append(t.header, "NAMESPACE", "RESOURCE", "NAME", "API-VERSION", "FINAL-SEATS", "ADDITIONAL-LATENCY", "ARRIVED")
	}
	for _, r := range rows {
		var cells []string
		if multi {
			cells = append(cells, r.Instance)
		}
		q, pos := strconv.Itoa(r.QueueIndex), strconv.Itoa(r.IndexInQueue)
		if r.QueueIndex < 0 {
			q = "-"
		}
		if r.IndexInQueue < 0 {
			pos = "-"
		}
		age := "-"
		if r.ageKnown {
			age = r.Age.Round(time.Millisecond).String()
		}
		cells = append(cells, r.PriorityLevel, r.FlowSchema, r.State, q, pos, dash(r.FlowDistinguisher), strconv.Itoa(r.Seats()),
			age, dash(r.UserName), dash(r.Verb), dash(r.APIPath))
		if wide {
			res := r.Resource
			if r.SubResource != "" {
				res += "/" + r.SubResource
			}
			final, latency := "-", "-"
			if r.HasSeats {
				final, latency = strconv.Itoa(r.FinalSeats), r.AdditionalLatency.String()
			}
			cells = append(cells, dash(r.Namespace), dash(res), dash(r.Name), dash(r.APIVersion), final,
				latency, r.ArriveTime.UTC().Format(time.RFC3339Nano))
		}
		t.add(cells...)
	}
	return t
}
