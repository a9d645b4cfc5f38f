package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/pkg/capacity"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
	"github.com/kubectl-apf/kubectl-apf/pkg/simulate"
	simrender "github.com/kubectl-apf/kubectl-apf/pkg/simulate/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
	"github.com/kubectl-apf/kubectl-apf/pkg/vlogs"
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
short) are skipped and counted by reason; --strict fails on the first one
instead. The JSONL format has one request a line:

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
times does not show. The change is replayed again on a server 10% faster
and 10% slower (two runs of one server differ about so): a level whose
429s then leave 0.75-1.25 of the prediction is named under the table
("Server speed: ..."), its figure not known closer than that. See
docs/simulate.md for what the replay is checked against.`

// simulateWindowHelp is the window of simulate's log and of its evidence.
const simulateWindowHelp = logWindowHelp + `

The CPU evidence of the metrics (a bundle's scrapes, two of them around the
load, or the many of a bundle recorded over an incident by dump bundle) is read from the two
scrapes that bracket the window replayed, and is used for the requests
between them: the output says which window that is and which part of the
workload. A log longer than the scrapes (the server's start-up, quiet
hours, the capture's own reads) is replayed over the scrapes' window alone
when the requests outside it, none of them answered 429, would leave fewer
than 90% of the log between the scrapes; with 429s outside, the evidence
did not see that load and is not used (--since/--until choose the window).

--prometheus URL (or --prometheus-service NAMESPACE/NAME:PORT, with the
same authentication, headers and selector flags as explain 429's; a
Prometheus, Thanos, Mimir or VictoriaMetrics query URL) reads the CPU
evidence from the store instead: for each apiserver it selects, the
samples of the scrapes at or before the window replayed and at or after its
end (process_cpu_seconds_total, go_sched_latencies_seconds, GOMAXPROCS, the
garbage collector's counters and APF's dispatched and rejected requests), as
scraped, not a rate the store computed. They bracket the window to within
one scrape interval each side, and the evidence averages the process's CPU
over the time between them: with a 30s interval, a burst of a minute is
averaged with up to another minute around it; the output says the interval
and the share of the evidence's span the window is. Given a bundle or the
cluster too, the store is preferred (the bundle's objects and object counts
are still read), and a note says so; a store that holds none of those series
around the window leaves the bundle's scrapes, with a note.`

const simulateExample = `  # Why did the server answer 429? Replay its own log and audit log against its configuration
  kubectl apf simulate --workload kube-apiserver.log --workload audit.log

  # What would a longer queue on global-default have done to the same traffic?
  kubectl apf simulate --workload kube-apiserver.log --workload audit.log --set global-default.queueLengthLimit=100

  # Try a configuration repository against a bundle, offline
  kubectl apf simulate --from bundle.tar.gz -f deploy/apf/ --workload traffic.jsonl

  # A what-if on a server its CPU limit throttles: give the limit from its pod spec to the CPU model
  kubectl apf simulate --from bundle.tar.gz -w kube-apiserver.log -w audit.log -f change.yaml --cpu-limit 2

  # The last hour of a day's logs, with the bundle dump bundle recorded over the incident
  kubectl apf simulate --from incident.tar.gz -w kube-apiserver.log -w audit.log --since 1h -f change.yaml

  # The incident's window of the logs, with the CPU evidence the cluster's Prometheus scraped over it
  kubectl apf simulate -w kube-apiserver.log -w audit.log --since 2026-11-23T03:00:00Z --until 2026-11-23T03:20:00Z \
    --prometheus http://prometheus.monitoring:9090 --prometheus-selector 'cluster="prod"' -f change.yaml

  # Replay a synthetic workload on the upstream defaults of a 15-seat server, as JSON
  kubectl apf simulate --defaults --server-concurrency 15 --workload burst.jsonl -o json`

// SimulateOptions holds the flags of "kubectl apf simulate".
type SimulateOptions struct {
	// Options are the state flags: --from, --defaults, -f, -R.
	*load.Options

	Workloads []string
	// Instances say which apiserver instance served each file's requests.
	Instances instanceFlags
	Sets      []string
	// Server are --server-concurrency, --server-request-timeout,
	// --cpu-limit and --server-speed.
	Server      *load.ServerOptions
	NoBorrowing bool
	MaxFlows    int
	Strict      bool
	// Flags are -o.
	*output.Flags
	// Calibrate derives the seat hold time of every level from the
	// recording and estimates what an audit log alone lacks.
	Calibrate bool
	// CPUModel replays a server its CPU limit throttled with the model of
	// its garbage collector's stalls (calibrate.CPUModel).
	CPUModel bool

	settings []capacity.Setting

	// VLogs reads the workload from VictoriaLogs instead (--victorialogs).
	VLogs vlogsSimulateFlags
	// Window is --since/--until over the --workload files.
	Window logWindowFlags
	// Store is --prometheus and the flags that reach a store, whose
	// scrapes around the window replayed are the CPU evidence.
	Store *load.StoreOptions

	genericiooptions.IOStreams
}

// NewSimulateOptions returns the defaults of "kubectl apf simulate".
func NewSimulateOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *SimulateOptions {
	return &SimulateOptions{Options: newOptions(configFlags, load.Config), Store: load.NewEvidenceStoreOptions(configFlags), Server: load.NewServerOptionsOf(load.ServerConcurrency | load.ServerRequestTimeout | load.ServerCPU), MaxFlows: 5, Flags: output.NewFlags(false, "table", "json", "yaml"), Calibrate: true, CPUModel: true, IOStreams: streams}
}

// NewSimulateCommand builds "kubectl apf simulate".
func NewSimulateCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewSimulateOptions(configFlags, streams)
	cmd := &cobra.Command{
		Use:     "simulate --workload FILE...",
		Short:   "Replay recorded traffic through APF's queues, before and after a configuration change",
		Long:    simulateLong + simulateWindowHelp + workloadInstancesHelp,
		Example: simulateExample,
		Args:    noArgs("give the recorded traffic with -w FILE, and the change with -f FILE or --set LEVEL.FIELD=VALUE"),
		RunE:    runOptions(o),
	}
	o.addInputFlags(cmd, configFlags)
	cmd.Flags().StringArrayVar(&o.Sets, "set", nil, "Proposed change LEVEL.FIELD=VALUE (repeatable); fields: "+capacity.SettableFields+".")
	cmd.Flags().BoolVar(&o.NoBorrowing, "no-borrowing", false, "Keep every level at its nominal limit instead of simulating the borrowing between levels every 10s.")
	cmd.Flags().IntVar(&o.MaxFlows, "max-flows", o.MaxFlows, "Busiest flows shown under each level in the table (0 shows none; -o json has them all).")
	o.Flags.AddFlags(cmd.Flags())
	return cmd
}

