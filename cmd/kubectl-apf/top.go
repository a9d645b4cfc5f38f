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

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/history"
	historyrender "github.com/kubectl-apf/kubectl-apf/pkg/history/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
	levelsrender "github.com/kubectl-apf/kubectl-apf/pkg/levels/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
)

// NewTopCommand builds "kubectl apf top" and its subcommands.
func NewTopCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Show the busiest priority levels and flows",
		Long: `Show the busiest priority levels (from /metrics) and flows (from the
request dump) of every apiserver instance asked, as a table or, with --watch,
as a table printed again every --interval.`,
		Example: `  # The priority levels, busiest first
  kubectl apf top levels

  # The heaviest flows, every 2 seconds
  kubectl apf top flows --watch --interval 2s`,
		Run: func(cmd *cobra.Command, _ []string) { _ = cmd.Help() },
	}
	cmd.AddCommand(newTopKindCommand(configFlags, streams, "levels"), newTopKindCommand(configFlags, streams, "flows"))
	return withTopTUI(cmd, configFlags, streams) // the live view (top_tui.go)
}

// TopOptions holds the flags of "kubectl apf top levels|flows".
type TopOptions struct {
	Kind string
	// Flags are -o and --no-headers.
	*output.Flags
	Level      string
	SortBy     string
	Limit      int
	Watch      bool
	Interval   time.Duration
	RateWindow time.Duration
	// Options are the state flags; for levels, the store's too.
	*load.Options

	genericiooptions.IOStreams
}

// NewTopOptions returns the defaults of a top subcommand.
func NewTopOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, kind string) *TopOptions {
	inputs := load.Instances
	if kind == "levels" {
		inputs |= load.Store
	}
	o := &TopOptions{Kind: kind, Flags: output.NewFlags(true, "table", "wide", "json", "yaml"), SortBy: "utilisation", Limit: 20, Interval: 5 * time.Second, RateWindow: 2 * time.Second,
		Options: newOptions(configFlags, inputs), IOStreams: streams}
	if kind == "levels" {
		o.Name = output.PriorityLevelName
	}
	return o
}

var topLevelsLong = `Show, per priority level: the nominal and current seat limits, seats in use
and utilisation, waiting requests and seats, executing requests, dispatched
and rejected requests per second (by reason) and the 99th percentile of the
queue wait.

Each figure comes from the best input read: the debug dumps, then the
metrics (the order is in docs/explain-429-schema.md, "Level state"); one no
input gives shows as -. Rates and the wait percentile come from two /metrics
scrapes --rate-window apart (from a bundle: the two scrapes it holds). Levels are sorted by
utilisation, busiest first; with several apiservers, per-instance rows are
followed by merged rows.

With --prometheus and --at, the table as it was at that moment (rates over
--step before it); with --since, each level over the window: its limits,
mean and peak seats in use, peak waiting requests, the requests dispatched
and rejected (by reason) and the queue wait p99.` + load.StoreHelp(load.Instances|load.Store)

const topFlowsLong = `Show the heaviest flows in the request dump: for each priority level,
FlowSchema and flow distinguisher (user or namespace), the waiting and
executing requests and seats. The dump is a snapshot: short requests seldom
show, so run it while the problem happens, or use --watch.`

func newTopKindCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, kind string) *cobra.Command {
	o := NewTopOptions(configFlags, streams, kind)
	cmd := &cobra.Command{
		Use:  kind,
		Args: noArgs("read a bundle with --from FILE"),
		RunE: runOptions(o),
	}
	fs := cmd.Flags()
	o.Flags.AddFlags(fs)
	fs.StringVar(&o.Level, "level", o.Level, "Show only this priority level.")
	fs.BoolVarP(&o.Watch, "watch", "w", o.Watch, "Print again every --interval until interrupted.")
	fs.DurationVar(&o.Interval, "interval", o.Interval, "Time between two prints with --watch.")
	if kind == "levels" {
		cmd.Short = "Show per priority level limits, seats in use, waiting, dispatch and rejection rates, wait p99"
		cmd.Long = topLevelsLong
		cmd.Example = `  # Show the priority levels, busiest first
  kubectl apf top levels

  # Of every apiserver, sorted by rejections, refreshed every 10s
  kubectl apf top levels --all-apiservers --sort-by rejected --watch --interval 10s

  # The table as it was at 03:10, and over the night, from Prometheus
  kubectl apf top levels --prometheus http://prometheus:9090 --at 2026-11-23T03:10:00Z
  kubectl apf top levels --prometheus http://prometheus:9090 --since 8h --until "2h ago"`
		fs.StringVar(&o.SortBy, "sort-by", o.SortBy, "Sort by one of: "+strings.Join(levelsrender.TopSortKeys, ", ")+".")
		fs.DurationVar(&o.RateWindow, "rate-window", o.RateWindow, "Time between the two /metrics scrapes that give rates (0: no rates).")
	} else {
		cmd.Short = "Show the heaviest flows (user or namespace) in the request dump, with level and waiting seats"
		cmd.Long = topFlowsLong
		cmd.Example = `  # Show the 20 heaviest flows
  kubectl apf top flows

  # Of one level, every flow, with the queues each uses
  kubectl apf top flows --level workload-low --limit 0 -o wide`
		fs.IntVar(&o.Limit, "limit", o.Limit, "Show at most this many flows (0: all).")
	}
	o.Options.AddFlags(fs)
	return cmd
}

// Complete turns the flags into typed values and builds the source.
func (o *TopOptions) Complete(_ *cobra.Command, _ []string) error {
	return o.Options.Complete()
}

// Validate checks the flags.
func (o *TopOptions) Validate() error {
	if err := o.Flags.Validate(); err != nil {
		return err
	}
	if o.Kind == "levels" && !slices.Contains(levelsrender.TopSortKeys, o.SortBy) {
		return fmt.Errorf("--sort-by must be one of %s, not %q", strings.Join(levelsrender.TopSortKeys, ", "), o.SortBy)
	}
	if o.Limit < 0 {
		return fmt.Errorf("--limit must not be negative")
	}
	if o.Watch && o.Interval <= 0 {
		return fmt.Errorf("--interval must be positive")
	}
	if o.RateWindow < 0 {
		return fmt.Errorf("--rate-window must not be negative")
	}
	if o.Watch && o.From != "" {
		return fmt.Errorf("--watch needs a cluster; a bundle (--from) does not change")
	}
	if o.UsesStore() && (o.Watch || o.From != "" || len(o.APIServerURLs) > 0) {
		return fmt.Errorf("--prometheus reads the store: --watch, --from and --apiserver-urls do not apply (the live view \"kubectl apf top --prometheus\" follows it)")
	}
	return o.Options.Validate()
}

// Run prints once, or every --interval with --watch. In watch mode the
// rates of each print come from this scrape and the previous print's, so
// the apiserver is scraped once per interval.
func (o *TopOptions) Run(ctx context.Context) error {
	if o.UsesStore() {
		return o.runStore(ctx)
	}
	opts := dump.CaptureOptions{Parts: dump.PartRequests, AtWatchEnd: true}
	if o.Kind == "levels" {
		// The dumps and two scrapes for the first print (pkg/levels takes
		// each figure from the best of them); later prints of --watch take
		// one scrape and pair it with the previous print's.
		opts = dump.CaptureOptions{Parts: dump.PartPriorityLevels | dump.PartQueues | dump.PartRequests | dump.PartMetrics, MetricsInterval: o.RateWindow, AtWatchEnd: true}
	}
	var every time.Duration
	if o.Watch {
		every = o.Interval
	}
	capture := func(ctx context.Context, opts dump.CaptureOptions) (*dump.Capture, error) {
		return captureOrFail(ctx, o.Source, opts, liveHint(o.Options))
	}
	return dump.Watch(ctx, dump.WatchOptions{Capture: opts, Every: every, Clock: o.ClockOrReal()}, capture, func(i int, c *dump.Capture) error {
		if o.Watch {
			if i > 0 {
				fmt.Fprintln(o.Out)
			}
			fmt.Fprintf(o.Out, "# %s  %s\n", o.ClockOrReal().Now().UTC().Format(time.RFC3339), sanitize.Line(o.Source.Describe()))
		}
		render.PrintFailures(o.ErrOut, c.Failures)
		if o.Kind == "levels" {
			return o.printLevels(c.Snapshots, c.Notes)
		}
		var without []string
		for _, s := range c.Snapshots {
			if !levels.RequestDumpRead(s) {
				without = append(without, s.Instance)
			}
		}
		if len(without) == len(c.Snapshots) {
			return missingDump(o.Source, dump.FileRequests)
		}
		printNotes(o.ErrOut, c.Notes)
		for _, inst := range without {
			fmt.Fprintf(o.ErrOut, "note: %s: no dump_requests was read: its flows are not shown\n", sanitize.Line(inst))
		}
		for _, inst := range render.UnlistedExecuting(c.Snapshots) {
			fmt.Fprintf(o.ErrOut, "note: %s: its dump_requests is of a layout before 1.28, which lists the waiting requests only: EXECUTING and EXECUTING-SEATS are not known and show as -\n", sanitize.Line(inst))
		}
		return render.PrintTopFlows(o.Out, o.Flags, c.Snapshots, o.Level, o.Limit)
	})
}

