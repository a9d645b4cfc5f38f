package input

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// refJoin is the join as it was written first, by lookups of the pending
// map alone (its eviction looks every audit ID up, taken or not): the
// reference that Join must equal, duplicate audit IDs included.
type refJoin struct {
	logs, audits workload.Reader
	slack        time.Duration
	pending      map[string]identity
	order        []string
	head         workload.Request
	haveHead     bool
	auditDone    bool
	stats        workload.JoinStats
}

func (j *refJoin) Next(r *workload.Request) error {
	if err := j.logs.Next(r); err != nil {
		if errors.Is(err, io.EOF) {
			j.stats.AuditOnly += int64(len(j.pending))
			j.pending, j.order = nil, nil
			if j.haveHead {
				j.stats.AuditOnly++
				j.haveHead = false
			}
			for !j.auditDone {
				var a workload.Request
				switch err := j.audits.Next(&a); {
				case errors.Is(err, io.EOF):
					j.auditDone = true
				case err != nil:
					return err
				default:
					j.stats.AuditOnly++
				}
			}
		}
		return err
	}
	for !j.auditDone {
		if !j.haveHead {
			err := j.audits.Next(&j.head)
			if errors.Is(err, io.EOF) {
				j.auditDone = true
				break
			}
			if err != nil {
				return err
			}
			j.haveHead = true
		}
		if j.head.Arrival.After(r.Arrival.Add(j.slack)) {
			break
		}
		if a := &j.head; a.AuditID != "" {
			j.pending[a.AuditID] = identity{arrival: a.Arrival, user: a.User, instance: a.Instance, groups: a.Groups,
				queueWait: a.QueueWait, preAPF: a.PreAPF, total: a.TotalLatency, hasQueueWait: a.HasQueueWait, hasLatencies: a.HasLatencyAnnotations}
			j.order = append(j.order, a.AuditID)
		}
		j.haveHead = false
	}
	for len(j.order) > 0 {
		a, ok := j.pending[j.order[0]]
		if ok && !a.arrival.Before(r.Arrival.Add(-j.slack)) {
			break
		}
		if ok {
			delete(j.pending, j.order[0])
			j.stats.AuditOnly++
		}
		j.order = j.order[1:]
	}
	if a, ok := j.pending[r.AuditID]; ok && r.AuditID != "" {
		delete(j.pending, r.AuditID)
		r.User, r.Groups, r.UserKnown = a.user, a.groups, true
		r.QueueWait, r.HasQueueWait = a.queueWait, a.hasQueueWait
		r.PreAPF, r.TotalLatency, r.HasLatencyAnnotations = a.preAPF, a.total, a.hasLatencies
		r.Instance = a.instance
		j.stats.Matched++
	} else {
		j.stats.Unmatched++
	}
	return nil
}

// TestJoinAsReference joins random httplog and audit streams whose audit
// IDs come from a small pool (duplicates, IDs taken and then seen again,
// empty IDs, events arriving long before or after their line) and checks
// that Join yields the requests and counts of refJoin.
func TestJoinAsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(44, 4))
	base := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	stream := func(n, ids int, spread time.Duration, audit bool) []workload.Request {
		rs := make([]workload.Request, n)
		at := base
		for i := range rs {
			at = at.Add(time.Duration(rng.ExpFloat64() * float64(spread)))
			id := ""
			if rng.IntN(20) > 0 {
				id = fmt.Sprintf("id-%d", rng.IntN(ids))
			}
			rs[i] = workload.Request{Arrival: at, AuditID: id, URI: "/api/v1/pods", Source: workload.Where{Name: "join", Line: int64(i + 1)}}
			if audit {
				rs[i].User, rs[i].Groups = fmt.Sprintf("u%d", i), []string{"g"}
				rs[i].Instance = fmt.Sprintf("i%d", rng.IntN(3))
				rs[i].QueueWait, rs[i].HasQueueWait = time.Duration(i), i%2 == 0
				rs[i].PreAPF, rs[i].TotalLatency, rs[i].HasLatencyAnnotations = time.Duration(2*i), time.Duration(3*i), i%3 == 0
			}
		}
		return rs
	}
	for round := range 300 {
		ids := 1 + rng.IntN(200)
		spread := time.Duration(1+rng.IntN(3000)) * time.Millisecond
		logs := stream(rng.IntN(400), ids, spread, false)
		audits := stream(rng.IntN(400), ids, time.Duration(float64(spread)*(0.5+rng.Float64())), true)
		slack := time.Duration(1+rng.IntN(20)) * time.Second
		// the inputs read as they are, and through prefetch, whose audit
		// events the join takes by reference (workload.RefReader)
		for _, ahead := range []bool{false, true} {
			want := &refJoin{logs: &sliceReader{logs}, audits: &sliceReader{audits}, slack: slack, pending: map[string]identity{}}
			var stats workload.JoinStats
			var lr, ar workload.Reader = &sliceReader{logs}, &sliceReader{audits}
			if ahead {
				lp, ap := workload.Prefetch(lr), workload.Prefetch(ar)
				defer lp.Close()
				defer ap.Close()
				lr, ar = lp, ap
			}
			got := Join(lr, ar, slack, &stats)
			for i := 0; ; i++ {
				var w, g workload.Request
				werr, gerr := want.Next(&w), got.Next(&g)
				if (werr == nil) != (gerr == nil) || werr != nil && !errors.Is(gerr, werr) {
					t.Fatalf("round %d (prefetched %v), request %d: error %v, want %v", round, ahead, i, gerr, werr)
				}
				if werr != nil {
					break
				}
				if !reflect.DeepEqual(g, w) {
					t.Fatalf("round %d (prefetched %v), request %d:\n got %+v\nwant %+v", round, ahead, i, g, w)
				}
			}
			if stats != want.stats {
				t.Fatalf("round %d (prefetched %v): stats %+v, want %+v", round, ahead, stats, want.stats)
			}
		}
	}
}
