package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/lint"
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
	configFlags *genericclioptions.ConfigFlags

	Files       []string
	Recursive   bool
	Defaults    bool
	From        string
	Output      string
	MinSeverity string

	minSeverity lint.Severity
	// Source reads the cluster or the bundle; set by Complete unless a test
	// injected one.
	Source dump.Source

	genericiooptions.IOStreams
}

// NewLintOptions returns the defaults of "kubectl apf lint".
func NewLintOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *LintOptions {
	return &LintOptions{configFlags: configFlags, MinSeverity: string(lint.SeverityWarning), IOStreams: streams}
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
	addConfigInputFlags(cmd, &o.Files, &o.Recursive, &o.Defaults, &o.From)
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: one of '', json.")
	cmd.Flags().StringVar(&o.MinSeverity, "min-severity", o.MinSeverity, "Least severe findings to show: error, warning or info.")
	return cmd
}

// addConfigInputFlags declares the flags shared by lint and capacity that
// say where the configuration comes from.
func addConfigInputFlags(cmd *cobra.Command, files *[]string, recursive, defaults *bool, from *string) {
	cmd.Flags().StringSliceVarP(files, "filename", "f", nil, "Files or directories of FlowSchemas and PriorityLevelConfigurations applied over the base configuration ('-' reads stdin).")
	cmd.Flags().BoolVarP(recursive, "recursive", "R", false, "Read the directories given with -f recursively.")
	cmd.Flags().BoolVar(defaults, "defaults", false, "Use the upstream default configuration ("+lint.UpstreamVersion+") as the base instead of the cluster.")
	cmd.Flags().StringVar(from, "from", "", "Read the base configuration from a bundle written by 'kubectl apf dump' instead of the cluster.")
}

// Complete resolves the flags into typed values and the source.
func (o *LintOptions) Complete(cmd *cobra.Command, _ []string) error {
	sev, err := lint.ParseSeverity(o.MinSeverity)
	if err != nil {
		return fmt.Errorf("--min-severity: %w", err)
	}
	o.minSeverity = sev
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
func (o *LintOptions) Validate() error {
	if o.Defaults && o.From != "" {
		return fmt.Errorf("--defaults and --from both name the base configuration; give one")
	}
	switch o.Output {
	case "", "json":
	default:
		return fmt.Errorf("--output must be '' or json, not %q", o.Output)
	}
	return nil
}

// Run lints and prints the findings; it returns an exitCodeError when there
// are errors.
func (o *LintOptions) Run(ctx context.Context) error {
	in, notes, err := loadConfig(ctx, o.Source, o.Defaults, o.Files, o.Recursive, o.In)
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(o.ErrOut, n)
	}
	findings := lint.Lint(in, lint.DefaultOptions())
	shown, hidden := filterFindings(findings, o.minSeverity)
	if o.Output == "json" {
		if err := printFindingsJSON(o.Out, shown); err != nil {
			return err
		}
	} else {
		printFindings(o.Out, shown, hidden, o.minSeverity)
	}
	if n := countSeverity(findings, lint.SeverityError); n > 0 {
		return &exitCodeError{code: 1, err: fmt.Errorf("%d lint %s found", n, plural(n, "error", "errors"))}
	}
	return nil
}

// newConfigSource returns the source of the base configuration: the bundle
// named by --from, or the cluster of the kubeconfig.
func newConfigSource(configFlags *genericclioptions.ConfigFlags, from string) (dump.Source, error) {
	if from != "" {
		return &dump.BundleSource{Path: from}, nil
	}
	cfg, err := configFlags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w (use --defaults or --from to work without a cluster)", err)
	}
	return &dump.ClusterSource{Config: cfg}, nil
}

// offlineHint reminds that a cluster is not needed when reading one failed.
func offlineHint(src dump.Source) string {
	if _, ok := src.(*dump.ClusterSource); ok {
		return " (--defaults or --from BUNDLE work without a cluster)"
	}
	return ""
}

