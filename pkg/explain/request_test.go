package explain

import "testing"

// TestInUseOf: the seats in use of a limit, the noun agreeing with the
// limit (the demo's 1-seat level read "0 of its 1 seats are in use").
func TestInUseOf(t *testing.T) {
	for _, tt := range []struct {
		inUse, limit float64
		its, want    string
	}{
		{0, 1, "its ", "0 of its 1 seat"},
		{1, 1, "", "1 of 1 seat"},
		{2, 3, "its ", "2 of its 3 seats"},
		{0, 2.5, "", "0 of 2.5 seats"},
	} {
		if got := inUseOf(tt.inUse, tt.limit, tt.its); got != tt.want {
			t.Errorf("inUseOf(%v, %v) = %q, want %q", tt.inUse, tt.limit, got, tt.want)
		}
	}
}
