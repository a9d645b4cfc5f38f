package dump

import (
	"bytes"
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
	// CutAfter is the last column of a row that stops before the header's
	// last request-detail column (a paste cut to fit a page): the columns
	// after it are not in the input, and read as "". Empty for a whole row.
	CutAfter string `json:"-"`
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
// not parse is an error quoting the offending line. The rows' strings
// share body's memory: body must not change after (as every parser of this
// package's).
func ParsePriorityLevels(body []byte) ([]PriorityLevelRow, error) {
	var hasCounters bool
	var active, idle, quiescing, waiting, executing, dispatched, rejected, timedout, cancelled column
	return parseLevelRows("dump_priority_levels", body, plColumns, func(t *table) error {
		if err := t.require("PriorityLevelName", "ActiveQueues", "IsIdle", "IsQuiescing", "WaitingRequests", "ExecutingRequests"); err != nil {
			return err
		}
		_, hasCounters = t.index["DispatchedRequests"]
		active, idle, quiescing = t.col("ActiveQueues"), t.col("IsIdle"), t.col("IsQuiescing")
		waiting, executing = t.col("WaitingRequests"), t.col("ExecutingRequests")
		dispatched, rejected, timedout, cancelled = t.col("DispatchedRequests"), t.col("RejectedRequests"), t.col("TimedoutRequests"), t.col("CancelledRequests")
		return nil
	}, func(name string, extra map[string]string, none bool) PriorityLevelRow {
		return PriorityLevelRow{Name: name, HasCounters: hasCounters, Extra: extra, Placeholder: none}
	}, func(c *cellReader, row *PriorityLevelRow) {
		row.ActiveQueues = c.int(active)
		row.IsIdle = c.bool(idle)
		row.IsQuiescing = c.bool(quiescing)
		row.WaitingRequests = c.int(waiting)
		row.ExecutingRequests = c.int(executing)
		row.DispatchedRequests = c.int(dispatched)
		row.RejectedRequests = c.int(rejected)
		row.TimedoutRequests = c.int(timedout)
		row.CancelledRequests = c.int(cancelled)
	})
}

// parseLevelRows is the loop of the tables with a row per level or per
// queue of one (dump_priority_levels, dump_queues): the header checked and
// its columns looked up by onHeader, each row named by its
// PriorityLevelName (never empty) and built by newRow with the cells of
// the columns it does not know, a placeholder row kept as such (none, its
// cells unread), any other filled by fill, the first bad cell an error.
func parseLevelRows[R any](endpoint string, body []byte, known map[string]bool, onHeader func(t *table) error,
	newRow func(name string, extra map[string]string, none bool) R, fill func(c *cellReader, row *R)) ([]R, error) {
	var out []R
	var unknown []int
	var name column
	// c reads every row, its row filled in place in out: neither escapes
	// to the heap per row through fill
	var c cellReader
	err := scanTable(endpoint, body, "PriorityLevelName", nil, func(t *table) error {
		if err := onHeader(t); err != nil {
			return err
		}
		unknown = t.unknownColumns(known)
		name = t.col("PriorityLevelName")
		out = make([]R, 0, bytes.Count(body, []byte{'\n'}))
		return nil
	}, func(t *table, r tableRow) error {
		c = cellReader{t: t, r: r}
		n := c.str(name)
		if n == "" {
			return fmt.Errorf("%s line %d: empty PriorityLevelName: %s", endpoint, r.lineNo, quoteLine(r.line))
		}
		if placeholder(r.cells) {
			out = append(out, newRow(n, nil, true))
			return nil
		}
		out = append(out, newRow(n, t.extra(r, unknown), false))
		fill(&c, &out[len(out)-1])
		return c.err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

var queueColumns = knownSet("PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests", "SeatsInUse",
	"NextDispatchR", "VirtualStart", "InitialSeatsSum", "MaxSeatsSum", "TotalWorkSum")

// ParseQueues parses a dump_queues body of any layout from 1.20 on. Its
// rows' strings share body's memory: body must not change after.
func ParseQueues(body []byte) ([]QueueRow, error) {
	var hasSeats bool
	var index, pending, executing, seats, next, initial, maxSeats, work column
	return parseLevelRows("dump_queues", body, queueColumns, func(t *table) error {
		if err := t.require("PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests"); err != nil {
			return err
		}
		_, hasSeats = t.index["SeatsInUse"]
		index, pending, executing, seats = t.col("Index"), t.col("PendingRequests"), t.col("ExecutingRequests"), t.col("SeatsInUse")
		if next = t.col("NextDispatchR"); next.i < 0 {
			next = t.col("VirtualStart")
		}
		initial, maxSeats, work = t.col("InitialSeatsSum"), t.col("MaxSeatsSum"), t.col("TotalWorkSum")
		return nil
	}, func(name string, extra map[string]string, none bool) QueueRow {
		return QueueRow{PriorityLevel: name, HasSeats: hasSeats, Extra: extra, Placeholder: none}
	}, func(c *cellReader, row *QueueRow) {
		row.Index = c.int(index)
		row.PendingRequests = c.int(pending)
		row.ExecutingRequests = c.int(executing)
		row.SeatsInUse = c.int(seats)
		row.NextDispatchR = c.seatSeconds(next)
		row.InitialSeatsSum = c.int(initial)
		row.MaxSeatsSum = c.int(maxSeats)
		row.TotalWorkSum = c.seatSeconds(work)
	})
}

var requestColumns = knownSet("PriorityLevelName", "FlowSchemaName", "QueueIndex", "RequestIndexInQueue",
	"FlowDistingsher", "ArriveTime", "InitialSeats", "FinalSeats", "AdditionalLatency", "StartTime",
	"UserName", "Verb", "APIPath", "Namespace", "Name", "APIVersion", "Resource", "SubResource")

// requestDetails are the columns of includeRequestDetails: a row may stop
// before them (the documentation's example rows stop after APIPath), and
// the columns it lacks read as absent (RequestRow.CutAfter).
var requestDetails = knownSet("UserName", "Verb", "APIPath", "Namespace", "Name", "APIVersion", "Resource", "SubResource")

// setString stores v in *dst unless it is empty, for a field that is
// still zero: an empty cell costs no write.
func setString(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

// ParseRequests parses a dump_requests body of any layout from 1.20 on, with
// or without includeRequestDetails. Its rows' strings share body's memory:
// body must not change after. A large body's rows are read in two parts at
// once (parallelRows).
func ParseRequests(body []byte) ([]RequestRow, error) {
	var hasDetails, hasSeats, hasStart bool
	var unknown []int
	var level, schema, queue, index, dist, arrive, initial, final, latency, start column
	var user, verb, path, namespace, name, version, resource, subresource column
	onHeader := func(t *table) error {
		// "FlowDistingsher" is upstream's spelling.
		if err := t.require("PriorityLevelName", "FlowSchemaName", "QueueIndex", "RequestIndexInQueue", "FlowDistingsher", "ArriveTime"); err != nil {
			return err
		}
		_, hasDetails = t.index["UserName"]
		_, hasSeats = t.index["InitialSeats"]
		_, hasStart = t.index["StartTime"]
		unknown = t.unknownColumns(requestColumns)
		level, schema, queue, index = t.col("PriorityLevelName"), t.col("FlowSchemaName"), t.col("QueueIndex"), t.col("RequestIndexInQueue")
		dist, arrive, initial, final = t.col("FlowDistingsher"), t.col("ArriveTime"), t.col("InitialSeats"), t.col("FinalSeats")
		latency, start = t.col("AdditionalLatency"), t.col("StartTime")
		user, verb, path, namespace = t.col("UserName"), t.col("Verb"), t.col("APIPath"), t.col("Namespace")
		name, version, resource, subresource = t.col("Name"), t.col("APIVersion"), t.col("Resource"), t.col("SubResource")
		return nil
	}
	// all holds the rows of every part, each part in a window of its
	// lines; rows[i] are those part i read.
	var all []RequestRow
	var rows [][]RequestRow
	onRowOf := func(i int) func(t *table, r tableRow) error {
		// prev is the row before, whose level and FlowSchema the next row
		// most likely shares (a dump lists a level's requests together).
		prev := &RequestRow{}
		days := &dayCache{}
		return func(t *table, r tableRow) error {
			// Before 1.20 every exempt level had a row of "<none>" cells here
			// too: a phantom, not a request (kubernetes/kubernetes#93376).
			if placeholder(r.cells) {
				return nil
			}
			c := &cellReader{t: t, r: r, days: days}
			// The row is written in place, in the slot make zeroed: a field
			// left zero is not written (most detail cells are empty), and no
			// row is built aside and copied in.
			out := rows[i]
			if len(out) < cap(out) {
				out = out[:len(out)+1]
			} else {
				out = append(out, RequestRow{})
			}
			rows[i] = out
			row := &out[len(out)-1]
			row.PriorityLevel = c.same(level, prev.PriorityLevel)
			row.FlowSchema = c.same(schema, prev.FlowSchema)
			row.QueueIndex = c.int(queue)
			row.IndexInQueue = c.int(index)
			setString(&row.FlowDistinguisher, c.str(dist))
			row.ArriveTime = c.time(arrive)
			row.InitialSeats = c.int(initial)
			row.FinalSeats = c.int(final)
			row.AdditionalLatency = c.duration(latency)
			// A zero StartTime renders as 0001-01-01T00:00:00Z: keep it zero.
			if st := c.time(start); !st.IsZero() {
				row.StartTime = st
			}
			row.HasSeats, row.HasDetails, row.WaitingOnly = hasSeats, hasDetails, !hasStart
			setString(&row.UserName, c.str(user))
			setString(&row.Verb, c.str(verb))
			setString(&row.APIPath, c.str(path))
			setString(&row.Namespace, c.str(namespace))
			setString(&row.Name, c.str(name))
			setString(&row.APIVersion, c.str(version))
			setString(&row.Resource, c.str(resource))
			setString(&row.SubResource, c.str(subresource))
			if len(unknown) > 0 {
				row.Extra = t.extra(r, unknown)
			}
			prev = row
			if len(r.cells) < len(t.header) {
				row.CutAfter = t.header[len(r.cells)-1]
			}
			if c.err != nil {
				return c.err
			}
			if row.PriorityLevel == "" {
				return fmt.Errorf("dump_requests line %d: empty PriorityLevelName: %s", r.lineNo, quoteLine(r.line))
			}
			return nil
		}
	}
	err := scanTableParts("dump_requests", body, "PriorityLevelName", requestDetails, onHeader, parallelRows,
		func(lines []int) []func(*table, tableRow) error {
			total := 0
			for _, n := range lines {
				total += n
			}
			all = make([]RequestRow, 0, total)
			var fns []func(*table, tableRow) error
			at := 0
			for i, n := range lines {
				rows = append(rows, all[at:at:at+n])
				fns = append(fns, onRowOf(i))
				at += n
			}
			return fns
		})
	if err != nil {
		return nil, err
	}
	return joinParts(all, rows), nil
}

// parallelRows is the size of the rows of a request dump from which
// ParseRequests reads them in two parts at once (about 1,500 requests); a
// variable for BenchmarkParseRequests, which compares with one pass.
var parallelRows = 512 << 10

// joinParts returns the rows of parts, in order, in all's array when each
// part kept to its window of all (the rows of part i start where those of
// part i-1 may end), closing the gaps that skipped lines left.
func joinParts(all []RequestRow, parts [][]RequestRow) []RequestRow {
	if len(parts) == 1 {
		return parts[0]
	}
	all = all[:cap(all)]
	n, at := 0, 0
	for _, p := range parts {
		if cap(p) == 0 {
			continue
		}
		if &p[:1][0] != &all[at : at+1][0] {
			// a part outgrew its window (it cannot: a row is a line)
			var out []RequestRow
			for _, p := range parts {
				out = append(out, p...)
			}
			return out
		}
		at += cap(p)
	}
	at = 0
	for _, p := range parts {
		if at != n {
			copy(all[n:], p)
		}
		n += len(p)
		at += cap(p)
	}
	clear(all[n:at])
	return all[:n]
}
