package reconstruct

import (
	"container/heap"
	"fmt"
	"slices"
	"strings"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// borrowingPeriod is apf_controller.go's borrowingAdjustmentPeriod, in
// the reconstruction's nanoseconds.
const borrowingPeriod = int64(engine.BorrowingAdjustmentPeriod)

// req is one request in flight in the reconstruction.
type req struct {
	idx    int64
	lv     *level
	flow   int32
	client int32
	status int
	seats  int
	final  int
	addLat int64
	work   fairqueue.SeatSeconds // its TotalWork, for the queue choice

	apfAt, dispatch, end int64
	// start is when its recorded execution began
	start     int64
	waitLimit int64
	queue     int
	waiting   bool
	timeOut   bool // a recorded 429 that waited its wait limit
	// waitShown: its times show that it waited (for learnLimit)
	waitShown bool
	estimated bool // its wait was estimated
	// exact: its wait is the audit's apf-queue-wait, the server's own
	// measure (for learnLimit)
	exact      bool
	prev, next *req
	// p is the request's record and fate until they are decided
	p *pending
	// hidx is its index in its level's next heap while it waits, else -1
	hidx int
	// events counts its events in the heap; queued tells that it is in
	// one of its level's queues. A request with neither, and no record
	// left (p), is referred to no more: it is reused (state.reqs)
	events int32
	queued bool
}

// byDispatch orders waiting requests by their dispatch in the log.
type byDispatch []*req

func (h byDispatch) Len() int { return len(h) }
func (h byDispatch) Less(i, j int) bool {
	if h[i].dispatch != h[j].dispatch {
		return h[i].dispatch < h[j].dispatch
	}
	return h[i].idx < h[j].idx
}
func (h byDispatch) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx, h[j].hidx = i, j
}
func (h *byDispatch) Push(x any) {
	r := x.(*req)
	r.hidx = len(*h)
	*h = append(*h, r)
}
func (h *byDispatch) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	r.hidx = -1
	return r
}

// queue is one queue's waiting requests (intrusive list).
type queue struct {
	head, tail *req
	length     int
	work       fairqueue.SeatSeconds // upstream's TotalWorkSum
}

func (q *queue) push(r *req) {
	r.queued = true
	r.prev, r.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = r
	} else {
		q.head = r
	}
	q.tail = r
	q.length++
	q.work += r.work
}

// insert puts r in q in the order of arrival.
func (q *queue) insert(r *req) {
	at := q.tail
	for at != nil && at.idx > r.idx {
		at = at.prev
	}
	if at == q.tail {
		q.push(r)
		return
	}
	var next *req
	if at == nil {
		next = q.head
	} else {
		next = at.next
	}
	r.queued = true
	r.prev, r.next = at, next
	if at == nil {
		q.head = r
	} else {
		at.next = r
	}
	next.prev = r
	q.length++
	q.work += r.work
}

func (q *queue) remove(r *req) {
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
	r.prev, r.next, r.queued = nil, nil, false
	q.length--
	q.work -= r.work
}

// acc integrates one flow's or client's seats in use and seats waiting.
type acc struct {
	seats, waitSeats, executing, waiting int
	last                                 int64
	seatNs, waitNs                       float64
}

func (a *acc) to(t int64) {
	if t > a.last {
		a.seatNs += float64(a.seats) * float64(t-a.last)
		a.waitNs += float64(a.waitSeats) * float64(t-a.last)
		a.last = t
	}
}

// level is one priority level's reconstructed state.
type level struct {
	name   string
	exempt bool
	queues []queue // nil for levels without queues
	qll    int
	// shard is the level's shuffle sharding (fairqueue's, upstream's
	// shuffleShardLocked)
	shard      *fairqueue.Shard
	limit      int
	seatsInUse int
	executing  int
	waiting    int
	waitSeats  int
	demand     engine.Integrator // times since the Unix epoch, as t
	stats      engine.SeatDemandStats
	limits     engine.LevelLimits
	next       byDispatch // the waiting requests the log dispatched
	// held are the served requests held back until a queue of their
	// hand has room (state.holdBack), in arrival order
	held    []*pending
	flows   map[int32]*acc
	clients map[int32]*acc
	res     *LevelResult
	inc     *incidentAcc
	dirty   bool // seats changed since the incident's last mark
}

func (l *level) noteDemand(t int64) {
	l.demand.Set(time.Duration(t), float64(l.seatsInUse+l.waitSeats))
}