// loadConfig builds the configuration to check: the base (upstream defaults,
// or the first snapshot of the source) with the files applied over it. The
// configuration objects are the same on every apiserver, so one snapshot is
// enough. Notes are diagnostics for stderr.
func loadConfig(ctx context.Context, src dump.Source, defaults bool, files []string, recursive bool, stdin io.Reader) (lint.Input, []string, error) {
	var notes []string
	ref := lint.UpstreamReference()
	var fss []*flowcontrolv1.FlowSchema
	var pls []*flowcontrolv1.PriorityLevelConfiguration
	if defaults {
		fss, pls = lint.UpstreamDefaults()
	} else {
		capture, err := src.Capture(ctx, dump.CaptureOptions{Parts: dump.PartObjects | dump.PartVersion})
		if err != nil {
			return lint.Input{}, nil, fmt.Errorf("reading the configuration from %s: %w%s", src.Describe(), err, offlineHint(src))
		}
		if len(capture.Snapshots) == 0 {
			msg := "no apiserver answered"
			if len(capture.Failures) > 0 {
				msg = capture.Failures[0].Error()
			}
			return lint.Input{}, nil, fmt.Errorf("reading the configuration from %s: %s%s", src.Describe(), msg, offlineHint(src))
		}
		snap := capture.Snapshots[0]
		for i := range snap.FlowSchemas {
			fss = append(fss, &snap.FlowSchemas[i])
		}
		for i := range snap.PriorityLevels {
			pls = append(pls, &snap.PriorityLevels[i])
		}
		if v := snap.ServerVersion; v != nil && !sameMinor(v.GitVersion, lint.UpstreamVersion) {
			notes = append(notes, fmt.Sprintf("note: the server runs %s; suggested objects are compared with %s's suggestions, which may differ",
				sanitizeLine(v.GitVersion), lint.UpstreamVersion))
		}
	}
	if len(files) > 0 {
		objs, err := readObjectFiles(files, recursive, stdin)
		if err != nil {
			return lint.Input{}, nil, err
		}
		notes = append(notes, objs.Converted...)
		fss, pls = lint.Overlay(fss, pls, objs)
	}
	return lint.Input{FlowSchemas: fss, PriorityLevels: pls, Reference: ref}, notes, nil
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

// readObjectFiles reads -f arguments: files, directories (their .yaml, .yml
// and .json files, sorted; recursively with -R) or "-" for stdin.
func readObjectFiles(args []string, recursive bool, stdin io.Reader) (lint.Objects, error) {
	var out lint.Objects
	for _, arg := range args {
		var objs lint.Objects
		if arg == "-" {
			data, err := io.ReadAll(io.LimitReader(stdin, 64<<20))
			if err != nil {
				return lint.Objects{}, fmt.Errorf("reading stdin: %w", err)
			}
			if objs, err = lint.ParseObjects(data, "stdin"); err != nil {
				return lint.Objects{}, err
			}
		} else {
			paths, err := expandPath(arg, recursive)
			if err != nil {
				return lint.Objects{}, err
			}
			for _, p := range paths {
				data, err := os.ReadFile(p)
				if err != nil {
					return lint.Objects{}, fmt.Errorf("reading -f %s: %w", p, err)
				}
				fo, err := lint.ParseObjects(data, p)
				if err != nil {
					return lint.Objects{}, err
				}
				objs.Add(fo)
			}
		}
		if err := lint.RequireObjects(arg, objs); err != nil {
			return lint.Objects{}, err
		}
		out.Add(objs)
	}
	return out, nil
}

func expandPath(arg string, recursive bool) ([]string, error) {
	info, err := os.Stat(arg)
	if err != nil {
		return nil, fmt.Errorf("-f %s: %w", arg, err)
	}
	if !info.IsDir() {
		return []string{arg}, nil
	}
	var paths []string
	err = filepath.WalkDir(arg, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != arg && !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("-f %s: %w", arg, err)
	}
	sort.Strings(paths)
	return paths, nil
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

func printFindingsJSON(w io.Writer, fs []lint.Finding) error {
	r := lintReport{Findings: fs, Errors: countSeverity(fs, lint.SeverityError),
		Warnings: countSeverity(fs, lint.SeverityWarning), Info: countSeverity(fs, lint.SeverityInfo)}
	if r.Findings == nil {
		r.Findings = []lint.Finding{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
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
		fmt.Fprintf(w, "%-7s %s  %s\n", strings.ToUpper(string(f.Severity)), f.Rule, sanitizeLine(strings.Join(objs, " ")))
		fmt.Fprintf(w, "        %s\n", sanitizeLine(f.Message))
		fmt.Fprintf(w, "        why: %s\n", sanitizeLine(f.Why))
		fmt.Fprintf(w, "        fix: %s\n", sanitizeLine(f.Fix))
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

// printNotes writes diagnostics to stderr, one a line, made safe for a
// terminal.
func printNotes(w io.Writer, notes []string) {
	for _, n := range notes {
		fmt.Fprintln(w, sanitizeLine(n))
	}
}
