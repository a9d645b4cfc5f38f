package simulate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// Prepared is a workload read once, calibrated once against the recorded
// configuration (the state's, -f included) and kept on a tape as the
// calibration prepares it, from which any number of configurations are
// replayed, each on its own and at the same time ("kubectl apf tune").
//
// A configuration replayed by Replay gets the figures Run gives it as the
// change: the same calibration (settled by the dispatch check over the
// replay of the recorded configuration, which does not depend on the
// change), the same re-estimation of the seats of requests that move to a
// level of another seat cap (calibrate.Work), the same CPU model, and the
// same warnings (Regime). Under a CPU model with phases (calibrate.CPUModel)
// Run settles the dispatch check on the replay of the recorded
// configuration its change's phase chose, Replay on the phase the
// recorded configuration's own replay chose; the two agree unless that
// check refuses an overhead differently in the two phases.
type Prepared struct {
	st       *state.State
	cfg      Config
	recorded *engine.Config
	counts   engine.CountsSeries
	// yearNote says the year the log's times were given (openWorkload)
	yearNote string
	cal      *calibrate.Result
	// raw is the workload as read, calTape its copy for the calibration,
	// prepared the requests as the calibration prepared them (or as read,
	// without calibration)
	raw, calTape, prepared *workload.Tape
	// compiled is the prepared tape read once into memory, classified by
	// class of requests (fairqueue.Compiled): what Replay replays
	compiled *fairqueue.Compiled
	baseline *Result
	files    *workload.Files
}

// Observer receives the fate of every request of one replay.
type Observer interface {
	Observe(*workload.Request, *fairqueue.Outcome)
}

// OutcomeObserver is an Observer that reads the outcome alone (its
// request's ID, level, flow, reason and times), not the record: Replay
// gives it the outcomes of the replay of the compiled workload
// (fairqueue.Compiled), which keeps no records. The replay of an Observer
// that is not one reads the prepared tape again.
type OutcomeObserver interface {
	Observer
	ObserveOutcome(*fairqueue.Outcome)
}

// Prepare reads and calibrates the workload of cfg against the state's
// configuration (its -f files applied: the configuration the workload ran
// on) and replays it once; Baseline is that replay. cfg.Sets and
// cfg.ServerSpeed are not read. The workload must be one apiserver
// instance's. Close releases the tapes.
func Prepare(ctx context.Context, st *state.State, cfg Config) (p *Prepared, err error) {
	prep := &Prepared{st: st, cfg: cfg, recorded: engine.NewConfig(st.FlowSchemas, st.PriorityLevels)}
	p = prep
	// an error returns a nil Prepared: what was opened is closed here
	defer func() {
		if err != nil {
			prep.Close()
		}
	}()
	if p.files, p.yearNote, err = openWorkload(ctx, st, cfg); err != nil {
		return nil, err
	}
	sp, err := splitInstances(ctx, logs.Cancellable(ctx, p.files.Reader), p.files)
	if err != nil {
		return nil, err
	}
	if sp == nil {
		return nil, fmt.Errorf("the workload holds no request to replay: %s", emptyWorkloadReason(p.files))
	}
	p.raw = sp.tape
	// the window replayed and the evidence read for it, as Run chooses them
	window, err := resolveWindow(cfg, &sp.arrivals)
	if err != nil {
		return nil, err
	}
	target := calibrate.TimeRange{From: sp.arrivals.span.First, To: sp.arrivals.span.Last}
	if window != nil {
		target = calibrate.TimeRange{From: window.From, To: window.To}
	}
	m, err := readServerMetrics(ctx, st, cfg, target)
	if err != nil {
		sp.tape.Close()
		return nil, err
	}
	p.counts = m.counts
	_, sp.window = coverEvidence(cfg.calibration(), m, &sp.arrivals, window)
	if err := settleExecutions(ctx, cfg, &m, &sp.arrivals, sp.window); err != nil {
		sp.tape.Close()
		return nil, err
	}
	if sp.window != nil {
		// the window's requests alone, on a tape of their own
		cut := workload.NewTape()
		rd := cut.Record(sp.reader(ctx))
		var w workload.Request
		for {
			if err := rd.Next(&w); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				cut.Close()
				return nil, err
			}
		}
		sp.tape.Close()
		p.raw = cut
	}
	if len(sp.names) > 1 {
		return nil, fmt.Errorf("the workload holds %d apiserver instances (%s), each with its own queues: give the files of one instance at a time", len(sp.names), joinNames(sp.names))
	}
	rc := replayConfigs{before: replayConfig(st, cfg, p.recorded), calibration: cfg.calibration()}
	src := logs.Cancellable(ctx, p.raw.Reader())
	if cfg.Calibrate {
		p.cal, p.calTape, err = calibrateWorkload(ctx, src, rc.before, m, cfg)
		if err != nil {
			return nil, err
		}
		rc.tape = p.calTape
		src = p.cal.Apply(logs.Cancellable(ctx, p.calTape.Reader()))
	}
	res, err := replay(ctx, src, p.cal, rc)
	if err != nil {
		return nil, err
	}
	if res.Workload.Records == 0 {
		return nil, fmt.Errorf("the workload holds no request to replay: %s", emptyWorkloadReason(p.files))
	}
	// the requests as the settled calibration prepares them, once
	p.prepared = workload.NewTape()
	in := logs.Cancellable(ctx, p.raw.Reader())
	if p.cal != nil {
		in = p.cal.Apply(logs.Cancellable(ctx, p.calTape.Reader()))
	}
	rd := p.prepared.Record(in)
	var w workload.Request
	for {
		if err := rd.Next(&w); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
	}
	// and once more into memory, classified by class of requests
	if p.compiled, err = fairqueue.Compile(logs.Cancellable(ctx, p.prepared.Reader()), replayConfig(st, cfg, p.recorded), fairqueue.ReplayOptions{}); err != nil {
		return nil, err
	}
	res.ServerConcurrencyLimit, res.ServerConcurrencySource = st.ServerConcurrency, ConcurrencyFrom{Source: st.ServerConcurrencySource}
	res.Release, res.ReleaseFrom = st.Release.String(), st.ReleaseFrom
	if p.cal != nil {
		report := p.cal.Report
		res.Calibration = &report
	}
	res.Join = p.files.Join
	res.Notes = slices.Concat(m.notes, workloadNotes(res.Report, p.files))
	if p.yearNote != "" {
		res.Notes = append([]string{p.yearNote}, res.Notes...)
	}
	p.baseline = res
	return p, nil
}