// printLevels prints the capture's notes and the level table, with a note
// for each instance that lacks an input (issue 26: say what is missing),
// and fails with one line, which says what the input held, when no
// instance gave a figure to show.
func (o *TopOptions) printLevels(snaps []*dump.Snapshot, captureNotes []string) error {
	shown := false
	whys := make([]string, len(snaps))
	notes := make([]string, len(snaps))
	for i, s := range snaps {
		rows := levels.Compute(levels.Input{Snapshot: s})
		if whys[i] = levels.NoFigure(s, rows); whys[i] == "" {
			shown = true
			notes[i] = levels.Missing(s, rows)
		}
	}
	if !shown && len(snaps) > 0 {
		why := whys[0]
		if len(snaps) > 1 {
			for i, s := range snaps {
				whys[i] = s.Instance + ": " + whys[i]
			}
			why = "no apiserver gave a figure (" + strings.Join(whys, "; ") + ")"
		}
		return fmt.Errorf("%s: %s: top levels needs the debug dumps, or metrics of the levels' limits, seats or requests (a whole scrape: kubectl get --raw /metrics)", sanitize.Line(o.Source.Describe()), sanitize.Line(why))
	}
	printNotes(o.ErrOut, captureNotes)
	for i, s := range snaps {
		if n := whys[i] + notes[i]; n != "" {
			fmt.Fprintf(o.ErrOut, "note: %s: %s\n", sanitize.Line(s.Instance), sanitize.Line(n))
		}
	}
	return levelsrender.PrintTopLevels(o.Out, o.Flags, snaps, o.Level, o.SortBy)
}

// runStore prints the level table from the store: at one moment in the
// form of the live table, or over a window.
func (o *TopOptions) runStore(ctx context.Context) error {
	h := o.Store
	if err := h.Open(); err != nil {
		return err
	}
	defer func() {
		for _, w := range h.Warnings() {
			fmt.Fprintln(o.ErrOut, w)
		}
	}()
	if h.IsWindow() {
		rows, err := history.LevelsOverWindow(ctx, h.Querier, h.Query, h.Window)
		if err != nil {
			return err
		}
		if o.Level != "" {
			rows = slices.DeleteFunc(rows, func(r history.LevelWindow) bool { return r.Name != o.Level })
		}
		if len(rows) == 0 {
			return history.NoSeriesError(ctx, h.Querier, h.Describe(), h.Window)
		}
		return printObject(o.Out, o.Flags, rows, func(w io.Writer) error { return historyrender.WriteLevelWindows(w, rows, o.NoHeaders) })
	}
	c, err := h.CaptureAt(ctx, h.Window.End)
	if err != nil {
		return err
	}
	return levelsrender.PrintTopLevels(o.Out, o.Flags, c.Snapshots, o.Level, o.SortBy)
}