// state is a reconstruction in progress.
type state struct {
	opts   Options
	cal    *calibrate.Result
	levels map[string]*level
	order  []*level
	events eventHeap
	seq    int64
	now    int64
	start  time.Time
	idx    int64
	parsed engine.RequestCache
	// classes memoizes the classification of the requests
	classes engine.ClassifyMemo
	// flowIx indexes the flows by FlowSchema and distinguisher, and
	// flowByName by their names (two pairs may share a name)
	flowIx     map[[2]string]int32
	flowByName map[string]int32
	flows      []string
	clients    []clientKey
	clientX    map[clientKey]int32
	res        Result
	prev       map[string]int
	// nextB is when the next borrowing pass runs; phased tells that the
	// passes' phase is set, passes counts those that ran
	nextB  int64
	phased bool
	passes int
	fate   Fate
	// free are the records of settled requests, reused for the next ones:
	// the records allocated follow the requests in flight, not the log
	free []*pending
	// hands are the hands of settled requests, reused for the next ones
	hands [][]int
	// reqs are the requests referred to no more, reused for the next ones
	reqs []*req
	// tauUnmeasured: τ rests on no measured lag, so a recorded wait above
	// it does not show a queue by itself
	tauUnmeasured bool
}

type clientKey struct {
	user, userAgent, fs, dist string
}

func newState(opts Options, cal *calibrate.Result) *state {
	s := &state{opts: opts, cal: cal, levels: map[string]*level{}, flowIx: map[[2]string]int32{}, flowByName: map[string]int32{}, clientX: map[clientKey]int32{}, prev: map[string]int{}}
	s.res.Threshold = time.Duration(cal.Threshold)
	s.tauUnmeasured = cal.ThresholdFrom == calibrate.ThresholdUnmeasured
	s.res.AuditOnly = cal.AuditOnly
	lims := opts.Config.Limits(opts.ServerConcurrencyLimit)
	var initial map[string]int
	if !opts.NoBorrowing {
		initial = engine.AllocateCurrentLimitsFor(opts.Release, lims, nil, nil, opts.ServerConcurrencyLimit).CurrentCL
	}
	for _, ll := range lims {
		l := &level{name: ll.Name, exempt: ll.Exempt, limit: ll.NominalCL, limits: ll,
			flows: map[int32]*acc{}, clients: map[int32]*acc{},
			res: &LevelResult{Level: ll.Name, Reasons: map[string]int64{}, Disagreements: map[string]int64{}}}
		if initial != nil {
			l.limit = initial[ll.Name]
		}
		s.prev[ll.Name] = l.limit
		if pl := opts.Config.PriorityLevels[ll.Name]; pl != nil && pl.Spec.Limited != nil && pl.Spec.Limited.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue && pl.Spec.Limited.LimitResponse.Queuing != nil {
			q := pl.Spec.Limited.LimitResponse.Queuing
			if sh, err := fairqueue.NewShard(int(q.Queues), int(q.HandSize)); err == nil {
				l.queues, l.qll, l.shard = make([]queue, q.Queues), int(q.QueueLengthLimit), sh
			}
		}
		s.levels[ll.Name] = l
		s.order = append(s.order, l)
	}
	// no pass before the first request a limit applies to (add)
	s.nextB = 1<<63 - 1
	return s
}

func (s *state) push(t int64, kind uint8, r *req) {
	s.seq++
	r.events++
	s.events.push(event{t: t, kind: kind, seq: s.seq, r: r})
}

// reuse takes one of the values let go in free, or makes a new one: the
// requests and records allocated follow those in flight, not the log.
func reuse[T any](free *[]*T) *T {
	if n := len(*free); n > 0 {
		x := (*free)[n-1]
		*free = (*free)[:n-1]
		return x
	}
	return new(T)
}

// advance handles every event up to t.
func (s *state) advance(t int64) {
	for len(s.events) > 0 && s.events[0].t <= t {
		e := s.events.pop()
		s.borrowUntil(e.t)
		s.now = e.t
		s.closeIncidents(e.t)
		s.handle(e)
		// an event of a request neither queued, waiting for a dispatch
		// (hidx) nor holding its record is its last reference
		r := e.r
		if r.events--; r.events == 0 && r.p == nil && !r.queued && r.hidx < 0 {
			s.reqs = append(s.reqs, r)
		}
	}
}

// borrowUntil runs the periodic borrowing passes due by t.
func (s *state) borrowUntil(t int64) {
	if s.opts.NoBorrowing {
		return
	}
	for s.nextB <= t {
		stats := map[string]engine.SeatDemandStats{}
		lims := make([]engine.LevelLimits, 0, len(s.order))
		for _, l := range s.order {
			// the stats carry the smoothed demand from pass to pass,
			// as upstream's seatDemandStats do
			l.stats.Update(l.demand.Reset(time.Duration(s.nextB)))
			stats[l.name] = l.stats
			lims = append(lims, l.limits)
		}
		cur := engine.AllocateCurrentLimitsFor(s.opts.Release, lims, stats, s.prev, s.opts.ServerConcurrencyLimit)
		for _, l := range s.order {
			l.limit = cur.CurrentCL[l.name]
			s.prev[l.name] = l.limit
		}
		s.nextB += borrowingPeriod
		s.passes++
	}
}

// flowOf is the index of the flow named flowName(fs, dist), looked up by
// the pair so that the name is built once per pair, not per request.
func (s *state) flowOf(fs, dist string) int32 {
	k := [2]string{fs, dist}
	if i, ok := s.flowIx[k]; ok {
		return i
	}
	name := flowName(fs, dist)
	i, ok := s.flowByName[name]
	if !ok {
		i = int32(len(s.flows))
		s.flowByName[name] = i
		s.flows = append(s.flows, name)
	}
	s.flowIx[k] = i
	return i
}

