package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/pkg/capacity"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

const simulateLong = `Replay recorded API traffic through API Priority and Fairness' queues.

The workload is read from kube-apiserver httplog lines (-v=3), audit events
(audit.k8s.io/v1 JSON lines) or kubectl-apf's own JSONL format; give the
httplog and the audit log together so every request gets its user (they are
joined by audit ID). The files are read once and streamed: memory follows
the requests in flight and the number of clients, not the length of the
files (requests logged at completion are put back in arrival order within 2
minutes, or the last 65,536 requests when that is less; the calibration's
later passes read a compact copy that spills to a temporary file). Lines that
cannot be read as requests (other components' lines in the same log, lines cut
short) are skipped and counted; --strict fails on the first one instead. The JSONL format has one request a line:

  {"offset":"1.5s","user":"alice","groups":["dev","system:authenticated"],
   "verb":"list","path":"/api/v1/namespaces/dev/pods","serviceTime":"20ms"}

The groups are those the apiserver sees (system:authenticated included, or
the request falls through to catch-all). "arrival" (RFC 3339) may replace
"offset"; optional are "initialSeats", "finalSeats", "additionalLatency" (the
work estimate; 1 seat when absent), "flowSchema" and "priorityLevel" (used
when there is no user) and "status" (what the server answered, compared with
the prediction).

Every request is classified with the configuration of the cluster, of a bundle
(--from) or of the upstream defaults (--defaults), and replayed through a
simulation of the apiserver's queue sets: virtual-time fair queuing, shuffle
sharding, queue length limits, seats and additional latency, wait limits,
Reject and exempt levels, and the borrowing between levels every 10 seconds.

For each priority level, and its busiest flows, the table shows the requests
dispatched, rejected by reason (queue-full, concurrency-limit, time-out), how
long the dispatched ones waited in their queues (p50, p99, max), and the peak
queue length and seats in use.

With -f or --set the workload is replayed a second time with the changed
configuration and each cell shows "before->after". When the workload records
what the server answered, the predicted rejections are compared with the
recorded 429s, level by level and per 5-second window, with a verdict of the
reproduction's quality.

The replay is calibrated from the recording itself (--calibrate=false turns
this off): upstream counts a request's seats from the dispatch decision, but
its execution time starts only once the waiting goroutine runs, which on a
CPU-starved server can take far longer than the execution. For every level,
and every 10-second window, the seat hold time is read from the level's
dispatch throughput while requests waited in its queues, and the difference
from the recorded execution times is added to every request dispatched from
a queue, in the replay of the change too. An audit log alone records no
execution time: it is estimated from the latency annotations of slow
requests (apiserver.latency.k8s.io/apf-queue-wait) and, for the others, from
the queue wait the replay itself gives them, iterated to a fixed point and averaged per kind
of request (level, verb, resource and query); LISTs
get the seats the server's object counts give them (from the cluster's or
the bundle's metrics). The result says which fields were estimated, and
warns when a change takes a level far from the recorded regime. It counts the
executions that stalled for CPU (ten times the level's median and 20ms more;
ending at one phase of a 100ms period when a CPU limit's CFS quota throttled
the server). When the stalls are a CFS quota's and the metrics hold two
scrapes around the recorded time (a bundle taken during the overload with a
long --metrics-interval), the server's garbage collector is modelled
(--cpu-model=false turns this off): its marks, paced by the Go runtime's
counters, throttle the server to the start of each period, and the replay
runs once per phase of the collections. Without that model, a change that
has a server short of CPU execute more requests is warned about: every
execution would stall more often, which keeping the recorded execution
times does not show. See docs/simulate.md for what the replay is checked
against.`

const simulateExample = `  # Why did the server answer 429? Replay its own log and audit log against its configuration
  kubectl apf simulate --workload kube-apiserver.log --workload audit.log

  # What would a longer queue on global-default have done to the same traffic?
  kubectl apf simulate --workload kube-apiserver.log --workload audit.log --set global-default.queueLengthLimit=100

  # Try a configuration repository against a bundle, offline
  kubectl apf simulate --from bundle.tar.gz -f deploy/apf/ --workload traffic.jsonl

  # A what-if on a server its CPU limit throttles: give the limit from its pod spec to the CPU model
  kubectl apf simulate --from bundle.tar.gz -w kube-apiserver.log -w audit.log -f change.yaml --cpu-limit 2

  # Replay a synthetic workload on the upstream defaults of a 15-seat server, as JSON
  kubectl apf simulate --defaults --server-concurrency 15 --workload burst.jsonl -o json`

