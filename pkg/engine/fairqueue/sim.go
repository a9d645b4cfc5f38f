package fairqueue

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// Reason is the outcome of one request: executed, or rejected with one of the
// reasons of apiserver_flowcontrol_rejected_requests_total.
type Reason uint8

// The outcomes. The rejection reasons print as upstream's metric labels.
const (
	// Executed means the request was dispatched and ran.
	Executed Reason = iota
	// RejectedQueueFull: every seat was taken and the chosen queue already
	// held QueueLengthLimit requests (StartRequest, queuing levels).
	RejectedQueueFull
	// RejectedConcurrencyLimit: a level without queues (limitResponse Reject)
	// had no room at arrival (StartRequest Step 0).
	RejectedConcurrencyLimit
	// RejectedTimeOut: the request's wait limit passed while it was queued.
	RejectedTimeOut
	numReasons
)

var reasonNames = [numReasons]string{"", "queue-full", "concurrency-limit", "time-out"}

// String returns the metric label of a rejection reason, or "" for Executed.
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// LevelConfig is the part of a priority level that a queue set needs.
type LevelConfig struct {
	// Name is the priority level's name.
	Name string
	// Exempt levels never queue nor reject (upstream DesiredNumQueues -1).
	Exempt bool
	// Queues is the number of queues; 0 means limitResponse type Reject.
	Queues int
	// HandSize is the shuffle-sharding hand size (queuing levels).
	HandSize int
	// QueueLengthLimit is the most requests one queue holds while every
	// seat is taken (queuing levels).
	QueueLengthLimit int
	// ConcurrencyLimit is the level's current concurrency limit in seats at
	// the start; periodic borrowing (Options.Borrow) may change it.
	ConcurrencyLimit int
}

// Validate reports the first inconsistency of a level configuration.
func (c LevelConfig) Validate() error {
	if c.Exempt {
		return nil
	}
	if c.ConcurrencyLimit < 0 {
		return fmt.Errorf("priority level %q: negative concurrency limit %d", c.Name, c.ConcurrencyLimit)
	}
	if c.Queues < 0 {
		return fmt.Errorf("priority level %q: negative number of queues %d", c.Name, c.Queues)
	}
	if c.Queues > 0 {
		if _, err := engine.NewDealer(c.Queues, c.HandSize); err != nil {
			return fmt.Errorf("priority level %q: invalid shuffle sharding: %w", c.Name, err)
		}
	}
	return nil
}

// Request is one arrival for the simulator.
type Request struct {
	// ID is the caller's identifier, echoed in the Outcome.
	ID int64
	// Arrival is the time since the start of the workload. Arrivals must not
	// decrease.
	Arrival time.Duration
	// Level is the index of the priority level in the []LevelConfig.
	Level int
	// Flow is the caller's flow index for per-flow statistics, or -1.
	Flow int32
	// Hash is the flow hash (engine.HashFlowID); 0 for exempt, Reject and
	// single-queue levels, as upstream's startRequest.
	Hash uint64
	// InitialSeats, FinalSeats and AdditionalLatency are the work estimate.
	InitialSeats, FinalSeats uint64
	AdditionalLatency        time.Duration
	// ServiceTime is how long the request executes once dispatched
	// (httplog's apf_execution_time).
	ServiceTime time.Duration
	// WaitLimit is how long the request may wait in a queue counted from
	// its arrival (engine.RequestWaitLimit); 0 means
	// Options.DefaultWaitLimit.
	WaitLimit time.Duration
	// QueuedOverhead lengthens the seat hold of a request dispatched after
	// waiting in a queue: upstream's queue set decides the dispatch and
	// counts the seats at once, but the waiting goroutine must then be
	// woken and scheduled before apf_execution_time starts, which on a
	// CPU-starved server takes far longer than the execution itself. A
	// request dispatched on arrival runs in its own goroutine and pays
	// nothing. Zero unless calibrated (package calibrate).
	QueuedOverhead time.Duration
	// RecordedStretch is the stretch the recorded execution ran under by
	// the CPU model of a replay with ReplayConfig.Unstretch, which divides
	// ServiceTime by it (workload.Request.RecordedStretch); 0 or 1 is none.
	RecordedStretch float64
}

// unstretch takes the request's execution back to its time alone: its
// ServiceTime over its RecordedStretch.
func (r *Request) unstretch() {
	if r.RecordedStretch > 1 {
		r.ServiceTime = time.Duration(float64(r.ServiceTime) / r.RecordedStretch)
	}
}

