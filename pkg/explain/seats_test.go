package explain

import (
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// TestVerdictForSeatRange: an unsized LIST takes 1 to N seats; the verdict
// must not be given for 1 seat alone (issue 26, D10). On a Reject level with
// 3 of 4 seats in use, one seat fits and the widest estimate does not.
func TestVerdictForSeatRange(t *testing.T) {
	cfg := smallConfig()
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	list := mustRequest(t, "list", "/api/v1/pods", engine.NewUserIdentity("v"))
	ex := Explain(Input{Config: cfg, Live: liveR(t, at, 4, 3)}, list, nil)
	if ex.Seats == nil || ex.Seats.Max <= ex.Seats.Initial {
		t.Fatalf("seats %+v: want a range for an unsized LIST", ex.Seats)
	}
	v := ex.Verdict
	if v.Kind != VerdictRuns {
		t.Errorf("verdict %s, want runs for the least seats", v.Kind)
	}
	for _, want := range []string{"with 1 seat, the least it can take", "the most it can take: rejected (concurrency-limit)"} {
		if !strings.Contains(v.Reason, want) {
			t.Errorf("reason %q lacks %q", v.Reason, want)
		}
	}
	// A GET of one object takes one seat: no range, the verdict as before.
	get := mustRequest(t, "get", "/api/v1/namespaces/default/pods/a", engine.NewUserIdentity("v"))
	if r := Explain(Input{Config: cfg, Live: liveR(t, at, 4, 3)}, get, nil).Verdict.Reason; strings.Contains(r, "seats:") || strings.Contains(r, "the least it can take") {
		t.Errorf("a 1-seat request got a range verdict: %q", r)
	}
}

// TestSeatsText: one seat is "1 seat" (the demo cluster's apf-load read
// "nominal limit 1 seats").
func TestSeatsText(t *testing.T) {
	if seatsText(1) != "1 seat" || seatsText(2) != "2 seats" || seatsText(0) != "0 seats" {
		t.Errorf("seatsText: %q %q %q", seatsText(1), seatsText(2), seatsText(0))
	}
	if allSeats(1, "l") != "the 1 seat of l is" || allSeats(3, "l") != "all 3 seats of l are" || allSeats(1, "") != "its 1 seat is" || allSeats(3, "") != "all 3 seats are" {
		t.Errorf("allSeats: %q %q %q %q", allSeats(1, "l"), allSeats(3, "l"), allSeats(1, ""), allSeats(3, ""))
	}
}