// SimulateOptions holds the flags of "kubectl apf simulate".
type SimulateOptions struct {
	// Options are the state flags: --from, --defaults, -f, -R.
	*state.Options

	Workloads            []string
	Sets                 []string
	ServerConcurrency    int
	ServerRequestTimeout time.Duration
	NoBorrowing          bool
	MaxFlows             int
	Strict               bool
	// Flags are -o.
	*output.Flags
	// Calibrate derives the seat hold time of every level from the
	// recording and estimates what an audit log alone lacks.
	Calibrate bool
	// CPUModel replays a server its CPU limit throttled with the model of
	// its garbage collector's stalls (calibrate.CPUModel).
	CPUModel bool
	// CPULimit is the recorded server's CPU limit as in its pod spec
	// ("200m", "0.5"); empty when unknown.
	CPULimit string

	settings []capacity.Setting
	cpuLimit float64

	genericiooptions.IOStreams
}

// NewSimulateOptions returns the defaults of "kubectl apf simulate".
func NewSimulateOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *SimulateOptions {
	return &SimulateOptions{Options: state.NewOptions(configFlags, state.Config), ServerRequestTimeout: time.Minute, MaxFlows: 5, Flags: output.NewFlags(false, "table", "json", "yaml"), Calibrate: true, CPUModel: true, IOStreams: streams}
}

// NewSimulateCommand builds "kubectl apf simulate".
func NewSimulateCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewSimulateOptions(configFlags, streams)
	cmd := &cobra.Command{
		Use:     "simulate --workload FILE...",
		Short:   "Replay recorded traffic through APF's queues, before and after a configuration change",
		Long:    simulateLong,
		Example: simulateExample,
		Args:    cobra.NoArgs,
		RunE:    runOptions(o),
	}
	cmd.Flags().StringArrayVarP(&o.Workloads, "workload", "w", nil, "Recorded traffic: httplog lines, audit events or JSONL (repeatable; '-' reads stdin).")
	o.Options.AddFlags(cmd.Flags())
	cmd.Flags().StringArrayVar(&o.Sets, "set", nil, "Proposed change LEVEL.FIELD=VALUE (repeatable); fields: "+capacity.SettableFields+".")
	cmd.Flags().IntVar(&o.ServerConcurrency, "server-concurrency", 0, "Server concurrency limit (max-requests-inflight + max-mutating-requests-inflight); 0 infers it from the apiserver's metrics, or uses 600.")
	cmd.Flags().DurationVar(&o.ServerRequestTimeout, "server-request-timeout", o.ServerRequestTimeout, "The apiserver's --request-timeout, which sets the wait limit in the queues (a quarter of it, at most 1m).")
	cmd.Flags().BoolVar(&o.NoBorrowing, "no-borrowing", false, "Keep every level at its nominal limit instead of simulating the borrowing between levels every 10s.")
	cmd.Flags().IntVar(&o.MaxFlows, "max-flows", o.MaxFlows, "Busiest flows shown under each level in the table (0 shows none; -o json has them all).")
	cmd.Flags().BoolVar(&o.Strict, "strict", false, "Fail on the first workload line that cannot be read as a request, instead of skipping it with a count.")
	o.Flags.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&o.CPUModel, "cpu-model", o.CPUModel, "When a level's stalls tell that the server's CPU limit throttled it, and the metrics hold the Go runtime's counters from two scrapes around the recorded time, replay the garbage collector's stalls with the CPU model (docs/simulate.md); --cpu-model=false keeps the recorded execution times.")
	cmd.Flags().StringVar(&o.CPULimit, "cpu-limit", "", "The recorded kube-apiserver's CPU limit, as in its pod spec (200m, 0.5, 2): the CPU model then takes how long the server runs in each CFS period from it (the limit over GOMAXPROCS) instead of estimating it from the stalls.")
	cmd.Flags().BoolVar(&o.Calibrate, "calibrate", o.Calibrate, "Infer from the recording how long each level really held a seat per dispatch from a queue, and estimate the execution times and seats an audit log alone lacks; --calibrate=false replays the recorded execution times as they are.")
	return cmd
}

