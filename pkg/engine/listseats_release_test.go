package engine

import "testing"

// TestListSeatsByRelease checks the release-dependent parts of ListSeats
// with figures worked out by hand from each release's
// request/list_work_estimator.go: up to 1.33 one seat per 100 objects
// processed, capped at 10; up to 1.30 a consistent read or a ?limit (except
// with resourceVersion "0") is served from etcd; a WATCH is estimated like a
// LIST only where WatchList is on by default, and a WATCH without
// sendInitialEvents=true only from 1.35.
func TestListSeatsByRelease(t *testing.T) {
	counts := ObjectCounts{
		"pods":    {Count: 300, AvgSize: 10_000},
		"secrets": {Count: 5000, AvgSize: 1000},
		"events":  {Count: -1},
	}
	r29, r31, r33, r34, r35 := Release{Minor: 29}, Release{Minor: 31}, Release{Minor: 33}, Release{Minor: 34}, Release{Minor: 35}
	for _, tc := range []struct {
		rel  Release
		verb string
		path string
		want uint64
	}{
		// from the watch cache: numStored = 300 objects, 3 seats
		{r33, "GET", "/api/v1/pods", 3},
		{r31, "GET", "/api/v1/pods?limit=100", 3},
		// 1.29: a consistent read, and a ?limit, come from etcd: 2 × limit
		{r29, "GET", "/api/v1/pods", 6},
		{r29, "GET", "/api/v1/pods?limit=100", 2},
		{r29, "GET", "/api/v1/pods?limit=100&resourceVersion=0", 3},
		// legacy exact match (limit with a resourceVersion) from etcd: 2 × 100
		{r33, "GET", "/api/v1/pods?limit=100&resourceVersion=5", 2},
		// from etcd with a selector: numStored + limit = 400
		{r33, "GET", "/api/v1/pods?limit=100&resourceVersion=5&labelSelector=a%3Db", 4},
		// 5000 objects: 50 seats, capped at 10 up to 1.33
		{r33, "GET", "/api/v1/secrets", 10},
		// from 1.34 by bytes: 5000 × 1000 B from the cache count at most 1MB, 10 seats
		{r34, "GET", "/api/v1/secrets", 10},
		// from etcd: 5MB, 50 seats (cap 100)
		{r34, "GET", "/api/v1/secrets?resourceVersion=5&resourceVersionMatch=Exact", 50},
		// a named LIST takes 1 seat
		{r33, "GET", "/api/v1/namespaces/a/pods?fieldSelector=metadata.name%3Dx", 1},
		// WATCH: WatchList off by default in 1.33, so 1 seat even with initial events
		{r33, "GET", "/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", 1},
		// on in 1.34: with initial events like a LIST from the cache, 300 × 10kB = 3MB capped at 1MB
		{r34, "GET", "/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", 10},
		// a legacy WATCH (resourceVersion "0") is 1 seat in 1.34, like a LIST from 1.35
		{r34, "GET", "/api/v1/pods?watch=true&resourceVersion=0", 1},
		{r35, "GET", "/api/v1/pods?watch=true&resourceVersion=0", 10},
		{r35, "GET", "/api/v1/pods?watch=true&resourceVersion=7", 1},
		// sendInitialEvents=1 reads as true, as every value but 0 and false
		{r34, "GET", "/api/v1/pods?watch=true&sendInitialEvents=1&resourceVersion=7", 10},
		// a ?limit that does not parse: the cap, even for 300 pods
		{r33, "GET", "/api/v1/pods?limit=abc", 10},
		// a stale count: the cap up to 1.33; from 1.34 a billion 1.5MB objects
		{r33, "GET", "/api/v1/events?limit=50&resourceVersion=5", 10},
		{r34, "GET", "/api/v1/events?limit=50&resourceVersion=5", 100},
		// a continue token with resourceVersionMatch=NotOlderThan: from etcd
		// in 1.31 (2 × 300 objects), from the watch cache from 1.33 (300)
		{r31, "GET", "/api/v1/pods?continue=x&resourceVersionMatch=NotOlderThan", 6},
		{r33, "GET", "/api/v1/pods?continue=x&resourceVersionMatch=NotOlderThan", 3},
	} {
		r, err := ParseRequest(tc.verb, tc.path, Identity{User: "u"})
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		got, ok := ListSeats(tc.rel, r, counts, 0)
		if !ok || got != tc.want {
			t.Errorf("%s %s (%s): got %d seats (ok=%v), want %d", tc.rel, tc.path, r.Info.Verb, got, ok, tc.want)
		}
	}
}
