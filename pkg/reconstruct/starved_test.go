package reconstruct_test

import (
	"slices"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
)

// reconstructAt reconstructs reqs against tinyConfig with the calibration
// the requests give, but τ set to tau (0: as calibrated), as on a server
// whose filters around APF lag by about tau. It returns the fates by audit
// ID.
func reconstructAt(t *testing.T, reqs []workload.Request, tau time.Duration, focus string) map[string]reconstruct.Fate {
	t.Helper()
	return reconstructWith(t, tinyConfig(), 7, reqs, tau, focus)
}

// reconstructWith is reconstructAt against config on a server of scl
// seats.
func reconstructWith(t *testing.T, config *engine.Config, scl int, reqs []workload.Request, tau time.Duration, focus string) map[string]reconstruct.Fate {
	t.Helper()
	cal := calibrationAt(t, config, scl, reqs, tau)
	fates, _ := fatesOf(t, reqs, reconstruct.Options{
		Config: config, ServerConcurrencyLimit: scl, NoBorrowing: true, Calibration: cal,
		Focus: func(w *workload.Request) bool { return w.AuditID == focus },
	})
	return fates
}

// calibrationAt is the calibration the requests give against config on a
// server of scl seats, without the CPU model, but τ set to tau (0: as
// calibrated).
func calibrationAt(t *testing.T, config *engine.Config, scl int, reqs []workload.Request, tau time.Duration) *calibrate.Result {
	t.Helper()
	cal, err := calibrate.Derive(&sliceReader{reqs: reqs}, calibrate.Options{Config: config, ServerConcurrencyLimit: scl,
		RequestTimeout: time.Minute, Release: engine.NewestRelease, NoCPUModel: true})
	if err != nil {
		t.Fatal(err)
	}
	if tau > 0 {
		cal.Threshold, cal.ThresholdFrom = calibrate.Duration(tau), "set by the test"
	}
	return cal
}

// TestShortWaitWithNoSeatQueues: on a server whose filters lag by more
// than a slot takes to open (τ 200 ms), a request whose latency less its
// execution is under τ, arriving when the level's every seat is taken,
// waited in its queue all the same (upstream enqueues it; StartRequest
// dispatches only what the seats allow): a 429 arriving behind it finds
// the queue full, as the server did.
func TestShortWaitWithNoSeatQueues(t *testing.T) {
	reqs := []workload.Request{
		logged("a", "alice", 0, 50, 50, 200),     // holds tiny's one seat to 50 ms
		logged("b", "bob", 1, 79, 30, 200),       // 48 ms outside its execution, under τ: waited to 50 ms
		logged("c", "alice", 2, 0.1, 0, 429),     // the seat a's, the one queue b's: queue-full
		logged("d", "alice", 200, 10.5, 10, 200), // tiny idle: dispatched at once
	}
	fates := reconstructAt(t, reqs, 200*time.Millisecond, "c")
	b := fates["b"]
	if b.Wait < 45*time.Millisecond || b.Wait > 50*time.Millisecond || b.Queue != 0 {
		t.Errorf("b waited %v in queue %d, want 48 ms in queue 0: the one seat was a's", b.Wait, b.Queue)
	}
	if c := fates["c"]; !c.Rejected || c.Reason != "queue-full" || !c.Agrees || c.Snapshot == nil || c.Snapshot.Queues[0].Length != 1 {
		t.Errorf("c: rejected %v reason %q agrees %v class %q snapshot %+v, want queue-full with b in the queue", c.Rejected, c.Reason, c.Agrees, c.Class, c.Snapshot)
	}
	if d := fates["d"]; d.Wait != 0 || !d.Agrees {
		t.Errorf("d waited %v (agrees %v), want no wait on an idle level", d.Wait, d.Agrees)
	}
}

