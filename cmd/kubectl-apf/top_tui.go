package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
	"github.com/kubectl-apf/kubectl-apf/pkg/history"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
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
--step, as with --replay.`

const topTUIExample = `
  # Watch APF live (tab switches between apiservers)
  kubectl apf top --all-apiservers

  # Record while watching, then step through the recording
  kubectl apf top --record apf-top.jsonl.gz
  kubectl apf top --replay apf-top.jsonl.gz

  # The live view over a bundle
  kubectl apf top --from apf-bundle.tar.gz

  # Live, with the last 30 minutes of Prometheus behind it (left/right)
  kubectl apf top --prometheus http://prometheus:9090

  # Step through the last hour as Prometheus saw it
  kubectl apf top --prometheus http://prometheus:9090 --since 1h`

// TopTUIOptions holds the flags of the live view of "kubectl apf top".
type TopTUIOptions struct {
	// Options are the state flags and the store's: the store's recent
	// past behind the cluster, or the store alone.
	*state.Options
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
	o := &TopTUIOptions{Options: state.NewOptions(configFlags, state.Instances|state.Store), Interval: tui.DefaultInterval, IOStreams: streams}
	o.StoreBeside = true
	o.isTerminal = func() bool {
		f, ok := streams.Out.(*os.File)
		return ok && term.IsTerminal(int(f.Fd()))
	}
	return o
}

// withTopTUI is the hook "kubectl apf top" calls: a bare "top" whose
// stdout is a terminal (or with --record or --replay) opens the live view;
// otherwise the command runs as before (tables). It adds the view's flags
// to cmd and returns cmd.
func withTopTUI(cmd *cobra.Command, configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewTopTUIOptions(configFlags, streams)
	fs := cmd.Flags()
	if fs.Lookup("from") == nil && cmd.PersistentFlags().Lookup("from") == nil {
		o.Options.AddFlags(fs)
	}
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

	origRunE, origRun := cmd.RunE, cmd.Run
	cmd.Run = nil
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if o.Record != "" || o.Replay != "" || o.Force || o.isTerminal() {
			if err := o.Complete(c, args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(c.Context())
		}
		if origRunE != nil {
			return origRunE(c, args)
		}
		// Piped: the tables of "top levels", with the source flags given.
		for _, sub := range c.Commands() {
			if sub.Name() != "levels" || sub.RunE == nil {
				continue
			}
			var err error
			c.Flags().Visit(func(f *pflag.Flag) {
				sf := sub.Flags().Lookup(f.Name)
				if sf == nil || err != nil {
					return
				}
				if from, ok := f.Value.(pflag.SliceValue); ok {
					if to, ok := sf.Value.(pflag.SliceValue); ok {
						err = to.Replace(from.GetSlice())
						sf.Changed = true
						return
					}
				}
				err = sub.Flags().Set(f.Name, f.Value.String())
			})
			if err != nil {
				return err
			}
			sub.SetContext(c.Context())
			return sub.RunE(sub, args)
		}
		if origRun != nil {
			origRun(c, args)
			return nil
		}
		return c.Help()
	}
	return cmd
}

// Complete builds the source, unless replaying.
func (o *TopTUIOptions) Complete(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unknown command %q for \"kubectl apf top\"; see kubectl apf top --help", args[0])
	}
	o.intervalSet = cmd.Flags().Changed("interval")
	if o.Replay != "" {
		return nil
	}
	if o.Store.Enabled() {
		o.Store.Complete(o.AllAPIServers)
		if o.Store.TimeSet() || o.completeCluster() != nil {
			// A window, a moment, or no cluster to read: the store alone.
			o.Source = &state.StoreSource{Store: o.Store, Clock: o.ClockOrReal()}
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
	if cs, ok := o.Source.(*fetch.ClusterSource); ok {
		// Count the view's own requests: the header shows its load on the
		// apiserver (users' pain point 8: monitoring tools load it too).
		cfg := *cs.Config
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{rt: rt, n: &o.requests} })
		cs.Config = &cfg
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
	opts := tui.Options{Context: ctx, Interval: o.Interval}
	if o.ConfigFlags() != nil && o.ConfigFlags().Context != nil && *o.ConfigFlags().Context != "" {
		opts.Cluster = *o.ConfigFlags().Context
	} else if o.ConfigFlags() != nil {
		if raw, err := o.ConfigFlags().ToRawKubeConfigLoader().RawConfig(); err == nil {
			opts.Cluster = raw.CurrentContext
		}
	}
	if _, ok := os.LookupEnv("NO_COLOR"); !ok {
		st := tui.ColorStyles()
		opts.Styles = &st
	}
	if o.Store.Enabled() {
		if err := o.Store.Open(); err != nil {
			return err
		}
	}
	if o.Store.Enabled() && o.Store.IsWindow() {
		rec, err := storeRecording(ctx, o.Store, o.Store.Window)
		if err != nil {
			return err
		}
		opts.Replay = rec
		opts.Cluster = "history from " + o.Store.Describe()
		if !o.intervalSet {
			opts.Interval = time.Second
		}
	} else if o.Replay != "" {
		rec, err := record.ReadFile(o.Replay)
		if err != nil {
			return err
		}
		if len(rec.Frames) == 0 {
			return fmt.Errorf("--replay %s: the recording holds no refresh", o.Replay)
		}
		opts.Replay = rec
		if !o.intervalSet && rec.Header.Interval > 0 {
			// Play back at the pace it was recorded, unless told otherwise.
			opts.Interval = rec.Header.Interval
		}
		opts.Cluster = "replay of " + o.Replay
	} else {
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
				return fmt.Errorf("--record: %w", err)
			}
			defer w.Close()
			opts.Recorder = w
		}
	}
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

