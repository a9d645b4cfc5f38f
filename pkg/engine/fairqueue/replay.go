package fairqueue

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// ReplayConfig is one APF configuration to replay a workload against.
type ReplayConfig struct {
	// Config is the digested FlowSchemas and priority levels.
	Config *engine.Config
	// ServerConcurrencyLimit is --max-requests-inflight plus
	// --max-mutating-requests-inflight (default 600).
	ServerConcurrencyLimit int
	// RequestTimeout is the server's --request-timeout (default 60 s): it
	// sets the queue wait limits (engine.RequestWaitLimit).
	RequestTimeout time.Duration
	// NoBorrowing fixes every level at its nominal limit instead of running
	// the periodic borrowing every 10 s.
	NoBorrowing bool
	// Release is the Kubernetes release whose borrowing pass is replayed
	// (engine.AllocateCurrentLimitsFor); zero means engine.NewestRelease.
	Release engine.Release
	// Work, when set, re-estimates a request's seats for the level this
	// configuration gives it: a changed configuration can move a request
	// to a level whose seat cap differs from the one it was recorded in.
	Work func(w *workload.Request, er *engine.Request, level string, sr *Request)
	// SameWork, if set, says that Work leaves a request as it is when the
	// configuration of Compile put it in level before (the level Work
	// reads of it) and this one puts it in level after: Compiled.Replay
	// calls Work only for the others. Replay does not read it.
	SameWork func(before, after string) bool
	// CPU, if set, models the server's CPU for this configuration's
	// run (Options.CPU).
	CPU CPU
	// Speed is how fast this run's server executes requests against the
	// recorded one's: every request's execution time and queued overhead
	// (the time its seat is held by the server's own work) divide by it.
	// 0 means 1, the recorded server. The additional latency of a
	// mutating request's final seats is upstream's estimate, not work, and
	// is kept.
	Speed float64
	// Unstretch takes every request's execution back to its time alone
	// (Request.RecordedStretch) before Speed: CPU stretches them by the
	// model the calibration read their recorded stretches from.
	Unstretch bool
}

// ReplayOptions tune how recorded requests become simulated ones.
type ReplayOptions struct {
	// DefaultServiceTime is the execution time of requests that record none
	// and were rejected, or are watches (other audit events without httplog
	// lines use their latency). Default: the running mean of the recorded
	// execution times, or 10 ms before any is seen.
	DefaultServiceTime time.Duration
	// OnOutcome receives every request's fate in the "before" run.
	OnOutcome func(*workload.Request, *Outcome)
	// KeepReceivedArrival replays every request at its received time. By
	// default a request the server rejected at once (a 429 with no
	// execution time, answered before its wait limit) arrives when it was
	// answered, which is when it reached APF.
	KeepReceivedArrival bool
}

// Report is the result of a replay: the "before" configuration's levels at
// the top level and, when a change was given, the "after" configuration's.
// Its JSON is what `kubectl apf simulate -o json` prints.
type Report struct {
	Result
	// After is the replay with the changed configuration, if any.
	After *Result `json:"after,omitempty"`
	// Workload describes what was read.
	Workload WorkloadStats `json:"workload"`
	// Agreement compares, per level of the "before" configuration, the
	// predicted rejections with the status the server recorded (requests
	// without a recorded status are left out).
	Agreement []LevelAgreement `json:"agreement,omitempty"`
}

// LevelAgreement is the confusion matrix of predicted rejections against
// recorded 429 responses for one level. Not every 429 is APF's (a pod
// eviction blocked by a PodDisruptionBudget answers 429 too).
type LevelAgreement struct {
	Level string `json:"level"`
	// BothRejected: predicted rejected, server answered 429.
	BothRejected int64 `json:"bothRejected"`
	// OnlyPredicted: predicted rejected, server served it.
	OnlyPredicted int64 `json:"onlyPredicted"`
	// OnlyRecorded: predicted served, server answered 429.
	OnlyRecorded int64 `json:"onlyRecorded"`
	// BothServed: neither rejected.
	BothServed int64 `json:"bothServed"`
}