// Outcome is what happened to one request.
type Outcome struct {
	// ID, Level and Flow are the request's.
	ID    int64
	Level int
	Flow  int32
	// Reason is Executed or why the request was rejected.
	Reason Reason
	// Arrival is the request's arrival; Start its dispatch time (executed
	// requests) or the time of rejection.
	Arrival, Start time.Duration
	// Seq numbers dispatches across the whole simulation in the order they
	// happened; -1 for rejected requests.
	Seq int64
}

// Source yields the requests of a workload in arrival order. Next returns
// io.EOF after the last request.
type Source interface {
	Next(*Request) error
}

// BorrowFunc computes the current concurrency limit of every level (in the
// order of the []LevelConfig) from the seat-demand statistics updated with
// the period that just ended; a negative limit keeps the previous one. It is
// what apf_controller.go:updateBorrowingLocked computes
// (engine.AllocateCurrentLimits).
type BorrowFunc func(stats []engine.SeatDemandStats) []int

// Options tune a simulation.
type Options struct {
	// DefaultWaitLimit applies to requests with WaitLimit 0; zero means 15 s
	// (the default --request-timeout of 60 s divided by 4).
	DefaultWaitLimit time.Duration
	// OnOutcome, if set, receives every outcome as it is decided. The pointer
	// is only valid during the call.
	OnOutcome func(*Outcome)
	// Borrow, if set, is called every BorrowingPeriod of simulated time.
	Borrow BorrowFunc
	// BorrowingPeriod defaults to 10 s (borrowingAdjustmentPeriod).
	BorrowingPeriod time.Duration
	// FlowNames optionally names, per flow index, the flow in the result;
	// flows without a name are reported as flow-INDEX.
	FlowNames []string
	// CPU, if set, says when an execution dispatched at start that needs
	// hold of the server's time ends (a server whose CPU limit throttles
	// it); nil: at start + hold.
	CPU CPU
}

// CPU models a server that cannot always run: End returns when an
// execution dispatched at start, needing hold of running time, ends. Of
// hold, work is the request's own execution (its service time), the CPU
// it spends; the rest is the overhead of a dispatch from a queue
// (Request.QueuedOverhead), time the seats are held without it.
type CPU interface {
	End(start, hold, work time.Duration) time.Duration
}

// ArrivalCPU is a CPU that also spends what a request costs the server
// before APF (authentication, a 429's answer) when it arrives: the
// simulator tells it of every arrival, in time order, before the
// arrival's dispatch. Requests come in bursts, and what they cost then is
// spent when the executions of the burst need the CPU, not at the even
// pace of the rest of the server.
type ArrivalCPU interface {
	CPU
	Arrive(at time.Duration)
}

// maxDuration bounds the times and durations of a request (2^60 ns, about
// 36 years).
const maxDuration = time.Duration(1 << 60)

// DefaultWaitLimit is the wait limit of a request without a deadline on a
// kube-apiserver with the default --request-timeout (60 s / 4, under
// engine.MaxRequestWaitLimit: engine.DefaultRequestWaitLimit of it).
const DefaultWaitLimit = engine.DefaultServerRequestTimeout / 4

// kinds of events, in the order they run at the same instant. Seat releases
// come first because upstream runs them from the event clock before anything
// the workload drives; arrivals come last.
const (
	evRelease uint8 = iota
	evFinish
	evTimeout
	evBorrow
	evArrival // never in the heap, the source is merged in
)

type event struct {
	t    int64
	seq  uint64
	r    *request
	gen  uint32
	kind uint8
}

func (a *event) less(b *event) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.seq < b.seq
}

// Simulator replays a workload through the queue sets of several priority
// levels in simulated time. It is not safe for concurrent use.
type Simulator struct {
	levels []*queueSet
	events []event
	// timeouts are the time-outs of the default wait limit
	// (scheduleTimeout)
	timeouts timeoutQueue
	seq      uint64
	free     []*request
	opts     Options
	now      int64

	dispatchSeq int64
	outcome     Outcome
	flows       []flowStats
	inFlight    int
	peakFlight  int
	requests    int64
	borrowStats []engine.SeatDemandStats

	// changes counts every event that can change a seat demand; borrowing
	// passes that see no change are quiet.
	changes       int64
	changesAtPass int64
	quietPasses   int
	// ps is the processor sharing of a SharedCPU; nil otherwise
	ps *sharing
	// arrivals is opts.CPU where it is told of every arrival
	arrivals ArrivalCPU
}

