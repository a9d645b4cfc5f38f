package reconstruct

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// InstanceOptions say how a workload's requests are split into apiserver
// instances, each reconstructed on its own: its own state, calibration and
// limits (every instance has its own APF, with the whole server
// concurrency limit and its own queues).
type InstanceOptions struct {
	// Resolve maps a request's Instance, once the workload has been read,
	// to the instance it is reconstructed in (workload.Files.Resolve: an
	// httplog file's lines go to the audit log they were joined to); nil
	// keeps it.
	Resolve func(string) string
	// Tune, if set, adjusts the options of one instance (its server
	// concurrency limit, its configuration).
	Tune func(instance string, o *Options)
}

// InstanceResult is the reconstruction of one apiserver instance.
type InstanceResult struct {
	Name string
	// ServerConcurrencyLimit is the limit the instance was reconstructed
	// with.
	ServerConcurrencyLimit int
	*Result
}

// RunInstances reconstructs the workload src yields, each apiserver
// instance on its own (Request.Instance, resolved by inst.Resolve). src is
// read once, onto a workload.Tape (in memory up to its limit, then in a
// temporary file), which the later passes read, each pass of an instance
// keeping that instance's requests in the order src gave them; wrap, if
// not nil, wraps every reader (to stop on a cancelled context).
//
// The Result sums the instances (Records, agreements by level, incidents
// merged across instances where they overlap, clients summed); its
// Instances hold each instance's own Result, the same as the instance
// reconstructed alone. With Options.Focus, only the instances that hold a
// focused request are reconstructed. A workload of one instance gives the
// Result RunReader gives, with that one instance.
func RunInstances(src workload.Reader, opts Options, inst InstanceOptions, wrap func(workload.Reader) workload.Reader) (*Result, error) {
	if wrap == nil {
		wrap = func(r workload.Reader) workload.Reader { return r }
	}
	tape := workload.NewTape()
	defer tape.Close()
	rd := wrap(tape.Record(src))
	if opts.Progress != nil {
		rd = &progressReader{r: rd, f: opts.Progress, stage: "reading"}
	}
	// the instances as read, and whether each holds a focused request
	raws, focused := map[string]bool{}, map[string]bool{}
	var w workload.Request
	var records int64
	for {
		err := rd.Next(&w)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the workload: %w", err)
		}
		records++
		raws[w.Instance] = true
		if opts.Focus != nil && !focused[w.Instance] && opts.Focus(&w) {
			focused[w.Instance] = true
		}
	}
	if records == 0 {
		return Run(func() (workload.Reader, error) { return workload.Merge(), nil }, opts)
	}
	// the instances, resolved
	resolve := inst.Resolve
	if resolve == nil {
		resolve = func(s string) string { return s }
	}
	resolved := map[string]string{}
	groups := map[string]bool{}
	focusedIn := map[string]bool{}
	for raw := range raws {
		name := resolve(raw)
		resolved[raw], groups[name] = name, true
		if focused[raw] {
			focusedIn[name] = true
		}
	}
	names := slices.Sorted(maps.Keys(groups))
	var out *Result
	defer func() {
		if out != nil {
			out.InstancesRead = names
		}
	}()
	var results []InstanceResult
	for _, name := range names {
		if opts.Focus != nil && len(names) > 1 && !focusedIn[name] {
			continue
		}
		o := opts
		if inst.Tune != nil {
			inst.Tune(name, &o)
		}
		res, err := Run(func() (workload.Reader, error) {
			if len(names) == 1 {
				return wrap(&named{Reader: tape.ReaderAhead(), name: name}), nil
			}
			return wrap(&named{Reader: &instanceOnly{Reader: tape.ReaderAhead(), resolved: resolved, name: name}, name: name}), nil
		}, o)
		if err != nil {
			if len(names) > 1 {
				return nil, fmt.Errorf("instance %s: %w", name, err)
			}
			return nil, err
		}
		scl := o.ServerConcurrencyLimit
		if scl == 0 {
			scl = engine.DefaultServerConcurrencyLimit
		}
		results = append(results, InstanceResult{Name: name, ServerConcurrencyLimit: scl, Result: res})
	}
	if len(results) == 0 {
		// the focus is in no instance: nothing to reconstruct
		out = &Result{Records: records}
		return out, nil
	}
	if len(results) == 1 {
		res := *results[0].Result
		res.Instances = results
		out = &res
		return out, nil
	}
	out = merge(results, opts.IncidentGap)
	return out, nil
}