func (a *LevelAgreement) add(predicted, recorded bool) {
	switch {
	case predicted && recorded:
		a.BothRejected++
	case predicted:
		a.OnlyPredicted++
	case recorded:
		a.OnlyRecorded++
	default:
		a.BothServed++
	}
}

// Rejections returns how many of the recorded 429s were predicted, and how
// many there were.
func (a LevelAgreement) Rejections() (predicted, recorded int64) {
	return a.BothRejected, a.BothRejected + a.OnlyRecorded
}

// Dispatches returns how many of the requests the server served were
// predicted to be served, and how many it served.
func (a LevelAgreement) Dispatches() (predicted, recorded int64) {
	return a.BothServed, a.BothServed + a.OnlyPredicted
}

// Fraction returns the share of requests on which prediction and record
// agree (1 when there are none). With few 429s among many served requests
// it is high even when no 429 was predicted: Rejections and Dispatches say
// how each kind fared.
func (a LevelAgreement) Fraction() float64 {
	n := a.BothRejected + a.OnlyPredicted + a.OnlyRecorded + a.BothServed
	if n == 0 {
		return 1
	}
	return float64(a.BothRejected+a.BothServed) / float64(n)
}

// WorkloadStats counts how the recorded requests were used.
type WorkloadStats struct {
	// Records read from the workload.
	Records int64 `json:"records"`
	// UnknownIdentity records had no user (httplog without audit log):
	// they were put in their recorded FlowSchema and priority level.
	UnknownIdentity int64 `json:"unknownIdentity"`
	// Bypassed records are long-running requests that kube-apiserver serves
	// without APF (exec, logs, proxy, ...).
	Bypassed int64 `json:"bypassed"`
	// Skipped records could not be replayed (an unknown identity whose
	// recorded priority level does not exist, an unparsable path); FirstSkip
	// says why the first one was.
	Skipped   int64  `json:"skipped"`
	FirstSkip string `json:"firstSkip,omitempty"`
	// SkippedAfter counts the records the changed configuration could not
	// replay (its priority levels differ), if a change was given.
	SkippedAfter int64 `json:"skippedAfter,omitempty"`
	// EstimatedSeats records carried no work estimate and got 1 seat.
	EstimatedSeats int64 `json:"estimatedSeats"`
	// RecordedRejections counts the requests the server answered with 429.
	RecordedRejections int64 `json:"recordedRejections"`
	// ArrivalSpanSeconds is the time from the first record's arrival to the
	// last one's: how long the recorded traffic lasted (the simulation runs
	// on until the last request finishes and the borrowing settles).
	ArrivalSpanSeconds float64 `json:"arrivalSpanSeconds"`
}

// run is one configuration being replayed.
type run struct {
	cfg     ReplayConfig
	sim     *Simulator
	limits  []engine.LevelLimits
	levelIx map[string]int
	flowIx  map[flowKey]int32
	names   []string
	prev    map[string]int
	// classes memoizes the classification of the records
	classes engine.ClassifyMemo
}

type flowKey struct {
	level             int
	fs, distinguisher string
}

func (cfg ReplayConfig) release() engine.Release {
	if cfg.Release.IsZero() {
		return engine.NewestRelease
	}
	return cfg.Release
}

