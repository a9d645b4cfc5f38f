package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/history"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
	rejrender "github.com/kubectl-apf/kubectl-apf/pkg/rejections/render"
)

var explain429Long = `Explain the HTTP 429 answers a cluster gives now.

From two scrapes of the apiserver's metrics (--interval apart) and the debug
dumps, for every priority level that rejects requests: the rejections per
second by reason (concurrency-limit, queue-full, time-out), the level's
limit, seats in use and waiting requests, the heaviest flows with how many of
their queues are full, and the likely causes with their evidence and fix: too
little concurrency, one elephant flow filling its hand, wide requests, time-
outs, or a level without queues. 429s that APF did not produce (evictions
blocked by a PodDisruptionBudget, a watch cache initializing or, from 1.37,
too far behind etcd for a consistent LIST) are counted apart. To tell
whether one 429's text is APF's, use 'kubectl apf explain request
--from-message TEXT'.

With --from, a bundle written by 'kubectl apf dump' is read instead. A
watch's bundle (dump bundle --watch) is explained over a burst of 429s it
recorded (a burst ends after 10s without one), from the scrapes around it,
and a note says which: the burst it ends in, with its end's debug dumps,
else the largest, without them (they are the watch's start's and end's).

With --prometheus, the incidents of a window in the past (--since, 1h by
default): when each burst of 429s started and ended (to about one scrape
interval), its priority level, FlowSchemas, reasons and apiserver instances,
a timeline of the level around it (seats in use against the current limit
and demand, waiting requests, the queue wait p99 and queue lengths), and
what it points to: one flow flooding its queues, or the whole level short of
seats. JSON output holds the series; every source prints one schema
(docs/explain-429-schema.md).` + load.StoreHelp(load.Instances|load.Store|load.Config)

const explain429Example = `  # Why does the cluster answer 429 now?
  kubectl apf explain 429

  # Every apiserver, over a 10 second window
  kubectl apf explain 429 --all-apiservers --interval 10s

  # From a bundle captured earlier
  kubectl apf explain 429 --from apf-bundle.tar.gz -o json

  # The incidents of the last day, from Prometheus
  kubectl apf explain 429 --prometheus http://prometheus.monitoring:9090 --since 24h

  # Who was rejected, and who held the seats, from the apiserver's logs
  kubectl apf explain 429 --from apf-bundle.tar.gz --workload apiserver.log --workload audit.log

  # The same without a cluster or a bundle: the log against a release's upstream defaults
  kubectl apf explain 429 --defaults --kube-version 1.33 --workload audit.log

  # The incidents of the store, each with the log's clients over its window
  kubectl apf explain 429 --prometheus http://prometheus.monitoring:9090 --since 6h --from apf-bundle.tar.gz --workload audit.log

  # Through the apiserver's service proxy, one cluster of a Thanos store
  kubectl apf explain 429 --prometheus-service monitoring/thanos-query:9090 --prometheus-selector 'cluster="prod"' --since 7d`

// Explain429Options holds the flags of "kubectl apf explain 429".
type Explain429Options struct {
	// Options are the state flags: --from, --all-apiservers,
	// --apiserver-urls and the store's (--prometheus ...).
	*load.Options
	// Server are --server-concurrency and --server-request-timeout.
	Server *load.ServerOptions

	Interval time.Duration
	// Flags are -o.
	*output.Flags
	MaxIncidents int
	// Workload reads apiserver logs instead (--workload).
	Workload workload429Flags
	// VLogs reads audit events from VictoriaLogs instead (--victorialogs).
	VLogs vlogs429Flags

	genericiooptions.IOStreams
}

