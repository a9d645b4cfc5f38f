package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubectl-apf/kubectl-apf/pkg/explain/fromlog"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
	rejrender "github.com/kubectl-apf/kubectl-apf/pkg/rejections/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// workload429Flags are the flags of "explain 429 --workload": the incidents
// of apiserver logs, reconstructed (package reconstruct).
type workload429Flags struct {
	Files []string
	// Instances say which apiserver instance served each file's requests.
	Instances instanceFlags
	// Gap ends an incident after this long without a 429.
	Gap time.Duration
}

// explain429WorkloadHelp is added to explain 429's help.
const explain429WorkloadHelp = `

With --workload FILE... (kube-apiserver httplog lines, audit events, or
both, joined by audit ID), the incidents in the log: each burst of 429s on a
level (--incident-gap apart), who was rejected (users, service accounts and
user agents, with counts, FlowSchema and flow), who held the level's seats
meanwhile (seat-seconds and shares), and whether fair queuing protected the
light flows or one flow crowded the queues of their hands, from the
reconstruction of what APF did at each instant (docs/reconstruct.md). The
configuration comes from the cluster, from --from, or without a cluster
from --defaults (the upstream defaults of --kube-version, 1.37 unless
given); -f applies files of FlowSchemas and PriorityLevelConfigurations
over it.

--since and --until cut the log: the reconstruction reads only the
requests that arrived inside the window, and the output says which window
was read and how many of the log's requests it held (an incident that began
before the window is seen from its start, without the queues the requests
before it left). --until is RFC 3339 (2026-11-23T03:10:00Z), or relative to
the log's own last request ("-2h", "2h ago", "now" for the last request
itself), never to the wall clock; --since is the window's length before
--until (10m, 2h, 1d), or its start as a time (RFC 3339, "-2h", "2h ago").
(Before, they kept the incidents of the whole log's reconstruction that
overlapped the window; the window is now the only part reconstructed.)

With --workload and --prometheus both, the incidents are the store's, and
each carries the log's clients over its window (moved back one
--scrape-interval: the store sees a burst at the first scrape after its
first 429): who was rejected, who held the level's seats and who waited in
its queues, with counts and shares. The log is reconstructed once, against
the configuration of the cluster, of --from or of --defaults; the notes
say which incidents the log does not cover, or covers only in part.`

// logConfigFlags are the flags of the configuration a log is
// reconstructed against, which explain 429 takes only with --workload or
// --victorialogs: the cluster's, a bundle's and a store's 429s are
// explained with their own configuration.
var logConfigFlags = []string{"defaults", "filename", "recursive", "kube-version"}

// logConfigUsage says so in the usage of each of logConfigFlags.
func logConfigUsage(f *pflag.FlagSet) {
	for _, name := range logConfigFlags {
		if fl := f.Lookup(name); fl != nil {
			fl.Usage = strings.TrimSuffix(fl.Usage, ".") + " (with --workload or --victorialogs only)."
		}
	}
}

// validateLogConfig refuses logConfigFlags without a log.
func (o *Explain429Options) validateLogConfig() error {
	if o.readsLog() {
		return nil
	}
	for _, name := range logConfigFlags {
		set := map[string]bool{"defaults": o.Defaults, "filename": len(o.Files) > 0, "recursive": o.Recursive, "kube-version": o.KubeVersion != ""}[name]
		if set {
			flag := "--" + name
			if name == "filename" {
				flag = "-f"
			}
			return fmt.Errorf("%s gives the configuration a log's 429s are reconstructed against: it takes --workload FILE or --victorialogs URL (explain 429 of the cluster, of --from or of --prometheus reads their own configuration)", flag)
		}
	}
	return nil
}

func (w *workload429Flags) addFlags(f *pflag.FlagSet) {
	f.StringArrayVarP(&w.Files, "workload", "w", nil, "Explain the 429s of these apiserver logs (httplog lines, audit events; repeatable) instead of the state now.")
	f.DurationVar(&w.Gap, "incident-gap", 10*time.Second, "With --workload: an incident ends after this long without a 429.")
	w.Instances.addFlags(f)
}

// validateWorkload checks the flags of a log's incidents (the time flags
// then apply to the log, unless a store is read: the store's checks
// follow).
func (o *Explain429Options) validateWorkload() error {
	if o.Workload.Gap <= 0 {
		return fmt.Errorf("--incident-gap must be positive, not %v", o.Workload.Gap)
	}
	if err := o.Workload.Instances.validate(o.Workload.Files); err != nil {
		return err
	}
	if o.Store.Enabled() {
		return nil
	}
	if o.Store.At != "" {
		return fmt.Errorf("--at is one moment: a log's incidents take a window (--since, --until)")
	}
	// --since and --until cut the log: the store's checks refuse them
	// without a store
	if err := o.logWindow().Validate(); err != nil {
		return err
	}
	store := o.Store
	o.Store = nil
	err := o.Options.Validate()
	o.Store = store
	if err != nil {
		return err
	}
	if err := o.Server.Validate(); err != nil {
		return err
	}
	return o.Flags.Validate()
}

// runWorkload reconstructs the logs and prints their incidents.
func (o *Explain429Options) runWorkload(ctx context.Context) error {
	st, err := o.loadForLog(ctx)
	if err != nil {
		return err
	}
	spec, err := o.Workload.Instances.spec(o.Workload.Files)
	if err != nil {
		return err
	}
	c, done := logConfig(st, o.Server.RequestTimeout, o.ErrOut)
	c.Window = o.logWindow()
	rep, _, err := fromlog.Incidents(ctx, c, spec, o.Workload.Gap)
	done()
	if err != nil {
		return err
	}
	return printObject(o.Out, o.Flags, rep, func(w io.Writer) error { return rejrender.WriteText(w, rep, rejrender.Options{}) })
}

// joinLog reconstructs the logs once and gives each of the store's
// incidents in rep the log's clients over its window.
func (o *Explain429Options) joinLog(ctx context.Context, rep *rejections.Report) error {
	st, err := o.loadForLog(ctx)
	if err != nil {
		return err
	}
	spec, err := o.Workload.Instances.spec(o.Workload.Files)
	if err != nil {
		return err
	}
	c, done := logConfig(st, o.Server.RequestTimeout, o.ErrOut)
	defer done()
	return fromlog.JoinIncidents(ctx, c, spec, o.Workload.Gap, o.Store.ScrapeInterval, rep)
}

// loadForLog loads the configuration the logs are reconstructed with (a
// bundle's or the cluster's objects, or the defaults) and prints its notes,
// which Load returns sanitised.
func (o *Explain429Options) loadForLog(ctx context.Context) (*state.State, error) {
	st, err := o.Load(ctx, load.Request{ConfigOnlyFallback: true, ServerConcurrency: o.Server.Concurrency, InferConcurrency: true, Stdin: o.In})
	if err != nil {
		return nil, err
	}
	for _, n := range st.Notes {
		fmt.Fprintln(o.ErrOut, n)
	}
	return st, nil
}

// logWindow is --since/--until over the log's files (with no store).
func (o *Explain429Options) logWindow() logs.Window {
	return logs.Window{Since: o.Store.Since.Raw(), Until: o.Store.Until}
}
