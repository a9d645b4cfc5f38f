package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/lint"
)

// TestReport: findings below --min-severity are counted, not shown, and
// the summary says how to show them; suppressed findings are counted
// always and listed only when asked; a terminal escape in a message is
// made safe.
func TestReport(t *testing.T) {
	fs := []lint.Finding{
		{Rule: "a", Severity: lint.SeverityError, Message: "boom\x1b[31m"},
		{Rule: "b", Severity: lint.SeverityWarning},
		{Rule: "c", Severity: lint.SeverityInfo},
		{Rule: "d", Severity: lint.SeverityInfo},
	}
	sup := []lint.Suppressed{{Finding: lint.Finding{Rule: "e", Severity: lint.SeverityWarning}, By: "x", Reason: "y"}}
	rep := NewReport("1.37", "flag", fs, sup, lint.SeverityWarning, false)
	if len(rep.Findings) != 2 || rep.Errors != 1 || rep.Warnings != 1 || rep.Info != 0 || rep.Hidden != 2 || rep.SuppressedCount != 1 || rep.Suppressed != nil {
		t.Fatalf("report %+v", rep)
	}
	var b bytes.Buffer
	if err := WriteText(&b, rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"ERROR   a", "WARNING b", "1 error, 1 warning, 0 info, 1 suppressed (--show-suppressed lists them) (2 less severe than warning not shown: --min-severity=info shows them)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, "SUPPRESSED") {
		t.Errorf("text:\n%q", out)
	}
	if rep := NewReport("1.37", "flag", nil, sup, lint.SeverityInfo, true); rep.Findings == nil || len(rep.Suppressed) != 1 {
		t.Errorf("no findings: %+v", rep)
	}
}
