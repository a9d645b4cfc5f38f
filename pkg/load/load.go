// Package load is the one way every command loads APF state: one flag
// group (--from, --all-apiservers, --apiserver-urls, for the commands that
// read a configuration --defaults, -f and -R, and for those that read the
// past the store's flags, --prometheus and the rest) and one call, Load,
// that returns the configuration with the -f overlays applied, the
// snapshots per instance, the server concurrency limit with where it came
// from, and notes for stderr, sanitised.
//
// It is glue: it builds the source (package fetch for a cluster, a
// dump.BundleSource for --from, a StoreSource or the StoreOptions' queries
// for a Prometheus-compatible store), reads files, and hands plain values
// (a state.State) to the compute packages. ServerOptions is the group of the server's
// settings (--server-concurrency, --server-request-timeout).
package load

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/clock"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/pkg/config"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// Inputs selects the flags of the group a command takes beyond --from.
type Inputs uint

const (
	// Instances: --all-apiservers and --apiserver-urls (per-instance state).
	Instances Inputs = 1 << iota
	// Config: --defaults, -f and -R (a configuration to work on).
	Config
	// Store: --prometheus and the other flags of a Prometheus-compatible
	// store (StoreOptions).
	Store
)

// Options is the flag group. Embed it in a command's options.
type Options struct {
	configFlags *genericclioptions.ConfigFlags
	inputs      Inputs

	From          string
	AllAPIServers bool
	APIServerURLs []string
	Defaults      bool
	Files         []string
	Recursive     bool
	// KubeVersion is --kube-version: the release to replay instead of the
	// server's (with --defaults, its default objects).
	KubeVersion string

	// Store is the store's group (nil without the Store input).
	Store *StoreOptions
	// StoreBeside: the store is read beside the cluster or the bundle
	// (capacity's seats used), not instead of it; Complete then builds
	// both sources.
	StoreBeside bool

	// Source is set by Complete unless a test injected one; nil with
	// --defaults, and with a store read instead of the cluster.
	Source dump.Source
	// DefaultsNeed names what --defaults needs beside it, for a command
	// whose --defaults works only with another input (explain 429:
	// "--workload FILE"); the offline hint then says so. Empty: --defaults
	// works alone.
	DefaultsNeed string

	// Stdin is what --from - reads (os.Stdin when nil).
	Stdin io.Reader
	// Clock stamps live captures (the real clock when nil).
	Clock clock.Clock

	// sourceErr is what Complete could not build, for Validate.
	sourceErr error
}

// ClockOrReal is Clock, or the real clock when no test set one.
func (o *Options) ClockOrReal() clock.Clock {
	if o.Clock != nil {
		return o.Clock
	}
	return clock.RealClock{}
}

// NewOptions returns the group reading the kubeconfig of configFlags, with
// the flags of inputs.
func NewOptions(configFlags *genericclioptions.ConfigFlags, inputs Inputs) *Options {
	o := &Options{configFlags: configFlags, inputs: inputs}
	if inputs&Store != 0 {
		o.Store = newStoreOptions(configFlags)
	}
	return o
}

// UsesStore reports whether the store is read instead of the cluster.
func (o *Options) UsesStore() bool { return o.Store.Enabled() && !o.StoreBeside }

// ConfigFlags returns the kubeconfig flags the group reads (nil in tests).
func (o *Options) ConfigFlags() *genericclioptions.ConfigFlags { return o.configFlags }

