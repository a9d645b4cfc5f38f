package main

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
	"github.com/kubectl-apf/kubectl-apf/pkg/tui"
	"github.com/kubectl-apf/kubectl-apf/pkg/tui/record"
)

const topTUILong = `

When standard output is a terminal, a bare "kubectl apf top" opens a live
view of APF at work, refreshed every --interval: one row per priority level
(seats in use against the current limit, nominal limit, seats lent or
borrowed, waiting requests and seats, dispatched and rejected requests per
second with a sparkline of the last minutes, wait p99), a heat map of the
selected level's queues, and on enter its flows and waiting requests.
Press ? for the keys. "top levels" and "top flows" print tables, and so does
a bare "top" whose output is piped.

The view reads the three debug dumps and /metrics at every refresh (about
five requests per apiserver; the header shows the count), survives the
apiserver restarting (it reconnects with backoff), and --record FILE keeps
every refresh so that --replay FILE can step through a burst afterwards
(left/right).

With --prometheus (or --prometheus-service) and no time flag, the view reads
the cluster live as above and the store's last 30 minutes behind it: the
sparklines start with the store's history, left steps back through the
level table as the store saw it, one frame per --step (the header says
HISTORY), and right past the last frame returns to live; the header names
the last incident of 429s the store holds. When the kubeconfig names no
cluster, the store's level table is shown live instead. With --since (and
--until) the view steps through that window of the store, one frame per
--step, as with --replay.

With --from, the view shows the bundle; a watch's bundle (dump bundle
--watch) is played back as --replay plays a recording, one frame per scrape
with the rates since the scrape before (a watch longer than 256 MB of
scrapes, over the part around its largest burst of 429s, else its end).`

const topTUIExample = `
  # Watch APF live (tab switches between apiservers)
  kubectl apf top --all-apiservers

  # Record while watching, then step through the recording
  kubectl apf top --record apf-top.jsonl.gz
  kubectl apf top --replay apf-top.jsonl.gz

  # The live view over a bundle; over a watch's, the watch played back
  kubectl apf top --from apf-bundle.tar.gz
  kubectl apf top --from incident.tar.gz

  # Live, with the last 30 minutes of Prometheus behind it (left/right)
  kubectl apf top --prometheus http://prometheus:9090

  # Step through the last hour as Prometheus saw it
  kubectl apf top --prometheus http://prometheus:9090 --since 1h`

// TopTUIOptions holds the flags of the live view of "kubectl apf top".
type TopTUIOptions struct {
	// Options are the state flags and the store's: the store's recent
	// past behind the cluster, or the store alone.
	*load.Options
	Interval time.Duration
	Record   string
	Replay   string
	// Force opens the view even when stdout is not a terminal (tests).
	Force bool

	// Program options injected by tests (input, output, size).
	programOptions []tea.ProgramOption
	// isTerminal reports whether stdout is a terminal.
	isTerminal func() bool
	requests   atomic.Int64
	// intervalSet is true when --interval was given.
	intervalSet bool
	// livePast: the cluster live, the store's recent past behind it.
	livePast bool
	genericiooptions.IOStreams
}

// NewTopTUIOptions returns the defaults of the live view.
func NewTopTUIOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *TopTUIOptions {
	o := &TopTUIOptions{Options: newOptions(configFlags, load.Instances|load.Store), Interval: tui.DefaultInterval, IOStreams: streams}
	o.StoreBeside = true
	o.isTerminal = func() bool {
		f, ok := streams.Out.(*os.File)
		return ok && term.IsTerminal(int(f.Fd()))
	}
	return o
}

// withTopTUI is the hook "kubectl apf top" calls: a bare "top" whose
// stdout is a terminal (or with --record or --replay) opens the live view;
// piped, it prints the table of "top levels" over the same source flags.
// It adds the view's flags to cmd and returns cmd.
func withTopTUI(cmd *cobra.Command, configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewTopTUIOptions(configFlags, streams)
	fs := cmd.Flags()
	o.Options.AddFlags(fs)
	fs.DurationVar(&o.Interval, "interval", o.Interval, "Refresh interval of the live view (0.5s to 1m; + and - change it).")
	fs.StringVar(&o.Record, "record", o.Record, "Record every refresh of the live view to FILE (JSON Lines, gzip-compressed when FILE ends in .gz).")
	fs.StringVar(&o.Replay, "replay", o.Replay, "Play back a recording made with --record (left/right move through time).")
	if cmd.Long == "" {
		cmd.Long = cmd.Short + "."
	}
	cmd.Long += topTUILong
	if cmd.Example != "" {
		cmd.Example += "\n"
	}
	cmd.Example += topTUIExample[1:]

	cmd.Run = nil
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("unknown command %q for \"kubectl apf top\"; see kubectl apf top --help", args[0])
		}
		if o.Record != "" || o.Replay != "" || o.Force || o.isTerminal() {
			return runOptions(o)(c, args)
		}
		return runOptions(o.levels())(c, args)
	}
	return cmd
}

// levels is "top levels" over the view's source and store flags (the one
// set "top" declares, shared, not copied): what a bare "top" prints when
// piped.
func (o *TopTUIOptions) levels() *TopOptions {
	l := NewTopOptions(o.ConfigFlags(), o.IOStreams, "levels")
	// Shared: top levels reads the store instead of the cluster.
	l.Options, l.StoreBeside = o.Options, false
	return l
}

