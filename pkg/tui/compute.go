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
	// Levels are pkg/levels' rows, sorted by name.
	Levels []levels.Row
	// Snapshot is the instance's snapshot, kept for the queue map and the
	// drill-down (computed only for the selected level).
	Snapshot *dump.Snapshot
	// Err is set for an instance that could not be read this refresh.
	Err string
}

// ComputeInstance computes the rows of one instance from its snapshot and,
// for rates when the snapshot holds a single scrape, the previous
// refresh's snapshot of the same instance (nil for the first). The rows
// are pkg/levels', which "top levels" and "explain 429" show too.
func ComputeInstance(prev, cur *dump.Snapshot) InstanceView {
	iv := InstanceView{Instance: cur.Instance, Snapshot: cur}
	if cur.ServerVersion != nil {
		iv.Version = cur.ServerVersion.GitVersion
	}
	iv.Levels = levels.Compute(levels.Input{Snapshot: cur, Prev: prev})
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