// idleConverged is the number of quiet borrowing passes (no event in
// between) after which further quiet passes change nothing.
var idleConverged = 1000

// NewSimulator builds the queue sets of the given levels.
func NewSimulator(levels []LevelConfig, opts Options) (*Simulator, error) {
	if opts.DefaultWaitLimit == 0 {
		opts.DefaultWaitLimit = DefaultWaitLimit
	}
	if opts.BorrowingPeriod == 0 {
		opts.BorrowingPeriod = engine.BorrowingAdjustmentPeriod
	}
	s := &Simulator{opts: opts}
	if sc, ok := opts.CPU.(SharedCPU); ok {
		s.ps = &sharing{cpu: sc}
	}
	s.arrivals, _ = opts.CPU.(ArrivalCPU)
	for i, c := range levels {
		if err := c.Validate(); err != nil {
			return nil, err
		}
		qs := &queueSet{sim: s, index: i, name: c.Name, concurrencyLimit: c.ConcurrencyLimit}
		switch {
		case c.Exempt:
			qs.desiredNumQueues = -1
		case c.Queues == 0:
			qs.desiredNumQueues = 0
		default:
			qs.desiredNumQueues = c.Queues
			qs.queueLengthLimit = c.QueueLengthLimit
			qs.shard, _ = NewShard(c.Queues, c.HandSize)
			qs.queues = make([]queue, c.Queues)
			qs.finishes = newFinishTree(c.Queues)
			for i := range qs.queues {
				qs.queues[i].index = i
			}
		}
		s.levels = append(s.levels, qs)
	}
	s.borrowStats = make([]engine.SeatDemandStats, len(levels))
	if opts.Borrow != nil {
		s.push(event{t: int64(opts.BorrowingPeriod), kind: evBorrow})
	}
	return s, nil
}

// Run replays every request of src and returns the summary. It stops at the
// first error of the source, or at a request that names an unknown level or
// arrives before its predecessor.
func (s *Simulator) Run(src Source) (*Result, error) {
	var in Request
	for {
		err := src.Next(&in)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading request %d: %w", s.requests+1, err)
		}
		if err := s.Add(&in); err != nil {
			return nil, err
		}
	}
	s.Drain()
	return s.Result(), nil
}

// Add processes every event up to the request's arrival, then the arrival.
func (s *Simulator) Add(in *Request) error {
	t := int64(in.Arrival)
	if t < s.now {
		return fmt.Errorf("request %d arrives at %v, before the previous event at %v: sort the workload by arrival time", in.ID, in.Arrival, time.Duration(s.now))
	}
	// bounding every duration keeps event times far from int64 overflow
	// (a negative one is above maxDuration as unsigned)
	if uint64(in.Arrival) > uint64(maxDuration) || uint64(in.ServiceTime) > uint64(maxDuration) || uint64(in.AdditionalLatency) > uint64(maxDuration) ||
		uint64(in.WaitLimit) > uint64(maxDuration) || uint64(in.QueuedOverhead) > uint64(maxDuration) {
		return outOfRange(in)
	}
	if in.Level < 0 || in.Level >= len(s.levels) {
		return fmt.Errorf("request %d names priority level index %d, but there are %d levels", in.ID, in.Level, len(s.levels))
	}
	s.runUntil(t, evArrival)
	s.now = t
	if s.arrivals != nil {
		s.arrivals.Arrive(time.Duration(t))
	}
	s.requests++
	s.changes++
	r := s.alloc()
	r.id, r.flow, r.arrival = in.ID, in.Flow, t
	r.service = max(int64(in.ServiceTime), 0)
	r.queuedOverhead = int64(in.QueuedOverhead)
	r.initialSeats, r.finalSeats = in.InitialSeats, in.FinalSeats
	r.additionalLatency = in.AdditionalLatency
	wl := in.WaitLimit
	if wl <= 0 {
		wl = s.opts.DefaultWaitLimit
	}
	s.inFlight++
	s.peakFlight = max(s.peakFlight, s.inFlight)
	s.levels[in.Level].arrive(r, t, int64(wl), in.Hash)
	return nil
}