func newRun(cfg ReplayConfig, onOutcome func(*Outcome)) (*run, error) {
	if cfg.Config == nil {
		return nil, errors.New("no APF configuration to replay against")
	}
	if cfg.ServerConcurrencyLimit == 0 {
		cfg.ServerConcurrencyLimit = engine.DefaultServerConcurrencyLimit
	}
	if cfg.ServerConcurrencyLimit < 0 {
		return nil, fmt.Errorf("server concurrency limit %d must be positive", cfg.ServerConcurrencyLimit)
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = engine.DefaultServerRequestTimeout
	}
	ru := &run{cfg: cfg, levelIx: map[string]int{}, flowIx: map[flowKey]int32{}, prev: map[string]int{}}
	ru.limits = cfg.Config.Limits(cfg.ServerConcurrencyLimit)
	var initial map[string]int
	if !cfg.NoBorrowing {
		// the config digest ends with a borrowing pass on zero demand
		// (apf_controller.go:digestConfigObjects → updateBorrowingLocked)
		initial = engine.AllocateCurrentLimitsFor(cfg.release(), ru.limits, nil, nil, cfg.ServerConcurrencyLimit).CurrentCL
	}
	levels := make([]LevelConfig, len(ru.limits))
	for i, l := range ru.limits {
		ru.levelIx[l.Name] = i
		lc := LevelConfig{Name: l.Name, Exempt: l.Exempt, ConcurrencyLimit: l.NominalCL}
		if initial != nil {
			lc.ConcurrencyLimit = initial[l.Name]
		}
		ru.prev[l.Name] = lc.ConcurrencyLimit
		pl := cfg.Config.PriorityLevels[l.Name]
		if lim := pl.Spec.Limited; lim != nil && lim.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue && lim.LimitResponse.Queuing != nil {
			q := lim.LimitResponse.Queuing
			lc.Queues, lc.HandSize, lc.QueueLengthLimit = int(q.Queues), int(q.HandSize), int(q.QueueLengthLimit)
		}
		levels[i] = lc
	}
	opts := Options{OnOutcome: onOutcome, DefaultWaitLimit: engine.DefaultRequestWaitLimit(cfg.RequestTimeout), CPU: cfg.CPU}
	if !cfg.NoBorrowing {
		opts.Borrow = ru.borrow
	}
	var err error
	ru.sim, err = NewSimulator(levels, opts)
	return ru, err
}

func (ru *run) borrow(stats []engine.SeatDemandStats) []int {
	m := make(map[string]engine.SeatDemandStats, len(stats))
	for i, s := range stats {
		m[ru.limits[i].Name] = s
	}
	cur := engine.AllocateCurrentLimitsFor(ru.cfg.release(), ru.limits, m, ru.prev, ru.cfg.ServerConcurrencyLimit)
	out := make([]int, len(ru.limits))
	for i, l := range ru.limits {
		out[i] = cur.CurrentCL[l.Name]
		ru.prev[l.Name] = out[i]
	}
	return out
}

// flow returns the flow index for per-flow statistics.
func (ru *run) flow(level int, fs, dist string) int32 {
	k := flowKey{level, fs, dist}
	if i, ok := ru.flowIx[k]; ok {
		return i
	}
	i := int32(len(ru.names))
	ru.flowIx[k] = i
	name := fs
	if dist != "" {
		name += "/" + dist
	}
	ru.names = append(ru.names, name)
	ru.sim.opts.FlowNames = ru.names
	return i
}

// errSkip marks a record that cannot be replayed under a configuration.
type errSkip struct{ msg string }

func (e errSkip) Error() string { return e.msg }

// RecordedFlow is the classification of a recorded request.
type RecordedFlow struct {
	FlowSchema, PriorityLevel, Distinguisher string
	// Hash is the flow hash, 0 where the server computes none.
	Hash uint64
}

// ClassifyRecorded classifies a recorded request under c: by the engine
// when its identity is known. Without one, it keeps the recorded FlowSchema
// when c still has it, and stands in for a ByUser distinguisher with the
// user agent and the client's host. Not its port: a client that opens a
// connection per request would otherwise count as a new flow each time,
// and the per-flow state would grow with the requests rather than the
// clients.
func ClassifyRecorded(c *engine.Config, w *workload.Request, er *engine.Request) (RecordedFlow, error) {
	return ClassifyRecordedMemo(nil, c, w, er)
}

