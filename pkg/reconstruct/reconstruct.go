package reconstruct

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// progressEvery is how many records pass between Progress calls.
const progressEvery = 1 << 16

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
		opts.ServerConcurrencyLimit = 600
	}
	if opts.ServerConcurrencyLimit < 0 {
		return nil, fmt.Errorf("server concurrency limit %d must be positive", opts.ServerConcurrencyLimit)
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = time.Minute
	}
	if opts.IncidentGap <= 0 {
		opts.IncidentGap = 10 * time.Second
	}
	if opts.Release.IsZero() {
		opts.Release = engine.NewestRelease
	}
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
	src, err := progressing(open, opts.Progress, "reconstructing")()
	if err != nil {
		return nil, err
	}
	rs := newState(opts, cal)
	tap := &tapper{src: src}
	rd := cal.Apply(tap)
	var w workload.Request
	for {
		err := rd.Next(&w)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the workload: %w", err)
		}
		rs.add(&w, tap.orig)
	}
	return rs.finish(), nil
}

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

// classify returns the FlowSchema, priority level, distinguisher and flow
// hash of a record: by the engine when its identity is known, else the
// recorded FlowSchema with the user agent and client host standing in for
// a ByUser distinguisher (as the replay does).
func classify(c *engine.Config, w *workload.Request, er *engine.Request) (fs, pl, dist string, hash uint64, err error) {
	if w.UserKnown {
		cl := c.Classify(*er)
		if cl.FlowSchema == nil || cl.PriorityLevel == nil {
			return "", "", "", 0, fmt.Errorf("%s: no FlowSchema matches", w.Source)
		}
		return cl.FlowSchema.Name, cl.PriorityLevel.Name, cl.Flow.Distinguisher, cl.Flow.Hash, nil
	}
	var schema *flowcontrolv1.FlowSchema
	for _, s := range c.FlowSchemas {
		if s.Name == w.FlowSchema {
			schema = s
		}
	}
	switch {
	case schema != nil:
		fs, pl = schema.Name, schema.Spec.PriorityLevelConfiguration.Name
	case w.PriorityLevel != "":
		return w.FlowSchema, w.PriorityLevel, "", 0, nil
	default:
		return "", "", "", 0, fmt.Errorf("%s: no identity and no recorded priority level (give the audit log alongside the httplog)", w.Source)
	}
	if p := c.PriorityLevels[pl]; p != nil && p.Spec.Limited != nil && p.Spec.Limited.LimitResponse.Queuing != nil && p.Spec.Limited.LimitResponse.Queuing.Queues > 1 {
		if m := schema.Spec.DistinguisherMethod; m != nil {
			switch m.Type {
			case flowcontrolv1.FlowDistinguisherMethodByUserType:
				dist = "client:" + w.UserAgent + "@" + hostOf(w.SourceIP)
			case flowcontrolv1.FlowDistinguisherMethodByNamespaceType:
				dist = er.Info.Namespace
			}
		}
		hash = engine.HashFlowID(fs, dist)
	}
	return fs, pl, dist, hash, nil
}

func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
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
	evArrive
)

type event struct {
	t    int64
	kind uint8
	seq  int64
	r    *req
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	if h[i].kind != h[j].kind {
		return h[i].kind < h[j].kind
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
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
