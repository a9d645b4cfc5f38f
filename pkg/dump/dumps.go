package dump

import (
	"fmt"
	"time"
)

// Endpoint paths of the three debug dumps
// (k8s.io/apiserver pkg/util/flowcontrol/apf_controller_debug.go: Install).
const (
	PathPriorityLevels = "/debug/api_priority_and_fairness/dump_priority_levels"
	PathQueues         = "/debug/api_priority_and_fairness/dump_queues"
	PathRequests       = "/debug/api_priority_and_fairness/dump_requests"
)

// PriorityLevelRow is one row of dump_priority_levels.
//
// Layouts: 6 columns up to 1.26 (map order), 10 columns since 1.27 (sorted,
// with the four cumulative counters). Before 1.28 the exempt level is a row
// of "<none>" cells, parsed as Placeholder.
type PriorityLevelRow struct {
	Name string `json:"name"`
	// Placeholder is true for a pre-1.28 "<none>" row (a level with no
	// QueueSet: exempt); every other field is then zero, but for HasCounters,
	// which describes the layout.
	Placeholder  bool `json:"placeholder,omitempty"`
	ActiveQueues int  `json:"activeQueues"`
	IsIdle       bool `json:"isIdle"`
	IsQuiescing  bool `json:"isQuiescing"`
	// WaitingRequests and ExecutingRequests count requests, not seats.
	WaitingRequests   int `json:"waitingRequests"`
	ExecutingRequests int `json:"executingRequests"`
	// HasCounters is false for layouts older than 1.27, which lack the four
	// cumulative counters below.
	HasCounters        bool `json:"hasCounters"`
	DispatchedRequests int  `json:"dispatchedRequests"`
	RejectedRequests   int  `json:"rejectedRequests"`
	TimedoutRequests   int  `json:"timedoutRequests"`
	CancelledRequests  int  `json:"cancelledRequests"`
	// Extra holds columns this version of kubectl-apf does not know.
	Extra map[string]string `json:"extra,omitempty"`
}

// QueueRow is one row of dump_queues: one queue of one priority level.
//
// Layouts: 5 columns in 1.20 (VirtualStart in virtual seconds), 9 columns
// since 1.26 (seats and SeatSeconds sums). Reject levels have no rows in any
// version; the exempt level has none since 1.28, and a "<none>" row before
// (it had no QueueSet; seen on real 1.26.15 and 1.27.4 servers).
type QueueRow struct {
	PriorityLevel     string `json:"priorityLevel"`
	Placeholder       bool   `json:"placeholder,omitempty"`
	Index             int    `json:"index"`
	PendingRequests   int    `json:"pendingRequests"`
	ExecutingRequests int    `json:"executingRequests"`
	SeatsInUse        int    `json:"seatsInUse"`
	// NextDispatchR is the queue's next dispatch virtual time in
	// seat-seconds (VirtualStart in 1.20 dumps).
	NextDispatchR float64 `json:"nextDispatchR"`
	// The three sums cover the waiting requests only.
	InitialSeatsSum int               `json:"initialSeatsSum"`
	MaxSeatsSum     int               `json:"maxSeatsSum"`
	TotalWorkSum    float64           `json:"totalWorkSum"`
	HasSeats        bool              `json:"hasSeats"`
	Extra           map[string]string `json:"extra,omitempty"`
}

// RequestRow is one row of dump_requests.
//
// Layouts: 6 (+8 detail) columns in 1.20, 9 (+8) in 1.26-1.27, 10 (+8) since
// 1.28, when executing requests joined the waiting ones: RequestIndexInQueue
// is -1 for an executing request and QueueIndex is -1 for a queueless one.
type RequestRow struct {
	PriorityLevel     string        `json:"priorityLevel"`
	FlowSchema        string        `json:"flowSchema"`
	QueueIndex        int           `json:"queueIndex"`
	IndexInQueue      int           `json:"indexInQueue"`
	FlowDistinguisher string        `json:"flowDistinguisher"`
	ArriveTime        time.Time     `json:"arriveTime"`
	InitialSeats      int           `json:"initialSeats"`
	FinalSeats        int           `json:"finalSeats"`
	AdditionalLatency time.Duration `json:"additionalLatency"`
	// StartTime is zero for a waiting request (and in layouts before 1.28).
	StartTime time.Time `json:"startTime"`
	// HasSeats is false in the 1.20 layout, which lacks InitialSeats,
	// FinalSeats and AdditionalLatency (every request took one seat).
	HasSeats bool `json:"hasSeats"`
	// HasDetails is true when the dump was taken with includeRequestDetails.
	HasDetails  bool              `json:"hasDetails"`
	UserName    string            `json:"userName,omitempty"`
	Verb        string            `json:"verb,omitempty"`
	APIPath     string            `json:"apiPath,omitempty"`
	Namespace   string            `json:"namespace,omitempty"`
	Name        string            `json:"name,omitempty"`
	APIVersion  string            `json:"apiVersion,omitempty"`
	Resource    string            `json:"resource,omitempty"`
	SubResource string            `json:"subResource,omitempty"`
	Extra       map[string]string `json:"extra,omitempty"`

	// WaitingOnly is true when the dump's layout lists the waiting requests
	// only: before 1.28 (the layout without StartTime) executing requests
	// were not listed, so how many executed is not in the dump.
	WaitingOnly bool `json:"-"`
}