// ClassifyRecordedMemo is ClassifyRecorded with the engine's
// classification memoized in m (none when m is nil).
func ClassifyRecordedMemo(m *engine.ClassifyMemo, c *engine.Config, w *workload.Request, er *engine.Request) (RecordedFlow, error) {
	var out RecordedFlow
	if w.UserKnown {
		var cl engine.Classification
		if m != nil {
			cl = m.Classify(c, er)
		} else {
			cl = c.Classify(*er)
		}
		return RecordedFlow{cl.FlowSchema.Name, cl.PriorityLevel.Name, cl.Flow.Distinguisher, cl.Flow.Hash}, nil
	}
	fs := findFlowSchema(c, w.FlowSchema)
	switch {
	case fs != nil:
		out.FlowSchema, out.PriorityLevel = fs.Name, fs.Spec.PriorityLevelConfiguration.Name
	case w.PriorityLevel != "":
		return RecordedFlow{FlowSchema: w.FlowSchema, PriorityLevel: w.PriorityLevel}, nil
	default:
		return out, fmt.Errorf("%s: no identity and no recorded priority level (give the audit log alongside the httplog)", w.Source)
	}
	if pl := c.PriorityLevels[out.PriorityLevel]; pl != nil && pl.Spec.Limited != nil && pl.Spec.Limited.LimitResponse.Queuing != nil && pl.Spec.Limited.LimitResponse.Queuing.Queues > 1 {
		if m := fs.Spec.DistinguisherMethod; m != nil {
			switch m.Type {
			case flowcontrolv1.FlowDistinguisherMethodByUserType:
				out.Distinguisher = "client:" + w.UserAgent + "@" + hostOf(w.SourceIP)
			case flowcontrolv1.FlowDistinguisherMethodByNamespaceType:
				out.Distinguisher = er.Info.Namespace
			}
		}
		out.Hash = engine.HashFlowID(out.FlowSchema, out.Distinguisher)
	}
	return out, nil
}

// toSim classifies a recorded request under this run's configuration.
func (ru *run) toSim(w *workload.Request, er *engine.Request, sr *Request) error {
	rf, err := ClassifyRecordedMemo(&ru.classes, ru.cfg.Config, w, er)
	if err != nil {
		return errSkip{err.Error()}
	}
	fsName, plName, dist, hash := rf.FlowSchema, rf.PriorityLevel, rf.Distinguisher, rf.Hash
	li, ok := ru.levelIx[plName]
	if !ok {
		return errSkip{fmt.Sprintf("%s: priority level %q is not in the configuration", w.Source, plName)}
	}
	sr.Level, sr.Hash = li, hash
	sr.Flow = ru.flow(li, fsName, dist)
	wl, err := engine.RequestWaitLimit(*er, ru.cfg.RequestTimeout)
	if err != nil {
		return errSkip{fmt.Sprintf("%s: %v", w.Source, err)}
	}
	sr.WaitLimit = wl
	return nil
}

// hostOf strips the port from a recorded client address ("10.0.0.5:53422",
// "[::1]:6443"); an address without one is returned as it is.
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

func findFlowSchema(c *engine.Config, name string) *flowcontrolv1.FlowSchema {
	if name == "" {
		return nil
	}
	for _, fs := range c.FlowSchemas {
		if fs.Name == name {
			return fs
		}
	}
	return nil
}

// Replay replays the workload against before and, if after is not nil,
// against after in the same pass (the workload is read once), and returns
// both summaries. Only the records' arrivals, identities, paths, execution
// times and work estimates are used: what the server answered is counted in
// WorkloadStats.RecordedRejections for comparison.
//
// The steps are the replayer's methods: newReplayer prepares the runs, add
// reads and classifies one record (advance first dispatches what no later
// record can precede, emit hands a request to every run), and finish
// dispatches the rest, drains the runs and builds the report.
func Replay(src workload.Reader, before ReplayConfig, after *ReplayConfig, opts ReplayOptions) (*Report, error) {
	rp, err := newReplayer(before, after, opts)
	if err != nil {
		return nil, err
	}
	if err := rp.read(src); err != nil {
		return nil, err
	}
	return rp.finish()
}

// held is what an outcome needs of its record. Outcomes come while a request
// is added or, for queued requests, later: it is kept until then, so memory
// follows the requests in flight.
type held struct {
	status int
	rec    *workload.Request // only with opts.OnOutcome
}

