package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/pkg/capacity"
	"github.com/kubectl-apf/kubectl-apf/pkg/history"
	historyrender "github.com/kubectl-apf/kubectl-apf/pkg/history/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

const capacityLong = `Show the seat arithmetic of every priority level.

For each level: its shares and percentages, the nominal, lendable and
borrowing limits and the lower and upper bounds in seats, the most seats one
request may take, how long a request with the default deadline may wait in a
queue, and the shuffle-sharding collision table of the Kubernetes
documentation computed for the level's own queues and hand size: the
probability that a small flow is crushed by 1, 4 and 16 heavy flows.

The server concurrency limit (--max-requests-inflight plus
--max-mutating-requests-inflight) is inferred from the apiserver's metrics
unless --server-concurrency gives it. With -f or --set, the proposed
configuration is shown next to the current one (current -> proposed).

With --prometheus, the seats the levels used over a window of the past
(--since, 24h by default) follow the table: mean and peak seats in use
against the current limit's range, peak waiting requests, rejections by
reason and the queue wait p99, from a Prometheus-compatible store.` + historyHelp

const capacityExample = `  # Seat table of the cluster's priority levels
  kubectl apf capacity

  # What doubling workload-low's shares would do
  kubectl apf capacity --set workload-low.shares=200

  # Compare a configuration repository with the upstream defaults, offline
  kubectl apf capacity --defaults -f deploy/apf/ --server-concurrency 1200

  # As JSON
  kubectl apf capacity -o json

  # With the seats used over the last week, from Prometheus
  kubectl apf capacity --prometheus http://prometheus:9090 --since 7d`

// CapacityOptions holds the flags of "kubectl apf capacity".
type CapacityOptions struct {
	// Options are the state flags: --from, --defaults, -f, -R.
	*state.Options

	Sets                 []string
	ServerConcurrency    int
	ServerRequestTimeout time.Duration
	// Flags are -o.
	*output.Flags

	// History adds the seats used over a window, from a store.
	History *HistoryOptions

	settings []capacity.Setting

	genericiooptions.IOStreams
}

// NewCapacityOptions returns the defaults of "kubectl apf capacity".
func NewCapacityOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *CapacityOptions {
	return &CapacityOptions{Options: state.NewOptions(configFlags, state.Config), Flags: output.NewFlags(false, "", "json", "yaml"), ServerRequestTimeout: time.Minute,
		History: NewHistoryOptions(configFlags, 24*time.Hour), IOStreams: streams}
}

// NewCapacityCommand builds "kubectl apf capacity".
func NewCapacityCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewCapacityOptions(configFlags, streams)
	cmd := &cobra.Command{
		Use:     "capacity",
		Short:   "Show the seats of every priority level and the shuffle-sharding collision odds",
		Long:    capacityLong,
		Example: capacityExample,
		Args:    cobra.NoArgs,
		RunE:    runOptions(o),
	}
	o.Options.AddFlags(cmd.Flags())
	cmd.Flags().StringArrayVar(&o.Sets, "set", nil, "Proposed change LEVEL.FIELD=VALUE (repeatable); fields: "+capacity.SettableFields+".")
	cmd.Flags().IntVar(&o.ServerConcurrency, "server-concurrency", 0, "Server concurrency limit (max-requests-inflight + max-mutating-requests-inflight); 0 infers it from the apiserver's metrics, or uses 600.")
	cmd.Flags().DurationVar(&o.ServerRequestTimeout, "server-request-timeout", o.ServerRequestTimeout, "The apiserver's --request-timeout, which sets the default wait limit (a quarter of it, at most 1m).")
	o.Flags.AddFlags(cmd.Flags())
	o.History.AddFlags(cmd.Flags())
	return cmd
}