// Complete parses --set and resolves the configuration source.
func (o *SimulateOptions) Complete(cmd *cobra.Command, _ []string) error {
	for _, s := range o.Sets {
		set, err := capacity.ParseSetting(s)
		if err != nil {
			return err
		}
		o.settings = append(o.settings, set)
	}
	if o.CPULimit != "" {
		q, err := resource.ParseQuantity(o.CPULimit)
		if err != nil || q.Sign() <= 0 {
			return fmt.Errorf("--cpu-limit %q: give the CPU limit in cores, as in a pod spec (200m, 0.5, 2)", o.CPULimit)
		}
		o.cpuLimit = q.AsApproximateFloat64()
	}
	return o.Options.Complete()
}

// Validate checks the flags; it is pure.
func (o *SimulateOptions) Validate() error {
	if len(o.Workloads) == 0 {
		return fmt.Errorf("no workload given: pass --workload FILE (httplog lines, audit events or JSONL; give the apiserver's log and audit log together to join them)")
	}
	stdin := 0
	for _, w := range o.Workloads {
		if w == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return fmt.Errorf("--workload -: standard input can be read only once")
	}
	for _, f := range o.Files {
		if f == "-" && stdin > 0 {
			return fmt.Errorf("-f - and --workload - both read standard input; give one of them a file")
		}
	}
	if err := o.Options.Validate(); err != nil {
		return err
	}
	if o.ServerConcurrency < 0 {
		return fmt.Errorf("--server-concurrency must be positive, not %d", o.ServerConcurrency)
	}
	if o.ServerRequestTimeout <= 0 {
		return fmt.Errorf("--server-request-timeout must be positive, not %v", o.ServerRequestTimeout)
	}
	if o.MaxFlows < 0 {
		return fmt.Errorf("--max-flows must be 0 or more, not %d", o.MaxFlows)
	}
	return o.Flags.Validate()
}

// simulateReport is what "-o json" prints: the replay's report (levels,
// after, workload, agreement) and where the server concurrency limit came
// from.
type simulateReport struct {
	*fairqueue.Report
	ServerConcurrencyLimit int `json:"serverConcurrencyLimit"`
	// ServerConcurrencySource is flag, metrics or default.
	ServerConcurrencySource string `json:"serverConcurrencySource"`
	// Join counts how httplog lines met audit events, when both were given.
	Join *workload.JoinStats `json:"join,omitempty"`
	// Release is the Kubernetes release whose APF was replayed,
	// ReleaseFrom where it came from.
	Release     string `json:"release"`
	ReleaseFrom string `json:"releaseFrom"`
	// Calibration is what was inferred from the recording (absent with
	// --calibrate=false); Fit how the replay of the recorded configuration
	// reproduced the recorded 429s; Warnings say where the result is weak.
	Calibration *calibrate.Result    `json:"calibration,omitempty"`
	Fit         []calibrate.LevelFit `json:"fit,omitempty"`
	// CPUReplays are the replays of a CPU model (Calibration.CPU), one
	// per phase of its collections; the report is the one nearest their
	// mean.
	CPUReplays *cpuReplays `json:"cpuReplays,omitempty"`
	Warnings   []string    `json:"warnings,omitempty"`
}

