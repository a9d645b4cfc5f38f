package simulate

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// serverMetrics is what the calibration reads from the server's metrics.
type serverMetrics struct {
	// counts are the object counts of the scrapes read (nil when
	// unknown), for the seats of LISTs that record none.
	counts engine.CountsSeries
	// evidence is what the Go runtime and the process of the one instance
	// with two scrapes or more counted between the first and the latest,
	// and the window between them: the CPU models' evidence (none
	// otherwise). calibrateWorkload adds --cpu-limit.
	evidence calibrate.Evidence
	// scrapes are those the evidence's instance holds (of which two
	// were read).
	scrapes int
	// store names the store the evidence was read from ("" for the
	// state's scrapes), and interval is how often it scraped.
	store    string
	interval time.Duration
	notes    []string
	// source are the evidence's instance's scrapes read, for
	// settleExecutions to pick APF's executions' pair again.
	source instanceScrapes
}

// setExecutions sets the evidence of APF's executions between the
// scrapes first and last (none where they hold no execution histogram).
func (m *serverMetrics) setExecutions(first, last *metrics.Scrape) {
	ex := metrics.ExecutionsBetween(first, last)
	m.evidence.Executions = ex
	m.evidence.ExecutionsWindow, m.evidence.ExecutionsGathering = calibrate.TimeRange{}, [2]time.Duration{}
	if ex != nil {
		m.evidence.ExecutionsWindow = calibrate.TimeRange{From: first.Time, To: last.Time}
		m.evidence.ExecutionsGathering = [2]time.Duration{first.Took, last.Took}
	}
}

// EvidenceStore is a metrics store the CPU evidence is read from
// (simulate --prometheus): pkg/state's StoreOptions through the command.
type EvidenceStore interface {
	// Scrapes returns, per apiserver instance, the store's scrapes that
	// bracket [from, to] and the widest pair inside it (oldest first),
	// with the families of the CPU evidence.
	Scrapes(ctx context.Context, from, to time.Time) ([]StoreScrapes, error)
	// Describe names the store.
	Describe() string
}

// StoreScrapes are a store's scrapes of one apiserver instance (oldest
// first), and how often the store scraped it.
type StoreScrapes struct {
	Instance string
	Scrapes  []*metrics.Scrape
	Interval time.Duration
}

// instanceScrapes are one instance's scrapes, of the state or a store.
type instanceScrapes struct {
	instance string
	// scrapes are those read, oldest first: every one the state holds, or
	// a store's or a long bundle's around the window replayed
	scrapes []*metrics.Scrape
	// total is how many scrapes of the instance the source holds
	total    int
	interval time.Duration
}

