package fromlog

import (
	"testing"
	"time"
)

// TestSameMomentOfYear: a request read in the readers' default year is
// found among the same log's requests read in its metrics' year, and only
// at its very moment.
func TestSameMomentOfYear(t *testing.T) {
	at := time.Date(2000, 12, 6, 11, 44, 23, 25188000, time.UTC)
	same := time.Date(2026, 12, 6, 11, 44, 23, 25188000, time.UTC)
	for _, tc := range []struct {
		b    time.Time
		want bool
	}{
		{at, true},
		{same, true},
		{same.In(time.FixedZone("CET", 3600)), true},
		{same.Add(time.Nanosecond), false},
		{same.AddDate(0, 0, 1), false},
		{same.AddDate(0, 1, 0), false},
	} {
		if got := sameMomentOfYear(at, tc.b); got != tc.want {
			t.Errorf("sameMomentOfYear(%v, %v) = %v, want %v", at, tc.b, got, tc.want)
		}
	}
}
