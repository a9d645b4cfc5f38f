package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/pkg/capacity"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/history"
	historyrender "github.com/kubectl-apf/kubectl-apf/pkg/history/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
)

var capacityLong = `Show the seat arithmetic of every priority level.

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
reason and the queue wait p99, from a Prometheus-compatible store.

From a cluster or a bundle with live state, what each level holds now
follows: waiting and executing requests, seats in use and the limits, each
from the best input read (the figures "top levels" and "explain 429"
show).` + load.StoreHelp(load.Config|load.Store)

const capacityExample = `  # Seat table of the cluster's priority levels
  kubectl apf capacity

  # What doubling workload-low's shares would do
  kubectl apf capacity --set workload-low.shares=200

  # Compare a configuration repository with the upstream defaults, offline
  kubectl apf capacity --defaults -f deploy/apf/ --server-concurrency 1200

  # A metrics file saved from the apiserver, against the defaults of its release
  kubectl apf capacity --from metrics.txt --defaults

  # As JSON
  kubectl apf capacity -o json

  # With the seats used over the last week, from Prometheus
  kubectl apf capacity --prometheus http://prometheus:9090 --since 7d`

// CapacityOptions holds the flags of "kubectl apf capacity".
type CapacityOptions struct {
	// Options are the state flags (--from, --defaults, -f, -R) and the
	// store's, read beside them for the seats used over a window.
	*load.Options
	// Server are --server-concurrency and --server-request-timeout.
	Server *load.ServerOptions

	Sets []string
	*output.Flags

	settings []capacity.Setting

	genericiooptions.IOStreams
}

// NewCapacityOptions returns the defaults of "kubectl apf capacity".
func NewCapacityOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *CapacityOptions {
	o := &CapacityOptions{Options: newOptions(configFlags, load.Config|load.Store), Server: load.NewServerOptions(),
		Flags: output.NewFlags(false, "", "json", "yaml"), IOStreams: streams}
	o.Store.DefaultSince, o.StoreBeside = 24*time.Hour, true
	return o
}

// NewCapacityCommand builds "kubectl apf capacity".
func NewCapacityCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewCapacityOptions(configFlags, streams)
	cmd := &cobra.Command{
		Use:     "capacity",
		Short:   "Show the seats of every priority level and the shuffle-sharding collision odds",
		Long:    capacityLong,
		Example: capacityExample,
		Args:    noArgs("change a level with --set LEVEL.shares=N, or read a bundle with --from FILE"),
		RunE:    runOptions(o),
	}
	o.Options.AddFlags(cmd.Flags())
	cmd.Flags().StringArrayVar(&o.Sets, "set", nil, "Proposed change LEVEL.FIELD=VALUE (repeatable); fields: "+capacity.SettableFields+".")
	o.Server.AddFlags(cmd.Flags())
	o.Flags.AddFlags(cmd.Flags())
	return cmd
}

// Complete parses --set and builds the sources.
func (o *CapacityOptions) Complete(_ *cobra.Command, _ []string) error {
	for _, s := range o.Sets {
		set, err := capacity.ParseSetting(s)
		if err != nil {
			return err
		}
		o.settings = append(o.settings, set)
	}
	return o.Options.Complete()
}

// Validate checks the flags.
func (o *CapacityOptions) Validate() error {
	if err := o.Options.Validate(); err != nil {
		return err
	}
	if err := o.Server.Validate(); err != nil {
		return err
	}
	if o.Store.Enabled() && !o.Store.IsWindow() {
		return fmt.Errorf("capacity --prometheus looks at a window: give --since (and --until), not --at")
	}
	return o.Flags.Validate()
}

// Run computes and prints the tables.
func (o *CapacityOptions) Run(ctx context.Context) error {
	st, err := o.Load(ctx, load.Request{Parts: dump.PartPriorityLevels | dump.PartQueues | dump.PartRequests | dump.PartMetrics,
		ServerConcurrency: o.Server.Concurrency, InferConcurrency: true, Stdin: o.In, AtWatchEnd: true})
	if err != nil {
		return err
	}
	for _, n := range st.Notes {
		fmt.Fprintln(o.ErrOut, n)
	}
	rep, err := capacity.Build(capacity.Input{State: st, Files: len(o.Files) > 0, Settings: o.settings, RequestTimeout: o.Server.RequestTimeout})
	if err != nil {
		return err
	}
	if o.Store.Enabled() {
		if err := o.Store.Open(); err != nil {
			return err
		}
		if rep.Observed, err = history.LevelsOverWindow(ctx, o.Store.Querier, o.Store.Query, o.Store.Window); err != nil {
			return err
		}
	}
	return printObject(o.Out, o.Flags, rep, func(w io.Writer) error {
		if err := capacity.WriteText(w, rep); err != nil || !o.Store.Enabled() {
			return err
		}
		win := o.Store.Window
		fmt.Fprintf(w, "\nSeats used from %s to %s, summed over the apiservers:\n", win.Start.UTC().Format(time.RFC3339), win.End.UTC().Format(time.RFC3339))
		return historyrender.WriteLevelWindows(w, rep.Observed, false)
	})
}
