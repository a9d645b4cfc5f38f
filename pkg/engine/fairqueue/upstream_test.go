package fairqueue_test

import (
	"container/heap"
	"context"
	"math/rand"
	"sync"
	"time"

	fq "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/testing/eventclock"
	fcmetrics "k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
)

// This file drives upstream's real queueset (k8s.io/apiserver
// fairqueuing/queueset) on its fake event clock, one operation at a time, so
// that its decisions can be compared with the simulator's request by request.
//
// Upstream needs a goroutine per request (Request.Finish blocks until the
// request is dispatched or its context ends). The driver keeps the run
// deterministic by never advancing the clock, and never starting the next
// operation, before every goroutine the previous one woke has reported back.
// Dispatch order is observed through the queueNoteFn, which upstream calls
// under its lock in dispatchLocked, i.e. in dispatch order.
//
// Ordering of simultaneous events is the simulator's documented convention:
// seat releases (the event clock's own events) first, then ends of
// execution, then wait time-outs, then arrivals; within a kind, the order in
// which the events were scheduled.

type noopGauge struct{}

func (noopGauge) Set(float64)            {}
func (noopGauge) Inc()                   {}
func (noopGauge) Dec()                   {}
func (noopGauge) Add(float64)            {}
func (noopGauge) SetToCurrentTime()      {}
func (noopGauge) SetDenominator(float64) {}

type msgKind int

const (
	msgStarted msgKind = iota
	msgDone
	msgNotExecuted
)

type msg struct {
	kind msgKind
	idx  int
}

type drvEvent struct {
	t    time.Duration
	kind int // 1 finish, 2 timeout, 3 borrowing
	seq  int
	idx  int
}

type upstreamDriver struct {
	clk    *eventclock.Fake
	t0     time.Time
	qs     []fq.QueueSet
	levels []fairqueue.LevelConfig
	demand []fq.Integrator
	stats  []engine.SeatDemandStats
	borrow fairqueue.BorrowFunc
	reqs   []fairqueue.Request
	defWL  time.Duration

	msgs     chan msg
	mu       sync.Mutex
	noted    []int // queueNoteFn(false) calls, in order
	consumed int

	finishCh []chan struct{}
	cancel   []context.CancelFunc
	state    []int // 0 pending, 1 waiting, 2 executing, 3 over
	started  map[int]bool
	pending  []int // dispatched, start not yet reported
	events   evHeap
	seq      int

	outcomes    []fairqueue.Outcome
	dispatchSeq int64
}

// runUpstream replays reqs (sorted by arrival) through upstream's queueset
// configured as level and returns one outcome per request, by index.
func runUpstream(level fairqueue.LevelConfig, reqs []fairqueue.Request, defaultWaitLimit time.Duration) []fairqueue.Outcome {
	out, _ := runUpstreamDemand(level, reqs, defaultWaitLimit)
	return out
}

// runUpstreamDemand is runUpstream that also returns the seat-demand
// integrator's results at the end (upstream feeds it from the queueset).
func runUpstreamDemand(level fairqueue.LevelConfig, reqs []fairqueue.Request, defaultWaitLimit time.Duration) ([]fairqueue.Outcome, fq.IntegratorResults) {
	out, demand := runUpstreamLevels([]fairqueue.LevelConfig{level}, reqs, defaultWaitLimit, nil)
	return out, demand[0]
}

