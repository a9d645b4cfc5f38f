package calibrate

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// Derive reads the workload once and infers the per-level overheads. The
// reader must yield the same records, in the same order, as the one later
// given to Apply.
func Derive(src workload.Reader, opts Options) (*Result, error) {
	return derive(src, opts, nil, nil)
}

func derive(src workload.Reader, opts Options, waits []time.Duration, prev *Result) (*Result, error) {
	params := paramsOf(opts)
	p := newPreparer(params, opts, &Estimated{})
	p.waits, p.overheads, p.kinds = waits, prev, kindMeans{}
	if prev != nil && prev.prep != nil {
		p.kindExec = prev.prep.kindExec
	}
	if prev != nil {
		p.serial = prev.serialWaits
	}
	o := newObserver(params, p.limits)
	var (
		w        workload.Request
		x        obs
		idx      int
		arrivals arrivalCount
	)
	for {
		err := src.Next(&w)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the workload for calibration: %w", err)
		}
		arrivals.add(opts.MetricsWindow, w.Arrival, params.ClockSlack)
		if _, ok := p.prepare(idx, &w, &x); ok {
			o.add(&x)
		}
		idx++
	}
	var wr TimeRange
	if !p.start.IsZero() && !p.last.IsZero() {
		wr = TimeRange{From: p.start, To: p.last}
	}
	opts, uncovered := coverEvidence(params, opts, wr, arrivals)
	res := o.finish(opts, uncovered)
	res.Workload, res.Uncovered = wr, uncovered
	res.AuditOnly = idx > 0 && !p.sawExec
	res.prep = newPreparer(params, opts, &res.Estimated)
	res.prep.waits = waits
	res.prep.kindExec = p.kinds.means()
	res.prep.serial = p.serial
	return res, nil
}

// Apply returns a reader that yields src's records prepared for the
// replay: the overhead of their level in QueuedOverhead, and the estimated
// execution time and seats of records that carry none. src must yield the
// records Derive read. The counts of Estimated are those of the last Apply.
func (r *Result) Apply(src workload.Reader) workload.Reader {
	fp, fc := r.Estimated.FixedPointIterations, r.Estimated.FixedPointChange
	r.Estimated = Estimated{FixedPointIterations: fp, FixedPointChange: fc}
	r.DispatchTimes = nil
	p := newPreparer(r.params, r.prep.opts, &r.Estimated)
	p.waits, p.overheads, p.kindExec, p.serial = r.prep.waits, r, r.prep.kindExec, r.prep.serial
	return &applied{src: src, p: p, r: r, params: r.params}
}

// Executions calls f with each record of src (the records Derive read)
// that the replay executes (neither a 429 nor exempt) and the execution
// time the replay of the recorded configuration gives it, as Apply
// prepares it: the recorded one, else its estimate, with its stretch or
// stall taken out where a CPU model is to place them. A rule that reads
// from an audit log alone what httplog records is judged by these
// against httplog + audit's (pkg/simulate's ablation study). The counts
// of the last Apply stay as they were.
func (r *Result) Executions(src workload.Reader, f func(w *workload.Request, exec time.Duration)) error {
	est, dt := r.Estimated, r.DispatchTimes
	defer func() { r.Estimated, r.DispatchTimes = est, dt }()
	return r.readApplied(src, "its executions", func(a *applied, w *workload.Request) {
		if a.ok && a.x.hasExec && !a.x.rejected && !a.x.exempt && w.HasServiceTime {
			f(w, w.ServiceTime)
		}
	})
}

// readApplied reads src as Apply prepares it for the replay, calling f
// with each record and the reader, whose x, er, ok and idx are the
// record's; what names the reading in an error.
func (r *Result) readApplied(src workload.Reader, what string, f func(a *applied, w *workload.Request)) error {
	a := r.Apply(src).(*applied)
	for {
		var w workload.Request
		err := a.Next(&w)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the workload for %s: %w", what, err)
		}
		f(a, &w)
	}
}

