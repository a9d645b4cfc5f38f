package metrics

import (
	"testing"
	"time"
)

// TestInside: the widest pair of scrapes inside a window, its ends
// included; none where fewer than two lie inside.
func TestInside(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	times := []time.Time{at(0), at(10), at(20), at(30), at(40)}
	for _, c := range []struct {
		name     string
		from, to float64
		i, j     int
		ok       bool
	}{
		{"inside", 5, 35, 1, 3, true},
		{"on the scrapes", 10, 30, 1, 3, true},
		{"every scrape", -1, 41, 0, 4, true},
		{"one inside", 15, 25, -1, -1, false},
		{"between two", 11, 19, -1, -1, false},
		{"before them all", -20, -10, -1, -1, false},
	} {
		i, j, ok := Inside(times, at(c.from), at(c.to))
		if ok != c.ok || ok && (i != c.i || j != c.j) {
			t.Errorf("%s: %d, %d (ok %v), want %d, %d (ok %v)", c.name, i, j, ok, c.i, c.j, c.ok)
		}
	}
}