func (s *state) clientOf(k clientKey) int32 {
	if i, ok := s.clientX[k]; ok {
		return i
	}
	i := int32(len(s.clients))
	s.clientX[k] = i
	s.clients = append(s.clients, k)
	return i
}

func (s *state) skip(msg string) {
	s.res.Skipped++
	if s.res.FirstSkip == "" {
		s.res.FirstSkip = msg
	}
}

// add reads one record (in arrival order) and schedules its arrival at APF.
func (s *state) add(w *workload.Request, orig recorded) {
	idx := s.idx
	s.idx++
	s.res.Records++
	if s.start.IsZero() {
		s.start = w.Arrival
		s.res.Start = w.Arrival
	}
	if w.Arrival.After(s.res.End) {
		s.res.End = w.Arrival
	}
	arr := int64(w.Arrival.Sub(s.start))
	s.advance(arr)
	if AnsweredBeforeAPF(w) {
		s.res.BeforeAPF++
		return
	}
	if s.opts.Identify != nil {
		if id, ok := s.opts.Identify(w); ok {
			// a copy: the reader reuses w for the next record
			wc := *w
			wc.User, wc.Groups, wc.UserKnown = id.User, id.Groups, true
			w = &wc
		}
	}
	er, err := s.parsed.Parse(w.Method, w.URI, IdentityOf(w))
	if err != nil {
		s.skip(fmt.Sprintf("%s: %v", w.Source, err))
		return
	}
	if er.Bypass != "" {
		return
	}
	rf, err := fairqueue.ClassifyRecordedMemo(&s.classes, s.opts.Config, w, &er)
	if err != nil {
		s.skip(err.Error())
		return
	}
	fs, pl, dist, hash := rf.FlowSchema, rf.PriorityLevel, rf.Distinguisher, rf.Hash
	l := s.levels[pl]
	if l == nil {
		s.skip(fmt.Sprintf("%s: priority level %q is not in the configuration", w.Source, pl))
		return
	}
	if !l.exempt && !s.phased {
		// the server adjusts the limits every 10 s from its own start,
		// in a phase the log does not tell; the passes are counted
		// from the first request a limit applies to, as a recording's
		// load starts just after an adjustment. Counted from the log's
		// first record, they ran seconds out of the server's phase on
		// a log that opens with exempt requests (a capture's own
		// reads): see docs/reconstruct.md
		s.phased = true
		s.nextB = arr + borrowingPeriod
	}
	wl, err := engine.RequestWaitLimit(er, s.opts.RequestTimeout)
	if err != nil {
		s.skip(fmt.Sprintf("%s: %v", w.Source, err))
		return
	}
	s.res.Reconstructed++
	r := reuse(&s.reqs)
	*r = req{idx: idx, lv: l, status: w.Status, seats: 1, queue: -1, waitLimit: int64(wl), hidx: -1}
	r.flow = s.flowOf(fs, dist)
	r.client = s.clientOf(clientKey{user: w.User, userAgent: w.UserAgent, fs: fs, dist: dist})
	if w.HasSeats {
		r.seats, r.final, r.addLat = max(int(w.InitialSeats), 1), int(w.FinalSeats), int64(w.AdditionalLatency)
	}
	if !orig.seats {
		s.res.EstimatedSeats++
	}
	r.work, _ = fairqueue.TotalWork(uint64(r.seats), uint64(max(r.final, 0)), time.Duration(r.addLat))

	f := &s.fate
	*f = Fate{Record: w, Index: idx, Level: pl, FlowSchema: fs, Distinguisher: dist, Status: w.Status, Seats: r.seats,
		SeatsEstimated: !orig.seats, Queue: -1, WaitLimit: wl}
	if l.shard != nil {
		var hand []int
		if n := len(s.hands); n > 0 {
			hand, s.hands = s.hands[n-1], s.hands[:n-1]
		}
		f.Hand = l.shard.DealIntoHand(hash, hand)
	}
	s.times(w, orig, r, f, arr, er.Info.Verb == "watch")
	f.At = s.start.Add(time.Duration(r.apfAt))
	pend := reuse(&s.free)
	pend.r, pend.fate, pend.rec, pend.hash = r, *f, *w, hash
	if s.opts.Focus != nil && s.opts.Focus(w) {
		pend.focus = true
	}
	s.pending(pend)
}

