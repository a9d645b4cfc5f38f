package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
)

const dumpLong = `Show the API Priority and Fairness debug dumps of the apiservers as tables.

The dumps (/debug/api_priority_and_fairness/dump_*) describe one apiserver
instance each; with --all-apiservers or --apiserver-urls every instance is
queried directly and shown with a merged view. Every column layout from
Kubernetes 1.20 on is understood.`

// NewDumpCommand builds "kubectl apf dump" and its subcommands.
func NewDumpCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dump",
		Short: "Show the APF debug dumps: priority levels, queues, requests; capture bundles",
		Long:  dumpLong,
		Example: `  # The priority levels of every apiserver instance
  kubectl apf dump levels --all-apiservers

  # Capture everything into a bundle, then read it anywhere
  kubectl apf dump bundle --to apf.tar.gz
  kubectl apf dump requests --from apf.tar.gz`,
		Run: func(cmd *cobra.Command, _ []string) { _ = cmd.Help() },
	}
	cmd.AddCommand(
		newDumpKindCommand(configFlags, streams, dumpLevels),
		newDumpKindCommand(configFlags, streams, dumpQueues),
		newDumpKindCommand(configFlags, streams, dumpRequests),
		NewBundleCommand(configFlags, streams),
	)
	return cmd
}

type dumpKind string

const (
	dumpLevels   dumpKind = "levels"
	dumpQueues   dumpKind = "queues"
	dumpRequests dumpKind = "requests"
)

// DumpOptions holds the flags of "kubectl apf dump levels|queues|requests".
type DumpOptions struct {
	Kind dumpKind
	// PrintFlags are -o and --no-headers.
	*output.Flags
	Level string
	All   bool
	*load.Options

	genericiooptions.IOStreams
}

// NewDumpOptions returns the defaults of a dump subcommand.
func NewDumpOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, kind dumpKind) *DumpOptions {
	o := &DumpOptions{Kind: kind, Flags: output.NewFlags(true, "table", "wide", "json", "yaml"), Options: newOptions(configFlags, load.Instances), IOStreams: streams}
	if kind == dumpLevels {
		o.Name = output.PriorityLevelName
	}
	return o
}

var dumpHelp = map[dumpKind]struct{ short, example string }{
	dumpLevels: {"Show every priority level: queues in use, waiting and executing requests, dispatched and rejected counts", `  # Show the priority levels of the apiserver of the current context
  kubectl apf dump levels

  # Of every apiserver instance, with a merged view
  kubectl apf dump levels --all-apiservers

  # From a bundle, as JSON
  kubectl apf dump levels --from apf-bundle.tar.gz -o json`},
	dumpQueues: {"Show the queues holding requests (all queues with --all)", `  # Show the non-empty queues
  kubectl apf dump queues

  # Show every queue of one level, with the fair-queuing sums
  kubectl apf dump queues --level workload-low --all -o wide`},
	dumpRequests: {"Show the requests waiting in queues or executing, with user, verb and path", `  # Show the waiting and executing requests
  kubectl apf dump requests

  # Only one level's, with every detail
  kubectl apf dump requests --level global-default -o wide`},
}

func newDumpKindCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, kind dumpKind) *cobra.Command {
	o := NewDumpOptions(configFlags, streams, kind)
	cmd := &cobra.Command{
		Use:     string(kind),
		Short:   dumpHelp[kind].short,
		Example: dumpHelp[kind].example,
		Args:    noArgs("read a bundle or a saved dump with --from FILE"),
		RunE:    runOptions(o),
	}
	fs := cmd.Flags()
	o.Flags.AddFlags(fs)
	fs.StringVar(&o.Level, "level", o.Level, "Show only this priority level.")
	if kind == dumpQueues {
		fs.BoolVar(&o.All, "all", o.All, "Show every queue, empty ones included.")
	}
	o.Options.AddFlags(fs)
	return cmd
}

// Complete turns the flags into typed values and builds the source.
func (o *DumpOptions) Complete(_ *cobra.Command, _ []string) error {
	return o.Options.Complete()
}

// Validate checks the flags.
func (o *DumpOptions) Validate() error {
	if err := o.Flags.Validate(); err != nil {
		return err
	}
	return o.Options.Validate()
}