// replayer is one pass of Replay over a workload.
type replayer struct {
	opts     ReplayOptions
	runs     []*run
	rep      *Report
	inflight map[int64]held
	agree    map[int]*LevelAgreement
	// Requests wait in pending until no later record can arrive before them:
	// immediately rejected ones are moved to the moment they were rejected.
	pending   *pendingHeap
	lastAdded time.Duration

	parsed engine.RequestCache
	id     int64
	start  time.Time
	// svc is the running mean execution time of the recorded requests of
	// limited levels so far, levelSvc that of each recorded level's
	svc         runningMean
	levelSvc    map[string]*runningMean
	defaultWait time.Duration
	// compile, when set, keeps the records for a Compiled instead of
	// replaying them
	compile *compiling
}

// newReplayer prepares the runs of before and, if not nil, after.
func newReplayer(before ReplayConfig, after *ReplayConfig, opts ReplayOptions) (*replayer, error) {
	rp := &replayer{
		opts:     opts,
		inflight: map[int64]held{},
		agree:    map[int]*LevelAgreement{},
	}
	runs := make([]*run, 0, 2)
	b, err := newRun(before, rp.onOutcome)
	if err != nil {
		return nil, fmt.Errorf("preparing the replay: %w", err)
	}
	runs = append(runs, b)
	if after != nil {
		a, err := newRun(*after, nil)
		if err != nil {
			return nil, fmt.Errorf("preparing the replay of the changed configuration: %w", err)
		}
		runs = append(runs, a)
	}
	rp.runs = runs
	rp.rep = &Report{}
	rp.pending = &pendingHeap{}
	rp.defaultWait = before.RequestTimeout
	if rp.defaultWait == 0 {
		rp.defaultWait = time.Minute
	}
	return rp, nil
}

// onOutcome receives the "before" run's outcomes: it counts the agreement
// with the recorded status and passes the outcome on to opts.OnOutcome.
func (rp *replayer) onOutcome(o *Outcome) {
	h, ok := rp.inflight[o.ID]
	if !ok {
		return
	}
	delete(rp.inflight, o.ID)
	if h.status != 0 {
		a := rp.agree[o.Level]
		if a == nil {
			a = &LevelAgreement{}
			rp.agree[o.Level] = a
		}
		a.add(o.Reason != Executed, h.status == 429)
	}
	if h.rec != nil {
		rp.opts.OnOutcome(h.rec, o)
	}
}

// add reads one record: it advances time to its reception, classifies it
// under every run and leaves it pending until its arrival.
func (rp *replayer) add(w *workload.Request) error {
	rep := rp.rep
	rep.Workload.Records++
	if w.Status == 429 {
		rep.Workload.RecordedRejections++
	}
	if rp.start.IsZero() {
		rp.start = w.Arrival
	}
	rp.id++
	id := rp.id
	received := w.Arrival.Sub(rp.start)
	rep.Workload.ArrivalSpanSeconds = max(rep.Workload.ArrivalSpanSeconds, received.Seconds())
	if err := rp.advance(received); err != nil {
		return err
	}
	if !w.UserKnown {
		rep.Workload.UnknownIdentity++
	}
	er, err := rp.parsed.Parse(w.Method, w.URI, engine.Identity{User: w.User, Groups: w.Groups})
	if err != nil {
		rep.Workload.skip(fmt.Sprintf("%s: %v", w.Source, err))
		return nil
	}
	if er.Bypass != "" {
		rep.Workload.Bypassed++
		return nil
	}
	p := &pendingReq{id: id, at: received, status: w.Status}
	base := Request{ID: id, InitialSeats: 1, QueuedOverhead: w.QueuedOverhead, RecordedStretch: w.RecordedStretch}
	if w.HasSeats {
		base.InitialSeats, base.FinalSeats, base.AdditionalLatency = w.InitialSeats, w.FinalSeats, w.AdditionalLatency
	} else {
		rep.Workload.EstimatedSeats++
	}
	base.ServiceTime = rp.serviceTime(w, &er)
	// A 429 without an execution time that came back before the wait
	// limit was rejected on reaching APF, which is when it was answered:
	// authentication and the other filters ahead of APF can take
	// milliseconds under load and reorder requests received together.
	if !rp.opts.KeepReceivedArrival && w.Status == 429 && !w.HasServiceTime {
		if wl, err := engine.RequestWaitLimit(er, rp.defaultWait); err == nil && w.Latency < wl {
			p.at += w.Latency
		}
	}
	if rp.compile != nil {
		rp.compile.record(w, &er, p, base)
		heap.Push(rp.pending, p)
		return nil
	}
	any, err := rp.classify(w, &er, p, base)
	if err != nil || !any {
		return err
	}
	if rp.opts.OnOutcome != nil {
		rec := *w
		p.rec = &rec
	}
	heap.Push(rp.pending, p)
	return nil
}