// Executing reports whether the request was executing (not waiting) when
// the dump was taken.
func (r RequestRow) Executing() bool { return r.IndexInQueue < 0 }

// Seats is the number of seats the request occupies or asks for.
func (r RequestRow) Seats() int {
	if r.InitialSeats == 0 {
		// 1.20 dumps have no seat columns: every request took one seat.
		return 1
	}
	return r.InitialSeats
}

var plColumns = knownSet("PriorityLevelName", "ActiveQueues", "IsIdle", "IsQuiescing", "WaitingRequests",
	"ExecutingRequests", "DispatchedRequests", "RejectedRequests", "TimedoutRequests", "CancelledRequests")

// ParsePriorityLevels parses a dump_priority_levels body of any layout from
// 1.20 on. Unknown extra columns are kept in Extra; anything else that does
// not parse is an error quoting the offending line.
func ParsePriorityLevels(body []byte) ([]PriorityLevelRow, error) {
	t, err := parseTable("dump_priority_levels", body, "PriorityLevelName")
	if err != nil {
		return nil, err
	}
	if err := t.require("PriorityLevelName", "ActiveQueues", "IsIdle", "IsQuiescing", "WaitingRequests", "ExecutingRequests"); err != nil {
		return nil, err
	}
	_, hasCounters := t.index["DispatchedRequests"]
	unknown := t.unknownColumns(plColumns)
	out := make([]PriorityLevelRow, 0, len(t.rows))
	for _, r := range t.rows {
		c := &cellReader{t: t, r: r}
		row := PriorityLevelRow{Name: c.str("PriorityLevelName"), HasCounters: hasCounters, Extra: t.extra(r, unknown)}
		if row.Name == "" {
			return nil, fmt.Errorf("dump_priority_levels line %d: empty PriorityLevelName: %s", r.lineNo, quoteLine(r.line))
		}
		if placeholder(r.cells) {
			row.Placeholder = true
			row.Extra = nil
			out = append(out, row)
			continue
		}
		row.ActiveQueues = c.int("ActiveQueues")
		row.IsIdle = c.bool("IsIdle")
		row.IsQuiescing = c.bool("IsQuiescing")
		row.WaitingRequests = c.int("WaitingRequests")
		row.ExecutingRequests = c.int("ExecutingRequests")
		row.DispatchedRequests = c.int("DispatchedRequests")
		row.RejectedRequests = c.int("RejectedRequests")
		row.TimedoutRequests = c.int("TimedoutRequests")
		row.CancelledRequests = c.int("CancelledRequests")
		if c.err != nil {
			return nil, c.err
		}
		out = append(out, row)
	}
	return out, nil
}

var queueColumns = knownSet("PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests", "SeatsInUse",
	"NextDispatchR", "VirtualStart", "InitialSeatsSum", "MaxSeatsSum", "TotalWorkSum")

