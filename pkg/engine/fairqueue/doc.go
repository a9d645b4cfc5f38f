// Package fairqueue replays API Priority and Fairness queuing in simulated
// time: a discrete-event reimplementation of k8s.io/apiserver v0.37's
// pkg/util/flowcontrol/fairqueuing/queueset, one queue set per priority
// level, plus the periodic borrowing between levels.
//
// What is reproduced, decision for decision (queueset.go unless noted):
//
//   - virtual time R(t) in fixed-point SeatSeconds (request/seat_seconds.go),
//     advanced at every lock acquisition (syncTimeLocked) by
//     min(seats requested, limit) / active queues, with the same rounding;
//   - shuffle sharding with the hidden enqueues counter that rotates the
//     scan of the hand (shuffleShardLocked), choosing by TotalWorkSum;
//   - the queue length limit, counted in requests and applied only when no
//     seat is free (rejectOrEnqueueToBoundLocked);
//   - dispatch by minimal virtual finish time in round-robin order from the
//     last queue served (findDispatchQueueToBoundLocked), head-of-line
//     blocking across the whole level when the fairest head does not fit,
//     requests wider than the level running alone, final seats clipped to
//     the limit with the additional latency stretched, the anti-windup bound
//     (boundNextDispatchLocked) and the finish-time correction of the
//     queue's R by the actual service time (finishRequestLocked);
//   - final seats held for the additional latency after execution, then
//     released with a new dispatch round (clock.EventAfterDuration);
//   - wait limits counted from arrival (v0.29+ getRequestWaitContext in
//     server/filters/priority-and-fairness.go; engine.RequestWaitLimit), ejection
//     with reason time-out and no dispatch round;
//   - Reject levels (no queues: concurrency-limit at arrival) and exempt
//     levels (never queued nor rejected);
//   - the seat-demand integrator and, every 10 s of simulated time, the
//     current limits from pkg/engine's borrowing arithmetic
//     (engine.SeatDemandStats, engine.AllocateCurrentLimits).
//
// Not reproduced: R's epoch advance (it needs ~10^11 seat-seconds), queue
// removal after a shrink of the number of queues (configurations do not
// change during a replay), and the race where a time-out and a dispatch
// coincide in the server (the simulator orders simultaneous events: seat
// releases, ends of execution, time-outs, borrowing, then arrivals; within
// a kind, in the order they were scheduled).
//
// The queue choice (Shard.ChooseQueue), the seat check
// (CanAccommodateSeats), G and a request's work (TotalWork) are exported:
// pkg/reconstruct decides a recorded request's fate with them over the
// queues it rebuilds from a log, so that one implementation, the one held
// to upstream here, serves both.
//
// The fidelity test drives upstream's queueset on its fake event clock with
// the same arrivals and compares every request's outcome, dispatch order and
// start time. Simulated time only: the package never reads the wall clock.
//
// Replay turns a recorded workload (package workload) into simulated
// requests, classifying them with pkg/engine, and runs a configuration and
// optionally a changed one side by side; its Report is the JSON of
// `kubectl apf simulate -o json`.
package fairqueue