// times sets a request's arrival at APF, dispatch and end from what the
// record carries, estimating what it does not.
func (s *state) times(w *workload.Request, orig recorded, r *req, f *Fate, arr int64, watch bool) {
	lat := int64(w.Latency)
	answered := arr + lat
	pre := int64(0)
	if w.HasLatencyAnnotations {
		pre = int64(w.PreAPF)
	}
	r.apfAt = arr + pre
	if w.Status == 429 && !orig.exec {
		if lat < r.waitLimit*9/10 {
			// rejected when it reached APF, which is when it was answered
			r.apfAt = max(answered, r.apfAt)
		} else {
			r.timeOut = true
		}
		return
	}
	var wait, exec int64
	switch {
	case orig.exec:
		exec = int64(w.ServiceTime)
		wait = max(answered-exec-r.apfAt, 0)
		if orig.queueWait {
			// the audit's apf-queue-wait is the server's own measure
			// from APF's decision to the execution's start
			// (apf_filter.go: observeQueueWaitTime): the execution
			// ended, and freed its seats, that long after, not when
			// the httplog line was written, which a CPU-starved
			// server does tens of milliseconds later
			wait = int64(w.QueueWait)
		}
		f.WaitFrom = WaitHTTPLog
	case orig.queueWait:
		wait = int64(w.QueueWait)
		exec = max(lat-pre-wait, 0)
		f.WaitFrom = WaitAudit
	default:
		// the log tells only when it ended: it waits until a seat frees
		// for it, in the order the log ended the waiting requests, or
		// until its end
		wait = lat - pre
		r.estimated = true
		exec = max(lat-pre-wait, 0)
		f.WaitFrom = WaitEstimated
		s.res.EstimatedWaits++
	}
	if watch && !orig.exec {
		// a watch's latency is its whole life; APF holds its seats only
		// until it is initialised
		exec = min(exec, int64(time.Millisecond))
	}
	execStart := r.apfAt + wait
	r.end = execStart + exec
	r.start = execStart
	if wait < int64(s.cal.Threshold) || r.lv.queues == nil {
		// dispatched at once (a level without queues never makes a
		// request wait): the time was execution
		wait, exec = 0, exec+wait
		r.dispatch = r.apfAt
	} else {
		// the seats it frees dispatch the next waiting request earlier
		// (dispatchFreed): this is the latest it can have been
		r.dispatch = execStart
		r.waiting = true
	}
	r.waitShown = r.waiting
	r.exact = orig.queueWait
	f.Wait, f.Execution = time.Duration(wait), time.Duration(exec)
}

// pending is a request between its record and its arrival at APF.
type pending struct {
	r     *req
	held  bool
	fate  Fate
	rec   workload.Request
	hash  uint64
	focus bool
}

func (s *state) pending(p *pending) {
	p.r.p = p
	p.fate.Record = &p.rec
	s.push(p.r.apfAt, evArrive, p.r)
}

func (s *state) handle(e event) {
	r, l := e.r, e.r.lv
	switch e.kind {
	case evArrive:
		s.arrive(r.p)
	case evLateArrive:
		if p := r.p; p != nil && p.held {
			l.held = slices.DeleteFunc(l.held, func(q *pending) bool { return q == p })
			p.held = false
			s.enqueue(p)
		}
	case evDispatch:
		if r.hidx >= 0 {
			s.dispatch(r)
		}
	case evEnd:
		s.seatsDelta(r, -r.seats, -1)
		if r.final > 0 && r.addLat > 0 {
			s.seatsDelta(r, r.final, 0)
			s.push(s.now+r.addLat, evFinalEnd, r)
		}
		s.dispatchFreed(l)
	case evFinalEnd:
		s.seatsDelta(r, -r.final, 0)
		s.dispatchFreed(l)
	case evMark:
		s.markIncident(l)
	case evTimeOut:
		l.queues[r.queue].remove(r)
		s.unwait(r)
		f := &r.p.fate
		f.Rejected = l.seatsInUse >= l.limit
		f.Reason = "time-out"
		if !f.Rejected {
			f.Class = ClassTimeOutDispatchable
		}
		s.decided(f, r, true)
		if len(l.held) > 0 {
			s.roomFreed(l)
		}
	}
}

// dispatch moves a waiting request from its queue to the seats, and
// settles its fate: an estimated wait is the reconstruction's.
func (s *state) dispatch(r *req) {
	heap.Remove(&r.lv.next, r.hidx)
	r.lv.queues[r.queue].remove(r)
	s.unwait(r)
	s.execute(r)
	if r.p != nil {
		if f := &r.p.fate; r.estimated {
			f.Wait, f.Execution = time.Duration(s.now-r.apfAt), time.Duration(max(r.end-s.now, 0))
		}
		s.settle(r)
	}
	if len(r.lv.held) > 0 {
		s.roomFreed(r.lv)
	}
}