// outOfRange says which of a request's durations is out of range.
func outOfRange(in *Request) error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"arrival", in.Arrival}, {"service time", in.ServiceTime}, {"additional latency", in.AdditionalLatency}, {"wait limit", in.WaitLimit}, {"queued overhead", in.QueuedOverhead}} {
		if d.v < 0 || d.v > maxDuration {
			return fmt.Errorf("request %d: %s %v is out of range (0 to %v)", in.ID, d.name, d.v, maxDuration)
		}
	}
	return nil
}

// Drain runs every pending event (executions, time-outs, seat releases) to
// completion. Borrowing stops once nothing is in flight.
func (s *Simulator) Drain() {
	s.runUntil(math.MaxInt64, evArrival)
}

// runUntil processes the events that precede (t, kind).
func (s *Simulator) runUntil(t int64, kind uint8) {
	for {
		next, fifo := s.peek()
		if next == nil {
			return
		}
		e := *next
		if e.t > t || e.t == t && e.kind >= kind {
			return
		}
		if fifo {
			tq := &s.timeouts
			tq.buf[tq.head] = event{}
			tq.head++
		} else {
			s.pop()
		}
		s.now = e.t
		switch e.kind {
		case evFinish:
			if e.r == nil {
				s.psDue(e.t, e.gen)
				continue
			}
			s.changes++
			e.r.level.finish(e.r, e.t)
		case evRelease:
			s.changes++
			e.r.level.lingerEnd(e.r, e.t)
		case evTimeout:
			if e.r.gen == e.gen && e.r.state == stateWaiting {
				s.changes++
				e.r.level.timeOut(e.r, e.t)
			}
		case evBorrow:
			s.borrow(e.t)
			period := int64(s.opts.BorrowingPeriod)
			if s.changes == s.changesAtPass {
				s.quietPasses++
			} else {
				s.quietPasses = 0
			}
			s.changesAtPass = s.changes
			next := e.t + period
			// Nothing happened since the last pass, so the seat demand is
			// constant until the next event; after idleConverged such passes
			// the smoothed demand has converged (0.977^1000 < 1e-10) and every
			// further pass computes the same limits: skip to the last pass
			// before the next event.
			if s.quietPasses >= idleConverged {
				until := t
				if pending, _ := s.peek(); pending != nil {
					until = min(until, pending.t)
				}
				if until != math.MaxInt64 {
					if last := e.t + (until-e.t)/period*period; last > next {
						for _, qs := range s.levels {
							qs.demand.Reset(time.Duration(last - period))
						}
						next = last
					}
				}
			}
			// keep borrowing while anything is pending (more arrivals, or
			// other events when draining)
			if pending, _ := s.peek(); t != math.MaxInt64 || pending != nil {
				s.push(event{t: next, kind: evBorrow})
			}
		}
	}
}

// SeatDemand returns the seat-demand statistics of a level (seats executing
// plus seats waiting, over simulated time) since the last borrowing pass.
func (s *Simulator) SeatDemand(level int) engine.IntegratorResults {
	return s.levels[level].demand.Results(time.Duration(s.now))
}

func (s *Simulator) borrow(now int64) {
	for i, qs := range s.levels {
		s.borrowStats[i].Update(qs.demand.Reset(time.Duration(now)))
	}
	limits := s.opts.Borrow(s.borrowStats)
	for i, qs := range s.levels {
		if i < len(limits) && limits[i] >= 0 {
			qs.setConcurrencyLimit(limits[i], now)
		}
	}
}

func (s *Simulator) alloc() *request {
	if n := len(s.free); n > 0 {
		r := s.free[n-1]
		s.free = s.free[:n-1]
		gen := r.gen + 1
		*r = request{gen: gen}
		return r
	}
	return &request{}
}

func (s *Simulator) recycle(r *request) {
	r.state = stateFree
	r.gen++
	s.free = append(s.free, r)
	s.inFlight--
}

// scheduleTimeout schedules r's time-out after wait, from now. A time-out
// stays scheduled after its request is dispatched (it is recognised as
// stale when due), so in the heap these would outnumber every other
// event. The time-outs of the default wait limit, which most requests
// have, fall due in the order they are scheduled (Add's arrivals do not
// decrease): they wait in a FIFO of their own instead; the others in the
// heap.
func (s *Simulator) scheduleTimeout(r *request, now, wait int64) {
	e := event{t: now + wait, kind: evTimeout, r: r, gen: r.gen}
	if wait != int64(s.opts.DefaultWaitLimit) {
		s.push(e)
		return
	}
	e.seq = s.seq
	s.seq++
	tq := &s.timeouts
	if tq.head == len(tq.buf) {
		tq.buf, tq.head = tq.buf[:0], 0
	} else if tq.head >= 1024 && 2*tq.head >= len(tq.buf) {
		n := copy(tq.buf, tq.buf[tq.head:])
		clear(tq.buf[n:])
		tq.buf, tq.head = tq.buf[:n], 0
	}
	tq.buf = append(tq.buf, e)
}