// addInputFlags registers the flags of the replay's inputs, which tune
// shares: the workload (files, instances, --victorialogs), the state, the
// server and the calibration.
func (o *SimulateOptions) addInputFlags(cmd *cobra.Command, configFlags *genericclioptions.ConfigFlags) {
	o.VLogs.addFlags(cmd.Flags(), configFlags)
	cmd.Flags().StringArrayVarP(&o.Workloads, "workload", "w", nil, "Recorded traffic: httplog lines, audit events or JSONL (repeatable; '-' reads stdin).")
	o.Instances.addFlags(cmd.Flags())
	o.Window.addFlags(cmd.Flags(), "--workload")
	o.Options.AddFlags(cmd.Flags())
	o.Store.AddConnectionFlags(cmd.Flags())
	cmd.Flags().Lookup("prometheus").Usage = "Read the CPU evidence (the process's CPU, the Go scheduler's latency and garbage collector, APF's counters) of each apiserver over the window replayed from this Prometheus-compatible store (http://prometheus:9090; a Thanos, Mimir or VictoriaMetrics query URL), instead of the scrapes of --from or the cluster."
	o.Server.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&o.Strict, "strict", false, "Fail on the first workload line that cannot be read as a request, instead of skipping it with a count.")
	cmd.Flags().BoolVar(&o.CPUModel, "cpu-model", o.CPUModel, "When a level's stalls tell that the server's CPU limit throttled it, and the metrics hold the Go runtime's counters from two scrapes around the recorded time, replay the garbage collector's stalls with the CPU model (docs/simulate.md); --cpu-model=false keeps the recorded execution times.")
	cmd.Flags().BoolVar(&o.Calibrate, "calibrate", o.Calibrate, "Infer from the recording how long each level really held a seat per dispatch from a queue, and estimate the execution times and seats an audit log alone lacks; --calibrate=false replays the recorded execution times as they are.")
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
	if err := o.Server.Complete(); err != nil {
		return err
	}
	if o.Store.Enabled() {
		if o.Store.Clock == nil {
			o.Store.Clock = o.Clock
		}
		o.Store.Complete(true)
	}
	return o.Options.Complete()
}

