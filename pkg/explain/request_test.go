package explain

import (
	"strings"
	"testing"
)

// TestInUseOf: the seats in use of a limit, the noun agreeing with the
// limit (the demo's 1-seat level read "0 of its 1 seats are in use").
func TestInUseOf(t *testing.T) {
	for _, tt := range []struct {
		inUse, limit float64
		its, want    string
	}{
		{0, 1, "its ", "0 of its 1 seat in use"},
		{1, 1, "", "1 of 1 seat in use"},
		{2, 3, "its ", "2 of its 3 seats in use"},
		{0, 2.5, "", "0 of 2.5 seats in use"},
		// a LIST of 10 seats in a Reject level of 1 seat (make demo's
		// apf-load-reject) read "10 of its 1 seat in use"
		{10, 1, "its ", "10 seats in use, more than its 1 seat (upstream starts a request wider than the level when nothing else executes there)"},
	} {
		if got := inUseOf(tt.inUse, tt.limit, tt.its); got != tt.want {
			t.Errorf("inUseOf(%v, %v) = %q, want %q", tt.inUse, tt.limit, got, tt.want)
		}
	}
}

// TestWiderThan: a request wider than its level names
// kubernetes/kubernetes#134196 (a level of 0 seats) only for a level of
// less than one seat: make demo's 10-seat LIST in a 1-seat level read "so
// a level of 0 seats admits one request at a time".
func TestWiderThan(t *testing.T) {
	if got := widerThan(10, 1); strings.Contains(got, "#134196") || got != "its 10 seats are more than the level's limit of 1, and "+widerRule {
		t.Errorf("widerThan(10, 1) = %q", got)
	}
	if got := widerThan(1, 0); !strings.Contains(got, "so a level of 0 seats admits one request at a time: kubernetes/kubernetes#134196") {
		t.Errorf("widerThan(1, 0) = %q", got)
	}
}