// Run captures the dump and prints it.
func (o *DumpOptions) Run(ctx context.Context) error {
	parts, file := dump.PartObjects, ""
	switch o.Kind {
	case dumpLevels:
		parts, file = parts|dump.PartPriorityLevels, dump.FilePriorityLevels
	case dumpQueues:
		parts, file = parts|dump.PartQueues, dump.FileQueues
	case dumpRequests:
		parts, file = parts|dump.PartRequests, dump.FileRequests
	}
	c, err := captureOrFail(ctx, o.Source, dump.CaptureOptions{Parts: parts, AtWatchEnd: true}, liveHint(o.Options))
	if err != nil {
		return err
	}
	render.PrintFailures(o.ErrOut, c.Failures)
	if !holds(c, file) {
		return missingDump(o.Source, file)
	}
	printNotes(o.ErrOut, c.Notes)
	switch o.Kind {
	case dumpLevels:
		return render.PrintLevels(o.Out, o.Flags, c.Snapshots, o.Level)
	case dumpQueues:
		if n := render.HiddenQueues(c.Snapshots, o.Level); n > 0 && !o.All {
			if format, _ := o.Flags.Own(); (format == "table" || format == "wide") && len(render.QueueRows(c.Snapshots, o.Level, false)) == 0 {
				// as kubectl's "No resources found": no table of a
				// header alone
				fmt.Fprintf(o.ErrOut, "No queue has a request waiting or executing (%d %s); --all shows %s\n", n, textfmt.Plural(n, "queue", "queues"), textfmt.Plural(n, "it", "them"))
				return nil
			}
			fmt.Fprintf(o.ErrOut, "note: %d %s with no request waiting or executing not shown; --all shows %s\n", n, textfmt.Plural(n, "queue", "queues"), textfmt.Plural(n, "it", "them"))
		}
		return render.PrintQueues(o.Out, o.Flags, c.Snapshots, o.Level, o.All)
	default:
		for _, s := range c.Snapshots {
			if s.CapturedAtFrom != "" && len(s.RequestDump) > 0 {
				bound := "at least"
				if s.CapturedAtFrom == dump.AtFileTime {
					bound = "at most"
				}
				fmt.Fprintf(o.ErrOut, "note: %s does not say when it was taken: AGE counts from %s (%s), so each request had waited or run %s that long\n",
					sanitize.Line(s.Instance), s.CapturedAtFrom, s.CapturedAt.Format(time.RFC3339Nano), bound)
			}
		}
		if n := render.SeatsAssumed(render.RequestRows(c.Snapshots, o.Level)); n > 0 {
			fmt.Fprintf(o.ErrOut, "note: the dump's layout has no InitialSeats column (it predates it): SEATS shows 1 for %s, an assumption (before work estimation every request took one seat); -o json gives its seats as null\n",
				textfmt.Plural(n, "its request", fmt.Sprintf("each of its %d requests", n)))
		}
		return render.PrintRequests(o.Out, o.Flags, c.Snapshots, o.Level)
	}
}

// captureOrFail captures from src and fails when no instance answered;
// the error for a cluster that could not be read ends with offline (the
// state group's OfflineHint, liveHint).
func captureOrFail(ctx context.Context, src dump.Source, opts dump.CaptureOptions, offline string) (*dump.Capture, error) {
	c, err := dump.CaptureAnswered(ctx, src, opts)
	if err != nil {
		return nil, fmt.Errorf("%w%s", err, offline)
	}
	return c, nil
}

// liveHint is the offline hint of o's commands when they read a cluster,
// empty when they read a bundle.
func liveHint(o *load.Options) string {
	if !o.IsLive() {
		return ""
	}
	return " " + o.OfflineHint()
}

// printNotes writes a capture's notes to stderr.
func printNotes(w io.Writer, notes []string) {
	for _, n := range notes {
		fmt.Fprintln(w, sanitize.Line(n))
	}
}

// missingDump is the error of a capture that holds none of the dump file
// a command shows (a bundle of metrics alone, a raw /metrics file).
func missingDump(src dump.Source, file string) error {
	return fmt.Errorf("%s holds no %s: give a bundle that holds it (kubectl apf dump bundle takes every dump), the dump itself, or read the cluster", src.Describe(), strings.TrimSuffix(file, ".txt"))
}

// holds reports whether any snapshot of c was read with the bundle file
// name (a live capture always is; a bundle or raw input may lack it).
func holds(c *dump.Capture, file string) bool {
	for _, s := range c.Snapshots {
		if _, ok := s.Raw[file]; ok {
			return true
		}
	}
	return false
}