// holdBack holds back the enqueuing of a served request that found, in the
// reconstruction, every seat taken and every queue of its hand full, once
// its fate was decided (ClassFullButServed). The server enqueued it, so a
// queue of its hand had room when it reached APF
// (rejectOrEnqueueToBoundLocked), later than the log's arrival: the
// filters ahead of APF ran first, which on a CPU-starved server takes
// milliseconds, while a queue's slot opens and is taken again in as many.
// Enqueued past its queue's length limit, it would stand in a queue that
// was full without it, and leave the one it went to looking shorter than
// it was, to the requests after it. It is enqueued when a queue of its hand
// has room or a seat frees (roomFreed), at the latest at its recorded
// dispatch. Before that, for the same reason, a request whose chosen queue
// is full goes to the queue of its hand with room and the least waiting
// work (queueWithRoom), as after a seat free beside waiting requests was
// given to them (arrive): the room is then often in the queue the request
// dispatched first stood in.
func (s *state) holdBack(p *pending) bool {
	r, l := p.r, p.r.lv
	if q := l.queueWithRoom(p.fate.Queue, p.fate.Hand); q >= 0 {
		p.fate.Queue = q
	}
	if r.dispatch <= s.now || l.hasRoom(p.fate.Hand) {
		return false
	}
	if q := l.makeRoom(p.fate.Hand); q >= 0 {
		p.fate.Queue = q
		return false
	}
	// the server chose its queue once, when it was enqueued
	l.shard.Unchoose()
	p.held = true
	l.held = append(l.held, p)
	s.push(r.dispatch, evLateArrive, r)
	return true
}

// hasRoom reports whether a request of the hand would be enqueued: a seat
// is free or a queue of the hand is shorter than its length limit.
func (l *level) hasRoom(hand []int) bool {
	if l.seatsInUse < l.limit {
		return true
	}
	for _, q := range hand {
		if l.queues[q].length < l.qll {
			return true
		}
	}
	return false
}

// queueWithRoom is chosen when it is shorter than the queue length limit,
// else the queue of hand with room and the least waiting work, else -1.
func (l *level) queueWithRoom(chosen int, hand []int) int {
	if l.queues[chosen].length < l.qll {
		return chosen
	}
	best := -1
	for _, q := range hand {
		if l.queues[q].length < l.qll && (best < 0 || l.queues[q].work < l.queues[best].work) {
			best = q
		}
	}
	return best
}

// makeRoom moves a waiting request of a full queue of hand (the one
// enqueued last first) to another queue of its own hand that has room, in
// the order of arrival there, and returns the queue it made room in, or
// -1. The server enqueued the served request of hand, so a queue of its
// hand had room: the reconstruction put a request in the wrong queue.
// Which queue of a hand a request goes to is most often decided between
// queues of equal work by the offset turning with every request that
// reaches the choice (shuffleShardLocked), which the log cannot tell: a
// request that reached APF a moment earlier or later than the log says
// turns it for every request after.
func (l *level) makeRoom(hand []int) int {
	for _, qi := range hand {
		for x := l.queues[qi].tail; x != nil; x = x.prev {
			if x.p == nil {
				continue
			}
			for _, to := range x.p.fate.Hand {
				if to == qi || l.queues[to].length >= l.qll {
					continue
				}
				l.move(x, qi, to)
				return qi
			}
		}
	}
	return -1
}

// fillHand moves waiting requests into the queues of hand with room, where
// their own hands hold them, after a 429 of hand found room in the
// reconstruction with every seat taken: the 429 shows every queue of its
// hand full (between queues of equal work the chosen one is full only if
// all are), so requests were in the wrong queue of their own hands
// (makeRoom). A queue with room takes, in this order: the request
// enqueued last of a full queue outside hand whose hand holds it; a
// request of a full queue of hand whose hand holds it, its place then
// taken by one from outside hand (a chain through hand: on a level whose
// flows' hands share a queue, the request in the wrong place is often
// another flow's, one queue away); a request of any queue outside hand
// whose hand holds it. The 429 counts the waiting requests of its hand, not
// where the others stood.
func (l *level) fillHand(hand []int) {
	for _, qr := range hand {
		for l.queues[qr].length < l.qll && (l.moveInto(qr, hand, l.qll) || l.moveVia(qr, hand) || l.moveInto(qr, hand, 1)) {
		}
	}
}

// moveVia moves into queue qr the request enqueued last, of a full queue
// of hand, whose own hand holds qr, and fills the place it left with a
// request from outside hand (moveInto), and reports whether it could.
func (l *level) moveVia(qr int, hand []int) bool {
	for _, qh := range hand {
		if qh == qr || l.queues[qh].length < l.qll {
			continue
		}
		for x := l.queues[qh].tail; x != nil; x = x.prev {
			if x.p == nil || !slices.Contains(x.p.fate.Hand, qr) {
				continue
			}
			l.move(x, qh, qr)
			if l.moveInto(qh, hand, l.qll) || l.moveInto(qh, hand, 1) {
				return true
			}
			// nothing outside hand can take its place: put it back
			l.move(x, qr, qh)
			break
		}
	}
	return false
}

// moveInto moves into queue qr the request enqueued last, of the first
// queue outside hand at least minLen long, whose own hand holds qr, and
// reports whether there was one.
func (l *level) moveInto(qr int, hand []int, minLen int) bool {
	for qs := range l.queues {
		if slices.Contains(hand, qs) || l.queues[qs].length < minLen {
			continue
		}
		for x := l.queues[qs].tail; x != nil; x = x.prev {
			if x.p != nil && slices.Contains(x.p.fate.Hand, qr) {
				l.move(x, qs, qr)
				return true
			}
		}
	}
	return false
}

