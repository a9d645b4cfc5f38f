package fromlog

import (
	"context"
	"slices"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
)

// TestExplainWithoutMoment: an audit event with no file to reconstruct its
// moment from is compared as audit events are (status only), and the notes
// say that the fate shown is the state's read now, with the lines skipped
// finding it; a value the reconstruction reads again does not say its
// skipped lines twice.
func TestExplainWithoutMoment(t *testing.T) {
	rec := Recorded{Request: &workload.Request{Status: 429, AuditID: "a"},
		Skipped: map[string]string{"audit.log": "audit.log: skipped 1 line"}}
	ex := &explain.Explanation{}
	if err := Explain(context.Background(), ex, rec, Config{}, nil); err != nil {
		t.Fatal(err)
	}
	if ex.Recorded == nil || ex.Recorded.Source != "audit" || ex.Recorded.Status != 429 {
		t.Errorf("recorded %+v: want the audit event's status", ex.Recorded)
	}
	want := []string{noteCaptureTime, "note: audit.log: skipped 1 line"}
	if !slices.Equal(ex.Notes, want) {
		t.Errorf("notes %q, want %q", ex.Notes, want)
	}
	rec.Files = logs.Spec{Paths: []string{"audit.log"}}
	if n := skippedNotes(rec); len(n) != 0 {
		t.Errorf("skipped notes %q of a file reconstructed again, want none (the reconstruction says them)", n)
	}
}