// Run loads the configurations, replays the workload and prints the report.
func (o *SimulateOptions) Run(ctx context.Context) error {
	before, after, scl, sclFrom, rel, notes, err := o.loadConfigs(ctx)
	if err != nil {
		return err
	}
	files, err := o.openWorkload()
	if err != nil {
		return err
	}
	defer files.Close()
	rc := func(c *engine.Config) fairqueue.ReplayConfig {
		return fairqueue.ReplayConfig{Config: c, ServerConcurrencyLimit: scl, RequestTimeout: o.ServerRequestTimeout, NoBorrowing: o.NoBorrowing, Release: rel.Release}
	}
	var afterRC *fairqueue.ReplayConfig
	if after != nil {
		a := rc(after)
		afterRC = &a
	}
	var (
		counts  engine.ObjectCounts
		runtime *calibrate.Runtime
	)
	if o.Calibrate && o.Source != nil {
		var err error
		var mnotes []string
		if counts, runtime, mnotes, err = serverMetrics(ctx, o.Source); err != nil {
			notes = append(notes, "note: no object counts: "+err.Error())
		}
		notes = append(notes, mnotes...)
	}
	if o.Calibrate && afterRC != nil {
		// the change may move requests to levels with another seat cap
		afterRC.Work = calibrate.Work(rel.Release, before, after, scl, counts)
	}
	var src workload.Reader = &cancellableReader{ctx: ctx, r: files.Reader}
	var (
		cal  *calibrate.Result
		tape *workload.Tape
	)
	if o.Calibrate {
		var calNotes []string
		if cal, tape, calNotes, err = o.calibrateWorkload(ctx, src, rc(before), counts, runtime); err != nil {
			return err
		}
		if tape != nil {
			defer tape.Close()
			src = &cancellableReader{ctx: ctx, r: tape.Reader()}
		}
		notes = append(notes, calNotes...)
		if cal != nil {
			src = cal.Apply(src)
		}
	}
	rep, fitRes, replays, err := replay(ctx, src, cal, tape, rc(before), afterRC)
	if err != nil {
		return err
	}
	if rep.Workload.Records == 0 {
		return fmt.Errorf("the workload holds no request to replay: %s", emptyWorkloadReason(files))
	}
	notes = append(notes, workloadNotes(rep, files)...)
	for _, n := range notes {
		fmt.Fprintln(o.ErrOut, sanitize.Line(n))
	}
	out := simulateReport{Report: rep, ServerConcurrencyLimit: scl, ServerConcurrencySource: sclFrom, Join: files.Join,
		Release: rel.Release.String(), ReleaseFrom: sanitize.Line(rel.From),
		Calibration: cal, Fit: fitRes, CPUReplays: replays, Warnings: calibrate.Regime(before, after, scl, rep, cal)}
	return printObject(o.Out, o.Flags, out, func(w io.Writer) error { return printSimulation(w, out, o.MaxFlows) })
}

// replay replays the prepared workload once, or, under a CPU model, once
// per phase of its collections from the tape (replayCPU), and returns the
// report with the fit of the recorded run.
func replay(ctx context.Context, src workload.Reader, cal *calibrate.Result, tape *workload.Tape, before fairqueue.ReplayConfig, after *fairqueue.ReplayConfig) (*fairqueue.Report, []calibrate.LevelFit, *cpuReplays, error) {
	if cal != nil && cal.CPU != nil && tape != nil {
		reps, err := replayCPU(ctx, cal, tape, before, after)
		if err != nil {
			return nil, nil, nil, err
		}
		return reps.chosenReport, reps.chosenFit, reps, nil
	}
	fit := calibrate.NewFit(0)
	rep, err := fairqueue.Replay(src, before, after, fairqueue.ReplayOptions{OnOutcome: fit.Observe})
	if err != nil {
		return nil, nil, nil, err
	}
	return rep, fit.Result(rep.Levels), nil, nil
}

// loadConfigs returns the base configuration and, when -f or --set change
// it, the changed one, with the server concurrency limit and where it came
// from, from one capture.
func (o *SimulateOptions) loadConfigs(ctx context.Context) (before, after *engine.Config, scl int, from string, rel releaseInfo, notes []string, err error) {
	st, err := o.Load(ctx, state.Request{ServerConcurrency: o.ServerConcurrency, InferConcurrency: true, Stdin: o.In, NeedObjects: "the workload cannot be classified"})
	if err != nil {
		return nil, nil, 0, "", rel, nil, err
	}
	rel = releaseInfo{st.Release, st.ReleaseFrom}
	notes = st.Notes
	before = engine.NewConfig(st.BaseFlowSchemas, st.BasePriorityLevels)
	if len(o.Files) == 0 && len(o.settings) == 0 {
		return before, nil, st.ServerConcurrency, st.ServerConcurrencySource, rel, notes, nil
	}
	pls, err := capacity.Apply(st.PriorityLevels, o.settings)
	if err != nil {
		return nil, nil, 0, "", rel, nil, err
	}
	after = engine.NewConfig(st.FlowSchemas, pls)
	for _, b := range after.Broken {
		notes = append(notes, fmt.Sprintf("note: the changed configuration's priority level %s is broken and ignored, as the apiserver would: %s", b.Name, b.Reason))
	}
	for _, d := range after.Dangling {
		notes = append(notes, fmt.Sprintf("note: the changed configuration's FlowSchema %s refers to priority level %s (%s) and is ignored, as the apiserver would", d.Name, d.PriorityLevel, d.Reason))
	}
	return before, after, st.ServerConcurrency, st.ServerConcurrencySource, rel, notes, nil
}

