package fairqueue

import (
	"math"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// request is one request inside the simulator. It is recycled through a free
// list so that memory follows the requests in flight, not the workload.
type request struct {
	id      int64
	flow    int32
	level   *queueSet
	queue   *queue // nil for queueless (exempt and Reject) levels
	gen     uint32 // bumped on recycle, so stale events are recognised
	state   uint8
	arrival int64 // ns since the start of the simulation
	start   int64
	service int64
	// queuedOverhead is added to service when dispatched from a queue
	queuedOverhead int64

	initialSeats, finalSeats uint64
	additionalLatency        time.Duration
	totalWork, finalWork     SeatSeconds
	arrivalR                 SeatSeconds

	// intrusive FIFO links, like container/list in upstream's fifo_list.go
	prev, next *request
}

const (
	stateWaiting uint8 = iota + 1
	stateExecuting
	stateLingering // finished, holding final seats for the additional latency
	stateFree
)

// maxSeats mirrors WorkEstimate.MaxSeats: max(InitialSeats, FinalSeats).
func (r *request) maxSeats() int {
	if r.finalSeats > r.initialSeats {
		return int(r.finalSeats)
	}
	return int(r.initialSeats)
}

// queue mirrors queueset/types.go:queue with the FIFO of fifo_list.go and
// its running queueSum.
type queue struct {
	head, tail *request
	length     int

	initialSeatsSum int
	maxSeatsSum     int
	totalWorkSum    SeatSeconds

	nextDispatchR SeatSeconds
	executing     int // requests executing (upstream requestsExecuting.Len())
	seatsInUse    int
	active        bool // waiting or executing, for getVirtualTimeRatioLocked
	index         int  // position in queueSet.queues
}

func (q *queue) push(r *request) {
	r.prev, r.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = r
	} else {
		q.head = r
	}
	q.tail = r
	q.length++
	q.initialSeatsSum += int(r.initialSeats)
	q.maxSeatsSum += r.maxSeats()
	q.totalWorkSum += r.totalWork
}

func (q *queue) remove(r *request) {
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		q.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		q.tail = r.prev
	}
	r.prev, r.next = nil, nil
	q.length--
	q.initialSeatsSum -= int(r.initialSeats)
	q.maxSeatsSum -= r.maxSeats()
	q.totalWorkSum -= r.totalWork
}

// queueSet is the state of one priority level. It mirrors
// fairqueuing/queueset/queueset.go:queueSet field by field, minus metrics and
// locking, plus two running sums that make getVirtualTimeRatioLocked O(1).
type queueSet struct {
	sim   *Simulator
	index int
	name  string

	// desiredNumQueues is upstream's QueuingConfig.DesiredNumQueues: -1 for
	// exempt levels, 0 for Reject levels, the number of queues otherwise.
	desiredNumQueues int
	queueLengthLimit int
	concurrencyLimit int
	shard            *Shard // shuffleShardLocked's dealer and enqueues

	queues     []queue
	finishes   finishTree // head finish time per queue, for dispatch
	currentR   SeatSeconds
	lastTime   int64
	robinIndex int

	totRequestsWaiting   int
	totRequestsExecuting int
	totSeatsInUse        int
	totSeatsWaiting      int

	// activeQueues and seatsRequested are what getVirtualTimeRatioLocked
	// recomputes by scanning the queues; kept incrementally here.
	activeQueues   int
	seatsRequested int

	demand engine.Integrator // seat demand, for periodic borrowing (times since simulated time zero)
	stats  levelStats
}

// syncTime mirrors syncTimeLocked: R advances at
// min(seatsRequested, ConcurrencyLimit)/activeQueues seats per second since
// the last lock acquisition, rounded once per acquisition. The epoch
// advance at R >= 1.5*2^63 is not reproduced: it needs about 10^11
// seat-seconds of simulated work.
func (qs *queueSet) syncTime(now int64) {
	dt := time.Duration(now - qs.lastTime)
	qs.lastTime = now
	ratio := 0.0
	if qs.activeQueues != 0 {
		ratio = math.Min(float64(qs.seatsRequested), float64(qs.concurrencyLimit)) / float64(qs.activeQueues)
	}
	qs.currentR += SeatsTimesDuration(ratio, dt)
}

