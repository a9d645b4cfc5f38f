package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/lint"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// lintReport is what "-o json" prints.
type lintReport struct {
	// Release is the Kubernetes release whose suggested objects were
	// compared, ReleaseFrom where it came from.
	Release     string         `json:"release"`
	ReleaseFrom string         `json:"releaseFrom"`
	Findings    []lint.Finding `json:"findings"`
	Errors      int            `json:"errors"`
	Warnings    int            `json:"warnings"`
	Info        int            `json:"info"`
	// Hidden counts the findings less severe than --min-severity.
	Hidden int `json:"hidden"`
	// SuppressedCount counts the suppressed findings, Suppressed lists
	// them (with --show-suppressed).
	SuppressedCount int               `json:"suppressedCount"`
	Suppressed      []lint.Suppressed `json:"suppressed,omitempty"`
}

// print renders the findings in the format -o asks for: SARIF and JUnit get
// every finding (their consumers filter), the others those at or above
// --min-severity.
func (o *LintOptions) print(findings []lint.Finding, suppressed []lint.Suppressed, st *state.State) error {
	if own, ok := o.Flags.Own(); ok && (own == "sarif" || own == "junit") {
		rep := lint.Report{Findings: findings, Suppressed: suppressed, Locations: st.Overlay.Locations, FailOn: o.failOn, ToolVersion: version}
		if own == "sarif" {
			return lint.WriteSARIF(o.Out, rep)
		}
		return lint.WriteJUnit(o.Out, rep)
	}
	var shown []lint.Finding
	hidden := 0
	for _, f := range findings {
		if f.Severity.Rank() <= o.minSeverity.Rank() {
			shown = append(shown, f)
		} else {
			hidden++
		}
	}
	rep := lintReport{Release: st.Release.String(), ReleaseFrom: st.ReleaseFrom, Findings: shown, Hidden: hidden,
		Errors: countSeverity(shown, lint.SeverityError), Warnings: countSeverity(shown, lint.SeverityWarning),
		Info: countSeverity(shown, lint.SeverityInfo), SuppressedCount: len(suppressed)}
	if rep.Findings == nil {
		rep.Findings = []lint.Finding{}
	}
	if o.ShowSuppressed {
		rep.Suppressed = suppressed
	}
	return printObject(o.Out, o.Flags, rep, func(w io.Writer) error {
		fmt.Fprintf(w, "Replaying Kubernetes %s (%s): suggested objects compared with that release's\n\n", rep.Release, sanitize.Line(rep.ReleaseFrom))
		printFindings(w, rep, o.minSeverity)
		return nil
	})
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

// printFinding renders one block: severity, rule and objects on the first
// line, then what, why, fix and the rule's page, indented. Object names and
// messages come from the cluster and are sanitized for the terminal.
func printFinding(w io.Writer, label string, f lint.Finding) {
	var objs []string
	for _, o := range f.Objects {
		objs = append(objs, o.String())
	}
	fmt.Fprintf(w, "%-7s %s  %s\n", label, f.Rule, sanitize.Line(strings.Join(objs, " ")))
	fmt.Fprintf(w, "        %s\n", sanitize.Line(f.Message))
	if f.ManagedBy != "" {
		fmt.Fprintf(w, "        managed by: %s\n", sanitize.Line(f.ManagedBy))
	}
	fmt.Fprintf(w, "        why: %s\n", sanitize.Line(f.Why))
	fmt.Fprintf(w, "        fix: %s\n", sanitize.Line(f.Fix))
	fmt.Fprintf(w, "        see: %s\n", f.URL)
}

// printFindings renders the findings, the suppressed ones when listed, and
// the summary.
func printFindings(w io.Writer, rep lintReport, min lint.Severity) {
	for i, f := range rep.Findings {
		if i > 0 {
			fmt.Fprintln(w)
		}
		printFinding(w, strings.ToUpper(string(f.Severity)), f)
	}
	if len(rep.Findings) > 0 {
		fmt.Fprintln(w)
	}
	for _, s := range rep.Suppressed {
		printFinding(w, "SUPPRESSED", s.Finding)
		fmt.Fprintf(w, "        suppressed by %s: %s\n\n", sanitize.Line(s.By), sanitize.Line(s.Reason))
	}
	summary := fmt.Sprintf("%d %s, %d %s, %d info", rep.Errors, textfmt.Plural(rep.Errors, "error", "errors"),
		rep.Warnings, textfmt.Plural(rep.Warnings, "warning", "warnings"), rep.Info)
	if rep.SuppressedCount > 0 {
		summary += fmt.Sprintf(", %d suppressed", rep.SuppressedCount)
		if len(rep.Suppressed) == 0 {
			summary += " (--show-suppressed lists them)"
		}
	}
	if rep.Hidden > 0 {
		summary += fmt.Sprintf(" (%d less severe than %s not shown: --min-severity=info shows them)", rep.Hidden, min)
	}
	fmt.Fprintln(w, summary)
}

// printRules prints the rule list: a table, or the rules as -o json/yaml.
func printRules(w io.Writer, f *output.Flags) error {
	rules := lint.Rules()
	if own, ok := f.Own(); ok && (own == "sarif" || own == "junit") {
		return fmt.Errorf("--list-rules prints a table, json or yaml, not %s", own)
	}
	return printObject(w, f, rules, func(w io.Writer) error {
		tw := textfmt.NewTable(w)
		fmt.Fprintln(tw, "RULE\tSEVERITY\tCHECKS")
		for _, r := range rules {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.ID, r.Severities(), r.Summary)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "\n%s\nkubectl apf lint --explain RULE prints a rule's page (%sRULE.md).\n", lint.ManagedNote(), lint.DocsBase)
		return nil
	})
}
