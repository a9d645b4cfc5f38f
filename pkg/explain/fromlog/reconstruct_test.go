package fromlog

import (
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
)

// TestNoAgreementOverNoRequest: a reconstruction that compared no request
// prints no agreement figure ("agree on 0 of 0 requests (100.0%)" was one).
func TestNoAgreementOverNoRequest(t *testing.T) {
	if n := agreementNotes(&reconstruct.Result{}); len(n) != 0 {
		t.Errorf("notes %q over no request, want none", n)
	}
	res := &reconstruct.Result{Levels: []reconstruct.LevelResult{{Level: "a", Agreement: reconstruct.Agreement{BothServed: 3, OnlyRecorded: 1}}}}
	if n := agreementNotes(res); len(n) != 1 || !strings.Contains(n[0], "on 3 of 4 requests (75.0%): below 80%, the configuration replayed is likely not the server's") {
		t.Errorf("notes %q, want the agreement on 3 of 4, below the bar", n)
	}
	// at the bar, the figure alone (make demo's log under --defaults agreed
	// on 63.3% and said nothing of it)
	res.Levels[0].Agreement = reconstruct.Agreement{BothServed: 4, OnlyRecorded: 1}
	if n := agreementNotes(res); len(n) != 1 || !strings.HasSuffix(n[0], "on 4 of 5 requests (80.0%)") {
		t.Errorf("notes %q, want the agreement on 4 of 5 alone", n)
	}
}
