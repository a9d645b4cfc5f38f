package simulate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// InstanceResult is the replay of one apiserver instance of the workload.
type InstanceResult struct {
	Name string `json:"name"`
	*Result
}

// split is the workload read once onto a tape, and its instances.
type split struct {
	tape *workload.Tape
	// names are the instances (resolved: an httplog file's lines go to the
	// audit log they were joined to), resolved maps each instance as read
	// to its name
	names    []string
	resolved map[string]string
	// arrivals are the workload's arrival times; window, when not nil,
	// the part of it replayed (reader)
	arrivals arrivals
	window   *ReplayWindow
}

// reader reads the tape again, within the window if one was chosen.
func (sp *split) reader(ctx context.Context) workload.Reader {
	r := logs.Cancellable(ctx, sp.tape.Reader())
	if sp.window == nil {
		return r
	}
	return &logs.Cut{Src: r, From: sp.window.From, To: sp.window.To}
}

// splitInstances reads src once onto a tape and finds the apiserver
// instances it holds (Request.Instance, resolved by files.Resolve). It
// returns nil for an empty workload.
func splitInstances(ctx context.Context, src workload.Reader, files *workload.Files) (*split, error) {
	sp := &split{tape: workload.NewTape(), resolved: map[string]string{}}
	rd := sp.tape.Record(src)
	var w workload.Request
	raws := map[string]bool{}
	for {
		err := rd.Next(&w)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			sp.tape.Close()
			return nil, err
		}
		raws[w.Instance] = true
		sp.arrivals.add(&w)
	}
	// the paths parsed for arrivals.ran are not needed once read
	sp.arrivals.parsed = engine.RequestCache{}
	if len(raws) == 0 {
		sp.tape.Close()
		return nil, nil
	}
	names := map[string]bool{}
	for raw := range raws {
		n := files.Resolve(raw)
		sp.resolved[raw], names[n] = n, true
	}
	sp.names = slices.Sorted(maps.Keys(names))
	return sp, nil
}

// instanceReader yields the requests of one instance, in the workload's
// order.
type instanceReader struct {
	workload.Reader
	resolved map[string]string
	name     string
}

func (o *instanceReader) Next(r *workload.Request) error {
	for {
		if err := o.Reader.Next(r); err != nil {
			return err
		}
		if o.resolved[r.Instance] == o.name {
			r.Instance = o.name
			return nil
		}
	}
}

// runInstances replays each instance of the workload on its own, the
// change applied to each, and sums them.
func runInstances(ctx context.Context, st *state.State, cfg Config, before, after *engine.Config, notes []string, m serverMetrics, files *workload.Files, sp *split) (*Result, error) {
	if m.evidence.Runtime != nil || m.evidence.CPUUse != nil {
		// the metrics are one server's; the instances are several
		m.evidence = calibrate.Evidence{}
		m.notes = append(m.notes, fmt.Sprintf("note: the workload holds %d apiserver instances: the CPU models, which read one server's metrics, are not used", len(sp.names)))
	}
	var insts []InstanceResult
	for _, name := range sp.names {
		res, err := runOne(ctx, st, cfg, before, after, m, logs.Cancellable(ctx, &instanceReader{Reader: sp.reader(ctx), resolved: sp.resolved, name: name}))
		if err != nil {
			return nil, fmt.Errorf("instance %s: %w", name, err)
		}
		if res.Workload.Records == 0 {
			continue
		}
		res.Notes = nil
		insts = append(insts, InstanceResult{Name: name, Result: res})
	}
	if len(insts) == 0 {
		return nil, fmt.Errorf("the workload holds no request to replay: %s", emptyWorkloadReason(files))
	}
	res := mergeResults(insts)
	res.ServerConcurrencyLimit, res.ServerConcurrencySource = st.ServerConcurrency, ConcurrencyFrom{Source: st.ServerConcurrencySource, EachInstance: true}
	res.Join, res.Release, res.ReleaseFrom = files.Join, st.Release.String(), st.ReleaseFrom
	if cfg.ServerSpeed != 1 {
		res.ServerSpeed = cfg.ServerSpeed
	}
	split := []string{fmt.Sprintf("note: the workload is %d apiserver instances, each replayed on its own (its own calibration, server concurrency limit and queues), the change applied to each; the figures sum them", len(sp.names))}
	for _, s := range files.Split(sp.names) {
		split = append(split, "note: instance "+s)
	}
	res.Notes = slices.Concat(notes, m.notes, split, workloadNotes(res.Report, files))
	return res, nil
}

