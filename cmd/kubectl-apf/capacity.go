package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/pkg/capacity"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/lint"
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
configuration is shown next to the current one (current -> proposed).`

const capacityExample = `  # Seat table of the cluster's priority levels
  kubectl apf capacity

  # What doubling workload-low's shares would do
  kubectl apf capacity --set workload-low.shares=200

  # Compare a configuration repository with the upstream defaults, offline
  kubectl apf capacity --defaults -f deploy/apf/ --server-concurrency 1200

  # As JSON
  kubectl apf capacity -o json`

// CapacityOptions holds the flags of "kubectl apf capacity".
type CapacityOptions struct {
	configFlags *genericclioptions.ConfigFlags

	Files                []string
	Recursive            bool
	Defaults             bool
	From                 string
	Sets                 []string
	ServerConcurrency    int
	ServerRequestTimeout time.Duration
	Output               string

	settings []capacity.Setting
	// Source reads the cluster or the bundle; set by Complete unless a test
	// injected one.
	Source dump.Source

	genericiooptions.IOStreams
}

// NewCapacityOptions returns the defaults of "kubectl apf capacity".
func NewCapacityOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *CapacityOptions {
	return &CapacityOptions{configFlags: configFlags, ServerRequestTimeout: time.Minute, IOStreams: streams}
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
	addConfigInputFlags(cmd, &o.Files, &o.Recursive, &o.Defaults, &o.From)
	cmd.Flags().StringArrayVar(&o.Sets, "set", nil, "Proposed change LEVEL.FIELD=VALUE (repeatable); fields: "+capacity.SettableFields+".")
	cmd.Flags().IntVar(&o.ServerConcurrency, "server-concurrency", 0, "Server concurrency limit (max-requests-inflight + max-mutating-requests-inflight); 0 infers it from the apiserver's metrics, or uses 600.")
	cmd.Flags().DurationVar(&o.ServerRequestTimeout, "server-request-timeout", o.ServerRequestTimeout, "The apiserver's --request-timeout, which sets the default wait limit (a quarter of it, at most 1m).")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: one of '', json.")
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
	if o.Source == nil && !o.Defaults {
		src, err := newConfigSource(o.configFlags, o.From)
		if err != nil {
			return err
		}
		o.Source = src
	}
	return nil
}

// Validate checks the flags.
func (o *CapacityOptions) Validate() error {
	if o.Defaults && o.From != "" {
		return fmt.Errorf("--defaults and --from both name the base configuration; give one")
	}
	if o.ServerConcurrency < 0 {
		return fmt.Errorf("--server-concurrency must be positive, not %d", o.ServerConcurrency)
	}
	if o.ServerRequestTimeout <= 0 {
		return fmt.Errorf("--server-request-timeout must be positive, not %v", o.ServerRequestTimeout)
	}
	switch o.Output {
	case "", "json":
	default:
		return fmt.Errorf("--output must be '' or json, not %q", o.Output)
	}
	return nil
}

// capacityReport is what "-o json" prints.
type capacityReport struct {
	// ServerConcurrencySource says where the limit came from: flag,
	// metrics or default.
	ServerConcurrencySource string          `json:"serverConcurrencySource"`
	Current                 capacity.Table  `json:"current"`
	Proposed                *capacity.Table `json:"proposed,omitempty"`
}

// Run computes and prints the tables.
func (o *CapacityOptions) Run(ctx context.Context) error {
	basePL, inferred, notes, err := o.loadBase(ctx)
	if err != nil {
		return err
	}
	scl, from := o.ServerConcurrency, "flag"
	switch {
	case scl > 0:
	case inferred > 0:
		scl, from = inferred, "metrics"
	default:
		scl, from = engine.DefaultServerConcurrencyLimit, "default"
		if !o.Defaults {
			notes = append(notes, fmt.Sprintf("note: could not infer the server concurrency limit from the metrics; assuming %d (give --server-concurrency)", scl))
		}
	}
	for _, n := range notes {
		fmt.Fprintln(o.ErrOut, n)
	}
	rep := capacityReport{ServerConcurrencySource: from}
	rep.Current, err = capacity.Compute(basePL, scl, o.ServerRequestTimeout)
	if err != nil {
		return err
	}
	if len(o.Files) > 0 || len(o.settings) > 0 {
		proposedPL := basePL
		if len(o.Files) > 0 {
			objs, err := readObjectFiles(o.Files, o.Recursive, o.In)
			if err != nil {
				return err
			}
			printNotes(o.ErrOut, objs.Converted)
			_, proposedPL = lint.Overlay(nil, basePL, objs)
		}
		proposedPL, err = capacity.Apply(proposedPL, o.settings)
		if err != nil {
			return err
		}
		p, err := capacity.Compute(proposedPL, scl, o.ServerRequestTimeout)
		if err != nil {
			return fmt.Errorf("proposed configuration: %w", err)
		}
		rep.Proposed = &p
	}
	if o.Output == "json" {
		enc := json.NewEncoder(o.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return printCapacity(o.Out, rep)
}

// loadBase returns the current priority levels and, from a cluster or
// bundle, the server concurrency limit inferred from the metrics (0 when
// unknown).
func (o *CapacityOptions) loadBase(ctx context.Context) ([]*flowcontrolv1.PriorityLevelConfiguration, int, []string, error) {
	if o.Defaults {
		_, pls := lint.UpstreamDefaults()
		return pls, 0, nil, nil
	}
	parts := dump.PartObjects | dump.PartVersion
	if o.ServerConcurrency == 0 {
		parts |= dump.PartMetrics
	}
	capture, err := o.Source.Capture(ctx, dump.CaptureOptions{Parts: parts})
	if err != nil {
		return nil, 0, nil, fmt.Errorf("reading the configuration from %s: %w%s", o.Source.Describe(), err, offlineHint(o.Source))
	}
	if len(capture.Snapshots) == 0 {
		msg := "no apiserver answered"
		if len(capture.Failures) > 0 {
			msg = capture.Failures[0].Error()
		}
		return nil, 0, nil, fmt.Errorf("reading the configuration from %s: %s%s", o.Source.Describe(), msg, offlineHint(o.Source))
	}
	snap := capture.Snapshots[0]
	var pls []*flowcontrolv1.PriorityLevelConfiguration
	for i := range snap.PriorityLevels {
		pls = append(pls, &snap.PriorityLevels[i])
	}
	var notes []string
	inferred := 0
	if _, cur := snap.LatestMetrics(); cur != nil {
		// Only a level without borrowingLimitPercent reveals the limit
		// (upper - nominal); exempt never has one.
		nominal := cur.SumBy("apiserver_flowcontrol_nominal_limit_seats", "priority_level")
		upper := cur.SumBy("apiserver_flowcontrol_upper_limit_seats", "priority_level")
		if n, ok := nominal[flowcontrolv1.PriorityLevelConfigurationNameExempt]; ok {
			if u, ok := upper[flowcontrolv1.PriorityLevelConfigurationNameExempt]; ok {
				if v, err := engine.InferServerConcurrencyLimit(n, u); err == nil {
					inferred = v
				} else {
					notes = append(notes, "note: "+err.Error())
				}
			}
		}
	}
	return pls, inferred, notes, nil
}

func printCapacity(w io.Writer, rep capacityReport) error {
	cur := rep.Current
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
		cells, label := levelCells(c, inCur), sanitizeLine(name)
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
				fmt.Fprintf(w, "ignored (broken, the apiserver skips it): %s\n", sanitizeLine(ig))
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
