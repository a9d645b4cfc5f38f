package engine

import (
	"sort"
	"time"
)

// TimedCounts are the object counts one scrape of an apiserver read, and
// when it read them.
type TimedCounts struct {
	At     time.Time
	Counts ObjectCounts
}

// CountsSeries are the object counts of an apiserver's successive scrapes,
// oldest first. The server's LIST estimator reads its object count tracker,
// which the same poll sets as the apiserver_resource_objects metric
// (registry/generic/registry/store.go:startObservingCount, every
// --etcd-count-metric-poll-period, a minute by default, with jitter): a
// scrape shows what the tracker held when it was read, and a request was
// sized by what the tracker held when it arrived, which may have changed
// since the scrape before it.
type CountsSeries []TimedCounts

// Unchanging is the series of counts read once, taken to hold at any time;
// nil for nil counts.
func Unchanging(c ObjectCounts) CountsSeries {
	if c == nil {
		return nil
	}
	return CountsSeries{{Counts: c}}
}

// Around returns the counts of the scrapes around t: before, the latest
// scrape's at or before t (the first scrape's when t precedes them all),
// and after, the next scrape's (nil when there is none). A request whose
// input records no time (zero) takes the latest scrape's.
func (s CountsSeries) Around(t time.Time) (before, after ObjectCounts) {
	if len(s) == 0 {
		return nil, nil
	}
	if t.IsZero() {
		return s[len(s)-1].Counts, nil
	}
	// the first scrape after t
	i := sort.Search(len(s), func(i int) bool { return s[i].At.After(t) })
	switch {
	case i == 0:
		return s[0].Counts, nil
	case i == len(s):
		return s[i-1].Counts, nil
	default:
		return s[i-1].Counts, s[i].Counts
	}
}

// ListSeatsAt is ListSeats for a request that arrived at t, from the
// counts of the scrape before it (CountsSeries.Around). undetermined says
// that the scrape after t sizes it otherwise: the tracker refreshed
// between the two, before or after t, and the server may have given it
// either.
func ListSeatsAt(rel Release, r Request, counts CountsSeries, t time.Time, maxSeats uint64) (seats uint64, ok, undetermined bool) {
	before, after := counts.Around(t)
	if before == nil {
		return 0, false, false
	}
	seats, ok = ListSeats(rel, r, before, maxSeats)
	if !ok || after == nil {
		return seats, ok, false
	}
	if other, known := ListSeats(rel, r, after, maxSeats); known && other != seats {
		undetermined = true
	}
	return seats, ok, undetermined
}
