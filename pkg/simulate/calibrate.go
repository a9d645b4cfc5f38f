package simulate

import (
	"context"
	"fmt"
	"math"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// FixedPointIterations bounds the audit-only fixed point.
const FixedPointIterations = 8

// serverMetrics is what the calibration reads from the server's metrics.
type serverMetrics struct {
	// counts are the object counts of the latest scrape (nil when
	// unknown), for the seats of LISTs that record none.
	counts engine.ObjectCounts
	// evidence is what the Go runtime and the process of the one instance
	// with two scrapes or more counted between the first and the latest,
	// and the window between them: the CPU models' evidence (none
	// otherwise). calibrateWorkload adds --cpu-limit.
	evidence calibrate.Evidence
	// scrapes are those the evidence's instance holds (of which two
	// were read).
	scrapes int
	notes   []string
}

// readServerMetrics reads, for the calibration, the metrics the state was
// loaded with (none with --defaults): the evidence of the two scrapes that
// best bracket target (the window replayed; scrapePair), so that a bundle
// of many scrapes (dump bundle --watch) is evidence for any window inside
// it.
func readServerMetrics(st *state.State, cfg Config, target calibrate.TimeRange) serverMetrics {
	var m serverMetrics
	if !cfg.Calibrate || len(st.Snapshots) == 0 {
		return m
	}
	if st.MetricsError != nil {
		m.notes = append(m.notes, "note: no object counts: "+st.MetricsError.Error())
		return m
	}
	counts, err := logs.ObjectCounts(st, cfg.Source)
	if err != nil {
		m.notes = append(m.notes, "note: no object counts: "+err.Error())
	}
	m.counts = counts
	seen := 0
	for _, s := range st.Snapshots {
		first, last, ok := scrapePair(s.Metrics, target)
		if !ok {
			if len(s.Metrics) >= 2 {
				m.notes = append(m.notes, fmt.Sprintf("note: the metrics' %d scrapes from %s are not evidence of the workload replayed (%s): none was taken before it or none after it", len(s.Metrics), logs.FormatWindow(s.Metrics[0].Time, s.Metrics[len(s.Metrics)-1].Time), logs.FormatWindow(target.From, target.To)))
			}
			continue
		}
		a, okGC := metrics.GCActivityBetween(first, last)
		u, okCPU := metrics.CPUUseBetween(first, last)
		if !okGC && !okCPU {
			continue
		}
		if seen++; seen > 1 {
			// the workload mixes the instances: no one server's pace
			m.notes = append(m.notes, "note: several instances' metrics have two scrapes; the CPU models read none of them")
			m.evidence = calibrate.Evidence{}
			break
		}
		if okGC {
			m.evidence.Runtime = &calibrate.Runtime{Span: a.Span, GCCycles: a.Cycles, MarkCPU: a.MarkCPU, Dispatched: a.Dispatched, GOMAXPROCS: a.GOMAXPROCS}
		}
		m.evidence.MetricsWindow = calibrate.TimeRange{From: first.Time, To: last.Time}
		m.scrapes = len(s.Metrics)
		if okCPU {
			m.evidence.CPUUse = &calibrate.CPUUse{Span: u.Span, ProcessCPU: u.ProcessCPU, RunnableWait: u.RunnableWait, HasRunnableWait: u.HasRunnableWait, GOMAXPROCS: u.GOMAXPROCS}
		}
	}
	return m
}

// prepareWorkload returns the reader of the requests the replay reads:
// with cfg.Calibrate, the calibration's reading of src, kept on a tape
// (rc.tape) from which the replay reads them again, prepared by the
// calibration (calibrate.Result.Apply); else src itself.
func prepareWorkload(ctx context.Context, src workload.Reader, rc *replayConfigs, m serverMetrics, cfg Config) (workload.Reader, *calibrate.Result, error) {
	if !cfg.Calibrate {
		return src, nil, nil
	}
	cal, tape, err := calibrateWorkload(ctx, src, rc.before, m, cfg)
	if err != nil {
		return nil, nil, err
	}
	rc.tape = tape
	return cal.Apply(logs.Cancellable(ctx, tape.Reader())), cal, nil
}

// calibrateWorkload derives the calibration of the workload against the
// recorded configuration (package calibrate). It reads src, the workload
// files or standard input, once: the calibration's pass reads them and
// keeps the requests on a tape, from which the fixed point of an audit log
// alone and the replay then read them.
func calibrateWorkload(ctx context.Context, src workload.Reader, recorded fairqueue.ReplayConfig, m serverMetrics, cfg Config) (*calibrate.Result, *workload.Tape, error) {
	opts := calibrate.Options{Config: recorded.Config, ServerConcurrencyLimit: recorded.ServerConcurrencyLimit, RequestTimeout: recorded.RequestTimeout, Counts: m.counts, Release: recorded.Release, NoCPUModel: !cfg.CPUModel, Evidence: m.evidence}
	opts.CPULimit = cfg.CPULimit
	tape := workload.NewTape()
	first := true
	open := func() (workload.Reader, error) {
		if first {
			first = false
			return tape.Record(src), nil
		}
		return logs.Cancellable(ctx, tape.Reader()), nil
	}
	cal, err := calibrate.Calibrate(open, recorded, opts, FixedPointIterations)
	if err != nil {
		tape.Close()
		return nil, nil, err
	}
	return cal, tape, nil
}

// DispatchChecks bounds the replays run again after the calibration
// refused an overhead for the dispatches it gave (calibrate.CheckDispatches).
const DispatchChecks = 3

// replay replays the prepared workload (replayOnce) and holds the
// calibration to the recorded dispatches: while it refuses an overhead
// (calibrate.CheckDispatches), the workload is prepared and replayed
// again from the tape, at most DispatchChecks times.
func replay(ctx context.Context, src workload.Reader, cal *calibrate.Result, rc replayConfigs) (*Result, error) {
	res, err := replayOnce(ctx, src, cal, rc)
	for i := 0; err == nil && cal != nil && rc.tape != nil; i++ {
		if !cal.CheckDispatches(res.Fit, i < DispatchChecks) {
			break
		}
		res, err = replayOnce(ctx, cal.Apply(logs.Cancellable(ctx, rc.tape.Reader())), cal, rc)
	}
	return res, err
}

// replayOnce replays the prepared workload once, or, under a CPU model, once
// per phase of its collections from the tape (replayCPU), and returns the
// result with its report and the fit of the recorded run.
func replayOnce(ctx context.Context, src workload.Reader, cal *calibrate.Result, rc replayConfigs) (*Result, error) {
	if cal != nil && cal.CPU != nil && rc.tape != nil {
		return replayCPU(ctx, cal, rc)
	}
	if cal != nil {
		// the shared-CPU model, if any: a server of its own for each run
		rc.before.CPU = cal.Server(0)
		if rc.after != nil {
			a := *rc.after
			a.CPU = cal.ServerAt(0, a.Speed)
			rc.after = &a
		}
	}
	fit := calibrate.NewFit(0)
	rep, err := fairqueue.Replay(src, rc.before, rc.after, fairqueue.ReplayOptions{OnOutcome: fit.Observe})
	if err != nil {
		return nil, err
	}
	return &Result{Report: rep, Fit: fit.Result(rep.Levels)}, nil
}

// CPUReplays are the replays of a CPU model, one per phase of its
// collections (calibrate.DefaultParams().CPUPhases).
type CPUReplays struct {
	// Replays are each replay's rejections per level, before and after
	// the change.
	Replays []CPUReplay `json:"replays"`
	// Chosen is the index of the replay the report shows: the one whose
	// rejections at the model's level (after the change, if any) are
	// nearest the mean.
	Chosen int `json:"chosen"`
	// Mean is that mean.
	Mean float64 `json:"mean"`
}

// CPUReplay is one replay of a CPU model: the rejections per level.
type CPUReplay struct {
	Rejected      map[string]int64 `json:"rejected"`
	AfterRejected map[string]int64 `json:"afterRejected,omitempty"`
}

// replayCPU replays the workload on the tape once per phase of the CPU
// model and keeps the replay nearest the mean.
func replayCPU(ctx context.Context, cal *calibrate.Result, rc replayConfigs) (*Result, error) {
	reps := &CPUReplays{}
	results := make([]*Result, calibrate.DefaultParams().CPUPhases)
	vals := make([]float64, calibrate.DefaultParams().CPUPhases)
	level := cal.CPU.Level
	for i := range calibrate.DefaultParams().CPUPhases {
		b := rc.before
		b.CPU = cal.Server(i)
		var a *fairqueue.ReplayConfig
		if rc.after != nil {
			ac := *rc.after
			ac.CPU = cal.ServerAt(i, ac.Speed)
			a = &ac
		}
		fit := calibrate.NewFit(0)
		rep, err := fairqueue.Replay(cal.Apply(logs.Cancellable(ctx, rc.tape.Reader())), b, a, fairqueue.ReplayOptions{OnOutcome: fit.Observe})
		if err != nil {
			return nil, err
		}
		r := CPUReplay{Rejected: rejectedByLevel(rep.Levels)}
		vals[i] = float64(r.Rejected[level])
		if rep.After != nil {
			r.AfterRejected = rejectedByLevel(rep.After.Levels)
			vals[i] = float64(r.AfterRejected[level])
		}
		reps.Replays = append(reps.Replays, r)
		results[i] = &Result{Report: rep, Fit: fit.Result(rep.Levels), CPUReplays: reps}
	}
	for _, v := range vals {
		reps.Mean += v / float64(len(vals))
	}
	for i, v := range vals {
		if math.Abs(v-reps.Mean) < math.Abs(vals[reps.Chosen]-reps.Mean) {
			reps.Chosen = i
		}
	}
	return results[reps.Chosen], nil
}

// rejectedByLevel sums each level's rejections over their reasons.
func rejectedByLevel(levels []fairqueue.LevelResult) map[string]int64 {
	m := map[string]int64{}
	for _, l := range levels {
		if n := total(l.Rejected); n > 0 {
			m[l.Name] = n
		}
	}
	return m
}