// ParseQueues parses a dump_queues body of any layout from 1.20 on.
func ParseQueues(body []byte) ([]QueueRow, error) {
	t, err := parseTable("dump_queues", body, "PriorityLevelName")
	if err != nil {
		return nil, err
	}
	if err := t.require("PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests"); err != nil {
		return nil, err
	}
	_, hasSeats := t.index["SeatsInUse"]
	unknown := t.unknownColumns(queueColumns)
	out := make([]QueueRow, 0, len(t.rows))
	for _, r := range t.rows {
		c := &cellReader{t: t, r: r}
		row := QueueRow{PriorityLevel: c.str("PriorityLevelName"), HasSeats: hasSeats, Extra: t.extra(r, unknown)}
		if row.PriorityLevel == "" {
			return nil, fmt.Errorf("dump_queues line %d: empty PriorityLevelName: %s", r.lineNo, quoteLine(r.line))
		}
		if placeholder(r.cells) {
			row.Placeholder = true
			row.Extra = nil
			out = append(out, row)
			continue
		}
		row.Index = c.int("Index")
		row.PendingRequests = c.int("PendingRequests")
		row.ExecutingRequests = c.int("ExecutingRequests")
		row.SeatsInUse = c.int("SeatsInUse")
		if c.has("NextDispatchR") {
			row.NextDispatchR = c.seatSeconds("NextDispatchR")
		} else {
			row.NextDispatchR = c.seatSeconds("VirtualStart")
		}
		row.InitialSeatsSum = c.int("InitialSeatsSum")
		row.MaxSeatsSum = c.int("MaxSeatsSum")
		row.TotalWorkSum = c.seatSeconds("TotalWorkSum")
		if c.err != nil {
			return nil, c.err
		}
		out = append(out, row)
	}
	return out, nil
}

var requestColumns = knownSet("PriorityLevelName", "FlowSchemaName", "QueueIndex", "RequestIndexInQueue",
	"FlowDistingsher", "ArriveTime", "InitialSeats", "FinalSeats", "AdditionalLatency", "StartTime",
	"UserName", "Verb", "APIPath", "Namespace", "Name", "APIVersion", "Resource", "SubResource")

// ParseRequests parses a dump_requests body of any layout from 1.20 on, with
// or without includeRequestDetails.
func ParseRequests(body []byte) ([]RequestRow, error) {
	t, err := parseTable("dump_requests", body, "PriorityLevelName")
	if err != nil {
		return nil, err
	}
	// "FlowDistingsher" is upstream's spelling.
	if err := t.require("PriorityLevelName", "FlowSchemaName", "QueueIndex", "RequestIndexInQueue", "FlowDistingsher", "ArriveTime"); err != nil {
		return nil, err
	}
	_, hasDetails := t.index["UserName"]
	_, hasSeats := t.index["InitialSeats"]
	_, hasStart := t.index["StartTime"]
	unknown := t.unknownColumns(requestColumns)
	out := make([]RequestRow, 0, len(t.rows))
	for _, r := range t.rows {
		// Before 1.20 every exempt level had a row of "<none>" cells here
		// too: a phantom, not a request (kubernetes/kubernetes#93376).
		if placeholder(r.cells) {
			continue
		}
		c := &cellReader{t: t, r: r}
		row := RequestRow{
			PriorityLevel:     c.str("PriorityLevelName"),
			FlowSchema:        c.str("FlowSchemaName"),
			QueueIndex:        c.int("QueueIndex"),
			IndexInQueue:      c.int("RequestIndexInQueue"),
			FlowDistinguisher: c.str("FlowDistingsher"),
			ArriveTime:        c.time("ArriveTime"),
			InitialSeats:      c.int("InitialSeats"),
			FinalSeats:        c.int("FinalSeats"),
			AdditionalLatency: c.duration("AdditionalLatency"),
			StartTime:         c.time("StartTime"),
			HasSeats:          hasSeats,
			HasDetails:        hasDetails,
			WaitingOnly:       !hasStart,
			UserName:          c.str("UserName"),
			Verb:              c.str("Verb"),
			APIPath:           c.str("APIPath"),
			Namespace:         c.str("Namespace"),
			Name:              c.str("Name"),
			APIVersion:        c.str("APIVersion"),
			Resource:          c.str("Resource"),
			SubResource:       c.str("SubResource"),
			Extra:             t.extra(r, unknown),
		}
		if c.err != nil {
			return nil, c.err
		}
		if row.PriorityLevel == "" {
			return nil, fmt.Errorf("dump_requests line %d: empty PriorityLevelName: %s", r.lineNo, quoteLine(r.line))
		}
		// A zero StartTime renders as 0001-01-01T00:00:00Z: keep it zero.
		if row.StartTime.IsZero() {
			row.StartTime = time.Time{}
		}
		out = append(out, row)
	}
	return out, nil
}
