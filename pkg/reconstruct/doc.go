// Package reconstruct rebuilds, from a recorded workload (httplog lines,
// audit events, or both joined) and the configuration it was recorded
// under, what the apiserver's APF did at each instant: per priority level
// the requests executing (dispatch to end, with their seats), the requests
// waiting in each queue (arrival to dispatch or rejection), the seats in
// use and the current limits. It is not a simulation: the times come from
// the log wherever it has them, and only the rest is estimated.
//
// What each request's times rest on:
//
//   - httplog: the arrival is the line's time minus latency, the execution
//     is apf_execution_time ending at the line's time, so the dispatch is
//     their difference; its seats are apf_iseats and apf_fseats.
//   - audit: the arrival is requestReceivedTimestamp; a request slower than
//     500 ms carries apiserver.latency.k8s.io/apf-queue-wait (and the time
//     ahead of APF), which gives its dispatch.
//   - otherwise (an audit log alone, requests faster than 500 ms) the log
//     tells only when the request ended: it is marked as estimated, waits
//     if the reconstructed level had no seat for it, and is dispatched when
//     a seat frees, the waiting requests in the order the log ended them
//     (or at its own end). Its seats, when not recorded, are the
//     calibration's (package calibrate: LISTs from the object counts).
//
// Every waiting request is dispatched as soon as a seat frees, as the
// server does on every release: the one the log dispatched first goes
// first, at the latest when its recorded execution began. The current
// limits come from the borrowing pass every 10 s (engine.AllocateCurrentLimitsFor
// over the reconstructed seat demand), counted from the first request a
// limit applies to, and corrected by what the requests tell of it where
// the audit's apf-queue-wait tells their wait: one that waited found every
// seat taken, one dispatched at once found a seat free.
//
// The queue of a request is the one the simulator's shuffle sharding
// (fairqueue.Shard: the smallest TotalWorkSum of its hand from upstream's
// rotating offset, in upstream's fixed-point seat-seconds) picks over the
// reconstructed queues at its arrival, as the server picked it; the seat
// check is fairqueue.CanAccommodateSeats. Both are the simulator's own,
// held to upstream by its differential tests. A request the server answered 429 at once is placed
// when it was answered, which is when it reached APF.
//
// The fate the reconstruction gives each request is decided from that
// state alone, never from the status recorded for the request: queue-full
// when every seat is taken and the chosen queue already holds its length
// limit, concurrency-limit on a level without queues that has no room,
// time-out when a request waited its whole wait limit with the seats still
// taken. Comparing it with the recorded status (Result.Levels' Agreement)
// measures how far the reconstruction can be trusted.
//
// The package reads the workload twice (the calibration, then the
// reconstruction) from a reader the caller can open again (a
// workload.Tape), and holds only the requests in flight, the flows and the
// clients.
package reconstruct