// workloadNotes says, on stderr, what of the workload could not be used as
// recorded.
func workloadNotes(rep *fairqueue.Report, files *workload.Files) []string {
	var notes []string
	ws := rep.Workload
	for _, name := range slices.Sorted(maps.Keys(files.Stats)) {
		if st := files.Stats[name]; st.Malformed > 0 {
			notes = append(notes, fmt.Sprintf("note: %s: skipped %d %s that could not be read as a request (--strict refuses them): %s",
				name, st.Malformed, plural(int(st.Malformed), "line", "lines"), strings.Join(st.FirstMalformed, "; ")))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(files.Stats)) {
		if st := files.Stats[name]; st.Clamped > 0 {
			notes = append(notes, fmt.Sprintf("note: %s: %d long-running %s arrived before the re-ordering window and %s replayed at its edge", name, st.Clamped, plural(int(st.Clamped), "request", "requests"), plural(int(st.Clamped), "was", "were")))
		}
	}
	if j := files.Join; j != nil && j.AuditOnly > 0 {
		notes = append(notes, fmt.Sprintf("note: %d audit %s had no httplog line with %s audit ID and %s not replayed (the httplog is the record of what the server served)",
			j.AuditOnly, plural(int(j.AuditOnly), "event", "events"), plural(int(j.AuditOnly), "its", "their"), plural(int(j.AuditOnly), "was", "were")))
	}
	if ws.Skipped > 0 {
		notes = append(notes, fmt.Sprintf("note: %d %s could not be replayed; the first: %s", ws.Skipped, plural(int(ws.Skipped), "record", "records"), ws.FirstSkip))
	}
	if ws.UnknownIdentity > 0 {
		hint := "give the audit log alongside the httplog to join them by audit ID"
		if j := files.Join; j != nil {
			hint = fmt.Sprintf("%d httplog lines found no audit event", j.Unmatched)
		}
		notes = append(notes, fmt.Sprintf("note: %d %s without a user kept their recorded FlowSchema (%s)", ws.UnknownIdentity, plural(int(ws.UnknownIdentity), "request", "requests"), hint))
	}
	return notes
}

// emptyWorkloadReason says why a workload yielded no request.
func emptyWorkloadReason(files *workload.Files) string {
	var lines, skipped, malformed int64
	for _, st := range files.Stats {
		lines += st.Lines
		skipped += st.Skipped
		malformed += st.Malformed
	}
	switch {
	case files.Join != nil && files.Join.AuditOnly > 0:
		return fmt.Sprintf("its %d audit %s found no httplog line with the same audit ID", files.Join.AuditOnly, plural(int(files.Join.AuditOnly), "event", "events"))
	case lines == 0:
		return "it is empty"
	case malformed > 0:
		return fmt.Sprintf("of its %d %s, %d could not be read as requests and the others are not requests", lines, plural(int(lines), "line", "lines"), malformed)
	}
	return fmt.Sprintf("none of its %d %s is an httplog \"HTTP\" line, a ResponseComplete audit event or a JSONL record", lines, plural(int(lines), "line", "lines"))
}

// openWorkload opens the --workload files. A lone "-" reads the command's
// input stream (o.In, which tests replace) rather than the process's
// standard input that workload.OpenFiles reads.
func (o *SimulateOptions) openWorkload() (*workload.Files, error) {
	opts := o.workloadOptions()
	if len(o.Workloads) != 1 || o.Workloads[0] != "-" || o.In == nil {
		return workload.OpenFiles(o.Workloads, opts)
	}
	st := &workload.Stats{}
	r, f, err := workload.NewReader(o.In, "stdin", opts, st)
	if err != nil {
		return nil, err
	}
	return &workload.Files{Reader: r, Stats: map[string]*workload.Stats{"stdin": st}, Formats: map[string]workload.Format{"stdin": f}}, nil
}

// workloadOptions is how every pass reads the --workload files.
func (o *SimulateOptions) workloadOptions() workload.Options {
	return workload.Options{Lenient: !o.Strict}
}

// cancellableReader stops a replay when the command's context is cancelled
// (SIGINT): the replay itself takes no context, and a workload of millions
// of requests takes seconds to read.
type cancellableReader struct {
	ctx context.Context
	r   workload.Reader
	n   int
}

func (c *cancellableReader) Next(r *workload.Request) error {
	// checking the context costs a lock; every 4096 records is often enough
	if c.n++; c.n&4095 == 0 {
		if err := c.ctx.Err(); err != nil {
			return fmt.Errorf("interrupted: %w", err)
		}
	}
	return c.r.Next(r)
}

// releaseInfo is the release a command replays and where it came from.
type releaseInfo struct {
	Release engine.Release
	From    string
}