// move moves the waiting request x from queue from to queue to, in the
// order of arrival there.
func (l *level) move(x *req, from, to int) {
	l.queues[from].remove(x)
	l.queues[to].insert(x)
	x.queue, x.p.fate.Queue = to, to
}

// roomFreed enqueues the held requests whose hand now has room, in their
// order.
func (s *state) roomFreed(l *level) {
	for i := 0; i < len(l.held); {
		p := l.held[i]
		if !l.hasRoom(p.fate.Hand) {
			i++
			continue
		}
		l.held = slices.Delete(l.held, i, i+1)
		p.held = false
		s.enqueue(p)
	}
}

// dispatchFreed gives the seats a request freed to the requests waiting,
// as the server does on every release (dispatchAsMuchAsPossibleLocked):
// which one went next is the one the log dispatched first, even when its
// execution started later (the waiting goroutine must be woken and
// scheduled before apf_execution_time starts).
func (s *state) dispatchFreed(l *level) {
	for len(l.next) > 0 && l.seatsInUse < l.limit && l.canAccommodate(l.next[0].seats) {
		s.dispatch(l.next[0])
	}
}

func (s *state) execute(r *req) {
	s.seatsDelta(r, r.seats, 1)
	s.push(max(r.end, s.now), evEnd, r)
}

func (s *state) seatsDelta(r *req, seats, executing int) {
	l := r.lv
	fa, ca := s.accOf(l.flows, r.flow), s.accOf(l.clients, r.client)
	fa.to(s.now)
	ca.to(s.now)
	fa.seats += seats
	ca.seats += seats
	fa.executing += executing
	ca.executing += executing
	l.seatsInUse += seats
	l.executing += executing
	l.dirty = true
	l.noteDemand(s.now)
}

func (s *state) wait(r *req, q int) {
	l := r.lv
	r.queue = q
	l.queues[q].push(r)
	fa, ca := s.accOf(l.flows, r.flow), s.accOf(l.clients, r.client)
	fa.to(s.now)
	ca.to(s.now)
	fa.waitSeats += r.seats
	ca.waitSeats += r.seats
	fa.waiting++
	ca.waiting++
	l.waiting++
	l.waitSeats += r.seats
	l.noteDemand(s.now)
}

func (s *state) unwait(r *req) {
	l := r.lv
	fa, ca := s.accOf(l.flows, r.flow), s.accOf(l.clients, r.client)
	fa.to(s.now)
	ca.to(s.now)
	fa.waitSeats -= r.seats
	ca.waitSeats -= r.seats
	fa.waiting--
	ca.waiting--
	l.waiting--
	l.waitSeats -= r.seats
	l.noteDemand(s.now)
}

func (s *state) accOf(m map[int32]*acc, i int32) *acc {
	a := m[i]
	if a == nil {
		a = &acc{last: s.now}
		m[i] = a
	}
	return a
}

// WorkSum is queue q's TotalWorkSum, for fairqueue.Shard.ChooseQueue.
func (l *level) WorkSum(q int) fairqueue.SeatSeconds {
	return l.queues[q].work
}

// learnLimit corrects the level's current limit by what a served request
// tells of it, after its own fate was decided, where its wait is the
// server's own measure (exact: the audit's apf-queue-wait): one that
// waited (waitShown) found no seat for it, one dispatched at once found
// one. The borrowing pass gives the limit from a demand the
// reconstruction only approximates; that evidence wins, within the
// level's lower and upper limits. A wait told only by the split of a
// latency around τ (the httplog's, or an audit event's without
// annotation) corrects nothing: on a server short of CPU τ, the lag of the
// filters around APF, is tens of milliseconds, the split errs by as much,
// and the limit it moved swung between the lower and the upper limit
// within one period, where the server's stays fixed (docs/reconstruct.md).
func (l *level) learnLimit(r *req) {
	if l.exempt || !r.exact {
		return
	}
	lower, upper := max(l.limits.LowerCL, 1), max(l.limits.UpperCL, 1)
	switch {
	case r.waitShown && l.queues != nil && l.seatsInUse+r.seats <= l.limit:
		l.limit = min(max(l.seatsInUse+r.seats-1, lower), upper)
	case !r.waiting && l.executing > 0 && l.seatsInUse+r.seats > l.limit:
		l.limit = min(max(l.seatsInUse+r.seats, lower), upper)
	}
}

// atCeiling reports whether l's current limit is the highest it can have:
// its upper limit, or the nominal one when the reconstruction does not
// borrow.
func (s *state) atCeiling(l *level) bool {
	return s.opts.NoBorrowing || l.limit >= max(l.limits.UpperCL, 1)
}

// canAccommodate is upstream's canAccommodateSeatsLocked over the
// reconstructed seats (fairqueue.CanAccommodateSeats).
func (l *level) canAccommodate(seats int) bool {
	return fairqueue.CanAccommodateSeats(l.exempt, seats, l.limit, l.seatsInUse, l.executing)
}

