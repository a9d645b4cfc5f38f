package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/config"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/lint"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
)

const lintLong = `Find mistakes in the API Priority and Fairness configuration.

The FlowSchemas and PriorityLevelConfigurations are read from the cluster, from
a bundle (--from), or taken from the upstream defaults (--defaults); files given
with -f are applied on top, as "kubectl apply -f" would, so a configuration
repository can be checked in CI without a cluster:

  kubectl apf lint --defaults -f apf/

Each finding has a rule, a severity, the objects involved, why it matters, a
suggested fix and a link to the rule's page (--list-rules lists the rules,
--explain RULE prints one). Shadowing is decided from the rules themselves
(subjects, verbs, API groups, resources, namespaces and URL prefixes), not by
sampling requests. APIServices and webhook configurations in -f input are
checked for callbacks that wait below their callers. Findings on objects a
vendor or kube-apiserver manages (and reverts edits to) are information unless
one of your own objects is involved.

A finding is suppressed by an annotation on one of its objects,
  ignore-check.kubectl-apf.io/RULE: "the reason"
or by an entry of the --config file (rule, name pattern, reason). Suppressed
findings are counted in the summary and listed with --show-suppressed;
--disallow-suppressions ignores both kinds.

Exit status:
  0  no finding reaches --fail-on (default error)
  1  at least one finding reaches --fail-on
  2  lint itself failed: bad flags or input, no cluster`

const lintExample = `  # Lint the cluster's configuration
  kubectl apf lint

  # Lint a configuration repository against the upstream defaults, in CI, as SARIF
  kubectl apf lint --defaults -f deploy/apf/ -o sarif > apf-lint.sarif

  # Fail on warnings too, with accepted findings listed in a file
  kubectl apf lint --defaults -f deploy/apf/ --fail-on warning --config apf-lint.yaml

  # What upgrading from 1.33 to 1.34 moves
  kubectl apf lint --defaults --kube-version 1.33 --target-version 1.34

  # The rules, and one rule's page
  kubectl apf lint --list-rules
  kubectl apf lint --explain callback-below-caller`

// LintOptions holds the flags of "kubectl apf lint".
type LintOptions struct {
	// Options are the state flags: --from, --defaults, -f, -R.
	*load.Options

	// Flags are -o.
	*output.Flags
	MinSeverity, FailOn  string
	ListRules            bool
	Explain              string
	ConfigFile           string
	DisallowSuppressions bool
	ShowSuppressed       bool
	TargetVersion        string
	// Server is --server-concurrency, for seat arithmetic.
	Server              *load.ServerOptions
	minSeverity, failOn lint.Severity
	target              engine.Release
	config              lint.Config
	genericiooptions.IOStreams
}

// NewLintOptions returns the defaults of "kubectl apf lint".
func NewLintOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *LintOptions {
	return &LintOptions{Options: newOptions(configFlags, load.Config), Flags: output.NewFlags(false, "", "json", "yaml", "sarif", "junit"),
		Server:      load.NewServerOptionsOf(load.ServerConcurrency),
		MinSeverity: string(lint.SeverityWarning), FailOn: string(lint.SeverityError), IOStreams: streams}
}

// NewLintCommand builds "kubectl apf lint".
func NewLintCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewLintOptions(configFlags, streams)
	cmd := &cobra.Command{
		Use:     "lint",
		Short:   "Find mistakes in the APF configuration (shadowed FlowSchemas, dangling levels, risky settings)",
		Long:    lintLong,
		Example: lintExample,
		Args:    noArgs("give files or directories of objects with -f (lint -f ./flowcontrol/)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return toolFailure(runOptions(o)(cmd, args))
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return toolFailure(err) })
	o.Options.AddFlags(cmd.Flags())
	o.Flags.AddFlags(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&o.MinSeverity, "min-severity", o.MinSeverity, "Least severe findings to show: error, warning or info.")
	f.StringVar(&o.FailOn, "fail-on", o.FailOn, "Least severe finding that makes lint exit 1: error, warning or info.")
	f.BoolVar(&o.ListRules, "list-rules", false, "List the rules (a table, or -o json) and exit.")
	f.StringVar(&o.Explain, "explain", "", "Print the page of a rule (what it checks, why, an example, the fix) and exit.")
	f.StringVar(&o.ConfigFile, "config", "", "YAML file of suppressions: suppressions: [{rule, name (a pattern), kind (optional), reason}].")
	f.BoolVar(&o.DisallowSuppressions, "disallow-suppressions", false, "Ignore suppressions, by annotation and by --config.")
	f.BoolVar(&o.ShowSuppressed, "show-suppressed", false, "List suppressed findings with their reasons.")
	f.StringVar(&o.TargetVersion, "target-version", "", "Kubernetes release the cluster is about to be upgraded to: say what the upgrade moves (e.g. 1.34).")
	o.Server.AddFlags(f)
	return cmd
}

