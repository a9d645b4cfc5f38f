package reconstruct

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// progressEvery is how many records pass between Progress calls.
const progressEvery = 1 << 16

// RunReader reconstructs the workload src yields: it is read once, onto a
// workload.Tape (in memory up to its limit, then in a temporary file),
// which the later passes read. wrap, if not nil, wraps every reader of the
// tape (to stop on a cancelled context).
func RunReader(src workload.Reader, opts Options, wrap func(workload.Reader) workload.Reader) (*Result, error) {
	tape := workload.NewTape()
	defer tape.Close()
	if wrap == nil {
		wrap = func(r workload.Reader) workload.Reader { return r }
	}
	first := true
	return Run(func() (workload.Reader, error) {
		if first {
			first = false
			return wrap(tape.Record(src)), nil
		}
		return wrap(tape.ReaderAhead()), nil
	}, opts)
}

// Run reconstructs the workload that open yields (a fresh reader of the
// same records at every call: a workload.Tape's Reader) under opts. It
// reads the workload once to calibrate (unless opts.Calibration is set:
// the threshold τ between a wait and the filters ahead of APF, and the
// seats of records that carry none) and once to reconstruct.
func Run(open func() (workload.Reader, error), opts Options) (*Result, error) {
	if opts.Config == nil {
		return nil, errors.New("no APF configuration to reconstruct against")
	}
	if opts.ServerConcurrencyLimit == 0 {
		opts.ServerConcurrencyLimit = engine.DefaultServerConcurrencyLimit
	}
	if opts.ServerConcurrencyLimit < 0 {
		return nil, fmt.Errorf("server concurrency limit %d must be positive", opts.ServerConcurrencyLimit)
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = engine.DefaultServerRequestTimeout
	}
	if opts.IncidentGap <= 0 {
		opts.IncidentGap = 10 * time.Second
	}
	if opts.Release.IsZero() {
		opts.Release = engine.NewestRelease
	}
	open = answeredAtAudit(open)
	cal := opts.Calibration
	if cal == nil {
		src, err := progressing(open, opts.Progress, "calibrating")()
		if err != nil {
			return nil, err
		}
		cal, err = calibrate.Derive(src, calibrate.Options{Config: opts.Config, ServerConcurrencyLimit: opts.ServerConcurrencyLimit,
			RequestTimeout: opts.RequestTimeout, Counts: opts.Counts, Release: opts.Release, NoCPUModel: true})
		if err != nil {
			return nil, err
		}
	}
	src, err := open()
	if err != nil {
		return nil, err
	}
	rs := newState(opts, cal)
	tap := &tapper{src: src}
	// the calibration completes the records in a goroutine of its own,
	// batches ahead of the reconstruction, which reads them here in the
	// same order; progress is told here, as the records arrive
	ah := applyAhead(cal.Apply(tap), tap)
	defer ah.close()
	var n int64
	for {
		it, err := ah.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the workload: %w", err)
		}
		if n++; opts.Progress != nil && n%progressEvery == 0 {
			opts.Progress("reconstructing", n)
		}
		rs.add(&it.w, it.orig)
	}
	return rs.finish(), nil
}

// answeredAtAudit has a request joined to its audit event answered when
// the event's ResponseComplete stage was stamped, where that is before
// httplog's answer (workload.Request.AuditLatency): the audit filter
// stamps it as the handlers inside it, APF's among them, return, and the
// seat is released then; httplog's latency runs on through the filters
// outside the audit filter (the event's own write, the timeout filter's
// hand-back), which a server short of CPU stretches. The execution stays
// httplog's apf_execution_time, now ending at that stamp.
func answeredAtAudit(open func() (workload.Reader, error)) func() (workload.Reader, error) {
	return func() (workload.Reader, error) {
		rd, err := open()
		if err != nil {
			return nil, err
		}
		return auditAnswered{rd}, nil
	}
}

type auditAnswered struct{ workload.Reader }

func (a auditAnswered) Next(r *workload.Request) error {
	err := a.Reader.Next(r)
	if err == nil && r.HasAuditLatency && r.AuditLatency < r.Latency {
		r.Latency = r.AuditLatency
	}
	return err
}

// applied is a record as the calibration completed it, with what it
// carried as read.
type applied struct {
	w    workload.Request
	orig recorded
}

// ahead reads a calibrated reader in a goroutine of its own, batches of
// records ahead of the caller. The reader's state (the calibration's
// counts) is the goroutine's until next has returned the reader's error
// (io.EOF at the end). Memory: at most aheadDepth+2 batches of aheadBatch
// records.
type ahead struct {
	ch   chan aheadBatchOf
	free chan []applied
	stop chan struct{}
	once sync.Once
	cur  []applied
	i    int
	err  error
}

type aheadBatchOf struct {
	items []applied
	err   error
}

