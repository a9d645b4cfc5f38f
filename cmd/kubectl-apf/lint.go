package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/pkg/lint"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

const lintLong = `Find mistakes in the API Priority and Fairness configuration.

The FlowSchemas and PriorityLevelConfigurations are read from the cluster, from
a bundle (--from), or taken from the upstream defaults (--defaults); files given
with -f are applied on top, as "kubectl apply -f" would, so a configuration
repository can be checked in CI without a cluster:

  kubectl apf lint --defaults -f apf/

Each finding has a severity, the objects involved, why it matters and a
suggested fix. Shadowing is decided from the rules themselves (subjects, verbs,
API groups, resources, namespaces and URL prefixes), not by sampling requests.

The exit status is 1 when at least one error is found.`

const lintExample = `  # Lint the cluster's configuration
  kubectl apf lint

  # Lint a configuration repository against the upstream defaults, in CI
  kubectl apf lint --defaults -f deploy/apf/

  # Check what applying a change to the cluster would do
  kubectl apf lint -f new-flowschema.yaml

  # Show everything, partial shadowing included, as JSON
  kubectl apf lint --min-severity=info -o json`

// LintOptions holds the flags of "kubectl apf lint".
type LintOptions struct {
	// Options are the state flags: --from, --defaults, -f, -R.
	*state.Options

	// Flags are -o.
	*output.Flags
	MinSeverity string

	minSeverity lint.Severity

	genericiooptions.IOStreams
}

// NewLintOptions returns the defaults of "kubectl apf lint".
func NewLintOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *LintOptions {
	return &LintOptions{Options: state.NewOptions(configFlags, state.Config), Flags: output.NewFlags(false, "", "json", "yaml"), MinSeverity: string(lint.SeverityWarning), IOStreams: streams}
}

// NewLintCommand builds "kubectl apf lint".
func NewLintCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewLintOptions(configFlags, streams)
	cmd := &cobra.Command{
		Use:     "lint",
		Short:   "Find mistakes in the APF configuration (shadowed FlowSchemas, dangling levels, risky settings)",
		Long:    lintLong,
		Example: lintExample,
		Args:    cobra.NoArgs,
		RunE:    runOptions(o),
	}
	o.Options.AddFlags(cmd.Flags())
	o.Flags.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.MinSeverity, "min-severity", o.MinSeverity, "Least severe findings to show: error, warning or info.")
	return cmd
}

// Complete resolves the flags into typed values and the source.
func (o *LintOptions) Complete(cmd *cobra.Command, _ []string) error {
	sev, err := lint.ParseSeverity(o.MinSeverity)
	if err != nil {
		return fmt.Errorf("--min-severity: %w", err)
	}
	o.minSeverity = sev
	return o.Options.Complete()
}

// Validate checks the flags.
func (o *LintOptions) Validate() error {
	if err := o.Options.Validate(); err != nil {
		return err
	}
	return o.Flags.Validate()
}

// Run lints and prints the findings; it returns an exitCodeError when there
// are errors.
func (o *LintOptions) Run(ctx context.Context) error {
	st, err := o.Load(ctx, state.Request{Stdin: o.In})
	if err != nil {
		return err
	}
	var notes []string
	if v := st.ServerVersion; v != "" && !sameMinor(v, lint.UpstreamVersion) {
		notes = append(notes, fmt.Sprintf("note: the server runs %s; suggested objects are compared with %s's suggestions, which may differ",
			sanitize.Line(v), lint.UpstreamVersion))
	}
	for _, n := range append(notes, st.Notes...) {
		fmt.Fprintln(o.ErrOut, n)
	}
	in := lint.Input{FlowSchemas: st.FlowSchemas, PriorityLevels: st.PriorityLevels, Reference: lint.UpstreamReference()}
	findings := lint.Lint(in, lint.DefaultOptions())
	shown, hidden := filterFindings(findings, o.minSeverity)
	err = printObject(o.Out, o.Flags, newLintReport(shown), func(w io.Writer) error {
		printFindings(w, shown, hidden, o.minSeverity)
		return nil
	})
	if err != nil {
		return err
	}
	if n := countSeverity(findings, lint.SeverityError); n > 0 {
		return &exitCodeError{code: 1, err: fmt.Errorf("%d lint %s found", n, plural(n, "error", "errors"))}
	}
	return nil
}

// sameMinor reports whether two versions such as "v1.37.1" and "v1.37" have
// the same major.minor.
func sameMinor(a, b string) bool {
	mm := func(s string) string {
		parts := strings.SplitN(strings.TrimPrefix(s, "v"), ".", 3)
		if len(parts) < 2 {
			return s
		}
		return parts[0] + "." + strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' })
	}
	return mm(a) == mm(b)
}

func filterFindings(fs []lint.Finding, min lint.Severity) (shown []lint.Finding, hidden int) {
	for _, f := range fs {
		if f.Severity.Rank() <= min.Rank() {
			shown = append(shown, f)
		} else {
			hidden++
		}
	}
	return shown, hidden
}

func countSeverity(fs []lint.Finding, s lint.Severity) int {
	n := 0
	for _, f := range fs {
		if f.Severity == s {
			n++
		}
	}
	return n
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// lintReport is what "-o json" prints.
type lintReport struct {
	Findings []lint.Finding `json:"findings"`
	Errors   int            `json:"errors"`
	Warnings int            `json:"warnings"`
	Info     int            `json:"info"`
}

func newLintReport(fs []lint.Finding) lintReport {
	r := lintReport{Findings: fs, Errors: countSeverity(fs, lint.SeverityError),
		Warnings: countSeverity(fs, lint.SeverityWarning), Info: countSeverity(fs, lint.SeverityInfo)}
	if r.Findings == nil {
		r.Findings = []lint.Finding{}
	}
	return r
}

// printFindings renders one block per finding: severity, rule and objects on
// the first line, then what, why and fix, indented. Object names and messages
// come from the cluster and are sanitized for the terminal.
func printFindings(w io.Writer, fs []lint.Finding, hidden int, min lint.Severity) {
	for i, f := range fs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		var objs []string
		for _, o := range f.Objects {
			objs = append(objs, o.String())
		}
		fmt.Fprintf(w, "%-7s %s  %s\n", strings.ToUpper(string(f.Severity)), f.Rule, sanitize.Line(strings.Join(objs, " ")))
		fmt.Fprintf(w, "        %s\n", sanitize.Line(f.Message))
		fmt.Fprintf(w, "        why: %s\n", sanitize.Line(f.Why))
		fmt.Fprintf(w, "        fix: %s\n", sanitize.Line(f.Fix))
	}
	if len(fs) > 0 {
		fmt.Fprintln(w)
	}
	e, wa, in := countSeverity(fs, lint.SeverityError), countSeverity(fs, lint.SeverityWarning), countSeverity(fs, lint.SeverityInfo)
	summary := fmt.Sprintf("%d %s, %d %s, %d info", e, plural(e, "error", "errors"), wa, plural(wa, "warning", "warnings"), in)
	if hidden > 0 {
		summary += fmt.Sprintf(" (%d less severe than %s not shown: --min-severity=info shows them)", hidden, min)
	}
	fmt.Fprintln(w, summary)
}