// annotated is logged with the audit's latency annotations joined to it:
// the time ahead of APF and the queue wait (apf-queue-wait), as an
// apiserver writes them for a request slower than 500 ms.
func annotated(r workload.Request, preAPF, queueWait float64) workload.Request {
	d := func(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
	r.PreAPF, r.TotalLatency, r.HasLatencyAnnotations = d(preAPF), r.Latency, true
	r.QueueWait, r.HasQueueWait = d(queueWait), true
	return r
}

// TestSeatsFreeWhenTheExecutionEnds: the audit's apf-queue-wait places a
// joined request's execution (APF's decision, then the wait, then
// apf_execution_time), which ended, and freed the seat, before the
// httplog line was written (50 ms later here, as on a CPU-starved
// server). The request waiting is dispatched then, and one arriving after
// finds the queue empty, as the server did.
func TestSeatsFreeWhenTheExecutionEnds(t *testing.T) {
	reqs := []workload.Request{
		annotated(logged("a", "alice", 0, 650, 600, 200), 0.01, 0.05), // holds the seat to 600 ms, its line at 650 ms
		annotated(logged("b", "bob", 1, 700, 50, 200), 0, 599.1),      // dispatched when a's execution ended
		logged("c", "alice", 610, 71, 30, 200),                        // b's seat, the queue empty: waits to 650 ms
		logged("d", "bob", 620, 0.1, 0, 429),                          // b's seat, c in the queue: queue-full
	}
	fates := reconstructAt(t, reqs, 0, "c")
	if b := fates["b"]; b.Wait < 598*time.Millisecond || b.Wait > 600*time.Millisecond {
		t.Errorf("b waited %v, want its apf-queue-wait of 599.1 ms", b.Wait)
	}
	c := fates["c"]
	if c.Rejected || !c.Agrees || c.Snapshot == nil || c.Snapshot.Queues[0].Length != 0 {
		t.Errorf("c: rejected %v agrees %v class %q snapshot %+v, want served into an empty queue (a's execution over)", c.Rejected, c.Agrees, c.Class, c.Snapshot)
	}
	if d := fates["d"]; !d.Rejected || !d.Agrees {
		t.Errorf("d: rejected %v agrees %v class %q, want queue-full", d.Rejected, d.Agrees, d.Class)
	}
}

// TestServedFullWaitsForRoom: a served request that the reconstruction
// found with the seat taken and its queue full is counted so
// (ClassFullButServed), but it is not enqueued past the queue's length
// limit: the server enqueued it, so its queue had room when it reached
// APF. It is enqueued when the queue has room again (b dispatched), and a
// 429 behind it finds the queue as long as the server let it be.
func TestServedFullWaitsForRoom(t *testing.T) {
	reqs := []workload.Request{
		logged("a", "alice", 0, 100, 100, 200), // holds the seat to 100 ms
		logged("b", "bob", 1, 119, 20, 200),    // waits to 100 ms
		logged("e", "alice", 5, 125, 10, 200),  // served, though the seat and the queue were taken
		logged("f", "bob", 6, 0.1, 0, 429),     // queue-full
		logged("g", "bob", 105, 0.1, 0, 429),   // b's seat, e in the queue: queue-full
	}
	fates := reconstructAt(t, reqs, 0, "f")
	if e := fates["e"]; !e.Rejected || e.Class != reconstruct.ClassFullButServed || e.Queue != 0 {
		t.Errorf("e: rejected %v class %q queue %d, want counted as served though the queue was full, in queue 0", e.Rejected, e.Class, e.Queue)
	}
	if f := fates["f"]; !f.Rejected || !f.Agrees || f.Snapshot == nil || f.Snapshot.Queues[0].Length != 1 {
		t.Errorf("f: rejected %v agrees %v snapshot %+v, want queue-full with one request (b) in the queue of length 1", f.Rejected, f.Agrees, f.Snapshot)
	}
	if g := fates["g"]; !g.Rejected || !g.Agrees {
		t.Errorf("g: rejected %v agrees %v class %q, want queue-full (e enqueued when b was dispatched)", g.Rejected, g.Agrees, g.Class)
	}
}

// TestWaitedIntoFullQueueDispatchesTheWaiting: a request that the log
// says waited (c), whose queue the reconstruction holds full while tiny's
// seat is free, shows the state upstream never leaves (a seat free beside
// a request waiting): the request waiting (b, queued on an idle level, its
// execution starting 35 ms late on a server short of CPU) had been
// dispatched, and c took its place in the queue. A 429 after them (d)
// finds the seat taken and the queue full, as the server did; without the
// rule b still waits, c stands past the queue's length limit, and d finds
// the seat free.
func TestWaitedIntoFullQueueDispatchesTheWaiting(t *testing.T) {
	reqs := []workload.Request{
		logged("a", "alice", 0, 10, 10, 200), // holds the seat to 10 ms
		logged("b", "bob", 12, 40, 5, 200),   // the level idle; its execution starts at 47 ms
		logged("c", "alice", 20, 40, 5, 200), // waited to 55 ms: b's queue is the one queue
		logged("d", "bob", 25, 0.1, 0, 429),  // queue-full
	}
	fates := reconstructAt(t, reqs, time.Millisecond, "d")
	if c := fates["c"]; c.SeatsInUse != 0 || c.Waiting != 1 || c.Queue != 0 {
		t.Fatalf("c found %d seats in use and %d waiting, went to queue %d; the test wants the seat free and b waiting, queue 0", c.SeatsInUse, c.Waiting, c.Queue)
	}
	d := fates["d"]
	if !d.Rejected || d.Reason != "queue-full" || !d.Agrees || d.SeatsInUse != 1 || d.Snapshot == nil || d.Snapshot.Queues[0].Length != 1 {
		t.Errorf("d: rejected %v reason %q agrees %v class %q, %d seats in use, snapshot %+v; want queue-full with b executing and c in the queue",
			d.Rejected, d.Reason, d.Agrees, d.Class, d.SeatsInUse, d.Snapshot)
	}
}

// pairConfig is a level "pair" of 1 seat and two queues of one request,
// every flow's hand holding both, with a FlowSchema for each of alice, bob
// and carol.
func pairConfig() *engine.Config {
	return engine.NewConfig([]*flowcontrolv1.FlowSchema{userSchema("pair-alice", "pair", "alice"), userSchema("pair-bob", "pair", "bob"), userSchema("pair-carol", "pair", "carol")},
		[]*flowcontrolv1.PriorityLevelConfiguration{oneShareLevel("pair", &flowcontrolv1.QueuingConfiguration{Queues: 2, HandSize: 2, QueueLengthLimit: 1})})
}

// TestWaitedIntoFullQueueTakesTheRoomMade: when the waiting request the
// free seat is given to (TestWaitedIntoFullQueueDispatchesTheWaiting) stood
// in the other queue of the hand than the one the waited request (e) was
// chosen for, e goes to the queue with room: the server enqueued it, so its
// queue had room. Both orders of b's and c's recorded dispatches are run,
// so that the request dispatched first stands once in each queue. A 429
// after them (d) finds the seat taken and both queues full, as the server
// did; pushed past its chosen queue's limit, e left the other queue empty
// for d.
func TestWaitedIntoFullQueueTakesTheRoomMade(t *testing.T) {
	for _, bFirst := range []bool{true, false} {
		bLat, cLat := 40.0, 45.0 // b's execution starts at 47 ms, c's at 54 ms
		if !bFirst {
			bLat, cLat = 50.0, 35.0 // b's at 57 ms, c's at 44 ms
		}
		reqs := []workload.Request{
			logged("a", "alice", 0, 10, 10, 200),   // holds the seat to 10 ms
			logged("b", "bob", 12, bLat, 5, 200),   // the level idle: one queue
			logged("c", "carol", 14, cLat, 5, 200), // the other queue
			logged("e", "alice", 20, 40, 5, 200),   // waited to 55 ms: both queues full, the seat free
			logged("d", "bob", 25, 0.1, 0, 429),    // queue-full
		}
		fates := reconstructWith(t, pairConfig(), 6, reqs, time.Millisecond, "d") // 6 seats: pair 1 of 6 shares with catch-all
		if e := fates["e"]; e.SeatsInUse != 0 || e.Waiting != 2 {
			t.Fatalf("b first %v: e found %d seats in use and %d waiting; the test wants the seat free and both queues full", bFirst, e.SeatsInUse, e.Waiting)
		}
		d := fates["d"]
		if !d.Rejected || !d.Agrees || d.SeatsInUse != 1 || d.Snapshot == nil || len(d.Snapshot.Queues) != 2 ||
			d.Snapshot.Queues[0].Length != 1 || d.Snapshot.Queues[1].Length != 1 {
			t.Errorf("b first %v: d rejected %v agrees %v class %q, %d seats in use, snapshot %+v; want queue-full with the seat taken and one request in each queue",
				bFirst, d.Rejected, d.Agrees, d.Class, d.SeatsInUse, d.Snapshot)
		}
	}
}

// TestAnsweredAtTheAuditStamp: httplog's latency runs on past the audit
// event's ResponseComplete stamp, through the filters outside the audit
// filter (the event's write among them), by a varying time on a server
// short of CPU. The seat is released at the stamp. Here c, a 429, was
// rejected at 9.6 ms with the queue full (b waiting for a's seat), but
// its httplog line was written 1 ms later, and b's 0.3 ms after its
// stamp: by httplog's latencies alone c is decided at 10.6 ms, after b's
// dispatch at 10.3 ms, and finds the queue empty. By the audit stamps, a
// ends and b starts at 10 ms, after c: c finds the queue full, as the
// server did.
func TestAnsweredAtTheAuditStamp(t *testing.T) {
	stamped := func(r workload.Request, auditMs float64) workload.Request {
		r.AuditLatency, r.HasAuditLatency = time.Duration(auditMs*float64(time.Millisecond)), true
		return r
	}
	reqs := []workload.Request{
		stamped(logged("a", "alice", 0, 10.3, 10, 200), 10),  // holds the one seat to 10 ms
		stamped(logged("b", "bob", 1, 19.3, 10, 200), 19),    // waits in the one queue to 10 ms
		stamped(logged("c", "alice", 9.5, 1.1, 0, 429), 0.1), // the queue full: queue-full
	}
	for _, audit := range []bool{true, false} {
		rs := slices.Clone(reqs)
		if !audit {
			for i := range rs {
				rs[i].AuditLatency, rs[i].HasAuditLatency = 0, false
			}
		}
		c := reconstructWith(t, tinyConfig(), 7, rs, time.Millisecond, "c")["c"]
		switch {
		case audit && (!c.Agrees || c.Reason != "queue-full"):
			t.Errorf("by the audit stamps, c: %s (%s), %d waiting; want queue-full, as the server answered", c.Class, c.Reason, c.Waiting)
		case !audit && c.Agrees:
			t.Errorf("by httplog's latencies alone, c agrees (%s, %d waiting): the test does not show the audit stamps' part", c.Reason, c.Waiting)
		}
	}
}