func (qs *queueSet) updateActive(q *queue) {
	a := q.length > 0 || q.executing > 0
	if a != q.active {
		q.active = a
		if a {
			qs.activeQueues++
		} else {
			qs.activeQueues--
		}
	}
}

func (qs *queueSet) noteDemand(now int64) {
	qs.demand.Set(time.Duration(now), float64(qs.totSeatsInUse+qs.totSeatsWaiting))
}

// canAccommodateSeats mirrors canAccommodateSeatsLocked (desiredNumQueues
// is -1 for an exempt level).
func (qs *queueSet) canAccommodateSeats(seats int) bool {
	return CanAccommodateSeats(qs.desiredNumQueues < 0, seats, qs.concurrencyLimit, qs.totSeatsInUse, qs.totRequestsExecuting)
}

// WorkSum is queue q's TotalWorkSum, for Shard.ChooseQueue.
func (qs *queueSet) WorkSum(q int) SeatSeconds {
	return qs.queues[q].totalWorkSum
}

// arrive mirrors StartRequest.
func (qs *queueSet) arrive(r *request, now int64, waitLimit int64, hash uint64) {
	s := qs.sim
	qs.syncTime(now)
	r.level = qs
	r.arrivalR = qs.currentR
	// completeWorkEstimate: totalWork = InitialSeats*G + FinalSeats*AdditionalLatency
	r.totalWork, r.finalWork = TotalWork(r.initialSeats, r.finalSeats, r.additionalLatency)

	// Step 0: queueless levels only apply the concurrency limit.
	if qs.desiredNumQueues < 1 {
		if !qs.canAccommodateSeats(r.maxSeats()) {
			s.reject(r, RejectedConcurrencyLimit, now)
			return
		}
		r.start = now
		r.state = stateExecuting
		qs.totRequestsExecuting++
		qs.totSeatsInUse += r.maxSeats()
		qs.noteDemand(now)
		s.dispatched(r, now)
		return
	}

	// Step 1: shuffleShardLocked, with the hidden enqueues rotation.
	q := &qs.queues[qs.shard.ChooseQueue(hash, qs)]
	r.queue = q

	// rejectOrEnqueueToBoundLocked: the length limit counts requests, and only
	// applies while every seat is taken.
	if qs.totSeatsInUse >= qs.concurrencyLimit && q.length >= qs.queueLengthLimit {
		qs.boundNextDispatch(q)
		r.queue = nil
		s.reject(r, RejectedQueueFull, now)
		return
	}
	// enqueueToBoundLocked
	if q.length == 0 && q.executing == 0 {
		q.nextDispatchR = qs.currentR
	}
	q.push(r)
	r.state = stateWaiting
	qs.totRequestsWaiting++
	qs.totSeatsWaiting += r.maxSeats()
	qs.seatsRequested += r.maxSeats()
	qs.updateActive(q)
	qs.noteDemand(now)
	qs.stats.noteWaiting(qs.totRequestsWaiting)
	s.flowWaiting(r, 1)
	qs.boundNextDispatch(q)
	s.scheduleTimeout(r, now, waitLimit)

	// Step 2
	qs.dispatchAsMuchAsPossible(now)
}

// dispatchAsMuchAsPossible mirrors dispatchAsMuchAsPossibleLocked.
func (qs *queueSet) dispatchAsMuchAsPossible(now int64) {
	for qs.totRequestsWaiting != 0 && qs.totSeatsInUse < qs.concurrencyLimit && qs.dispatchOne(now) {
	}
}