// countingTransport counts the requests sent through it.
type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

// RoundTrip counts r and sends it on.
func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.rt.RoundTrip(r)
}

// pastWindow is how far back the live view's history from a store goes.
const pastWindow = 30 * time.Minute

// recentPast reads the store's last pastWindow for the live view: the
// level table one frame per step, and a line about the last incident.
func (o *TopTUIOptions) recentPast(ctx context.Context) (*tui.Past, error) {
	h := o.Store
	w, err := history.WindowOptions{Since: pastWindow, Step: h.Step, ScrapeInterval: h.ScrapeInterval}.Resolve(o.ClockOrReal().Now())
	if err != nil {
		return nil, err
	}
	rec, err := storeRecording(ctx, h, w)
	if err != nil {
		return nil, err
	}
	rep, err := history.FindIncidents(ctx, h.Querier, history.IncidentOptions{Query: h.Query, Window: w, ScrapeInterval: h.ScrapeInterval})
	if err != nil {
		return nil, err
	}
	return &tui.Past{Recording: rec, Incident: lastIncident(rep)}, nil
}

// lastIncident is one line about the incident of rep that ended last
// (among the detailed ones), "" when there is none.
func lastIncident(rep *history.Report) string {
	if len(rep.Incidents) == 0 {
		return ""
	}
	last := rep.Incidents[0]
	for _, inc := range rep.Incidents[1:] {
		if inc.End.After(last.End) {
			last = inc
		}
	}
	line := fmt.Sprintf("%s %s–%s, %.0f rejected", last.Level, last.Start.UTC().Format("15:04:05"), last.End.UTC().Format("15:04:05Z"), last.Rejected)
	if len(last.FlowSchemas) > 0 {
		line += fmt.Sprintf(" (%s, FlowSchema %s)", last.FlowSchemas[0].Reason, last.FlowSchemas[0].FlowSchema)
	}
	if last.Diagnosis.Kind != "" {
		line += ": " + last.Diagnosis.Kind
	}
	if rep.Undetailed > 0 {
		line += fmt.Sprintf(" (of the %d largest of %d)", len(rep.Incidents), len(rep.Incidents)+rep.Undetailed)
	}
	return line
}

// recording reads window w from the store as a recording, one frame per
// step, for the view to step through.
func storeRecording(ctx context.Context, h *state.StoreOptions, w history.Window) (*record.Recording, error) {
	times, caps, err := h.Capture(ctx, w.Start, w.End, w.Step)
	if err != nil {
		return nil, err
	}
	if len(caps) == 0 {
		return nil, fmt.Errorf("%s holds no APF series from %s to %s matching the selector", h.Describe(),
			w.Start.UTC().Format(time.RFC3339), w.End.UTC().Format(time.RFC3339))
	}
	rec := &record.Recording{Header: record.Header{Source: h.Describe(), Started: w.Start.UTC(), Interval: w.Step}}
	for i, c := range caps {
		f, err := record.NewFrame(times[i], -1, c, nil)
		if err != nil {
			return nil, err
		}
		rec.Frames = append(rec.Frames, f)
	}
	return rec, nil
}