// instanceOnly yields the requests of one instance (resolved), in the
// order the workload held them.
type instanceOnly struct {
	workload.Reader
	resolved map[string]string
	name     string
}

func (o *instanceOnly) Next(r *workload.Request) error {
	for {
		if err := o.Reader.Next(r); err != nil {
			return err
		}
		if o.resolved[r.Instance] == o.name {
			return nil
		}
	}
}

// named gives every request its instance's name (a tape keeps it, but the
// requests of an httplog file joined to another instance's audit log
// carry their file's until resolved).
type named struct {
	workload.Reader
	name string
}

func (n *named) Next(r *workload.Request) error {
	err := n.Reader.Next(r)
	r.Instance = n.name
	return err
}

// merge sums the instances' results into one.
func merge(insts []InstanceResult, gap time.Duration) *Result {
	if gap <= 0 {
		gap = 10 * time.Second
	}
	out := &Result{Instances: insts, AuditOnly: true}
	levels := map[string]*LevelResult{}
	var all []rejections.Incident
	for _, in := range insts {
		r := in.Result
		out.Records += r.Records
		out.Reconstructed += r.Reconstructed
		out.Skipped += r.Skipped
		if out.FirstSkip == "" && r.FirstSkip != "" {
			out.FirstSkip = in.Name + ": " + r.FirstSkip
		}
		out.BeforeAPF += r.BeforeAPF
		out.EstimatedWaits += r.EstimatedWaits
		out.EstimatedSeats += r.EstimatedSeats
		out.AuditOnly = out.AuditOnly && r.AuditOnly
		out.Threshold = max(out.Threshold, r.Threshold)
		if !r.Start.IsZero() && (out.Start.IsZero() || r.Start.Before(out.Start)) {
			out.Start = r.Start
		}
		if r.End.After(out.End) {
			out.End = r.End
		}
		for _, l := range r.Levels {
			m := levels[l.Level]
			if m == nil {
				m = &LevelResult{Level: l.Level, Reasons: map[string]int64{}, Disagreements: map[string]int64{}}
				levels[l.Level] = m
			}
			a := &m.Agreement
			a.BothRejected += l.Agreement.BothRejected
			a.OnlyReconstructed += l.Agreement.OnlyReconstructed
			a.OnlyRecorded += l.Agreement.OnlyRecorded
			a.BothServed += l.Agreement.BothServed
			for k, v := range l.Reasons {
				m.Reasons[k] += v
			}
			for k, v := range l.Disagreements {
				m.Disagreements[k] += v
			}
		}
		for _, inc := range r.Incidents {
			inc.Instances = []rejections.InstanceCount{{Instance: in.Name, Count: inc.Rejected}}
			all = append(all, inc)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(levels)) {
		out.Levels = append(out.Levels, *levels[name])
	}
	out.Incidents = mergeIncidents(all, gap)
	return out
}

// mergeIncidents merges the incidents of one level on several instances
// that overlap in time (or come within gap of each other) into one:
// rejections, reasons, FlowSchemas and clients summed, each instance's
// count kept.
func mergeIncidents(all []rejections.Incident, gap time.Duration) []rejections.Incident {
	slices.SortStableFunc(all, func(a, b rejections.Incident) int {
		if c := strings.Compare(a.Level, b.Level); c != 0 {
			return c
		}
		return a.Start.Compare(*b.Start)
	})
	var out []rejections.Incident
	for i := 0; i < len(all); {
		j, end := i+1, *all[i].End
		for j < len(all) && all[j].Level == all[i].Level && !all[j].Start.After(end.Add(gap)) {
			if all[j].End.After(end) {
				end = *all[j].End
			}
			j++
		}
		if j == i+1 {
			out = append(out, all[i])
		} else {
			out = append(out, mergeGroup(all[i:j]))
		}
		i = j
	}
	slices.SortFunc(out, func(a, b rejections.Incident) int {
		if c := a.Start.Compare(*b.Start); c != 0 {
			return c
		}
		return strings.Compare(a.Level, b.Level)
	})
	return out
}

// mergeGroup is one incident of several instances' incidents of a level.
func mergeGroup(g []rejections.Incident) rejections.Incident {
	start, end := *g[0].Start, *g[0].End
	out := rejections.Incident{Level: g[0].Level, Reasons: map[string]float64{}, Instances: []rejections.InstanceCount{},
		Causes: []rejections.Cause{}, Clients: &rejections.Clients{}}
	schemas := map[[2]string]float64{}
	rejected, held := map[rejections.ClientShare]float64{}, map[rejections.ClientShare]float64{}
	var heldSum float64
	var summaries []string
	var limit, nominal, waiting float64
	haveWaiting := false
	byInstance := map[string]float64{}
	for _, in := range g {
		if in.Start.Before(start) {
			start = *in.Start
		}
		if in.End.After(end) {
			end = *in.End
		}
		out.Rejected += in.Rejected
		for k, v := range in.Reasons {
			out.Reasons[k] += v
		}
		for _, s := range in.FlowSchemas {
			schemas[[2]string{s.FlowSchema, s.Reason}] += s.Count
		}
		name := ""
		for _, ic := range in.Instances {
			byInstance[ic.Instance] += ic.Count
			name = ic.Instance
		}
		if in.Clients != nil {
			for _, c := range in.Clients.Rejected {
				rejected[clientID(c)] += c.Count
			}
			for _, c := range in.Clients.HeldSeats {
				if c.SeatSeconds != nil {
					held[clientID(c)] += *c.SeatSeconds
					heldSum += *c.SeatSeconds
				}
			}
		}
		if in.Summary != "" {
			summaries = append(summaries, name+": "+in.Summary)
		}
		for _, c := range in.Causes {
			c.Evidence = name + ": " + c.Evidence
			out.Causes = append(out.Causes, c)
		}
		st := in.State
		if st.CurrentLimit != nil {
			limit += *st.CurrentLimit
		}
		if st.NominalLimit != nil {
			nominal += *st.NominalLimit
		}
		if st.Waiting != nil {
			waiting += *st.Waiting
			haveWaiting = true
		}
		out.State.LimitResponse, out.State.Queues, out.State.HandSize, out.State.QueueLengthLimit = st.LimitResponse, st.Queues, st.HandSize, st.QueueLengthLimit
	}
	out.Start, out.End = &start, &end
	for k, n := range schemas {
		out.FlowSchemas = append(out.FlowSchemas, rejections.SchemaCount{FlowSchema: k[0], Reason: k[1], Count: n})
	}
	slices.SortFunc(out.FlowSchemas, func(a, b rejections.SchemaCount) int {
		if a.Count != b.Count {
			return int(b.Count - a.Count)
		}
		return strings.Compare(a.FlowSchema+a.Reason, b.FlowSchema+b.Reason)
	})
	for _, name := range slices.Sorted(maps.Keys(byInstance)) {
		out.Instances = append(out.Instances, rejections.InstanceCount{Instance: name, Count: byInstance[name]})
	}
	slices.SortStableFunc(out.Instances, func(a, b rejections.InstanceCount) int { return int(b.Count - a.Count) })
	for c, n := range rejected {
		c.Count, c.Share = n, n/out.Rejected
		out.Clients.Rejected = append(out.Clients.Rejected, c)
	}
	for c, v := range held {
		c.SeatSeconds, c.Share = rejections.Of(v), v/heldSum
		out.Clients.HeldSeats = append(out.Clients.HeldSeats, c)
	}
	sortShares(out.Clients.Rejected, func(c rejections.ClientShare) float64 { return c.Count })
	sortShares(out.Clients.HeldSeats, func(c rejections.ClientShare) float64 { return *c.SeatSeconds })
	out.State.CurrentLimit, out.State.NominalLimit = rejections.Of(limit), rejections.Of(nominal)
	out.State.From = map[string]string{"currentLimit": "reconstruction, summed over the instances", "nominalLimit": "configuration, summed over the instances"}
	if haveWaiting {
		out.State.Waiting = rejections.Of(waiting)
		out.State.From["waiting"] = "reconstruction (most waiting at a 429), summed over the instances"
	}
	out.Summary = strings.Join(summaries, "; ")
	return out
}

// clientID is a client's identifying fields alone.
func clientID(c rejections.ClientShare) rejections.ClientShare {
	return rejections.ClientShare{User: c.User, ServiceAccount: c.ServiceAccount, UserAgent: c.UserAgent, FlowSchema: c.FlowSchema, Distinguisher: c.Distinguisher}
}