const (
	aheadBatch = 256
	aheadDepth = 2
)

func applyAhead(rd workload.Reader, tap *tapper) *ahead {
	// free holds every batch there can be (as the workload's prefetch
	// does): the goroutine makes one only when free is empty, the others
	// being in the channel or with the caller
	a := &ahead{ch: make(chan aheadBatchOf, aheadDepth), free: make(chan []applied, aheadDepth+2), stop: make(chan struct{})}
	go a.run(rd, tap)
	return a
}

func (a *ahead) run(rd workload.Reader, tap *tapper) {
	for {
		var items []applied
		select {
		case items = <-a.free:
		default:
			items = make([]applied, 0, aheadBatch)
		}
		var err error
		for len(items) < aheadBatch {
			items = append(items, applied{})
			it := &items[len(items)-1]
			if err = rd.Next(&it.w); err != nil {
				items = items[:len(items)-1]
				break
			}
			it.orig = tap.orig
		}
		select {
		case a.ch <- aheadBatchOf{items, err}:
		case <-a.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

// next returns the next record, valid until the next call.
func (a *ahead) next() (*applied, error) {
	for {
		if a.i < len(a.cur) {
			a.i++
			return &a.cur[a.i-1], nil
		}
		if a.err != nil {
			return nil, a.err
		}
		if a.cur != nil {
			select {
			case a.free <- a.cur[:0]:
			default:
			}
		}
		b := <-a.ch
		a.cur, a.i, a.err = b.items, 0, b.err
	}
}

// close stops the goroutine at its next batch.
func (a *ahead) close() { a.once.Do(func() { close(a.stop) }) }

// progressing wraps open so that its readers report progress.
func progressing(open func() (workload.Reader, error), progress func(string, int64), stage string) func() (workload.Reader, error) {
	if progress == nil {
		return open
	}
	return func() (workload.Reader, error) {
		r, err := open()
		if err != nil {
			return nil, err
		}
		return &progressReader{r: r, f: progress, stage: stage}, nil
	}
}

type progressReader struct {
	r     workload.Reader
	f     func(string, int64)
	stage string
	n     int64
}

func (p *progressReader) Next(w *workload.Request) error {
	err := p.r.Next(w)
	if err == nil {
		p.n++
		if p.n%progressEvery == 0 {
			p.f(p.stage, p.n)
		}
	}
	return err
}

// recorded is what a record carried before the calibration filled in its
// estimates.
type recorded struct {
	exec, seats, queueWait bool
}

// tapper notes what each record carried as read.
type tapper struct {
	src  workload.Reader
	orig recorded
}

func (t *tapper) Next(w *workload.Request) error {
	err := t.src.Next(w)
	t.orig = recorded{exec: w.HasServiceTime, seats: w.HasSeats, queueWait: w.HasQueueWait}
	return err
}

// flowName is "flowSchema/distinguisher", or the FlowSchema alone.
func flowName(fs, dist string) string {
	if dist == "" {
		return fs
	}
	return fs + "/" + dist
}

// event kinds, in the order they are handled at one instant: a request
// that ends frees its seats before one that arrives then is decided.
const (
	evEnd uint8 = iota
	evFinalEnd
	evDispatch
	evTimeOut
	// evLateArrive: a served request held back (state.holdBack) is
	// enqueued at the latest here
	evLateArrive
	evArrive
	// evMark: an incident's seat holders are counted to here at least
	evMark
)

type event struct {
	t    int64
	kind uint8
	seq  int64
	r    *req
}

// eventHeap is a binary min-heap of events by (t, kind, seq), which
// orders every two events (seq is unique): the same pops as
// container/heap's, without boxing each event in an interface.
type eventHeap []event

func (h eventHeap) less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	if h[i].kind != h[j].kind {
		return h[i].kind < h[j].kind
	}
	return h[i].seq < h[j].seq
}

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	q := *h
	for j := len(q) - 1; j > 0; {
		i := (j - 1) / 2
		if !q.less(j, i) {
			break
		}
		q[i], q[j] = q[j], q[i]
		j = i
	}
}

func (h *eventHeap) pop() event {
	q := *h
	n := len(q) - 1
	e := q[0]
	q[0] = q[n]
	q[n] = event{}
	q = q[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && q.less(r, l) {
			j = r
		}
		if !q.less(j, i) {
			break
		}
		q[i], q[j] = q[j], q[i]
		i = j
	}
	*h = q
	return e
}

// sortFlowCounts orders most seats first, then by name.
func sortFlowCounts(fc []FlowCount) {
	slices.SortFunc(fc, func(a, b FlowCount) int {
		if a.Seats != b.Seats {
			return b.Seats - a.Seats
		}
		if a.Requests != b.Requests {
			return b.Requests - a.Requests
		}
		return strings.Compare(a.Flow, b.Flow)
	})
}
