package fairqueue

import (
	"testing"
	"time"

	reqinfo "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// TestServiceTimeOfARecordWithoutOne: a request the recording answered
// 429 records no execution; where a change executes it, it executes for
// the mean of its own recorded level's executions so far, and only
// without any for the mean of every level's. crowded-30's tiny level
// (LISTs of 7.2 ms at 1 seat) beside wide (11.4 ms at 3 seats) and exempt
// GETs (32 ms): its 383 recorded 429s executed for the 10.5 ms mean of
// all, and the change to queues 6 long predicted 89 429s where three
// re-runs got 49, 53 and 55; with tiny's own mean, 64.
func TestServiceTimeOfARecordWithoutOne(t *testing.T) {
	const ms = time.Millisecond
	rp := &replayer{}
	list := &engine.Request{Info: reqinfo.RequestInfo{Verb: "list"}}
	for range 10 {
		rp.serviceTime(&workload.Request{PriorityLevel: "wide", Status: 200, HasServiceTime: true, ServiceTime: 12 * ms}, list)
		rp.serviceTime(&workload.Request{PriorityLevel: "tiny", Status: 200, HasServiceTime: true, ServiceTime: 6 * ms}, list)
	}
	rp.serviceTime(&workload.Request{PriorityLevel: "exempt", Status: 200, HasServiceTime: true, ServiceTime: 30 * ms}, list)
	for _, c := range []struct {
		level string
		want  time.Duration
	}{{"tiny", 6 * ms}, {"wide", 12 * ms}, {"new", 10 * ms}} {
		if got := rp.serviceTime(&workload.Request{PriorityLevel: c.level, Status: 429}, list); got != c.want {
			t.Errorf("a 429 of level %s without an execution: replayed for %v, want %v", c.level, got, c.want)
		}
	}
	// a recorded execution is its own, and a success without one its
	// latency (an upper bound), whatever its level's mean
	if got := rp.serviceTime(&workload.Request{PriorityLevel: "tiny", Status: 200, HasServiceTime: true, ServiceTime: 9 * ms}, list); got != 9*ms {
		t.Errorf("a recorded execution of 9ms: replayed for %v", got)
	}
	if got := rp.serviceTime(&workload.Request{PriorityLevel: "tiny", Status: 200, Latency: 20 * ms}, list); got != 20*ms {
		t.Errorf("a success without an execution, 20ms of latency: replayed for %v", got)
	}
}
