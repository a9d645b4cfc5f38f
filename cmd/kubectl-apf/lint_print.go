package main

import (
	"fmt"
	"io"

	"github.com/kubectl-apf/kubectl-apf/pkg/lint"
	lintrender "github.com/kubectl-apf/kubectl-apf/pkg/lint/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

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
	rep := lintrender.NewReport(st.Release.String(), st.ReleaseFrom, findings, suppressed, o.minSeverity, o.ShowSuppressed)
	return printObject(o.Out, o.Flags, rep, func(w io.Writer) error { return lintrender.WriteText(w, rep) })
}

// printRules prints the rule list: a table, or the rules as -o json/yaml.
func printRules(w io.Writer, f *output.Flags) error {
	rules := lint.Rules()
	if own, ok := f.Own(); ok && (own == "sarif" || own == "junit") {
		return fmt.Errorf("--list-rules prints a table, json or yaml, not %s", own)
	}
	return printObject(w, f, rules, func(w io.Writer) error { return lintrender.WriteRules(w, rules) })
}