// AddFlags registers the group's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.From, "from", o.From, FromUsage)
	if o.inputs&Instances != 0 {
		fs.BoolVar(&o.AllAPIServers, "all-apiservers", o.AllAPIServers, "Query every apiserver instance listed in the default/kubernetes EndpointSlice, each directly (each has its own queues).")
		fs.StringSliceVar(&o.APIServerURLs, "apiserver-urls", o.APIServerURLs, "Query these apiserver instances (comma-separated https://HOST:PORT), each directly with the kubeconfig's credentials.")
	}
	if o.inputs&Config != 0 {
		fs.StringSliceVarP(&o.Files, "filename", "f", nil, "Files or directories of FlowSchemas and PriorityLevelConfigurations applied over the base configuration ('-' reads stdin).")
		fs.BoolVarP(&o.Recursive, "recursive", "R", false, "Read the directories given with -f recursively.")
		fs.StringVar(&o.KubeVersion, "kube-version", o.KubeVersion, fmt.Sprintf("Kubernetes release whose APF behaviour to replay (%s to %s, e.g. 1.31), and whose default objects --defaults uses; default: the server's, from /version or the bundle, else %s.",
			engine.OldestRelease, engine.NewestRelease, engine.NewestRelease))
		fs.BoolVar(&o.Defaults, "defaults", false, "Use the upstream default configuration (of --kube-version, default "+config.UpstreamVersion+") as the base instead of the cluster; with --from, the defaults of the input's release (or --kube-version), its live state read beside them.")
	}
	if o.Store != nil {
		o.Store.AddFlags(fs)
	}
}

// Validate checks the group's flags; its messages name the flags.
func (o *Options) Validate() error {
	if o.KubeVersion != "" {
		if _, err := engine.ParseRelease(o.KubeVersion); err != nil {
			return fmt.Errorf("--kube-version: %w", err)
		}
	}
	live := o.AllAPIServers || len(o.APIServerURLs) > 0
	if live && o.Defaults {
		return fmt.Errorf("--all-apiservers and --apiserver-urls read live apiservers: drop --defaults or --from")
	}
	n := 0
	for _, set := range []bool{o.From != "", o.AllAPIServers, len(o.APIServerURLs) > 0} {
		if set {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("--from, --all-apiservers and --apiserver-urls are mutually exclusive")
	}
	if err := validateStdin(o.From, o.Files); err != nil {
		return err
	}
	for _, u := range o.APIServerURLs {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return fmt.Errorf("--apiserver-urls: %q is not a URL like https://10.0.0.1:6443", u)
		}
	}
	if o.Store != nil {
		if err := o.Store.Validate(); err != nil {
			return err
		}
		if o.UsesStore() && (o.From != "" || len(o.APIServerURLs) > 0) {
			return fmt.Errorf("--prometheus reads the store, not the cluster: --from and --apiserver-urls do not apply")
		}
	}
	return o.sourceErr
}

// Complete builds the Source, unless a test injected one or --defaults
// needs none, and the store's query and window. It checks nothing: what
// it cannot build (a kubeconfig that cannot be read), Validate reports
// after the flags' errors, and SourceErr says. It returns nil.
func (o *Options) Complete() error {
	o.sourceErr = nil
	if o.Store != nil {
		if o.Store.Clock == nil && o.Clock != nil {
			o.Store.Clock = o.Clock
		}
		o.Store.Complete(o.AllAPIServers)
		if o.UsesStore() {
			return nil
		}
	}
	if o.Source != nil || (o.Defaults && o.From == "") {
		return nil
	}
	if o.From != "" {
		o.Source = &dump.BundleSource{Path: o.From, Stdin: o.Stdin, ObjectFiles: o.inputs&Config != 0, ReadObjects: readObjects}
		return nil
	}
	cfg, err := o.configFlags.ToRESTConfig()
	if err != nil {
		o.sourceErr = fmt.Errorf("reading the kubeconfig: %w%s", err, o.offlineHint())
		return nil
	}
	urls := make([]string, 0, len(o.APIServerURLs))
	for _, u := range o.APIServerURLs {
		urls = append(urls, strings.TrimRight(u, "/"))
	}
	o.Source = &fetch.ClusterSource{Config: cfg, Instances: urls, AllAPIServers: o.AllAPIServers, Clock: o.Clock}
	return nil
}

// SourceErr is why Complete built no cluster source, nil when it did
// (or needed none).
func (o *Options) SourceErr() error { return o.sourceErr }

// IsLive reports whether the source is a cluster (not a bundle, not the
// defaults).
func (o *Options) IsLive() bool {
	_, ok := o.Source.(*fetch.ClusterSource)
	return ok
}

