// Package render prints "kubectl apf lint": the findings as text blocks
// with a summary, the report "-o json" and "-o yaml" print, and the rule
// list. SARIF and JUnit are pkg/lint's own (WriteSARIF, WriteJUnit).
package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/lint"
)

// Report is what "-o json" prints.
type Report struct {
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

	// minSeverity is the --min-severity the findings were filtered at, named in
	// the summary.
	minSeverity lint.Severity
}

// NewReport keeps the findings at or above minSeverity (counting the others as
// Hidden) and lists the suppressed ones when showSuppressed.
func NewReport(release, releaseFrom string, findings []lint.Finding, suppressed []lint.Suppressed, minSeverity lint.Severity, showSuppressed bool) Report {
	var shown []lint.Finding
	hidden := 0
	for _, f := range findings {
		if f.Severity.Rank() <= minSeverity.Rank() {
			shown = append(shown, f)
		} else {
			hidden++
		}
	}
	rep := Report{Release: release, ReleaseFrom: releaseFrom, Findings: shown, Hidden: hidden,
		Errors: countSeverity(shown, lint.SeverityError), Warnings: countSeverity(shown, lint.SeverityWarning),
		Info: countSeverity(shown, lint.SeverityInfo), SuppressedCount: len(suppressed), minSeverity: minSeverity}
	if rep.Findings == nil {
		rep.Findings = []lint.Finding{}
	}
	if showSuppressed {
		rep.Suppressed = suppressed
	}
	return rep
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

// WriteText prints the release line, the findings, the suppressed ones
// when listed, and the summary.
func WriteText(w io.Writer, rep Report) error {
	fmt.Fprintf(w, "Replaying Kubernetes %s (%s): suggested objects compared with that release's\n\n", rep.Release, sanitize.Line(rep.ReleaseFrom))
	for i, f := range rep.Findings {
		if i > 0 {
			fmt.Fprintln(w)
		}
		writeFinding(w, strings.ToUpper(string(f.Severity)), f)
	}
	if len(rep.Findings) > 0 {
		fmt.Fprintln(w)
	}
	for _, s := range rep.Suppressed {
		writeFinding(w, "SUPPRESSED", s.Finding)
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
		summary += fmt.Sprintf(" (%d less severe than %s not shown: --min-severity=info shows them)", rep.Hidden, rep.minSeverity)
	}
	_, err := fmt.Fprintln(w, summary)
	return err
}

// writeFinding renders one block: severity, rule and objects on the first
// line, then what, why, fix and the rule's page, indented. Object names and
// messages come from the cluster and are sanitized for the terminal.
func writeFinding(w io.Writer, label string, f lint.Finding) {
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

// WriteRules prints the rule list as a table, then where each rule's page
// is.
func WriteRules(w io.Writer, rules []lint.Rule) error {
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
}