type applied struct {
	// params are the calibration's thresholds
	params *Params
	src    workload.Reader
	p      *preparer
	r      *Result
	idx    int
	// x is the last record prepared, er its request, ok whether the
	// replay reads it
	x  obs
	er engine.Request
	ok bool
}

func (a *applied) Next(w *workload.Request) error {
	if err := a.src.Next(w); err != nil {
		return err
	}
	a.er, a.ok = a.p.prepare(a.idx, w, &a.x)
	if a.ok {
		if !w.HasServiceTime && a.x.hasExec {
			w.ServiceTime, w.HasServiceTime = a.x.exec, true
			switch a.x.execFrom {
			case fromAnnotations:
				a.r.Estimated.ExecutionFromAnnotations++
			case fromReplay:
				a.r.Estimated.ExecutionFromReplay++
			case fromEnds:
				a.r.Estimated.ExecutionFromEnds++
			}
		}
		a.r.countWait(&a.x)
		w.QueuedOverhead = a.r.OverheadAt(a.x.level, a.x.arrival)
		// under a CPU model the stalls are the model's to place: a
		// recorded one becomes its level's median execution
		if s, ok := a.r.stallAt[a.x.level]; ok && (a.x.execFrom == fromRecord || a.x.execFrom == fromEnds) && !a.x.rejected && w.HasServiceTime && w.ServiceTime >= s[0] {
			w.ServiceTime = s[1]
			a.r.Estimated.StallsReplaced++
		}
		// under the shared-CPU model the stretch is the model's to give:
		// the recorded execution is taken back to what it would have
		// been alone
		if f := a.r.recordedStretch(a.idx); f > 1 && w.HasServiceTime {
			w.ServiceTime = max(time.Duration(float64(w.ServiceTime)/f), a.params.MinExecution)
		}
		// under the CPU evidence's model, only the replay of a change on
		// it (Result.ServerBeyond) takes the execution back so: the
		// others keep the recorded time
		w.RecordedStretch = a.r.beyondStretch(a.idx)
	}
	a.idx++
	return nil
}

// Calibrate is the calibration's one composition of its estimators, in
// the order each needs the others: the observation pass and its
// estimators (Derive: passEstimators), then the estimators over the
// workload as the calibration prepares it (workloadEstimators: the fixed
// point of the waits an audit log alone lacks, the shared-CPU model). The
// dispatch check follows, over the replays (CheckDispatches). open must
// return a fresh reader of the same workload at every call.
func Calibrate(open func() (workload.Reader, error), recorded fairqueue.ReplayConfig, opts Options, maxIter int) (*Result, error) {
	return calibrate(open, recorded, opts, maxIter, workloadEstimators)
}

// calibrate is Derive over a first reader from open, then es.
func calibrate(open func() (workload.Reader, error), recorded fairqueue.ReplayConfig, opts Options, maxIter int, es []estimator) (*Result, error) {
	src, err := open()
	if err != nil {
		return nil, err
	}
	res, err := Derive(src, opts)
	if err != nil {
		return nil, err
	}
	if err := estimate(res, &inputs{opts: opts, open: open, recorded: recorded, maxIter: maxIter}, es); err != nil {
		return nil, err
	}
	return res, nil
}

// DeriveAuditOnly is Derive for a workload that may have no execution
// times (an audit log alone): it then iterates to a fixed point in which
// every request not annotated with its queue wait is given the wait the
// replay of the recorded configuration gives it (fixedPoint). open must
// return a fresh reader of the same workload at every call.
func DeriveAuditOnly(open func() (workload.Reader, error), recorded fairqueue.ReplayConfig, opts Options, maxIter int) (*Result, error) {
	return calibrate(open, recorded, opts, maxIter, []estimator{{KindAuditWaits, auditWaits}})
}