// toolFailure gives an error that is not a lint verdict exit status 2.
func toolFailure(err error) error {
	var exit *exitCodeError
	if err == nil || errors.As(err, &exit) {
		return err
	}
	return &exitCodeError{code: 2, err: err}
}

// Complete resolves the flags into typed values and the source.
func (o *LintOptions) Complete(cmd *cobra.Command, _ []string) error {
	sev, err := lint.ParseSeverity(o.MinSeverity)
	if err != nil {
		return fmt.Errorf("--min-severity: %w", err)
	}
	o.minSeverity = sev
	if o.failOn, err = lint.ParseSeverity(o.FailOn); err != nil {
		return fmt.Errorf("--fail-on: %w", err)
	}
	if o.TargetVersion != "" {
		if o.target, err = engine.ParseRelease(o.TargetVersion); err != nil {
			return fmt.Errorf("--target-version: %w", err)
		}
	}
	if err := o.Server.Validate(); err != nil {
		return err
	}
	if o.ConfigFile != "" {
		data, err := os.ReadFile(o.ConfigFile)
		if err != nil {
			return fmt.Errorf("--config: %w", err)
		}
		if o.config, err = lint.ParseConfig(data, o.ConfigFile); err != nil {
			return err
		}
	}
	if o.ListRules || o.Explain != "" {
		return nil
	}
	return o.Options.Complete()
}

// Validate checks the flags.
func (o *LintOptions) Validate() error {
	if o.Explain != "" {
		if _, ok := lint.RuleByID(o.Explain); !ok {
			return lint.UnknownRuleError(o.Explain)
		}
	}
	if o.ListRules || o.Explain != "" {
		return o.Flags.Validate()
	}
	if err := o.Options.Validate(); err != nil {
		return err
	}
	return o.Flags.Validate()
}

// Run lints and prints the findings; it returns an exitCodeError of 1 when
// a finding reaches --fail-on.
func (o *LintOptions) Run(ctx context.Context) error {
	switch {
	case o.ListRules:
		return printRules(o.Out, o.Flags)
	case o.Explain != "":
		r, _ := lint.RuleByID(o.Explain)
		return printObject(o.Out, o.Flags, r, func(w io.Writer) error {
			_, err := io.WriteString(w, lint.RulePage(r))
			return err
		})
	}
	req := load.Request{Stdin: o.In, NeedObjects: "there is no configuration to lint", ServerConcurrency: o.Server.Concurrency}
	if !o.Defaults || o.From != "" {
		// the seats of a cluster or a bundle are its own: its metrics
		// give its server concurrency limit (the demo cluster's 15 was
		// linted as the default 600)
		req.Parts, req.InferConcurrency, req.ConfigOnlyFallback = dump.PartMetrics, true, true
	}
	st, err := o.Load(ctx, req)
	if err != nil {
		return err
	}
	for _, n := range st.Notes {
		fmt.Fprintln(o.ErrOut, n)
	}
	// Suggested objects are compared with those of the release replayed.
	in := lint.Input{FlowSchemas: st.FlowSchemas, PriorityLevels: st.PriorityLevels, Reference: config.ReferenceFor(st.Release),
		Callbacks: st.Overlay.ResolvedCallbacks(), Release: st.Release, Target: o.target, ServerConcurrency: st.ServerConcurrency}
	findings := lint.Lint(in, lint.DefaultOptions())
	var suppressed []lint.Suppressed
	if !o.DisallowSuppressions {
		var notes []string
		findings, suppressed, notes = lint.Suppress(findings, in, o.config)
		for _, n := range notes {
			fmt.Fprintln(o.ErrOut, sanitize.Line(n))
		}
	}
	if err := o.print(findings, suppressed, st); err != nil {
		return err
	}
	failing := 0
	for _, f := range findings {
		if f.Severity.Rank() <= o.failOn.Rank() {
			failing++
		}
	}
	if failing > 0 {
		return &exitCodeError{code: 1, err: fmt.Errorf("%d lint %s at or above %s found", failing, textfmt.Plural(failing, "finding", "findings"), o.failOn)}
	}
	return nil
}