// recordedLevel is the level the recorded configuration (the first run's)
// gives the record: the one it names (httplog's apf_pl), else its
// classification. An audit log names none: its 429s executed, in a
// change, for the running mean of every recorded request, exempt ones
// included, and not of their own level's, which the replay now reads so.
func (rp *replayer) recordedLevel(w *workload.Request, er *engine.Request) string {
	if w.PriorityLevel != "" || len(rp.runs) == 0 {
		return w.PriorityLevel
	}
	ru := rp.runs[0]
	rf, err := ClassifyRecordedMemo(&ru.classes, ru.cfg.Config, w, er)
	if err != nil {
		return ""
	}
	return rf.PriorityLevel
}

// exempt reports whether level is an exempt level of the recorded
// configuration (the first run's).
func (rp *replayer) exempt(level string) bool {
	if len(rp.runs) == 0 {
		return false
	}
	ru := rp.runs[0]
	i, ok := ru.levelIx[level]
	return ok && ru.limits[i].Exempt
}

// serviceTime is the execution time a record's request is replayed with.
func (rp *replayer) serviceTime(w *workload.Request, er *engine.Request) time.Duration {
	switch {
	case w.HasServiceTime:
		level := rp.recordedLevel(w, er)
		if !rp.exempt(level) {
			// the fallback of a level none of whose executions came yet
			// is the limited levels': an exempt one holds no seat, and
			// its /metrics scrapes are no measure of a limited level's
			// work (crowded-30-seed18: one of 825 ms at the load's start)
			rp.svc.add(w.ServiceTime)
		}
		if rp.levelSvc == nil {
			rp.levelSvc = map[string]*runningMean{}
		}
		m := rp.levelSvc[level]
		if m == nil {
			m = &runningMean{}
			rp.levelSvc[level] = m
		}
		m.add(w.ServiceTime)
		return w.ServiceTime
	case w.Status != 429 && w.Latency > 0 && er.Info.Verb != "watch":
		// an upper bound: the latency includes the wait in the queue.
		// A watch's latency is its whole life, while APF only holds
		// its seats until it is initialised.
		return w.Latency
	case rp.opts.DefaultServiceTime > 0:
		return rp.opts.DefaultServiceTime
	}
	// a 429 executes, in a change, as its own level's requests did, not
	// as every level's: crowded-30's 1-seat tiny LISTs took 7.2 ms beside
	// 3-seat wide's 11.4 ms and exempt GETs' 32 ms, and the mean of all
	// made a change that queues its 429s predict 89 where re-runs got 52
	if m := rp.levelSvc[rp.recordedLevel(w, er)]; m != nil {
		return m.value()
	}
	if rp.svc.n > 0 {
		return rp.svc.value()
	}
	return 10 * time.Millisecond
}

