package explain

import (
	"strings"
	"testing"
	"time"
)

// TestPastLimitSaid: a reconstructed moment whose current limit is not the
// level's nominal one says which is which, in the table of the moment and
// in a note that tells an assumed idle share (the log's first 10 s) from a
// limit set by the log's demand; a limit equal to the nominal one adds
// nothing (issue 47's field test, N11: workload-low's 56 seats beside its
// nominal 245).
func TestPastLimitSaid(t *testing.T) {
	past := func(limit int, fromLog bool) *Explanation {
		ex := &Explanation{}
		ex.SetPast(&Past{At: LogTime{Time: time.Date(2025, 3, 5, 22, 40, 41, 965e6, time.UTC), YearKnown: true}, Level: "workload-low", Fate: VerdictRuns, Reconstructed: VerdictRuns,
			Limit: limit, NominalLimit: 245, LimitFromLog: fromLog})
		return ex
	}
	ex := past(56, false)
	if n := strings.Join(ex.Notes, "\n"); !strings.Contains(n, "workload-low's 56 seats at the time: an assumed current limit, not a figure of the log") || !strings.Contains(n, "its nominal limit is 245") {
		t.Errorf("notes %q", ex.Notes)
	}
	var b strings.Builder
	p := &printer{w: &b}
	writePast(p, ex.Past)
	if !strings.Contains(b.String(), "workload-low: 0 of 56 seats in use (current limit; nominal 245), 0 waiting") {
		t.Errorf("moment:\n%s", b.String())
	}
	if n := strings.Join(past(120, true).Notes, "\n"); !strings.Contains(n, "set it from the demand in the log") {
		t.Errorf("notes from the log %q", n)
	}
	if n := past(245, true).Notes; len(n) != 0 {
		t.Errorf("notes at the nominal limit %q", n)
	}
}

// TestCurrentOutsideNote: a current limit from the server's metrics that
// borrowing could not reach under the configuration explained (the EKS
// guide's catch-all at 13 beside a catch-all whose nominal limit is 600,
// lower 600 and upper 1200, when the input's only level objects are the
// mandatory ones) says that the two are of different configurations; one
// within the lower and upper limits says nothing (issue 47's field test,
// N12).
func TestCurrentOutsideNote(t *testing.T) {
	cur := func(v float64) *float64 { return &v }
	pl := &PriorityLevelView{Name: "catch-all", Type: "Limited", NominalLimit: 600, LowerLimit: 600, UpperLimit: 1200, CurrentLimit: cur(13)}
	if n := currentOutsideNote(pl); !strings.Contains(n, "catch-all's current limit 13 is the server's (its metrics), outside the lower and upper limits (600 to 1200)") ||
		!strings.Contains(n, "600 is not the server's nominal limit") {
		t.Errorf("note %q", n)
	}
	pl.CurrentLimit = cur(700)
	if n := currentOutsideNote(pl); n != "" {
		t.Errorf("within the limits: %q", n)
	}
	pl.CurrentLimit = nil
	if n := currentOutsideNote(pl); n != "" {
		t.Errorf("without metrics: %q", n)
	}
}