// Request says what a command needs from Load.
type Request struct {
	// Parts and MetricsInterval are what to capture. The objects are always
	// read.
	Parts           dump.Parts
	MetricsInterval time.Duration
	// LargestBurst explains the largest burst of 429s a long bundle
	// recorded when its latest scrapes show none (dump.CaptureOptions).
	LargestBurst bool
	// AtWatchEnd notes that a watch's bundle is shown at its end
	// (dump.CaptureOptions.AtWatchEnd).
	AtWatchEnd bool
	// ConfigOnlyFallback: when the live parts cannot be read, read the
	// objects alone and say so in a note, instead of failing.
	ConfigOnlyFallback bool
	// ServerConcurrency is the --server-concurrency flag (0: infer it from
	// the metrics when InferConcurrency, else take the default).
	ServerConcurrency int
	InferConcurrency  bool
	// Stdin is what -f - reads.
	Stdin io.Reader
	// NeedObjects, when set, is what the command cannot do from an input
	// without FlowSchemas and PriorityLevelConfigurations ("requests cannot
	// be classified"); Load fails then, unless -f gives objects.
	NeedObjects string
	// Metrics: read the metrics too, for the compute packages (simulate's
	// object counts and Go runtime counters); when they cannot be read,
	// the rest is read without them and State.MetricsError says why.
	Metrics bool
}

// Load reads the base configuration (the defaults, or the first snapshot of
// the source: the objects are the same on every apiserver), the live parts
// asked for, and applies -f.
func (o *Options) Load(ctx context.Context, req Request) (*state.State, error) {
	st := &state.State{}
	// --defaults with --from: the input's live state, and the defaults of
	// its release as the base.
	if !o.Defaults || o.From != "" {
		if err := o.capture(ctx, req, st); err != nil {
			return nil, err
		}
	}
	defer func() {
		for i, n := range st.Notes {
			st.Notes[i] = sanitize.Line(n)
		}
	}()
	rel, from, note, err := resolveRelease(o.KubeVersion, st.Snapshots)
	if err != nil {
		return nil, err
	}
	st.Release, st.ReleaseFrom = rel, from
	if note != "" {
		st.Notes = append(st.Notes, note)
	}
	if o.Defaults {
		st.BaseFlowSchemas, st.BasePriorityLevels = config.DefaultsFor(rel)
		st.NoObjects = false
	}
	st.FlowSchemas, st.PriorityLevels = st.BaseFlowSchemas, st.BasePriorityLevels
	if err := o.checkObjects(req, st); err != nil {
		return nil, err
	}
	if len(o.Files) > 0 {
		objs, err := ReadObjectFiles(o.Files, o.Recursive, req.Stdin)
		if err != nil {
			return nil, err
		}
		st.Notes = append(st.Notes, objs.Converted...)
		st.Overlay = objs
		st.FlowSchemas, st.PriorityLevels = config.Overlay(st.BaseFlowSchemas, st.BasePriorityLevels, objs)
	}
	st.ServerConcurrency, st.ServerConcurrencySource = req.ServerConcurrency, state.SourceFlag
	switch {
	case req.ServerConcurrency > 0:
	case st.InferredConcurrency > 0:
		st.ServerConcurrency, st.ServerConcurrencySource = st.InferredConcurrency, state.SourceMetrics
	default:
		st.ServerConcurrency, st.ServerConcurrencySource = engine.DefaultServerConcurrencyLimit, state.SourceDefault
		if req.InferConcurrency && (!o.Defaults || o.From != "") {
			st.Notes = append(st.Notes, fmt.Sprintf("note: could not infer the server concurrency limit from the metrics; assuming %d seats (give --server-concurrency)", st.ServerConcurrency))
		}
	}
	return st, nil
}