// Complete parses --set and resolves the source.
func (o *CapacityOptions) Complete(cmd *cobra.Command, _ []string) error {
	for _, s := range o.Sets {
		set, err := capacity.ParseSetting(s)
		if err != nil {
			return err
		}
		o.settings = append(o.settings, set)
	}
	if err := o.History.Validate(); err != nil {
		return err
	}
	if err := o.History.Complete(false); err != nil {
		return err
	}
	return o.Options.Complete()
}

// Validate checks the flags.
func (o *CapacityOptions) Validate() error {
	if err := o.Options.Validate(); err != nil {
		return err
	}
	if o.ServerConcurrency < 0 {
		return fmt.Errorf("--server-concurrency must be positive, not %d", o.ServerConcurrency)
	}
	if o.ServerRequestTimeout <= 0 {
		return fmt.Errorf("--server-request-timeout must be positive, not %v", o.ServerRequestTimeout)
	}
	return o.Flags.Validate()
}

// capacityReport is what "-o json" prints.
type capacityReport struct {
	// ServerConcurrencySource says where the limit came from: flag,
	// metrics or default.
	ServerConcurrencySource string `json:"serverConcurrencySource"`
	// Release is the Kubernetes release replayed (the limit arithmetic is
	// the same in every release the engine knows; the release picks
	// --defaults' objects), ReleaseFrom where it came from.
	Release     string          `json:"release"`
	ReleaseFrom string          `json:"releaseFrom"`
	Current     capacity.Table  `json:"current"`
	Proposed    *capacity.Table `json:"proposed,omitempty"`
	// Observed is what the levels used over the window of --prometheus.
	Observed []history.LevelWindow `json:"observed,omitempty"`
}

// Run computes and prints the tables.
func (o *CapacityOptions) Run(ctx context.Context) error {
	st, err := o.Load(ctx, state.Request{ServerConcurrency: o.ServerConcurrency, InferConcurrency: true, Stdin: o.In, NeedObjects: "the levels' seats cannot be computed"})
	if err != nil {
		return err
	}
	for _, n := range st.Notes {
		fmt.Fprintln(o.ErrOut, n)
	}
	scl := st.ServerConcurrency
	rep := capacityReport{ServerConcurrencySource: st.ServerConcurrencySource, Release: st.Release.String(), ReleaseFrom: st.ReleaseFrom}
	rep.Current, err = capacity.Compute(st.BasePriorityLevels, scl, o.ServerRequestTimeout)
	if err != nil {
		return err
	}
	if len(o.Files) > 0 || len(o.settings) > 0 {
		proposedPL, err := capacity.Apply(st.PriorityLevels, o.settings)
		if err != nil {
			return err
		}
		p, err := capacity.Compute(proposedPL, scl, o.ServerRequestTimeout)
		if err != nil {
			return fmt.Errorf("proposed configuration: %w", err)
		}
		rep.Proposed = &p
	}
	if o.History.Enabled() {
		if !o.History.IsWindow() {
			return fmt.Errorf("capacity --prometheus looks at a window: give --since (and --until), not --at")
		}
		if rep.Observed, err = history.LevelsOverWindow(ctx, o.History.Querier, o.History.Query, o.History.Window); err != nil {
			return err
		}
	}
	return printObject(o.Out, o.Flags, rep, func(w io.Writer) error {
		if err := printCapacity(w, rep); err != nil || !o.History.Enabled() {
			return err
		}
		win := o.History.Window
		fmt.Fprintf(w, "\nSeats used from %s to %s, summed over the apiservers:\n", win.Start.UTC().Format(time.RFC3339), win.End.UTC().Format(time.RFC3339))
		return historyrender.WriteLevelWindows(w, rep.Observed, false)
	})
}