// readServerMetrics reads, for the calibration, the metrics the state was
// loaded with (none with --defaults): the evidence of the two scrapes that
// best bracket target (the window replayed; scrapePair), so that a bundle
// of many scrapes (dump bundle --watch) is evidence for any window inside
// it. With cfg.Store, the CPU evidence is the store's scrapes around
// target instead (preferred to the state's; the object counts stay the
// state's).
func readServerMetrics(ctx context.Context, st *state.State, cfg Config, target calibrate.TimeRange) (serverMetrics, error) {
	var m serverMetrics
	if !cfg.Calibrate || len(st.Snapshots) == 0 && cfg.Store == nil {
		return m, nil
	}
	if st.MetricsError != nil {
		m.notes = append(m.notes, "note: no object counts: "+st.MetricsError.Error())
		if cfg.Store == nil {
			return m, nil
		}
	} else if len(st.Snapshots) > 0 {
		counts, err := logs.ObjectCounts(st, cfg.Source)
		if err != nil {
			m.notes = append(m.notes, "note: no object counts: "+err.Error())
		}
		m.counts = counts
	}
	var sources []instanceScrapes
	bundled := 0
	for _, s := range st.Snapshots {
		if len(s.Metrics) >= 2 {
			bundled++
		}
		// a recorder's scrapes (dump bundle --watch) say how often it
		// scraped, as a store's samples do; two scrapes around a load do
		// not
		sources = append(sources, instanceScrapes{instance: s.Instance, scrapes: s.Metrics, total: len(s.Metrics), interval: medianGap(s.Metrics)})
	}
	if cfg.Recorded != nil {
		// the state holds a long bundle's latest two scrapes: its others
		// around the window are read instead
		if rec, err := cfg.Recorded(target.From, target.To); err != nil {
			m.notes = append(m.notes, "note: no CPU evidence from the bundle: its scrapes around the window replayed cannot be read: "+err.Error())
			sources = nil
		} else {
			sources = withRecorded(sources, rec)
			// and the object counts of its scrapes read around the
			// window, where the state holds its latest two
			if len(st.Snapshots) > 0 {
				for _, r := range rec {
					if c := logs.SeriesOf(r.Scrapes); r.Instance == st.Snapshots[0].Instance && c != nil {
						m.counts = c
					}
				}
			}
		}
	}
	if cfg.Store != nil {
		stored, notes, err := storeScrapes(ctx, cfg.Store, target, bundled)
		if err != nil {
			return m, err
		}
		m.notes = append(m.notes, notes...)
		if stored != nil {
			sources, m.store = stored, cfg.Store.Describe()
		}
	}
	seen := 0
	for _, s := range sources {
		first, last, ok := scrapePair(s.scrapes, target)
		if !ok {
			if len(s.scrapes) >= 2 {
				m.notes = append(m.notes, fmt.Sprintf("note: the metrics' %d scrapes from %s are not evidence of the workload replayed (%s): none was taken before it or none after it", s.total, logs.FormatWindow(s.scrapes[0].Time, s.scrapes[len(s.scrapes)-1].Time), logs.FormatWindow(target.From, target.To)))
			}
			continue
		}
		a, okGC := metrics.GCActivityBetween(first, last)
		u, okCPU := metrics.CPUUseBetween(first, last)
		// APF's executions between the pair, or where the window was cut
		// inside the scrapes (a long bundle's, a store's), between the
		// widest pair inside it: those count only the window's
		exFirst, exLast := executionsPair(s.scrapes, target, first, last)
		ex := metrics.ExecutionsBetween(exFirst, exLast)
		if !okGC && !okCPU && ex == nil {
			continue
		}
		if seen++; seen > 1 {
			// the workload mixes the instances: no one server's pace
			m.notes = append(m.notes, "note: several instances' metrics have two scrapes; the CPU models read none of them")
			m.evidence, m.source = calibrate.Evidence{}, instanceScrapes{}
			break
		}
		if okGC {
			m.evidence.Runtime = &calibrate.Runtime{Span: a.Span, GCCycles: a.Cycles, MarkCPU: a.MarkCPU, Dispatched: a.Dispatched, GOMAXPROCS: a.GOMAXPROCS}
		}
		m.evidence.MetricsWindow = calibrate.TimeRange{From: first.Time, To: last.Time}
		m.setExecutions(exFirst, exLast)
		m.source = s
		m.scrapes, m.interval = s.total, s.interval
		if okCPU {
			m.evidence.CPUUse = &u
		}
	}
	if m.store != "" && !m.evidence.MetricsWindow.IsZero() && !target.IsZero() {
		mw := m.evidence.MetricsWindow
		span, win := mw.To.Sub(mw.From), target.To.Sub(target.From)
		switch {
		case mw.From.After(target.From) || mw.To.Before(target.To):
			m.notes = append(m.notes, fmt.Sprintf("note: %s scraped the apiserver every %s, but holds no scrape of it before the window replayed (%s) or none after it: the CPU evidence is the samples of its scrapes at %s, inside the window",
				m.store, fmtInterval(m.interval), logs.FormatWindow(target.From, target.To), logs.FormatWindow(mw.From, mw.To)))
		default:
			m.notes = append(m.notes, fmt.Sprintf("note: %s scraped the apiserver every %s: the CPU evidence is the samples of the scrapes at %s, which bracket the window replayed (%s) to within one scrape each side; its figures are averages over those %s, of which the window is %s, so a burst much shorter than a few scrape intervals is averaged with the time around it",
				m.store, fmtInterval(m.interval), logs.FormatWindow(mw.From, mw.To), logs.FormatWindow(target.From, target.To), span.Round(time.Millisecond), percentOf(win, span)))
		}
	}
	return m, nil
}

