package explain

import "testing"

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
		{10, 1, "its ", "10 seats in use, more than its 1 seat (a request wider than the limit runs when nothing else does)"},
	} {
		if got := inUseOf(tt.inUse, tt.limit, tt.its); got != tt.want {
			t.Errorf("inUseOf(%v, %v) = %q, want %q", tt.inUse, tt.limit, got, tt.want)
		}
	}
}
