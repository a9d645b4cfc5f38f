package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
)

const bundleLong = `Capture the APF state of the apiservers into an offline bundle.

A bundle holds, per apiserver instance: the FlowSchemas and priority levels,
the three debug dumps, two /metrics scrapes (APF families only) a few seconds
apart for rates, the server version and the capture times. Every read-only
command reads it back with --from and then needs no cluster.

--redact replaces user names, namespaces, object names and request paths with
stable pseudonyms (a keyed hash: the same value gets the same pseudonym
throughout the bundle), so a bundle can be shared with a vendor or attached to
an issue.`

const bundleExample = `  # Capture every apiserver instance into a tarball
  kubectl apf dump bundle --all-apiservers --to apf-$(date +%Y%m%d-%H%M).tar.gz

  # Capture into a directory, redacted
  kubectl apf dump bundle --to ./apf-bundle --redact

  # Record the next incident: a scrape every 5s for up to a day, written to disk as it arrives; Ctrl-C ends it with a valid bundle
  kubectl apf dump bundle --all-apiservers --watch 24h --interval 5s --to incident.tar.gz

  # A flight recorder: run it for a month, keeping the last two hours of scrapes; Ctrl-C after an incident
  kubectl apf dump bundle --all-apiservers --watch 720h --keep 2h --interval 5s --to incident.tar.gz

  # Redact an existing bundle
  kubectl apf dump bundle --from apf.tar.gz --redact --to apf-redacted.tar.gz`

// BundleOptions holds the flags of "kubectl apf dump bundle".
type BundleOptions struct {
	// To is where the bundle goes (--to), the counterpart of the --from
	// that reads it back.
	To string
	// outputPath is the deprecated -o/--output: every other command's -o
	// is a format, so the path has its own flag; -o still works, with a
	// warning, until it is removed.
	outputPath      string
	Redact          bool
	RedactKey       string
	MetricsInterval time.Duration
	// Watch, when positive, records that long (--watch): a scrape every
	// Interval between the captures of the start and of the end.
	Watch    time.Duration
	Interval time.Duration
	// Keep, when positive, keeps the scrapes of the last Keep only
	// (--keep): a flight recorder.
	Keep time.Duration
	// metricsIntervalSet says --metrics-interval was given.
	metricsIntervalSet bool
	*load.Options

	genericiooptions.IOStreams
}

// NewBundleOptions returns the defaults of "kubectl apf dump bundle".
func NewBundleOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *BundleOptions {
	return &BundleOptions{MetricsInterval: 5 * time.Second, Interval: 5 * time.Second, Options: newOptions(configFlags, load.Instances), IOStreams: streams}
}

// NewBundleCommand builds "kubectl apf dump bundle".
func NewBundleCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewBundleOptions(configFlags, streams)
	cmd := &cobra.Command{
		Use:     "bundle --to DIR|FILE.tar.gz",
		Short:   "Capture objects, dumps and metrics of every apiserver into an offline bundle",
		Long:    bundleLong + bundleWatchHelp,
		Example: bundleExample,
		Args:    noArgs("give the bundle's file with --to FILE"),
		RunE:    runOptions(o),
	}
	fs := cmd.Flags()
	fs.StringVar(&o.To, "to", o.To, "Where to write the bundle: a new directory, or a file ending in .tar.gz (read it back with --from).")
	fs.StringVarP(&o.outputPath, "output", "o", "", "Deprecated: use --to. Where to write the bundle.")
	_ = fs.MarkHidden("output")
	fs.BoolVar(&o.Redact, "redact", o.Redact, "Replace user names, namespaces, object names and request paths with stable pseudonyms.")
	fs.StringVar(&o.RedactKey, "redact-key", o.RedactKey, "Key of the pseudonyms; the same key gives the same pseudonyms across bundles (default: a random key per bundle).")
	fs.DurationVar(&o.MetricsInterval, "metrics-interval", o.MetricsInterval, "Time between the two /metrics scrapes that give rates (without --watch).")
	fs.DurationVar(&o.Watch, "watch", o.Watch, "Record for this long (10m, or 24h ended by Ctrl-C): scrape every instance's /metrics every --interval between the captures of the start and of the end.")
	fs.DurationVar(&o.Interval, "interval", o.Interval, "Time between two /metrics scrapes with --watch.")
	fs.DurationVar(&o.Keep, "keep", o.Keep, "With --watch, keep only the scrapes of the last DURATION of each instance (a flight recorder: run it for days, Ctrl-C after an incident; 0 keeps every scrape).")
	o.Options.AddFlags(fs)
	return cmd
}