// Validate checks the flags; it is pure.
func (o *SimulateOptions) Validate() error {
	if o.VLogs.enabled() {
		if err := o.VLogs.validate(o); err != nil {
			return err
		}
		if !o.Window.IsZero() {
			return fmt.Errorf("--since/--until cut --workload files: the window of --victorialogs is --victorialogs-since/--victorialogs-until")
		}
	} else if len(o.Workloads) == 0 {
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
	if err := o.Instances.validate(o.Workloads); err != nil {
		return err
	}
	if err := o.Window.Validate(); err != nil {
		return err
	}
	for _, f := range o.Files {
		if f == "-" && stdin > 0 {
			return fmt.Errorf("-f - and --workload - both read standard input; give one of them a file")
		}
	}
	if err := o.Options.Validate(); err != nil {
		return err
	}
	if err := o.Server.Validate(); err != nil {
		return err
	}
	if err := o.validateStore(); err != nil {
		return err
	}
	if o.MaxFlows < 0 {
		return fmt.Errorf("--max-flows must be 0 or more, not %d", o.MaxFlows)
	}
	return o.Flags.Validate()
}

// Run loads the state once, replays the workload and prints the result,
// its notes on stderr.
func (o *SimulateOptions) Run(ctx context.Context) error {
	st, cfg, err := o.load(ctx)
	if err != nil {
		return err
	}
	res, err := simulate.Run(ctx, st, cfg)
	for _, w := range o.Store.Warnings() {
		fmt.Fprintln(o.ErrOut, w)
	}
	if err != nil {
		return err
	}
	if n := o.VLogs.note(); n != "" {
		res.Notes = append(res.Notes, n)
	}
	for _, n := range append(st.Notes, res.Notes...) {
		fmt.Fprintln(o.ErrOut, sanitize.Line(n))
	}
	res.ReleaseFrom = sanitize.Line(res.ReleaseFrom)
	return printObject(o.Out, o.Flags, res, func(w io.Writer) error { return simrender.Write(w, res, o.MaxFlows) })
}

// load loads the state once and returns it with the replay's Config, as
// simulate and tune run it.
func (o *SimulateOptions) load(ctx context.Context) (*state.State, simulate.Config, error) {
	st, err := o.Load(ctx, load.Request{ServerConcurrency: o.Server.Concurrency, InferConcurrency: true, Stdin: o.In, Metrics: o.Calibrate, NeedObjects: "the workload cannot be classified"})
	if err != nil {
		return nil, simulate.Config{}, err
	}
	spec, err := o.Instances.spec(o.Workloads)
	if err != nil {
		return nil, simulate.Config{}, err
	}
	cfg := simulate.Config{Workloads: o.Workloads, Logs: input.Logs{}, Instances: spec.Instances, Stdin: o.In, Strict: o.Strict, Sets: o.settings, RequestTimeout: o.Server.RequestTimeout,
		NoBorrowing: o.NoBorrowing, Calibrate: o.Calibrate, CPUModel: o.CPUModel, CPULimit: o.Server.CPUCores(), ServerSpeed: o.Server.Speed, Window: o.Window.Window}
	if o.Source != nil {
		cfg.Source = o.Source.Describe()
	}
	if b, ok := o.Source.(*dump.BundleSource); ok && b.MostScrapes() > 2 {
		cfg.Recorded = recordedScrapes(b)
	}
	if o.VLogs.enabled() {
		// the window's events, pulled in time order and read by the audit reader
		cfg.Open = vlogs.OpenWorkload(ctx, o.VLogs.windowSource(ctx, o.ClockOrReal().Now()), o.Strict, &o.VLogs.pulled)
	}
	if o.Store.Enabled() {
		if err := o.Store.Open(); err != nil {
			return nil, simulate.Config{}, err
		}
		cfg.Store = evidenceStore{o.Store}
	}
	return st, cfg, nil
}

// validateStore checks the flags of --prometheus.
func (o *SimulateOptions) validateStore() error {
	if !o.Store.Enabled() {
		return nil
	}
	if err := o.Store.Validate(); err != nil {
		return err
	}
	if !o.Calibrate {
		return fmt.Errorf("--prometheus reads the calibration's CPU evidence: give it without --calibrate=false")
	}
	return nil
}

// recordedScrapes reads a long bundle's scrapes around simulate's window
// (dump bundle --watch), of which the state holds the latest two.
func recordedScrapes(b *dump.BundleSource) func(from, to time.Time) ([]simulate.RecordedScrapes, error) {
	return func(from, to time.Time) ([]simulate.RecordedScrapes, error) {
		got, err := b.ScrapesAround(from, to)
		if err != nil {
			return nil, err
		}
		out := make([]simulate.RecordedScrapes, len(got))
		for i, g := range got {
			out[i] = simulate.RecordedScrapes{Instance: g.Instance, Scrapes: g.Scrapes, Times: g.Times}
		}
		return out, nil
	}
}

// evidenceStore is the store of --prometheus as simulate reads its
// evidence.
type evidenceStore struct{ *load.StoreOptions }

func (e evidenceStore) Scrapes(ctx context.Context, from, to time.Time) ([]simulate.StoreScrapes, error) {
	got, err := e.Evidence(ctx, from, to)
	if err != nil {
		return nil, err
	}
	out := make([]simulate.StoreScrapes, len(got))
	for i, g := range got {
		out[i] = simulate.StoreScrapes{Instance: g.Instance, Scrapes: g.Scrapes, Interval: g.Interval}
	}
	return out, nil
}
