package engine

import (
	"testing"
	"time"
)

// TestListSeatsAt: a LIST is sized from the counts of the scrape before it
// (the server's tracker and its metric are set by one poll), the first
// scrape's before them all and the latest's for a request without a time; it
// is undetermined where the scrape after it sizes it otherwise. The counts
// are starved-seed2's (testdata/simulate/recordings): its first scrape
// counted 0 ConfigMaps, its second 101 of 32,656 bytes on average, and the server
// logged its LISTs of 5 at 1 seat until its own count refreshed, then 2.
func TestListSeatsAt(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 11, 44, 13, 0, time.UTC)
	t1 := t0.Add(52 * time.Second)
	series := CountsSeries{
		{At: t0, Counts: ObjectCounts{"configmaps": {Count: 0}}},
		{At: t1, Counts: ObjectCounts{"configmaps": {Count: 101, AvgSize: 32656}}},
	}
	r, err := ParseRequest("GET", "/api/v1/namespaces/apf-load/configmaps?limit=5", Identity{User: "u"})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := ListSeats(NewestRelease, r, series[0].Counts, 0)
	after, _ := ListSeats(NewestRelease, r, series[1].Counts, 0)
	if before == after {
		t.Fatalf("the two scrapes size the LIST alike (%d seats): the test needs counts that differ", before)
	}
	for _, tc := range []struct {
		name         string
		at           time.Time
		seats        uint64
		undetermined bool
	}{
		{"before every scrape", t0.Add(-time.Minute), before, false},
		{"at the first scrape", t0, before, true},
		{"between the scrapes", t0.Add(30 * time.Second), before, true},
		{"at the second scrape", t1, after, false},
		{"after every scrape", t1.Add(time.Hour), after, false},
		{"no time", time.Time{}, after, false},
	} {
		seats, ok, undetermined := ListSeatsAt(NewestRelease, r, series, tc.at, 0)
		if !ok || seats != tc.seats || undetermined != tc.undetermined {
			t.Errorf("%s: %d seats (known %v, undetermined %v), want %d (undetermined %v)", tc.name, seats, ok, undetermined, tc.seats, tc.undetermined)
		}
	}
	if _, ok, _ := ListSeatsAt(NewestRelease, r, nil, t0, 0); ok {
		t.Error("no counts sized the LIST")
	}
	one := Unchanging(series[1].Counts)
	if seats, ok, undetermined := ListSeatsAt(NewestRelease, r, one, t0, 0); !ok || seats != after || undetermined {
		t.Errorf("counts read once: %d seats (known %v, undetermined %v), want %d", seats, ok, undetermined, after)
	}
	if Unchanging(nil) != nil {
		t.Error("Unchanging(nil) is not nil")
	}
}