// NewExplain429Options returns the defaults of "kubectl apf explain 429".
func NewExplain429Options(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *Explain429Options {
	o := &Explain429Options{Options: newOptions(configFlags, load.Instances|load.Store|load.Config), Server: load.NewServerOptions(),
		Flags: output.NewFlags(false, "", "json", "yaml"), Interval: 5 * time.Second, MaxIncidents: 10, IOStreams: streams}
	o.Store.DefaultSince = time.Hour
	return o
}

// NewExplain429Command builds "kubectl apf explain 429".
func NewExplain429Command(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewExplain429Options(configFlags, streams)
	cmd := &cobra.Command{
		Use:     "429",
		Short:   "Explain which priority levels and flows are rejected now, why, and the likely fix",
		Long:    explain429Long + explain429WorkloadHelp + workloadInstancesHelp + explain429VLogsHelp,
		Example: explain429Example,
		Args:    noArgs("one level with --level LEVEL, a recorded log with --workload FILE"),
		RunE:    runOptions(o),
	}
	f := cmd.Flags()
	o.Options.AddFlags(f)
	logConfigUsage(f)
	o.VLogs.addFlags(f, configFlags)
	f.DurationVar(&o.Interval, "interval", o.Interval, "Time between the two metrics scrapes that give the rates (0: one scrape, totals since start).")
	o.Server.AddFlags(f)
	o.Flags.AddFlags(f)
	f.IntVar(&o.MaxIncidents, "max-incidents", o.MaxIncidents, "With --prometheus: detail at most this many incidents, the largest first.")
	o.Workload.addFlags(f)
	f.Lookup("since").Usage = "With --prometheus: look at the window of this length before --until (30m, 24h, 7d). With --workload alone: the start of the window of the log read, as its length before --until or a time (RFC 3339, -2h or \"2h ago\" before the log's last request)."
	f.Lookup("until").Usage = "With --prometheus: end of the window (RFC 3339, now, -2h or \"2h ago\"; default now). With --workload alone: end of the window of the log read (RFC 3339, -2h or \"2h ago\" before the log's last request; default its last request)."
	cmd.SetFlagErrorFunc(explain429FlagError)
	return cmd
}

// requestOnlyFlags are the flags of explain request that a user may carry
// over to explain 429 by mistake: they name one request, which explain 429
// does not take.
var requestOnlyFlags = []string{"from-message", "from-log", "from-audit", "audit-id", "user-name", "group", "service-account", "anonymous", "probe"}

// explain429FlagError points a flag of explain request given to explain
// 429 to the command that has it; other flag errors are kept as they are.
func explain429FlagError(_ *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	name, _, _ = strings.Cut(name, "=")
	switch {
	case name == "from-message":
		return fmt.Errorf("%w: explain 429 reads no message; 'kubectl apf explain request --from-message TEXT' tells whether a 429's text is APF's (and with the request's path and identity, its level and queues)", err)
	case slices.Contains(requestOnlyFlags, name):
		return fmt.Errorf("%w: --%s names one request, a flag of 'kubectl apf explain request'; explain 429 looks at every rejecting level", err, name)
	}
	return err
}

// Complete resolves the source: with --workload and --prometheus both,
// the store is read beside the cluster or the bundle that gives the
// configuration the log is reconstructed against.
func (o *Explain429Options) Complete(_ *cobra.Command, _ []string) error {
	o.StoreBeside = len(o.Workload.Files) > 0 && o.Store.Enabled()
	if !o.readsLog() {
		o.DefaultsNeed = "--workload FILE"
	}
	return o.Options.Complete()
}

// readsLog reports whether the 429s are a log's (--workload, or
// --victorialogs), reconstructed against a configuration that --defaults,
// -f and --kube-version may give.
func (o *Explain429Options) readsLog() bool { return len(o.Workload.Files) > 0 || o.VLogs.enabled() }

// Validate checks the flags.
func (o *Explain429Options) Validate() error {
	if err := o.validateLogConfig(); err != nil {
		return err
	}
	if o.VLogs.enabled() {
		return o.validateVLogs()
	}
	if len(o.Workload.Files) > 0 {
		if err := o.validateWorkload(); err != nil || !o.Store.Enabled() {
			return err
		}
	}
	if err := o.Options.Validate(); err != nil {
		return err
	}
	if err := o.Server.Validate(); err != nil {
		return err
	}
	if o.MaxIncidents <= 0 {
		return fmt.Errorf("--max-incidents must be positive, not %d", o.MaxIncidents)
	}
	if o.Interval < 0 {
		return fmt.Errorf("--interval must not be negative, not %v", o.Interval)
	}
	if o.Store.Enabled() && !o.Store.IsWindow() {
		return fmt.Errorf("explain 429 --prometheus looks at a window: give --since (and --until), not --at")
	}
	return o.Flags.Validate()
}

// Run captures the state and prints the triage.
func (o *Explain429Options) Run(ctx context.Context) error {
	if o.VLogs.enabled() {
		return o.runVLogs(ctx)
	}
	if len(o.Workload.Files) > 0 && !o.Store.Enabled() {
		return o.runWorkload(ctx)
	}
	if o.Store.Enabled() {
		return o.runStore(ctx)
	}
	st, err := o.Load(ctx, load.Request{Parts: dump.PartAll, MetricsInterval: o.Interval, LargestBurst: true, ConfigOnlyFallback: true, ServerConcurrency: o.Server.Concurrency})
	if err != nil {
		return err
	}
	for _, n := range st.Notes {
		fmt.Fprintln(o.ErrOut, n)
	}
	if len(st.Live) == 0 {
		return fmt.Errorf("no live state could be read from %s: explain 429 needs the metrics and debug dumps (see the notes above)", o.Source.Describe())
	}
	rep := explain.Explain429(st.Config(), st.ServerConcurrency, o.Server.RequestTimeout, st.Live)
	rep.Source = sourceOf(o.Options)
	rep.Release, rep.ReleaseFrom = st.Release.String(), st.ReleaseFrom
	return printObject(o.Out, o.Flags, rep, func(w io.Writer) error { return rejrender.WriteText(w, rep, rejrender.Options{}) })
}

// runStore finds the incidents of the window in the store and, with
// --workload, gives each the log's clients.
func (o *Explain429Options) runStore(ctx context.Context) error {
	h := o.Store
	if err := h.Open(); err != nil {
		return err
	}
	rep, err := history.FindIncidents(ctx, h.Querier, history.IncidentOptions{Query: h.Query, Window: h.Window,
		ScrapeInterval: h.ScrapeInterval, MaxIncidents: o.MaxIncidents, WaitLimit: o.Server.WaitLimit()})
	for _, w := range h.Warnings() {
		fmt.Fprintln(o.ErrOut, w)
	}
	if err != nil {
		return err
	}
	out := rep.Schema(sourceOf(o.Options))
	if len(o.Workload.Files) > 0 {
		if err := o.joinLog(ctx, out); err != nil {
			return err
		}
	}
	return printObject(o.Out, o.Flags, out, func(w io.Writer) error {
		return rejrender.WriteText(w, out, rejrender.Options{Width: terminalWidth(o.Out), JoinedLog: o.Workload.Files})
	})
}

// sourceOf names what the state is read from, in the explain 429 schema.
func sourceOf(o *load.Options) rejections.Source {
	switch {
	case o.Store.Enabled():
		return rejections.Source{Kind: rejections.SourcePrometheus, Selector: o.Store.Selector}
	case o.From != "":
		return rejections.Source{Kind: rejections.SourceBundle, Name: o.From}
	case o.Source != nil:
		return rejections.Source{Kind: rejections.SourceCluster, Name: o.Source.Describe()}
	}
	return rejections.Source{Kind: rejections.SourceCluster}
}