// Complete builds the source, unless replaying.
func (o *TopTUIOptions) Complete(cmd *cobra.Command, _ []string) error {
	o.intervalSet = cmd.Flags().Changed("interval")
	if o.Replay != "" {
		return nil
	}
	if o.Store.Enabled() {
		o.Store.Complete(o.AllAPIServers)
		if o.Store.TimeSet() || o.completeCluster() != nil {
			// A window, a moment, or no cluster to read: the store alone.
			o.Source = &load.StoreSource{Store: o.Store, Clock: o.ClockOrReal()}
			return nil
		}
		o.livePast = true
		return nil
	}
	return o.completeCluster()
}

// completeCluster builds the cluster source, counting its requests.
func (o *TopTUIOptions) completeCluster() error {
	if err := o.Options.Complete(); err != nil {
		return err
	}
	if err := o.SourceErr(); err != nil {
		return err
	}
	if cs, ok := o.Source.(*fetch.ClusterSource); ok {
		// Count the view's own requests: the header shows its load on the
		// apiserver (a monitoring tool loads the server it watches too).
		cs.CountRequests(&o.requests)
	}
	return nil
}

// Validate checks the flags; it names them in its messages.
func (o *TopTUIOptions) Validate() error {
	if o.Interval < tui.Intervals[0] || o.Interval > tui.Intervals[len(tui.Intervals)-1] {
		return fmt.Errorf("--interval %s: want between %s and %s", o.Interval, tui.Intervals[0], tui.Intervals[len(tui.Intervals)-1])
	}
	if o.Replay != "" && (o.Record != "" || o.From != "" || o.AllAPIServers || len(o.APIServerURLs) > 0) {
		return fmt.Errorf("--replay plays a recording back: it cannot be combined with --record, --from, --all-apiservers or --apiserver-urls")
	}
	if o.Store.Enabled() && (o.Replay != "" || o.From != "" || len(o.APIServerURLs) > 0) {
		return fmt.Errorf("--prometheus reads the store: --replay, --from and --apiserver-urls do not apply")
	}
	if o.From == "-" {
		return fmt.Errorf("the live view reads its keys from standard input: give --from a file, or pipe into \"kubectl apf top levels --from -\"")
	}
	if err := o.Options.Validate(); err != nil {
		return err
	}
	if !o.Force && !o.isTerminal() {
		return fmt.Errorf("the live view needs a terminal; pipe \"kubectl apf top levels\" or \"kubectl apf top flows\" for tables")
	}
	return nil
}

// Run opens the view until q or ctrl-c, restoring the terminal.
func (o *TopTUIOptions) Run(ctx context.Context) error {
	opts, done, err := o.config(ctx)
	if err != nil {
		return err
	}
	defer done()
	popts := append([]tea.ProgramOption{tea.WithContext(ctx), tea.WithOutput(o.Out)}, o.programOptions...)
	if f, ok := o.In.(*os.File); ok {
		popts = append(popts, tea.WithInput(f))
	}
	p := tea.NewProgram(tui.New(opts), popts...)
	if _, err := p.Run(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("running the live view: %w", err)
	}
	return nil
}

// config builds the view's configuration from the options: a window of
// the store or a recording played back, or the source live (recorded with
// --record, with the store's past behind it with --prometheus). done ends
// the recording.
func (o *TopTUIOptions) config(ctx context.Context) (opts tui.Options, done func(), err error) {
	opts = tui.Options{Context: ctx, Clock: o.ClockOrReal().Now, Interval: o.Interval, Cluster: o.clusterName()}
	done = func() {}
	if _, ok := os.LookupEnv("NO_COLOR"); !ok {
		st := tui.ColorStyles()
		opts.Styles = &st
	}
	if o.Store.Enabled() {
		if err := o.Store.Open(); err != nil {
			return opts, done, err
		}
	}
	switch {
	case o.Store.Enabled() && o.Store.IsWindow():
		if opts.Replay, err = storeRecording(ctx, o.Store, o.Store.Window); err != nil {
			return opts, done, err
		}
		opts.Cluster = "history from " + o.Store.Describe()
		if !o.intervalSet {
			opts.Interval = time.Second
		}
	case o.Replay != "":
		rec, err := record.ReadFile(o.Replay)
		if err != nil {
			return opts, done, err
		}
		if len(rec.Frames) == 0 {
			return opts, done, fmt.Errorf("--replay %s: the recording holds no refresh", o.Replay)
		}
		opts.Replay = rec
		if !o.intervalSet && rec.Header.Interval > 0 {
			// Play back at the pace it was recorded, unless told otherwise.
			opts.Interval = rec.Header.Interval
		}
		opts.Cluster = "replay of " + o.Replay
	default:
		if played, err := o.playWatch(&opts); err != nil || played {
			return opts, done, err
		}
		opts.Source = o.Source
		if _, ok := o.Source.(*fetch.ClusterSource); ok {
			opts.Requests = o.requests.Load
		}
		if o.livePast {
			opts.Past = o.recentPast
		}
		if o.Record != "" {
			w, err := record.Create(o.Record, record.Header{Source: o.Source.Describe(), Started: o.ClockOrReal().Now().UTC(), Interval: o.Interval})
			if err != nil {
				return opts, done, fmt.Errorf("--record: %w", err)
			}
			opts.Recorder, done = w, func() { w.Close() }
		}
	}
	return opts, done, nil
}