// mergeResults sums the instances' replays: requests, dispatches,
// rejections and agreement added, each level's waits and peaks the largest
// of the instances' (each instance has its own queues and seats), the fit
// summed with the worst quality, the warnings each under its instance's
// name. The calibration and the CPU figures are the instances' own.
func mergeResults(insts []InstanceResult) *Result {
	out := &Result{Report: &fairqueue.Report{}, Instances: insts}
	var afters []*fairqueue.Result
	var befores []*fairqueue.Result
	agree := map[string]*fairqueue.LevelAgreement{}
	fits := map[string]*calibrate.LevelFit{}
	var fitOrder []string
	for _, in := range insts {
		r := in.Result
		befores = append(befores, &r.Report.Result)
		if r.After != nil {
			afters = append(afters, r.After)
		}
		w, ow := r.Workload, &out.Workload
		ow.Records += w.Records
		ow.UnknownIdentity += w.UnknownIdentity
		ow.Bypassed += w.Bypassed
		ow.Skipped += w.Skipped
		if ow.FirstSkip == "" && w.FirstSkip != "" {
			ow.FirstSkip = in.Name + ": " + w.FirstSkip
		}
		ow.SkippedAfter += w.SkippedAfter
		ow.EstimatedSeats += w.EstimatedSeats
		ow.RecordedRejections += w.RecordedRejections
		ow.ArrivalSpanSeconds = max(ow.ArrivalSpanSeconds, w.ArrivalSpanSeconds)
		for _, a := range r.Agreement {
			m := agree[a.Level]
			if m == nil {
				m = &fairqueue.LevelAgreement{Level: a.Level}
				agree[a.Level] = m
			}
			m.BothRejected += a.BothRejected
			m.OnlyPredicted += a.OnlyPredicted
			m.OnlyRecorded += a.OnlyRecorded
			m.BothServed += a.BothServed
		}
		for _, f := range r.Fit {
			m := fits[f.Level]
			if m == nil {
				m = &calibrate.LevelFit{Level: f.Level, Quality: f.Quality}
				fits[f.Level] = m
				fitOrder = append(fitOrder, f.Level)
			}
			m.Agreement = (m.Agreement*float64(m.Requests) + f.Agreement*float64(f.Requests)) / float64(max(m.Requests+f.Requests, 1))
			m.Requests += f.Requests
			m.Recorded += f.Recorded
			m.Predicted += f.Predicted
			if qualityRank(f.Quality) < qualityRank(m.Quality) {
				m.Quality = f.Quality
			}
		}
		for _, wn := range r.Warnings {
			wn.Text = in.Name + ": " + wn.Text
			out.Warnings = append(out.Warnings, wn)
		}
	}
	out.Report.Result = *mergeReplays(befores)
	if len(afters) > 0 {
		out.After = mergeReplays(afters)
	}
	for _, name := range slices.Sorted(maps.Keys(agree)) {
		out.Agreement = append(out.Agreement, *agree[name])
	}
	for _, name := range fitOrder {
		f := fits[name]
		if f.Recorded > 0 {
			f.Ratio = float64(f.Predicted) / float64(f.Recorded)
		}
		out.Fit = append(out.Fit, *f)
	}
	out.NotKnown = NotKnownLevels(out.Warnings)
	return out
}

func qualityRank(q string) int {
	switch q {
	case "poor":
		return 0
	case "fair":
		return 1
	}
	return 2
}

// mergeReplays sums replays of several instances: the levels (and their
// flows) by name, in the first replay's order.
func mergeReplays(rs []*fairqueue.Result) *fairqueue.Result {
	out := &fairqueue.Result{}
	for _, r := range rs {
		out.Requests += r.Requests
		out.SimulatedSeconds = max(out.SimulatedSeconds, r.SimulatedSeconds)
		out.PeakInFlight = max(out.PeakInFlight, r.PeakInFlight)
	}
	out.Levels = mergeLevels(func(yield func(fairqueue.LevelResult) bool) {
		for _, r := range rs {
			for _, l := range r.Levels {
				if !yield(l) {
					return
				}
			}
		}
	})
	return out
}

// mergeLevels sums levels (or flows) of the same name.
func mergeLevels(all func(func(fairqueue.LevelResult) bool)) []fairqueue.LevelResult {
	var out []fairqueue.LevelResult
	index := map[string]int{}
	flows := map[string][]fairqueue.LevelResult{}
	for l := range all {
		i, ok := index[l.Name]
		if !ok {
			index[l.Name] = len(out)
			out = append(out, fairqueue.LevelResult{Name: l.Name, Rejected: map[string]int64{}})
			i = len(out) - 1
		}
		m := &out[i]
		m.Dispatched += l.Dispatched
		for k, v := range l.Rejected {
			m.Rejected[k] += v
		}
		m.WaitP50Seconds = max(m.WaitP50Seconds, l.WaitP50Seconds)
		m.WaitP99Seconds = max(m.WaitP99Seconds, l.WaitP99Seconds)
		m.WaitMaxSeconds = max(m.WaitMaxSeconds, l.WaitMaxSeconds)
		m.PeakQueueLength = max(m.PeakQueueLength, l.PeakQueueLength)
		m.PeakSeatsInUse = max(m.PeakSeatsInUse, l.PeakSeatsInUse)
		m.PeakExecuting = max(m.PeakExecuting, l.PeakExecuting)
		flows[l.Name] = append(flows[l.Name], l.Flows...)
	}
	for i := range out {
		if fs := flows[out[i].Name]; len(fs) > 0 {
			out[i].Flows = mergeLevels(slices.Values(fs))
			slices.SortStableFunc(out[i].Flows, func(a, b fairqueue.LevelResult) int {
				return int(busy(b) - busy(a))
			})
		}
	}
	return out
}

// busy is a level's or flow's requests, dispatched and rejected.
func busy(l fairqueue.LevelResult) int64 {
	n := l.Dispatched
	for _, v := range l.Rejected {
		n += v
	}
	return n
}