// RecordedScrapes are a bundle's scrapes of one apiserver instance around
// the window replayed (Config.Recorded; dump.BundleSource.ScrapesAround).
type RecordedScrapes struct {
	Instance string
	// Scrapes, oldest first: the first and the last the bundle holds,
	// and those that best bracket the window (as the state's would be
	// chosen, were they all read).
	Scrapes []*metrics.Scrape
	// Times are the times of every scrape the bundle holds of it.
	Times []time.Time
}

// withRecorded puts a long bundle's scrapes around the window in place of
// the state's latest two, instance by instance.
func withRecorded(sources []instanceScrapes, rec []RecordedScrapes) []instanceScrapes {
	for _, r := range rec {
		for i := range sources {
			if sources[i].instance == r.Instance {
				sources[i] = instanceScrapes{instance: r.Instance, scrapes: r.Scrapes, total: len(r.Times), interval: metrics.MedianGap(r.Times)}
			}
		}
	}
	return sources
}

// storeScrapes reads the store's scrapes around target, as the sources of
// the evidence (nil, with a note, when the store holds none). bundled is
// the number of the state's instances with two scrapes or more, which the
// store is preferred to.
func storeScrapes(ctx context.Context, store EvidenceStore, target calibrate.TimeRange, bundled int) ([]instanceScrapes, []string, error) {
	if target.IsZero() {
		return nil, []string{fmt.Sprintf("note: the workload's requests carry no time: %s cannot be read as CPU evidence for them", store.Describe())}, nil
	}
	got, err := store.Scrapes(ctx, target.From, target.To)
	if err != nil {
		return nil, nil, fmt.Errorf("--prometheus: %w", err)
	}
	var out []instanceScrapes
	for _, g := range got {
		if len(g.Scrapes) > 0 {
			out = append(out, instanceScrapes{instance: g.Instance, scrapes: g.Scrapes, total: len(g.Scrapes), interval: g.Interval})
		}
	}
	if len(out) == 0 {
		n := fmt.Sprintf("note: %s holds no %s of the apiservers around the window replayed (%s): no CPU evidence from the store", store.Describe(), metrics.FamilyProcessCPU, logs.FormatWindow(target.From, target.To))
		if bundled > 0 {
			n += "; the bundle's scrapes are read instead"
		}
		return nil, []string{n}, nil
	}
	var notes []string
	if bundled > 0 {
		notes = append(notes, fmt.Sprintf("note: the CPU evidence is read from %s, not from the scrapes of --from: given both, the store is preferred", store.Describe()))
	}
	return out, notes, nil
}

// fmtInterval renders a scrape interval, "-" when unknown.
func fmtInterval(d time.Duration) string {
	if d <= 0 {
		return "- (one scrape each side)"
	}
	return d.String()
}

// percentOf is a of b as a percentage.
func percentOf(a, b time.Duration) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*a.Seconds()/b.Seconds())
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
	params := cfg.calibration()
	opts.Params = &params
	tape := workload.NewTape()
	first := true
	open := func() (workload.Reader, error) {
		if first {
			first = false
			return tape.Record(src), nil
		}
		return logs.Cancellable(ctx, tape.Reader()), nil
	}
	cal, err := calibrate.Calibrate(open, recorded, opts, params.FixedPointIterations)
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
			a.CPU, a.Unstretch = rc.afterServer(cal, 0, a.Speed)
			rc.after = &a
		}
	}
	fit := calibrate.NewFit(0, rc.calibration)
	rep, err := fairqueue.Replay(src, rc.before, rc.after, fairqueue.ReplayOptions{OnOutcome: fit.Observe})
	if err != nil {
		return nil, err
	}
	return &Result{Report: rep, Fit: fit.Result(rep.Levels)}, nil
}

// CPUReplays are the replays of a CPU model, one per phase of its
// collections (calibrate.Params.CPUPhases).
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
	phases := rc.calibration.CPUPhases
	results := make([]*Result, phases)
	vals := make([]float64, phases)
	level := cal.CPU.Level
	for i := range phases {
		b := rc.before
		b.CPU = cal.Server(i)
		var a *fairqueue.ReplayConfig
		if rc.after != nil {
			ac := *rc.after
			ac.CPU, ac.Unstretch = rc.afterServer(cal, i, ac.Speed)
			a = &ac
		}
		fit := calibrate.NewFit(0, rc.calibration)
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
