package tui

import (
	"sort"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
)

// Refresh is one capture as the view received it: when it finished, what it
// cost the apiserver(s), and what it returned.
type Refresh struct {
	At      time.Time
	Capture *dump.Capture
	Err     error
	// Requests is how many requests the refresh sent; -1 when not counted
	// (a bundle, a replay without counts).
	Requests int64
}

// Reason is the rejection rate of one reason of rejected_requests_total.
type Reason struct {
	Reason string
	PerSec float64
}

// LevelRow is one priority level of one instance, ready to render.
type LevelRow struct {
	Name string
	// SeatsInUse, CurrentLimit and NominalLimit come from the limit and
	// executing-seats gauges (metrics.Levels); NaN when the instance
	// exported no metrics.
	SeatsInUse   float64
	CurrentLimit float64
	NominalLimit float64
	// Borrowed is CurrentLimit - NominalLimit when positive, Lent the
	// opposite: the periodic borrowing of the config controller
	// (apf_controller.go: updateBorrowingLocked) moves seats between
	// levels, and the current limit is what admission uses.
	Borrowed, Lent float64
	// WaitingRequests, WaitingSeats and Executing (requests, not seats)
	// come from the best input present (pkg/levels: the dumps, then the
	// metrics); NaN when none gives them.
	WaitingRequests float64
	WaitingSeats    float64
	Executing       float64
	// Queues is the number of queue rows of the level in the queue dump
	// (0 for exempt and Reject levels, which have none).
	Queues       int
	HasRates     bool
	DispatchedPS float64
	// Rejected holds the rejection rates by reason, sorted by reason.
	Rejected      []Reason
	RejectedTotal float64
	// RejectedTotalCount is the level dump's cumulative RejectedRequests
	// (1.27+; -1 before).
	RejectedTotalCount int
	// WaitP99 is the 99th percentile of request_wait_duration_seconds over
	// the refresh interval, in seconds; NaN without observations.
	WaitP99 float64
	// Rejecting is true when the level rejected requests during the last
	// interval: its row stands out.
	Rejecting bool
	// Exempt is true for the exempt level: its QueueSet ignores limits and
	// its current limit only sets metric denominators (the config
	// controller gives it max(minCL, high watermark), apf_controller.go:
	// updateBorrowingLocked), so it neither lends nor borrows and has no
	// limit to fill. Validation ties the Exempt type to the name "exempt"
	// (k8s.io/kubernetes pkg/apis/flowcontrol/validation:
	// ValidatePriorityLevelConfigurationSpec).
	Exempt bool
}

// QueueCell is one queue of the selected level in the heat map.
type QueueCell struct {
	Index int
	// Waiting counts waiting requests; Work is their total work in
	// seat-seconds (TotalWorkSum, 1.26+).
	Waiting int
	Work    float64
	// ExecSeats is the seats its executing requests occupy (SeatsInUse,
	// 1.26+; executing requests before).
	ExecSeats int
}

// InstanceView is everything the view shows of one instance after a
// refresh.
type InstanceView struct {
	Instance string
	Version  string
	// Levels, sorted by name.
	Levels []LevelRow
	// Snapshot is the instance's snapshot, kept for the queue map and the
	// drill-down (computed only for the selected level).
	Snapshot *dump.Snapshot
	// Err is set for an instance that could not be read this refresh.
	Err string
}

// ComputeInstance computes the rows of one instance from its snapshot and,
// for rates when the snapshot holds a single scrape, the previous
// refresh's snapshot of the same instance (nil for the first). The figures
// are pkg/levels' rows, which "top levels" and "explain 429" show too.
func ComputeInstance(prev, cur *dump.Snapshot) InstanceView {
	iv := InstanceView{Instance: cur.Instance, Snapshot: cur}
	if cur.ServerVersion != nil {
		iv.Version = cur.ServerVersion.GitVersion
	}
	rows := levels.Compute(levels.Input{Snapshot: cur, Prev: prev})
	iv.Levels = make([]LevelRow, 0, len(rows))
	for _, l := range rows {
		r := LevelRow{Name: l.Name, SeatsInUse: l.SeatsInUse, CurrentLimit: l.CurrentLimit, NominalLimit: l.NominalLimit,
			WaitingRequests: l.Waiting, WaitingSeats: l.WaitingSeats, Executing: l.Executing, Queues: l.Queues,
			HasRates: l.HasRates, DispatchedPS: l.DispatchedPerSec, RejectedTotal: l.RejectedTotal,
			RejectedTotalCount: l.RejectedCount, WaitP99: l.WaitP99, Exempt: l.Exempt}
		if d := l.CurrentLimit - l.NominalLimit; r.Exempt {
			// Not borrowing: see LevelRow.Exempt.
		} else if d > 0 {
			r.Borrowed = d
		} else if d < 0 {
			r.Lent = -d
		}
		for reason, v := range l.RejectedPerSec {
			r.Rejected = append(r.Rejected, Reason{Reason: reason, PerSec: v})
		}
		sort.Slice(r.Rejected, func(i, j int) bool { return r.Rejected[i].Reason < r.Rejected[j].Reason })
		r.Rejecting = l.HasRates && l.RejectedTotal > 0
		iv.Levels = append(iv.Levels, r)
	}
	return iv
}

// Queues returns the queue cells of level in snapshot s, by index.
func Queues(s *dump.Snapshot, level string) []QueueCell {
	if s == nil {
		return nil
	}
	var out []QueueCell
	for _, q := range s.QueueDump {
		if q.PriorityLevel != level || q.Placeholder {
			continue
		}
		c := QueueCell{Index: q.Index, Waiting: q.PendingRequests, Work: q.TotalWorkSum, ExecSeats: q.SeatsInUse}
		if !q.HasSeats {
			c.ExecSeats = q.ExecutingRequests
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// WaitingRequest is one waiting request of the drill-down.
type WaitingRequest struct {
	FlowSchema    string
	Distinguisher string
	Queue         int
	Age           time.Duration
	Seats         int
	// User, Verb and Path are empty when the dump was read without request
	// details.
	User, Verb, Path string
}

// Waiting lists the waiting requests of level, oldest first; now is the
// snapshot's capture time, so ages in a replay are those seen live.
func Waiting(s *dump.Snapshot, level string) []WaitingRequest {
	if s == nil {
		return nil
	}
	var out []WaitingRequest
	for _, r := range s.RequestDump {
		if r.PriorityLevel != level || r.Executing() {
			continue
		}
		w := WaitingRequest{FlowSchema: r.FlowSchema, Distinguisher: r.FlowDistinguisher, Queue: r.QueueIndex, Seats: r.Seats()}
		if !r.ArriveTime.IsZero() {
			w.Age = s.CapturedAt.Sub(r.ArriveTime)
			if w.Age < 0 {
				// Clock skew between the client and the apiserver.
				w.Age = 0
			}
		}
		if r.HasDetails {
			w.User, w.Verb, w.Path = r.UserName, r.Verb, r.APIPath
		}
		out = append(out, w)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Age != out[j].Age {
			return out[i].Age > out[j].Age
		}
		return out[i].Queue < out[j].Queue
	})
	return out
}
