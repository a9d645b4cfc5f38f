package metrics

import (
	"testing"
	"time"
)

// TestLatestPair: a watch's end scrape, milliseconds after its last
// interval's, is paired with the one before that; a capture of two is its
// two; a watch whose gaps are all wide ends in its last two.
func TestLatestPair(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	at := func(ms ...int) []time.Time {
		var ts []time.Time
		for _, m := range ms {
			ts = append(ts, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return ts
	}
	for _, c := range []struct {
		name  string
		times []time.Time
		i, j  int
	}{
		{"a watch's end", at(0, 5000, 10000, 15000, 15080), 2, 4},
		{"two scrapes", at(0, 80), 0, 1},
		{"one scrape", at(0), 0, 0},
		{"even gaps", at(0, 2000, 4000, 6000), 2, 3},
		{"an end just past half", at(0, 2000, 4000, 5100), 2, 3},
	} {
		if i, j := LatestPair(c.times); i != c.i || j != c.j {
			t.Errorf("%s: LatestPair = %d, %d, want %d, %d", c.name, i, j, c.i, c.j)
		}
	}
}