// runUpstreamLevels drives one upstream queueset per level on a shared fake
// clock. With borrow set it plays the config controller's periodic
// borrowing: every 10 s it resets each level's seat-demand integrator,
// updates the level's demand statistics, asks borrow for the new limits
// and applies them through BeginConfigChange/Complete, in level order.
func runUpstreamLevels(levels []fairqueue.LevelConfig, reqs []fairqueue.Request, defaultWaitLimit time.Duration, borrow fairqueue.BorrowFunc) ([]fairqueue.Outcome, []fq.IntegratorResults) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk, _ := eventclock.NewFake(t0, 0, rand.New(rand.NewSource(1)))
	d := &upstreamDriver{
		clk: clk, t0: t0, levels: levels, reqs: reqs, defWL: defaultWaitLimit, borrow: borrow,
		msgs:     make(chan msg, 64),
		finishCh: make([]chan struct{}, len(reqs)),
		cancel:   make([]context.CancelFunc, len(reqs)),
		state:    make([]int, len(reqs)),
		started:  map[int]bool{},
		outcomes: make([]fairqueue.Outcome, len(reqs)),
		stats:    make([]engine.SeatDemandStats, len(levels)),
	}
	for _, level := range levels {
		demand := fq.NewNamedIntegrator(clk, level.Name)
		qs, err := queueset.NewQueueSetFactory(clk).BeginConstruction(queuingConfig(level), fcmetrics.RatioedGaugePair{RequestsWaiting: noopGauge{}, RequestsExecuting: noopGauge{}}, noopGauge{}, demand)
		if err != nil {
			panic(err)
		}
		d.demand = append(d.demand, demand)
		d.qs = append(d.qs, qs.Complete(fq.DispatchingConfig{ConcurrencyLimit: level.ConcurrencyLimit, ConcurrencyDenominator: max(level.ConcurrencyLimit, 1)}))
	}
	if borrow != nil {
		d.push(drvEvent{t: engine.BorrowingAdjustmentPeriod, kind: 3})
	}
	d.run()
	for _, c := range d.cancel {
		if c != nil {
			c()
		}
	}
	var res []fq.IntegratorResults
	for _, g := range d.demand {
		res = append(res, g.GetResults())
	}
	return d.outcomes, res
}

func queuingConfig(level fairqueue.LevelConfig) fq.QueuingConfig {
	qCfg := fq.QueuingConfig{Name: level.Name, DesiredNumQueues: level.Queues, QueueLengthLimit: level.QueueLengthLimit, HandSize: level.HandSize}
	if level.Exempt {
		qCfg.DesiredNumQueues = -1
	}
	return qCfg
}

// doBorrow is the config controller's periodic borrowing pass.
func (d *upstreamDriver) doBorrow() {
	for i, g := range d.demand {
		r := g.Reset()
		d.stats[i].Update(engine.IntegratorResults{Duration: r.Duration, Average: r.Average, Deviation: r.Deviation, Min: r.Min, Max: r.Max})
	}
	limits := d.borrow(d.stats)
	for i, qs := range d.qs {
		if limits[i] < 0 {
			continue
		}
		qsc, err := qs.BeginConfigChange(queuingConfig(d.levels[i]))
		if err != nil {
			panic(err)
		}
		qsc.Complete(fq.DispatchingConfig{ConcurrencyLimit: limits[i], ConcurrencyDenominator: max(limits[i], 1)})
		d.settle()
	}
}

func (d *upstreamDriver) now() time.Duration { return d.clk.Now().Sub(d.t0) }

func (d *upstreamDriver) push(e drvEvent) {
	e.seq = d.seq
	d.seq++
	heap.Push(&d.events, e)
}

type evHeap []drvEvent

