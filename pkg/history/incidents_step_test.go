package history

import (
	"testing"
	"time"
)

// TestCeilSecond: an incident's state is queried at a step of whole
// seconds; an incident of 4m41s drawn in 60 points is a point every 5s,
// not every 4.683333333s (seen on the demo cluster's store).
func TestCeilSecond(t *testing.T) {
	for _, c := range []struct{ in, want time.Duration }{
		{(4*time.Minute + 41*time.Second) / 60, 5 * time.Second},
		{30 * time.Second, 30 * time.Second},
		{2*time.Second + time.Nanosecond, 3 * time.Second},
		{500 * time.Millisecond, 500 * time.Millisecond},
		{time.Second, time.Second},
	} {
		if got := ceilSecond(c.in); got != c.want {
			t.Errorf("ceilSecond(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