// classify converts the record into p's request for every run, counting the
// runs that cannot replay it; it reports whether any run can.
func (rp *replayer) classify(w *workload.Request, er *engine.Request, p *pendingReq, base Request) (bool, error) {
	any := false
	for i, ru := range rp.runs {
		p.reqs[i] = base
		if err := ru.toSim(w, er, &p.reqs[i]); err != nil {
			var sk errSkip
			if !errors.As(err, &sk) {
				return false, err
			}
			if i == 0 {
				rp.rep.Workload.skip(sk.msg)
			} else {
				rp.rep.Workload.SkippedAfter++
			}
			continue
		}
		if ru.cfg.Work != nil {
			ru.cfg.Work(w, er, ru.limits[p.reqs[i].Level].Name, &p.reqs[i])
		}
		if ru.cfg.Unstretch {
			p.reqs[i].unstretch()
		}
		if sp := ru.cfg.Speed; sp > 0 && sp != 1 {
			r := &p.reqs[i]
			r.ServiceTime = time.Duration(float64(r.ServiceTime) / sp)
			r.QueuedOverhead = time.Duration(float64(r.QueuedOverhead) / sp)
		}
		p.ok[i], any = true, true
	}
	return any, nil
}

// advance dispatches the pending requests that arrive by received, when no
// later record can come before them. Time moves on (and the runs borrow
// seats) as the simulators are given these arrivals.
func (rp *replayer) advance(received time.Duration) error {
	for rp.pending.Len() > 0 && (*rp.pending)[0].at <= received {
		if err := rp.emit(heap.Pop(rp.pending).(*pendingReq)); err != nil {
			return err
		}
	}
	return nil
}

// emit dispatches one pending request to every run that can replay it.
func (rp *replayer) emit(p *pendingReq) error {
	if rp.compile != nil {
		rp.compile.emit(p)
		return nil
	}
	at := max(p.at, rp.lastAdded)
	rp.lastAdded = at
	for i, ru := range rp.runs {
		if !p.ok[i] {
			continue
		}
		sr := p.reqs[i]
		sr.Arrival = at
		if i == 0 {
			rp.inflight[sr.ID] = held{status: p.status, rec: p.rec}
		}
		if err := ru.sim.Add(&sr); err != nil {
			return err
		}
	}
	return nil
}

// read adds every record of src, in order.
func (rp *replayer) read(src workload.Reader) error {
	var w workload.Request
	for {
		err := src.Next(&w)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the workload: %w", err)
		}
		if err := rp.add(&w); err != nil {
			return err
		}
	}
}

// flush dispatches the requests still pending.
func (rp *replayer) flush() error {
	for rp.pending.Len() > 0 {
		if err := rp.emit(heap.Pop(rp.pending).(*pendingReq)); err != nil {
			return err
		}
	}
	return nil
}

// finish dispatches the requests still pending, drains every run and
// reports the results with the agreement per level.
func (rp *replayer) finish() (*Report, error) {
	if err := rp.flush(); err != nil {
		return nil, err
	}
	rep := rp.rep
	for i, ru := range rp.runs {
		ru.sim.Drain()
		res := ru.sim.Result()
		if i == 0 {
			rep.Result = *res
			for li, a := range rp.agree {
				a.Level = res.Levels[li].Name
				rep.Agreement = append(rep.Agreement, *a)
			}
			slices.SortFunc(rep.Agreement, func(a, b LevelAgreement) int { return strings.Compare(a.Level, b.Level) })
		} else {
			rep.After = res
		}
	}
	return rep, nil
}

// pendingReq is a converted record waiting for its (possibly moved) arrival.
type pendingReq struct {
	at     time.Duration
	id     int64
	reqs   [2]Request
	ok     [2]bool
	status int
	rec    *workload.Request
	// class, work and noWait are Compile's (compiling.record)
	class, work int32
	noWait      bool
}

type pendingHeap []*pendingReq

func (h pendingHeap) Len() int { return len(h) }
func (h pendingHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].id < h[j].id
}
func (h pendingHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pendingHeap) Push(x any)   { *h = append(*h, x.(*pendingReq)) }
func (h *pendingHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return x
}

func (ws *WorkloadStats) skip(msg string) {
	ws.Skipped++
	if ws.FirstSkip == "" {
		ws.FirstSkip = msg
	}
}

// runningMean is a running mean of execution times.
type runningMean struct {
	mean float64
	n    int64
}

func (m *runningMean) add(d time.Duration) {
	m.n++
	m.mean += (float64(d) - m.mean) / float64(m.n)
}

func (m *runningMean) value() time.Duration { return time.Duration(m.mean) }