func (h evHeap) Len() int { return len(h) }
func (h evHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.t != b.t {
		return a.t < b.t
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.seq < b.seq
}
func (h evHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *evHeap) Push(x any)   { *h = append(*h, x.(drvEvent)) }
func (h *evHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (d *upstreamDriver) run() {
	next := 0 // next arrival
	for {
		var tDrv time.Duration
		haveDrv := false
		isArrival := false
		if len(d.events) > 0 {
			tDrv, haveDrv = d.events[0].t, true
		}
		if next < len(d.reqs) && (!haveDrv || d.reqs[next].Arrival < tDrv) {
			tDrv, haveDrv, isArrival = d.reqs[next].Arrival, true, true
		}
		if tClk, ok := d.clk.GetNextTime(); ok && (!haveDrv || !tClk.After(d.t0.Add(tDrv))) {
			d.clk.SetTime(tClk) // runs the seat releases, waits for them
			d.settle()
			continue
		}
		if !haveDrv {
			return
		}
		d.clk.SetTime(d.t0.Add(tDrv))
		if isArrival {
			d.arrive(next)
			next++
		} else {
			e := heap.Pop(&d.events).(drvEvent)
			switch e.kind {
			case 1:
				d.finish(e.idx)
			case 2:
				d.timeout(e.idx)
			case 3:
				d.doBorrow()
				// like the simulator, keep borrowing while anything is pending
				if _, ok := d.clk.GetNextTime(); ok || next < len(d.reqs) || len(d.events) > 0 {
					d.push(drvEvent{t: e.t + engine.BorrowingAdjustmentPeriod, kind: 3})
				}
			}
		}
		d.settle()
	}
}

func (d *upstreamDriver) arrive(i int) {
	r := d.reqs[i]
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel[i] = cancel
	we := &fcrequest.WorkEstimate{InitialSeats: r.InitialSeats, FinalSeats: r.FinalSeats, AdditionalLatency: r.AdditionalLatency}
	noteFn := func(inQueue bool) {
		if !inQueue {
			d.mu.Lock()
			d.noted = append(d.noted, i)
			d.mu.Unlock()
		}
	}
	level := d.levels[r.Level]
	req, _ := d.qs[r.Level].StartRequest(ctx, we, r.Hash, "", "fs", i, nil, noteFn)
	d.outcomes[i] = fairqueue.Outcome{ID: r.ID, Level: r.Level, Flow: r.Flow, Arrival: r.Arrival, Seq: -1}
	if req == nil {
		d.state[i] = 3
		d.outcomes[i].Start = d.now()
		if level.Queues == 0 && !level.Exempt {
			d.outcomes[i].Reason = fairqueue.RejectedConcurrencyLimit
		} else {
			d.outcomes[i].Reason = fairqueue.RejectedQueueFull
		}
		return
	}
	d.finishCh[i] = make(chan struct{})
	d.state[i] = 1
	queueless := level.Exempt || level.Queues == 0
	if queueless {
		d.dispatched(i)
	} else {
		wl := r.WaitLimit
		if wl <= 0 {
			wl = d.defWL
		}
		d.push(drvEvent{t: r.Arrival + wl, kind: 2, idx: i})
	}
	go func() {
		executed := false
		req.Finish(func() {
			executed = true
			d.msgs <- msg{msgStarted, i}
			<-d.finishCh[i]
		})
		if executed {
			d.msgs <- msg{msgDone, i}
		} else {
			d.msgs <- msg{msgNotExecuted, i}
		}
	}()
}

func (d *upstreamDriver) dispatched(i int) {
	r := d.reqs[i]
	d.state[i] = 2
	d.outcomes[i].Reason = fairqueue.Executed
	d.outcomes[i].Start = d.now()
	d.outcomes[i].Seq = d.dispatchSeq
	d.dispatchSeq++
	d.pending = append(d.pending, i)
	d.push(drvEvent{t: d.now() + r.ServiceTime, kind: 1, idx: i})
}

// await receives messages until want arrives, remembering starts.
func (d *upstreamDriver) await(want msg) {
	for {
		m := <-d.msgs
		if m.kind == msgStarted {
			d.started[m.idx] = true
		}
		if m == want {
			return
		}
	}
}

// settle turns the dispatches noted during the last operation into
// outcomes, then waits until each dispatched goroutine is executing, so that
// nothing upstream is still moving when the clock advances.
func (d *upstreamDriver) settle() {
	d.mu.Lock()
	newly := append([]int(nil), d.noted[d.consumed:]...)
	d.consumed = len(d.noted)
	d.mu.Unlock()
	for _, i := range newly {
		d.dispatched(i)
	}
	for _, i := range d.pending {
		if !d.started[i] {
			d.await(msg{msgStarted, i})
		}
		delete(d.started, i)
	}
	d.pending = d.pending[:0]
}

func (d *upstreamDriver) finish(i int) {
	close(d.finishCh[i])
	d.await(msg{msgDone, i})
	d.state[i] = 3
}

func (d *upstreamDriver) timeout(i int) {
	if d.state[i] != 1 {
		return
	}
	d.cancel[i]()
	d.await(msg{msgNotExecuted, i})
	// the ejection calls queueNoteFn(false) too: that is not a dispatch
	d.mu.Lock()
	if n := len(d.noted); n > d.consumed && d.noted[n-1] == i {
		d.noted = d.noted[:n-1]
	}
	d.mu.Unlock()
	d.state[i] = 3
	d.outcomes[i].Reason = fairqueue.RejectedTimeOut
	d.outcomes[i].Start = d.now()
}