// fixedPoint iterates, for an audit log alone, to a fixed point in which
// every request not annotated with its queue wait is given the wait the
// replay of the recorded configuration gives it, its execution time being
// its latency minus that wait, and the overheads are derived again from
// those waits (opts are the calibration's, as Derive was given them); the
// seat-time check then holds the estimates again (rebound). It keeps one
// duration per record in memory.
func (res *Result) fixedPoint(open func() (workload.Reader, error), recorded fairqueue.ReplayConfig, opts Options, maxIter int) error {
	var (
		waits    []time.Duration
		prevMean map[int]float64
	)
	for it := 1; it <= maxIter; it++ {
		src, err := open()
		if err != nil {
			return err
		}
		// the new waits replace the old in place (an outcome comes after
		// its record was prepared, which read the old one), damped: the
		// mean of the old and the new, so that a queue the first guess
		// overfills does not swing the estimate back and forth; a record
		// the replay did not execute this time gets half its old wait
		old := len(waits)
		executed := make([]uint64, (old+63)/64)
		sum, cnt := map[int]float64{}, map[int]float64{}
		_, err = fairqueue.Replay(res.Apply(src), recorded, nil, fairqueue.ReplayOptions{OnOutcome: func(_ *workload.Request, o *fairqueue.Outcome) {
			i := int(o.ID - 1)
			for i >= len(waits) {
				waits = append(waits, 0)
			}
			if o.Reason == fairqueue.Executed {
				wait := o.Start - o.Arrival
				sum[o.Level] += float64(wait)
				cnt[o.Level]++
				if i < old {
					executed[i/64] |= 1 << (i % 64)
					wait = (waits[i] + wait) / 2
				}
				waits[i] = wait
			}
		}})
		if err != nil {
			return fmt.Errorf("calibrating: replay %d: %w", it, err)
		}
		for i := range old {
			if executed[i/64]&(1<<(i%64)) == 0 {
				waits[i] /= 2
			}
		}
		// convergence: the largest change of a level's mean queue wait
		mean, change, rel := map[int]float64{}, 0.0, 0.0
		for l, n := range cnt {
			mean[l] = sum[l] / n
			if prevMean != nil {
				d := math.Abs(mean[l] - prevMean[l])
				change = max(change, d)
				rel = max(rel, d/max(mean[l], float64(res.params.ConvergedChange)))
			}
		}
		if src, err = open(); err != nil {
			return err
		}
		nres, err := derive(src, opts, waits, res)
		if err != nil {
			return err
		}
		*res = *nres
		res.Estimated.FixedPointIterations = it
		res.Estimated.FixedPointChange = Duration(change)
		// converged when no level's mean wait moved by more than
		// ConvergedChange (1 ms) or ConvergedShare (2%)
		if prevMean != nil && (change < float64(res.params.ConvergedChange) || rel < res.params.ConvergedShare) {
			break
		}
		prevMean = mean
	}
	for range res.params.ReboundPasses {
		src, err := open()
		if err != nil {
			return err
		}
		if err := res.rebound(src); err != nil {
			return err
		}
	}
	return nil
}

// countWait counts where the dispatch time of x, about to be replayed,
// came from.
func (r *Result) countWait(x *obs) {
	if !x.hasWait || x.rejected {
		return
	}
	if r.DispatchTimes == nil {
		r.DispatchTimes = &DispatchTimes{}
	}
	switch x.waitFrom {
	case waitAnnotated:
		r.DispatchTimes.Annotated++
	case waitLatency:
		r.DispatchTimes.FromLatency++
	case waitReplay:
		r.DispatchTimes.FromReplay++
	case waitEnds:
		r.DispatchTimes.FromEnds++
	}
	if (x.waitFrom == waitReplay || x.waitFrom == waitEnds) && x.latency > annotationThreshold {
		r.DispatchTimes.SlowUnannotated++
	}
}