// timeoutQueue is the scheduled time-outs of the default wait limit, in
// the order they fall due.
type timeoutQueue struct {
	buf  []event
	head int
}

// peek returns the next event, in the order of event.less, and whether
// it is the time-out FIFO's (not the heap's); nil when none is pending.
func (s *Simulator) peek() (*event, bool) {
	var next *event
	if len(s.events) > 0 {
		next = &s.events[0]
	}
	if tq := &s.timeouts; tq.head < len(tq.buf) {
		if e := &tq.buf[tq.head]; next == nil || e.less(next) {
			return e, true
		}
	}
	return next, false
}

func (s *Simulator) scheduleRelease(r *request, t int64) {
	s.push(event{t: t, kind: evRelease, r: r, gen: r.gen})
}

// dispatched records a dispatch and schedules the end of execution.
func (s *Simulator) dispatched(r *request, now int64) {
	qs := r.level
	o := &s.outcome
	*o = Outcome{ID: r.id, Level: qs.index, Flow: r.flow, Reason: Executed, Arrival: time.Duration(r.arrival), Start: time.Duration(now), Seq: s.dispatchSeq}
	s.dispatchSeq++
	s.changes++ // a borrowing pass may dispatch
	wait := now - r.arrival
	qs.stats.dispatched++
	qs.stats.wait.add(wait)
	qs.stats.peakSeats = max(qs.stats.peakSeats, qs.totSeatsInUse)
	qs.stats.peakExecuting = max(qs.stats.peakExecuting, qs.totRequestsExecuting)
	if f := s.flow(r); f != nil {
		f.dispatched++
		f.wait.add(wait)
		f.seats += r.maxSeats()
		f.peakSeats = max(f.peakSeats, f.seats)
	}
	if s.opts.OnOutcome != nil {
		s.opts.OnOutcome(o)
	}
	hold := r.service
	if now > r.arrival {
		hold += r.queuedOverhead
	}
	if s.ps != nil {
		s.psStart(r, now, hold)
		return
	}
	end := now + hold
	if s.opts.CPU != nil {
		end = max(int64(s.opts.CPU.End(time.Duration(now), time.Duration(hold), time.Duration(r.service))), end)
	}
	s.push(event{t: end, kind: evFinish, r: r, gen: r.gen})
}

func (s *Simulator) released(r *request) {
	if f := s.flow(r); f != nil {
		f.seats -= r.maxSeats()
	}
	s.recycle(r)
}

func (s *Simulator) reject(r *request, why Reason, now int64) {
	qs := r.level
	qs.stats.rejected[why]++
	if f := s.flow(r); f != nil {
		f.rejected[why]++
	}
	if s.opts.OnOutcome != nil {
		o := &s.outcome
		*o = Outcome{ID: r.id, Level: qs.index, Flow: r.flow, Reason: why, Arrival: time.Duration(r.arrival), Start: time.Duration(now), Seq: -1}
		s.opts.OnOutcome(o)
	}
	s.recycle(r)
}

func (s *Simulator) flowWaiting(r *request, d int) {
	if f := s.flow(r); f != nil {
		f.waiting += d
		f.peakWaiting = max(f.peakWaiting, f.waiting)
	}
}

func (s *Simulator) flow(r *request) *flowStats {
	if r.flow < 0 {
		return nil
	}
	i := int(r.flow)
	if i >= len(s.flows) {
		n := max(i+1, 2*len(s.flows))
		nf := make([]flowStats, n)
		copy(nf, s.flows)
		for j := len(s.flows); j < n; j++ {
			nf[j].level = -1
		}
		s.flows = nf
	}
	f := &s.flows[i]
	if f.level < 0 {
		f.level = r.level.index
	}
	return f
}

func (s *Simulator) push(e event) {
	e.seq = s.seq
	s.seq++
	s.events = append(s.events, e)
	h := s.events
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].less(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (s *Simulator) pop() {
	h := s.events
	n := len(h) - 1
	h[0] = h[n]
	h[n] = event{}
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].less(&h[l]) {
			m = r
		}
		if !h[m].less(&h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	s.events = h
}