// dispatchOne mirrors dispatchLocked and findDispatchQueueToBoundLocked.
func (qs *queueSet) dispatchOne(now int64) bool {
	// Upstream visits every queue from robinIndex+1 round the ring and
	// keeps the first strict minimum of nextDispatchR + head work: that is
	// the leftmost minimum of [robinIndex+1, n) unless [0, robinIndex+1)
	// holds a strictly smaller one. A full turn leaves robinIndex as it was.
	nq := len(qs.queues)
	start := (qs.robinIndex + 1) % nq
	v1, i1 := qs.finishes.leftmostMin(start, nq)
	v2, i2 := qs.finishes.leftmostMin(0, start)
	minIndex := i1
	if v2 < v1 {
		minIndex = i2
	}
	if minIndex < 0 {
		return false
	}
	minQueue := &qs.queues[minIndex]
	r := minQueue.head
	// Head-of-line blocking across the whole level: if the fairest head does
	// not fit, nothing is dispatched until seats free up.
	if !qs.canAccommodateSeats(r.maxSeats()) {
		return false
	}
	unclipped := r.maxSeats()
	minQueue.remove(r)
	qs.seatsRequested -= unclipped
	// Final seats wider than the level are clipped, stretching the latency so
	// that the final work is preserved.
	if r.finalSeats > uint64(qs.concurrencyLimit) {
		r.finalSeats = uint64(qs.concurrencyLimit)
		r.additionalLatency = r.finalWork.DurationPerSeat(float64(r.finalSeats))
	}
	qs.robinIndex = minIndex

	qs.totRequestsWaiting--
	// upstream subtracts the clipped width here although it added the
	// unclipped one; the seat demand inherits that drift.
	qs.totSeatsWaiting -= r.maxSeats()
	qs.sim.flowWaiting(r, -1)
	r.start = now
	r.state = stateExecuting
	qs.totRequestsExecuting++
	qs.totSeatsInUse += r.maxSeats()
	minQueue.executing++
	minQueue.seatsInUse += r.maxSeats()
	qs.seatsRequested += r.maxSeats()
	qs.updateActive(minQueue)
	qs.noteDemand(now)
	minQueue.nextDispatchR += r.totalWork
	qs.boundNextDispatch(minQueue)
	qs.sim.dispatched(r, now)
	return true
}

// boundNextDispatch mirrors boundNextDispatchLocked (the anti-windup hack).
// Upstream calls it after every change of a queue's head or next dispatch
// reading, so it is also where the dispatch tree learns of them.
func (qs *queueSet) boundNextDispatch(q *queue) {
	if q.head == nil {
		qs.finishes.set(q.index, MaxSeatSeconds)
		return
	}
	if q.nextDispatchR < q.head.arrivalR {
		q.nextDispatchR = q.head.arrivalR
	}
	qs.finishes.set(q.index, q.nextDispatchR+q.head.totalWork)
}

// finish mirrors finishRequestAndDispatchAsMuchAsPossible.
func (qs *queueSet) finish(r *request, now int64) {
	qs.syncTime(now)
	qs.totRequestsExecuting--
	actual := time.Duration(now - r.start)
	if q := r.queue; q != nil {
		q.executing--
		q.nextDispatchR -= SeatsTimesDuration(float64(r.initialSeats), EstimatedServiceDuration-actual)
		qs.boundNextDispatch(q)
		qs.updateActive(q)
	}
	if r.additionalLatency <= 0 {
		qs.releaseSeats(r, now)
	} else {
		r.state = stateLingering
		qs.sim.scheduleRelease(r, now+int64(r.additionalLatency))
	}
	qs.dispatchAsMuchAsPossible(now)
}

// releaseSeats is upstream's releaseSeatsLocked closure.
func (qs *queueSet) releaseSeats(r *request, now int64) {
	qs.totSeatsInUse -= r.maxSeats()
	qs.noteDemand(now)
	if q := r.queue; q != nil {
		q.seatsInUse -= r.maxSeats()
		qs.seatsRequested -= r.maxSeats()
	}
	qs.sim.released(r)
}

// lingerEnd is the event upstream schedules with clock.EventAfterDuration.
func (qs *queueSet) lingerEnd(r *request, now int64) {
	qs.syncTime(now)
	qs.releaseSeats(r, now)
	qs.dispatchAsMuchAsPossible(now)
}

// timeOut mirrors the ejection in (*request).wait when the wait context ends
// while the request is still queued. Upstream does not dispatch here.
func (qs *queueSet) timeOut(r *request, now int64) {
	qs.syncTime(now)
	q := r.queue
	q.remove(r)
	qs.seatsRequested -= r.maxSeats()
	qs.updateActive(q)
	qs.totRequestsWaiting--
	qs.totSeatsWaiting -= r.maxSeats()
	qs.noteDemand(now)
	qs.sim.flowWaiting(r, -1)
	qs.boundNextDispatch(q)
	r.queue = nil
	qs.sim.reject(r, RejectedTimeOut, now)
}

// setConcurrencyLimit mirrors setConfiguration for a change of the
// dispatching config only (periodic borrowing).
func (qs *queueSet) setConcurrencyLimit(cl int, now int64) {
	qs.syncTime(now)
	qs.concurrencyLimit = cl
	qs.dispatchAsMuchAsPossible(now)
}