// Complete takes the deprecated -o as --to, with a warning, and builds the
// source.
func (o *BundleOptions) Complete(cmd *cobra.Command, _ []string) error {
	o.metricsIntervalSet = cmd.Flags().Changed("metrics-interval")
	if o.outputPath != "" {
		if o.To != "" {
			return fmt.Errorf("--to and the deprecated -o both name where the bundle goes; give --to only")
		}
		fmt.Fprintf(o.ErrOut, "warning: -o/--output as the bundle's path is deprecated and will be removed; use --to %s\n", sanitize.Line(o.outputPath))
		o.To = o.outputPath
	}
	return o.Options.Complete()
}

// Validate checks the flags.
func (o *BundleOptions) Validate() error {
	if o.To == "" {
		return fmt.Errorf("--to is required: a new directory or a FILE.tar.gz")
	}
	if o.MetricsInterval < 0 {
		return fmt.Errorf("--metrics-interval must not be negative")
	}
	if o.RedactKey != "" && !o.Redact {
		return fmt.Errorf("--redact-key needs --redact")
	}
	switch {
	case o.Watch < 0:
		return fmt.Errorf("--watch must not be negative, not %v", o.Watch)
	case o.Watch > 0 && o.From != "":
		return fmt.Errorf("--watch records a cluster's apiservers: give it without --from")
	case o.Watch > 0 && o.metricsIntervalSet:
		return fmt.Errorf("--watch scrapes every --interval: give --interval, not --metrics-interval")
	case o.Watch > 0 && (o.Interval < 100*time.Millisecond || o.Interval > o.Watch):
		return fmt.Errorf("--interval must be from 100ms to --watch's %v, not %v", o.Watch, o.Interval)
	case o.Keep < 0:
		return fmt.Errorf("--keep must not be negative, not %v", o.Keep)
	case o.Keep > 0 && o.Watch == 0:
		return fmt.Errorf("--keep is how much of a --watch's scrapes to keep: give --watch too")
	case o.Keep > 0 && o.Keep < 2*o.Interval:
		return fmt.Errorf("--keep %v holds fewer than two scrapes %v apart (--interval): give at least %v", o.Keep, o.Interval, 2*o.Interval)
	}
	return o.Options.Validate()
}

// Run captures and writes the bundle.
func (o *BundleOptions) Run(ctx context.Context) error {
	// No offline hint: a bundle is what a cluster's capture makes.
	if o.Watch > 0 {
		return o.runWatch(ctx)
	}
	if b, ok := o.Source.(*dump.BundleSource); ok && b.MostScrapes() > 2 {
		return o.copyWatch(ctx, b)
	}
	c, err := captureOrFail(ctx, o.Source, dump.CaptureOptions{Parts: dump.PartAll, MetricsInterval: o.MetricsInterval, AllScrapes: true}, "")
	if err != nil {
		return err
	}
	printNotes(o.ErrOut, c.Notes)
	if o.Redact {
		key, err := o.redactKey()
		if err != nil {
			return err
		}
		if err := dump.NewRedactor(key).RedactCapture(c); err != nil {
			return err
		}
	}
	// load.Options.Clock, the clock of the capture, stamps the manifest too.
	if err := dump.WriteBundle(o.To, c, o.manifest(o.ClockOrReal().Now())); err != nil {
		return err
	}
	for _, f := range c.Failures {
		fmt.Fprintf(o.ErrOut, "warning: apiserver %s is not in the bundle: %s\n", sanitize.Line(f.Instance), sanitize.Line(f.Error()))
	}
	fmt.Fprintf(o.ErrOut, "wrote %s: %s\n", sanitize.Line(o.To), textfmt.Count(len(c.Snapshots), "apiserver instance", "apiserver instances"))
	return nil
}

// copyWatch writes a watch's bundle (--from, more than two scrapes of an
// instance) again, redacted with --redact, a scrape at a time.
func (o *BundleOptions) copyWatch(ctx context.Context, b *dump.BundleSource) error {
	var red *dump.Redactor
	if o.Redact {
		key, err := o.redactKey()
		if err != nil {
			return err
		}
		red = dump.NewRedactor(key)
	}
	now := o.ClockOrReal().Now()
	if err := dump.CopyWatch(ctx, b, o.To, red, o.manifest(now), now.UTC()); err != nil {
		return err
	}
	fmt.Fprintf(o.ErrOut, "wrote %s: the watch of %s, %d /metrics scrapes of each apiserver at the most\n", sanitize.Line(o.To), sanitize.Line(o.From), b.MostScrapes())
	return nil
}

// redactKey is --redact-key, or a random key.
func (o *BundleOptions) redactKey() ([]byte, error) {
	key := []byte(o.RedactKey)
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("making a redaction key: %w", err)
		}
	}
	return key, nil
}

// manifest is the bundle's manifest header, created at.
func (o *BundleOptions) manifest(at time.Time) dump.Manifest {
	return dump.Manifest{CreatedAt: at.UTC(), Source: o.Source.Describe(), Redacted: o.Redact, ToolVersion: version}
}
