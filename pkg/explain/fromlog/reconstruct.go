package fromlog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// Config is what a log is reconstructed with.
type Config struct {
	// State is the configuration (the cluster's, a bundle's or the
	// defaults), its server concurrency limit and release, and the
	// metrics whose object counts size the LISTs whose log records no
	// seats.
	State *state.State
	// RequestTimeout is the server's request timeout.
	RequestTimeout time.Duration
	// Progress, when set, is told the requests read so far from files.
	Progress func(stage string, n int64)
	// Window is --since/--until over the files: the reconstruction reads
	// only the requests that arrived inside it (relative times count back
	// from the log's last request); zero reads the whole log.
	Window logs.Window
	// Logs opens the log's files (package input's Logs, which the
	// commands hand in): this package opens nothing itself.
	Logs logs.Opener
}

// options are opts with the configuration of c.
func (c Config) options(opts reconstruct.Options) reconstruct.Options {
	st := c.State
	opts.Config, opts.ServerConcurrencyLimit, opts.RequestTimeout, opts.Release = st.Config(), st.ServerConcurrency, c.RequestTimeout, st.Release
	opts.Counts, _ = logs.ObjectCounts(st, "")
	return opts
}

// reconstructFiles reconstructs what APF did over the workload files
// (httplog, audit, both joined) under c's configuration, each apiserver
// instance on its own (spec.Instances and the inputs say which served each
// request); the files are read once (reconstruct.RunInstances). notes say
// what reading them skipped and how they were split into instances.
//
// With c.Window, the requests read are the window's (cut, which counts
// them; nil without a window), and the first note says so.
func reconstructFiles(ctx context.Context, c Config, spec logs.Spec, opts reconstruct.Options) (res *reconstruct.Result, notes []string, yearKnown bool, cut *logs.Cut, err error) {
	// klog's headers carry no year: where the files tell none, the year
	// of an absolute --since/--until, else the year the state's metrics
	// were read, stands in, for the window and for the object counts of
	// the scrapes around each request
	spec.FindYear, spec.Year = true, logs.FallbackYear(c.Window, c.State)
	if c.Logs == nil {
		return nil, nil, false, nil, errors.New("fromlog: no opener of the log's files (Config.Logs)")
	}
	w, err := c.Logs.Open(ctx, spec)
	if err != nil {
		return nil, nil, false, nil, err
	}
	defer w.Close()
	opts = c.options(opts)
	opts.Progress = c.Progress
	var src workload.Reader = w.Files
	if !c.Window.IsZero() {
		from, to, err := c.Window.ResolveFiles(ctx, c.Logs, spec)
		if err != nil {
			return nil, nil, false, nil, err
		}
		cut = &logs.Cut{Src: w.Files, From: from, To: to}
		src = cut
	}
	res, err = reconstruct.RunInstances(src, opts, reconstruct.InstanceOptions{Resolve: w.Resolve}, w.Wrap)
	if err != nil {
		return nil, nil, false, nil, err
	}
	notes = workloadNotes(w, res)
	if cut != nil {
		if cut.Kept == 0 {
			return nil, nil, false, nil, fmt.Errorf("--since/--until: the window %s holds none of the log's %d requests", logs.FormatBounds(cut.From, cut.To), cut.Outside)
		}
		notes = append([]string{cut.Note()}, notes...)
	}
	return res, notes, w.YearKnown, cut, nil
}

// workloadNotes say what reading the workload skipped.
func workloadNotes(w *logs.Workload, res *reconstruct.Result) []string {
	notes := splitNotes(w.Files, res)
	notes = append(notes, w.Notes()...)
	return append(notes, resultNotes(res)...)
}

// resultNotes say what the reconstruction skipped or estimated.
func resultNotes(res *reconstruct.Result) []string {
	var notes []string
	if res.Skipped > 0 {
		notes = append(notes, fmt.Sprintf("note: %s could not be reconstructed (first: %s)", textfmt.Count(res.Skipped, "request", "requests"), res.FirstSkip))
	}
	if res.EstimatedWaits > 0 {
		notes = append(notes, fmt.Sprintf("note: %s no wait (audit events faster than 500 ms without their httplog line): their dispatch is the reconstruction's, marked estimated", textfmt.Count(res.EstimatedWaits, "request records", "requests record")))
	}
	return notes
}

// splitNotes say how the workload was split into instances and why, when
// it was not one file read as one instance.
func splitNotes(files *workload.Files, res *reconstruct.Result) []string {
	names := res.InstancesRead
	if len(names) == 0 {
		return nil
	}
	told := len(names) > 1
	for _, fi := range files.Instances {
		if fi.Why != workload.WhyFile && fi.Why != workload.WhyStdin {
			told = true
		}
	}
	if !told {
		return nil
	}
	notes := []string{fmt.Sprintf("note: the log is %d apiserver %s, each reconstructed on its own (its own calibration, server concurrency limit and queues)", len(names), textfmt.Plural(len(names), "instance", "instances"))}
	if len(names) == 1 {
		notes[0] = "note: the log is one apiserver instance"
	}
	for _, s := range files.Split(names) {
		notes = append(notes, "note: instance "+s)
	}
	return notes
}

// goodAgreement is the share of agreeing fates below which the
// reconstruction is not the server's: simulate's fit asks as much of a good
// reproduction (calibrate.Params.GoodAgreement, a layer this one does not
// import).
const goodAgreement = 0.8

// agreementNotes say how far the reconstruction agrees with the log:
// nothing when no request was compared (a share of none is no figure).
func agreementNotes(res *reconstruct.Result) []string {
	sum := res.Sum()
	if sum.Total() == 0 {
		return nil
	}
	s := fmt.Sprintf("the reconstruction's fates agree with the log's answers on %d of %d requests (%.1f%%)", sum.Agreeing(), sum.Total(), 100*sum.Fraction())
	if by := instanceAgreement(res); by != "" {
		s += "; " + by
	}
	if f := sum.Fraction(); f < goodAgreement {
		s += fmt.Sprintf(": below %.0f%%, the configuration replayed is likely not the server's (its FlowSchemas and levels, or its server concurrency limit), and the incidents above are what it would have done, not what the server did: read the cluster or a bundle of it (--from), or give its objects (-f) and --server-concurrency", 100*goodAgreement)
	}
	return []string{s}
}

// instanceAgreement says, for a log of several instances, how far each
// instance's reconstruction agrees with its answers.
func instanceAgreement(res *reconstruct.Result) string {
	if len(res.Instances) < 2 {
		return ""
	}
	parts := make([]string, len(res.Instances))
	for i, in := range res.Instances {
		sum := in.Sum()
		parts[i] = fmt.Sprintf("%s %d of %d (%.1f%%, limit %d)", in.Name, sum.Agreeing(), sum.Total(), 100*sum.Fraction(), in.ServerConcurrencyLimit)
	}
	return "by instance: " + strings.Join(parts, ", ")
}