func joinNames(ns []string) string {
	if len(ns) > 4 {
		return fmt.Sprintf("%s, %s, ... %s", ns[0], ns[1], ns[len(ns)-1])
	}
	out := ""
	for i, n := range ns {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// Baseline is the replay of the recorded configuration: its levels, the
// agreement with the recorded 429s, the fit and the calibration.
func (p *Prepared) Baseline() *Result { return p.baseline }

// Recorded is the configuration the workload ran on.
func (p *Prepared) Recorded() *engine.Config { return p.recorded }

// Calibration is the settled calibration, nil without one. It is read
// only while replays run.
func (p *Prepared) Calibration() *calibrate.Result { return p.cal }

// Records is how many requests the prepared tape holds.
func (p *Prepared) Records() int64 { return p.prepared.Len() }

// Replay replays c over the prepared workload, as Run replays a change:
// the result's levels are the baseline's and its After c's, with the
// warnings of Regime. newObserver, if not nil, gives each replay (one per
// phase under a CPU model) an Observer of its requests' fates; the one of
// the replay the result shows is returned. Replays may run at the same
// time.
func (p *Prepared) Replay(ctx context.Context, c *engine.Config, newObserver func() Observer) (*Result, Observer, error) {
	return p.replay(ctx, c, newObserver, false, 1)
}

// ReplayAt is Replay on a server that runs at speed against the recorded
// one (Config.ServerSpeed: 1/1.1 is a server 10% slower).
func (p *Prepared) ReplayAt(ctx context.Context, c *engine.Config, speed float64, newObserver func() Observer) (*Result, Observer, error) {
	return p.replay(ctx, c, newObserver, false, speed)
}

// ReplayTape is Replay reading every request from the prepared tape again,
// as Replay did before the workload was compiled: what Replay gives must
// be what it gives (the tests compare them).
func (p *Prepared) ReplayTape(ctx context.Context, c *engine.Config, newObserver func() Observer) (*Result, Observer, error) {
	return p.replay(ctx, c, newObserver, true, 1)
}

func (p *Prepared) replay(ctx context.Context, c *engine.Config, newObserver func() Observer, tape bool, speed float64) (*Result, Observer, error) {
	res, obs, err := p.replayOn(ctx, c, newObserver, tape, false, speed)
	if err != nil {
		return nil, nil, err
	}
	// a change beyond the recorded concurrency, on the CPU evidence's
	// model (replayBeyond)
	b := beyondOf(res.Warnings, p.cal, res.After)
	if b == nil {
		return res, obs, nil
	}
	on, obs, err := p.replayOn(ctx, c, newObserver, tape, true, speed)
	if err != nil {
		return nil, nil, err
	}
	res.Report.After, res.Workload.SkippedAfter, res.CPUReplays = on.Report.After, on.Workload.SkippedAfter, on.CPUReplays
	res.BeyondCPU = b
	return res, obs, nil
}

// replayOn is replay's replay of c, on the CPU evidence's model with
// beyond (calibrate.Result.ServerBeyond), at speed, with its warnings.
func (p *Prepared) replayOn(ctx context.Context, c *engine.Config, newObserver func() Observer, tape, beyond bool, speed float64) (*Result, Observer, error) {
	a := replayConfig(p.st, p.cfg, c)
	a.Speed = speed
	if p.cfg.Calibrate {
		a.Work = calibrate.Work(p.st.Release, p.recorded, c, p.st.ServerConcurrency, p.counts)
		a.SameWork = calibrate.SameWork(p.recorded, c, p.st.ServerConcurrency)
	}
	brc := replayConfigs{beyond: beyond}
	phases := 1
	if p.cal != nil && p.cal.CPU != nil {
		phases = calibrate.DefaultParams().CPUPhases
	}
	type one struct {
		res *fairqueue.Report
		obs Observer
	}
	runs := make([]one, phases)
	for i := range phases {
		rc := a
		if p.cal != nil {
			rc.CPU, rc.Unstretch = brc.afterServer(p.cal, i, speed)
		}
		var obs Observer
		var opts fairqueue.ReplayOptions
		if newObserver != nil {
			obs = newObserver()
			opts.OnOutcome = obs.Observe
		}
		var rep *fairqueue.Report
		var err error
		if oo, ok := obs.(OutcomeObserver); (ok || obs == nil) && !tape {
			var on func(*fairqueue.Outcome)
			if ok {
				on = oo.ObserveOutcome
			}
			rep, err = p.compiled.Replay(ctx, rc, on)
		} else {
			rep, err = fairqueue.Replay(logs.Cancellable(ctx, p.prepared.Reader()), rc, nil, opts)
		}
		if err != nil {
			return nil, nil, err
		}
		runs[i] = one{rep, obs}
	}
	chosen := 0
	var reps *CPUReplays
	if phases > 1 {
		reps = &CPUReplays{}
		vals := make([]float64, phases)
		for i, r := range runs {
			rej := rejectedByLevel(r.res.Levels)
			reps.Replays = append(reps.Replays, CPUReplay{Rejected: rejectedByLevel(p.baseline.Levels), AfterRejected: rej})
			vals[i] = float64(rej[p.cal.CPU.Level])
			reps.Mean += vals[i] / float64(phases)
		}
		for i, v := range vals {
			if math.Abs(v-reps.Mean) < math.Abs(vals[chosen]-reps.Mean) {
				chosen = i
			}
		}
		reps.Chosen = chosen
	}
	b := p.baseline
	after := runs[chosen].res.Result
	rep := &fairqueue.Report{Result: b.Report.Result, After: &after, Workload: b.Workload, Agreement: b.Agreement}
	rep.Workload.SkippedAfter = runs[chosen].res.Workload.Skipped
	res := &Result{Report: rep, ServerConcurrencyLimit: b.ServerConcurrencyLimit, ServerConcurrencySource: b.ServerConcurrencySource,
		Join: b.Join, Release: b.Release, ReleaseFrom: b.ReleaseFrom, Calibration: b.Calibration, Fit: b.Fit, CPUReplays: reps}
	res.Warnings = Regime(p.cfg.params(), p.recorded, c, p.st.ServerConcurrency, res.Report, res.Calibration)
	res.NotKnown = NotKnownLevels(res.Warnings)
	return res, runs[chosen].obs, nil
}

// Close removes the tapes' temporary files.
func (p *Prepared) Close() error {
	var errs []error
	for _, t := range []*workload.Tape{p.raw, p.calTape, p.prepared} {
		if t != nil {
			errs = append(errs, t.Close())
		}
	}
	if p.files != nil {
		errs = append(errs, p.files.Close())
	}
	return errors.Join(errs...)
}