// arrive decides a request's fate from the reconstructed state at its
// arrival at APF, then puts it where the log says it went.
func (s *state) arrive(p *pending) {
	r, l, f := p.r, p.r.lv, &p.fate
	if l.inc != nil {
		l.inc.arrived[r.flow]++
	}
	f.SeatsInUse, f.Limit, f.Waiting = l.seatsInUse, l.limit, l.waiting
	f.NominalLimit, f.LimitFromLog = l.limits.NominalCL, !s.opts.NoBorrowing && s.passes > 0
	rec429 := r.status == 429
	if p.focus {
		f.Snapshot = s.snapshot(l, f.Hand)
	}
	switch {
	case l.exempt:
		if rec429 {
			f.Class = ClassNotAPF
		}
	case l.queues == nil:
		f.Rejected = !l.canAccommodate(r.seats)
		if f.Rejected || rec429 {
			f.Reason = "concurrency-limit"
		}
		if rec429 && !f.Rejected {
			f.Class = ClassSeatsFree
		} else if !rec429 && f.Rejected {
			f.Class = ClassNoRoomButServed
		}
	default:
		q := l.shard.ChooseQueue(p.hash, l)
		f.Queue = q
		if f.Snapshot != nil {
			for i := range f.Snapshot.Queues {
				f.Snapshot.Queues[i].Chosen = f.Snapshot.Queues[i].Index == q
			}
		}
		full := l.seatsInUse >= l.limit && l.queues[q].length >= l.qll
		f.Rejected = full
		switch {
		case rec429 && r.timeOut && !full:
			// enqueued; its fate is decided when its wait limit passes
			s.wait(r, q)
			s.push(r.apfAt+r.waitLimit, evTimeOut, r)
			return
		case rec429 || full:
			f.Reason = "queue-full"
		}
		switch {
		case rec429 && !full && l.seatsInUse < l.limit:
			f.Class = ClassSeatsFree
		case rec429 && !full:
			f.Class = ClassRoomInQueue
			l.fillHand(f.Hand)
		case !rec429 && full:
			f.Class = ClassFullButServed
		}
	}
	if rec429 {
		s.decided(f, r, true)
		return
	}
	if r.waiting && !r.estimated && l.queues != nil && l.canAccommodate(r.seats) && l.waiting == 0 &&
		(s.tauUnmeasured || l.seatsInUse == 0 && r.start-r.apfAt < 2*int64(s.cal.Threshold)) {
		// with a seat free and nothing waiting, upstream dispatches the
		// request in the same StartRequest that enqueues it
		// (queueset.go:dispatchAsMuchAsPossibleLocked), so it did not
		// wait, whatever the filters' lag after it. Its recorded wait is
		// read as that lag where τ rests on no measured lag (too few
		// requests with an execution time), or where the level was idle
		// and the wait under twice τ: the first request of a burst on a
		// server short of CPU starts executing a few milliseconds after
		// its dispatch. A longer wait, or one beside a seat in use, shows
		// a queue the reconstruction does not see more often than not.
		r.waiting, r.waitShown = false, false
		r.dispatch = s.now
		f.Execution += f.Wait
		f.Wait = 0
	}
	if !r.waiting && !r.estimated && l.queues != nil && r.start > r.apfAt && (s.atCeiling(l) || !r.exact) && !l.canAccommodate(r.seats) {
		// its wait was under τ, but it found every seat taken: upstream
		// enqueues it (StartRequest dispatches only what the seats
		// allow), so it waited, in its queue, at the latest until its
		// recorded execution began. τ is the lag of the filters around
		// APF, which on a CPU-starved server exceeds the time a slot
		// takes to open; the level's seats tell here. Below the level's
		// ceiling that holds for a wait split from a latency around τ,
		// which does not correct the limit (learnLimit); an exact one
		// (the audit's apf-queue-wait) tells the limit instead.
		r.waiting, r.waitShown = true, true
		r.dispatch = r.start
		f.Wait, f.Execution = time.Duration(r.start-r.apfAt), time.Duration(r.end-r.start)
	}
	// what the request's own times say of the limit (for an audit event
	// without annotation: a latency above τ counts as a wait)
	l.learnLimit(r)
	if r.estimated && l.queues != nil {
		r.waiting = !l.canAccommodate(r.seats) || l.waiting > 0
		if !r.waiting {
			r.dispatch = s.now
			f.Wait, f.Execution = 0, time.Duration(r.end-s.now)
		}
	}
	queued := r.waiting && l.queues != nil
	s.decided(f, r, !queued)
	if queued {
		if f.WaitFrom == WaitHTTPLog && l.queues[f.Queue].length >= l.qll && l.seatsInUse < l.limit {
			// the log says it waited and the server enqueued it, so its
			// queue had room, and its level every seat taken; the
			// reconstruction has the queue full and a seat free beside
			// requests waiting, which upstream never leaves
			// (dispatchAsMuchAsPossibleLocked dispatches on every release
			// and arrival): the waiting requests the seats allow were
			// dispatched already, their executions starting late on a
			// server short of CPU. They are dispatched now, in the order
			// the log dispatched them.
			s.dispatchFreed(l)
		}
		if s.holdBack(p) {
			return
		}
		s.wait(r, f.Queue)
		heap.Push(&l.next, r)
		s.push(max(r.dispatch, s.now), evDispatch, r)
		return
	}
	s.execute(r)
}

