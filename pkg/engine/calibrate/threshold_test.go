package calibrate

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// queuedAuditOnly is the audit log alone of a 1-seat level under heavy
// queueing: bursts of requests of 40 ms each, most waiting hundreds of
// milliseconds in a queue, 2 ms of filters ahead of APF; the requests
// slower than 500 ms carry the annotations the apiserver writes on them
// (authentication, apf-queue-wait, total), as a raw audit log holds them.
// Three exempt requests, none of them slow: nothing annotated tells the
// time ahead of APF but the queued requests' own annotations.
func queuedAuditOnly(seed uint64) []workload.Request {
	rng := rand.New(rand.NewPCG(seed, 5))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const pre, exec = 2 * time.Millisecond, 40 * time.Millisecond
	var reqs []workload.Request
	var free time.Duration
	for burst := time.Duration(0); burst < 30*time.Second; burst += time.Second {
		for i := range 12 + rng.IntN(6) {
			at := burst + time.Duration(i)*time.Millisecond
			dispatch := max(at+pre, free)
			free = dispatch + exec
			w := workload.Request{Arrival: start.Add(at), User: []string{"alice", "bob", "carol", "dave"}[rng.IntN(4)], Groups: []string{"load", "system:authenticated"}, UserKnown: true,
				Method: "GET", Verb: "list", URI: "/api/v1/namespaces/ns/configmaps", Status: 200, Latency: free - at}
			if w.Latency > 500*time.Millisecond {
				w.HasLatencyAnnotations, w.TotalLatency, w.PreAPF = true, w.Latency, pre
				if q := dispatch - at - pre; q > 0 {
					w.QueueWait, w.HasQueueWait = q, true
				}
			}
			reqs = append(reqs, w)
		}
		if burst < 3*time.Second {
			reqs = append(reqs, workload.Request{Arrival: start.Add(burst + 500*time.Millisecond), User: "admin", Groups: []string{"system:masters", "system:authenticated"}, UserKnown: true,
				Method: "GET", Verb: "get", URI: "/api/v1/namespaces/default", Status: 200, Latency: 3 * time.Millisecond})
		}
	}
	return reqs
}

// TestThresholdFromTheAnnotationsOfQueuedRequests: from an audit log
// alone whose only annotated requests are the ones that queued long (the
// annotations are written on requests slower than 500 ms, which on a
// queuing level are slow because they queued), τ rests on the time the
// annotations say the filters ahead of APF took (authentication,
// impersonation), not on their dispatch times, which hold their queue
// waits: the fastest tenth of requests selected for being slow did not
// "dispatch on arrival".
func TestThresholdFromTheAnnotationsOfQueuedRequests(t *testing.T) {
	reqs := queuedAuditOnly(1)
	var annotated, queued int
	for _, w := range reqs {
		if w.HasLatencyAnnotations {
			annotated++
			if w.HasQueueWait && w.QueueWait > 100*time.Millisecond {
				queued++
			}
		}
	}
	if annotated < 20 || queued < annotated*9/10 {
		t.Fatalf("%d annotated records, %d of them queued over 100 ms: not the case under test", annotated, queued)
	}
	res, err := Derive(&sliceReader{reqs: reqs}, Options{Config: config(t, 1), ServerConcurrencyLimit: 6})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d records, %d annotated: τ %v (%s)", len(reqs), annotated, time.Duration(res.Threshold), res.ThresholdFrom)
	// the filters took 2 ms: τ is the smallest candidate above what the
	// annotations say of them, not a queue wait
	if th := time.Duration(res.Threshold); th < 2*time.Millisecond || th > 5*time.Millisecond {
		t.Errorf("τ %v (%s), want the candidate above the 2 ms the filters ahead of APF took", th, res.ThresholdFrom)
	}
}