func printCapacity(w io.Writer, rep capacityReport) error {
	cur := rep.Current
	fmt.Fprintf(w, "Replaying Kubernetes %s (%s)\n", rep.Release, sanitize.Line(rep.ReleaseFrom))
	fmt.Fprintf(w, "Server concurrency limit: %d seats (%s); nominal limits sum to %s\n",
		cur.ServerConcurrencyLimit, rep.ServerConcurrencySource, change(fmt.Sprint(cur.NominalSum), proposedField(rep, func(t capacity.Table) string { return fmt.Sprint(t.NominalSum) })))
	fmt.Fprintf(w, "Wait limit for the default request timeout (%v): %v\n\n", cur.RequestTimeout, min(cur.RequestTimeout/4, time.Minute))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LEVEL\tTYPE\tSHARES\tLEND%\tBORROW%\tNOMINAL\tLENDABLE\tBORROWING\tLOWER\tUPPER\tMAXSEATS\tQUEUES/HAND/LEN\tWAIT\tP(1 ELEPHANT)\tP(4)\tP(16)")
	proposed := map[string]capacity.Level{}
	var names []string
	seen := map[string]bool{}
	for _, l := range cur.Levels {
		names = append(names, l.Name)
		seen[l.Name] = true
	}
	if rep.Proposed != nil {
		for _, l := range rep.Proposed.Levels {
			proposed[l.Name] = l
			if !seen[l.Name] {
				names = append(names, l.Name)
			}
		}
	}
	curBy := map[string]capacity.Level{}
	for _, l := range cur.Levels {
		curBy[l.Name] = l
	}
	for _, name := range names {
		c, inCur := curBy[name]
		p, inProp := proposed[name]
		cells, label := levelCells(c, inCur), sanitize.Line(name)
		switch {
		case rep.Proposed == nil:
		case !inCur:
			cells, label = levelCells(p, true), label+" (new)"
		case !inProp:
			label += " (removed)"
		default:
			pc := levelCells(p, true)
			for i := range cells {
				cells[i] = change(cells[i], pc[i])
			}
		}
		fmt.Fprintf(tw, "%s\t%s\n", label, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, t := range []*capacity.Table{&rep.Current, rep.Proposed} {
		if t != nil {
			for _, ig := range t.Ignored {
				fmt.Fprintf(w, "ignored (broken, the apiserver skips it): %s\n", sanitize.Line(ig))
			}
		}
	}
	return nil
}

func proposedField(rep capacityReport, f func(capacity.Table) string) string {
	if rep.Proposed == nil {
		return ""
	}
	return f(*rep.Proposed)
}

// change renders "a" when b is empty or equal, else "a->b".
func change(a, b string) string {
	if b == "" || a == b {
		return a
	}
	return a + "->" + b
}

// levelCells renders the columns after LEVEL; a missing level is all "-".
func levelCells(l capacity.Level, ok bool) []string {
	const n = 15
	cells := make([]string, n)
	if !ok {
		for i := range cells {
			cells[i] = "-"
		}
		return cells
	}
	typ := l.Type
	if l.LimitResponse != "" {
		typ = l.LimitResponse
	}
	pct := func(p *int32) string {
		if p == nil {
			return "none"
		}
		return fmt.Sprint(*p)
	}
	maxSeats := "-"
	if l.MaxSeats > 0 {
		maxSeats = fmt.Sprint(l.MaxSeats)
	}
	queues, wait := "-", "-"
	probs := []string{"-", "-", "-"}
	if l.Queues > 0 {
		queues = fmt.Sprintf("%d/%d/%d", l.Queues, l.HandSize, l.QueueLengthLimit)
		wait = l.WaitLimit.String()
		for i, c := range l.Crush {
			if i < len(probs) {
				probs[i] = fmt.Sprintf("%.3g", c.Probability)
			}
		}
	}
	return []string{typ, fmt.Sprint(l.Shares), pct(l.LendablePercent), pct(l.BorrowingLimitPercent),
		fmt.Sprint(l.NominalCL), fmt.Sprint(l.LendableCL), fmt.Sprint(l.BorrowingCL), fmt.Sprint(l.LowerCL), fmt.Sprint(l.UpperCL),
		maxSeats, queues, wait, probs[0], probs[1], probs[2]}
}