// enqueue puts a request held back (holdBack) in the queue of its hand
// that the shuffle sharding picks now, to wait for its dispatch.
func (s *state) enqueue(p *pending) {
	r, l := p.r, p.r.lv
	p.fate.Queue = l.shard.ChooseQueue(p.hash, l)
	s.wait(r, p.fate.Queue)
	heap.Push(&l.next, r)
	s.push(max(r.dispatch, s.now), evDispatch, r)
}

// decided counts a fate and, when settled (rejected, or dispatched at
// once), hands it on; a request that waits is handed on when dispatched.
func (s *state) decided(f *Fate, r *req, settled bool) {
	l := r.lv
	f.Agrees = f.Status == 0 || f.Rejected == (f.Status == 429)
	if f.Agrees {
		f.Class = ""
	}
	if f.Status != 0 && f.Class != ClassNotAPF {
		l.res.Agreement.add(f.Rejected, f.Status == 429)
		if !f.Agrees {
			l.res.Disagreements[f.Class]++
		}
	}
	if f.Status == 429 && f.Reason != "" {
		if f.Rejected {
			l.res.Reasons[f.Reason]++
		}
		s.note429(l, r, f)
	}
	if settled {
		s.settle(r)
	}
}

// settle hands a request's fate on and lets its record go.
func (s *state) settle(r *req) {
	p := r.p
	if s.opts.OnFate != nil {
		s.opts.OnFate(&p.fate)
	}
	r.p = nil
	// the Fate, its Hand and its Record are reused after OnFate
	// (Options.OnFate)
	if p.fate.Hand != nil {
		s.hands = append(s.hands, p.fate.Hand[:0])
	}
	*p = pending{}
	s.free = append(s.free, p)
}

// snapshot is the state of l's queues in hand and its seat holders.
func (s *state) snapshot(l *level, hand []int) *Snapshot {
	sn := &Snapshot{QueueLengthLimit: l.qll, Holders: []FlowCount{}}
	for _, qi := range hand {
		q := l.queues[qi]
		qs := QueueState{Index: qi, Length: q.length}
		by := map[int32]*FlowCount{}
		for r := q.head; r != nil; r = r.next {
			fc := by[r.flow]
			if fc == nil {
				fc = &FlowCount{Flow: s.flows[r.flow]}
				by[r.flow] = fc
			}
			fc.Requests++
			fc.Seats += r.seats
		}
		for _, fc := range by {
			qs.Flows = append(qs.Flows, *fc)
		}
		sortFlowCounts(qs.Flows)
		sn.Queues = append(sn.Queues, qs)
	}
	for fi, a := range l.flows {
		if a.seats > 0 {
			sn.Holders = append(sn.Holders, FlowCount{Flow: s.flows[fi], Requests: a.executing, Seats: a.seats})
		}
	}
	sortFlowCounts(sn.Holders)
	return sn
}

// finish handles the events left and returns the result.
func (s *state) finish() *Result {
	s.advance(1<<63 - 1)
	s.closeIncidents(1<<63 - 1)
	for _, l := range s.order {
		if l.res.Agreement.Total() > 0 || len(l.res.Reasons) > 0 {
			s.res.Levels = append(s.res.Levels, *l.res)
		}
	}
	slices.SortFunc(s.res.Levels, func(a, b LevelResult) int { return strings.Compare(a.Level, b.Level) })
	slices.SortFunc(s.res.Incidents, func(a, b rejections.Incident) int {
		if c := a.Start.Compare(*b.Start); c != 0 {
			return c
		}
		return strings.Compare(a.Level, b.Level)
	})
	return &s.res
}

// IdentityOf is a record's identity with the group the impersonation
// filter adds to every non-anonymous user it impersonates
// (filters/impersonation.go), which an audit event of an impersonated
// request does not list.
func IdentityOf(w *workload.Request) engine.Identity {
	id := engine.Identity{User: w.User, Groups: w.Groups}
	if !w.UserKnown || w.User == "system:anonymous" || slices.Contains(w.Groups, "system:authenticated") || slices.Contains(w.Groups, "system:unauthenticated") {
		return id
	}
	id.Groups = append(slices.Clip(w.Groups), "system:authenticated")
	return id
}

// AnsweredBeforeAPF reports whether a record was answered ahead of APF: a 401
// (authentication runs before it), or a 403 whose httplog line carries no
// apf_pl (impersonation refused; authorization runs after APF, so its 403s
// were classified and held seats: server/config.go DefaultBuildHandlerChain).
func AnsweredBeforeAPF(w *workload.Request) bool {
	switch w.Status {
	case 401:
		return true
	case 403:
		return w.PriorityLevel == "" && w.Verb != "" && strings.ToUpper(w.Verb) == w.Verb
	}
	return false
}