// capture reads the source into st.
func (o *Options) capture(ctx context.Context, req Request, st *state.State) error {
	if o.Source == nil {
		if o.sourceErr != nil {
			return o.sourceErr
		}
		return fmt.Errorf("no source of state: Complete was not called")
	}
	src := o.Source
	configOnly := dump.PartObjects | dump.PartVersion
	opts := dump.CaptureOptions{Parts: req.Parts | configOnly, MetricsInterval: req.MetricsInterval, LargestBurst: req.LargestBurst, AtWatchEnd: req.AtWatchEnd}
	if req.ServerConcurrency == 0 && req.InferConcurrency {
		opts.Parts |= dump.PartMetrics
	}
	capture, err := o.captureMetrics(ctx, req, opts, st)
	if err != nil && req.ConfigOnlyFallback && opts.Parts != configOnly {
		st.Notes = append(st.Notes, fmt.Sprintf("note: live state unavailable (%v); explaining from the configuration alone", err))
		capture, err = src.Capture(ctx, dump.CaptureOptions{Parts: configOnly})
	}
	if err != nil {
		return fmt.Errorf("reading the configuration from %s: %w%s", src.Describe(), err, o.offlineHint())
	}
	if len(capture.Snapshots) == 0 {
		msg := "no apiserver answered"
		if len(capture.Failures) > 0 {
			msg = capture.Failures[0].Error()
		}
		return fmt.Errorf("reading the configuration from %s: %s%s", src.Describe(), msg, o.offlineHint())
	}
	for _, f := range capture.Failures {
		st.Notes = append(st.Notes, "note: "+f.Error())
	}
	st.Notes = append(st.Notes, capture.Notes...)
	st.Snapshots = capture.Snapshots
	snap := capture.Snapshots[0]
	st.BaseFlowSchemas, st.BasePriorityLevels = snap.Objects()
	st.NoObjects = !snap.HasObjects()
	if len(st.BaseFlowSchemas) > 0 && len(st.BasePriorityLevels) == 0 {
		// FlowSchemas without any level (object files beside raw dumps or
		// metrics): kube-apiserver always creates the mandatory levels as
		// objects (its configuration-producing controller), so a
		// FlowSchema of catch-all is not dangling there, though upstream's
		// digest of these objects alone would imagine catch-all only
		// after the FlowSchemas
		st.BasePriorityLevels = config.MandatoryPriorityLevels()
		st.Notes = append(st.Notes, "note: the input holds FlowSchemas but no PriorityLevelConfigurations: the levels are the mandatory exempt and catch-all, which kube-apiserver always creates, alone; limits and borrowing are those of these objects, not of the server's whole configuration (give its PriorityLevelConfigurations, kubectl get prioritylevelconfigurations -o yaml, for them)")
	}
	if snap.ServerVersion != nil {
		st.ServerVersion = snap.ServerVersion.GitVersion
	}
	for _, s := range capture.Snapshots {
		if s.PriorityLevelDump != nil || s.Metrics != nil {
			st.Live = append(st.Live, s)
		}
	}
	n, err := state.InferServerConcurrency(snap)
	if err != nil {
		st.Notes = append(st.Notes, "note: "+err.Error())
	}
	st.InferredConcurrency = n
	return nil
}

// captureMetrics is the source's Capture; with Request.Metrics it reads the
// metrics too, and when they fail reads the rest without them and keeps
// the error in st.MetricsError.
func (o *Options) captureMetrics(ctx context.Context, req Request, opts dump.CaptureOptions, st *state.State) (*dump.Capture, error) {
	if req.Metrics && opts.Parts&dump.PartMetrics == 0 {
		withMetrics := opts
		withMetrics.Parts |= dump.PartMetrics
		capture, err := o.Source.Capture(ctx, withMetrics)
		if err == nil {
			return capture, nil
		}
		st.MetricsError = err
	}
	return o.Source.Capture(ctx, opts)
}

// offlineHint reminds that a cluster is not needed when reading one failed
// (or its kubeconfig could not be read): empty when the source is not a
// cluster.
func (o *Options) offlineHint() string {
	if o.Source != nil && !o.IsLive() {
		return ""
	}
	return " " + o.OfflineHint()
}

// OfflineHint names the flags of the command that work without a cluster,
// in parentheses: "(--defaults or --from BUNDLE work without a cluster)"
// for a command with --defaults, "(--from BUNDLE works without a
// cluster)" for the others. Every command's error for a cluster it could
// not read ends with it.
func (o *Options) OfflineHint() string {
	switch {
	case o.inputs&Config == 0:
		return "(--from BUNDLE works without a cluster)"
	case o.DefaultsNeed != "":
		return "(--from BUNDLE works without a cluster, and --defaults with " + o.DefaultsNeed + ")"
	}
	return "(--defaults or --from BUNDLE work without a cluster)"
}
