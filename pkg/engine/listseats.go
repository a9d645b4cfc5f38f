package engine

import (
	"math"
	"net/url"
	"strconv"
)

// ObjectStats is what an apiserver's object count tracker knows of one
// resource: the number of objects and their average size in bytes (0 when
// unknown). The apiserver exports them as apiserver_resource_objects and
// apiserver_resource_size_estimate_bytes (the size is count × average).
type ObjectStats struct {
	Count   int64
	AvgSize int64
}

// ObjectCounts maps a resource, keyed like upstream's tracker by
// GroupResource.String() ("pods", "deployments.apps"), to its stats.
type ObjectCounts map[string]ObjectStats

// Upstream constants of request/list_work_estimator.go and config.go.
const (
	listBytesPerSeat   = 100_000
	listCacheMaxMemory = 1_000_000
	listMaxObjectSize  = 1_500_000
	listObjectsPerSeat = 100 // up to 1.33
)

// ListSeats is the initial seats upstream's LIST work estimator of release
// rel (request/list_work_estimator.go:(*listWorkEstimator).estimate) gives a
// list or watch, from the resource's object count; maxSeats is the level's
// cap (LevelLimits.MaxSeats; 0 for the global limit). The zero Release means
// NewestRelease. From 1.34 (SizeBasedListCostEstimate, on by default) the
// estimate counts bytes, ceil(bytes/100kB) capped at 100 seats; up to 1.33 it
// counts objects, ceil(objects/100) capped at 10 (Release.MaxListSeats). A
// WATCH is sent to the estimator only where Release.WatchEstimatedAsList, and
// then costs more than 1 seat only with sendInitialEvents=true, or from 1.35
// also with resourceVersion ""/"0" (Release.LegacyWatchEstimatedAsList).
// ok is false when counts has no entry for the resource: the caller then
// does not know the figure (upstream itself gives 1 seat to a resource its
// tracker does not know, but a missing entry here usually means the counts
// were not captured).
//
// A consistent read (no resourceVersion) is taken to be served from the
// watch cache, as by a 1.31+ server whose etcd supports progress notify; a
// CLI cannot see that support, which is why calling upstream's estimator
// from a CLI sizes such LISTs as reads from etcd. Up to 1.30
// (ConsistentListFromCache off by default) a consistent read, and any
// ?limit except with resourceVersion "0", is served from etcd.
func ListSeats(rel Release, r Request, counts ObjectCounts, maxSeats uint64) (seats uint64, ok bool) {
	if rel.IsZero() {
		rel = NewestRelease
	}
	if relCap := rel.MaxListSeats(); maxSeats == 0 || maxSeats > relCap {
		maxSeats = relCap
	}
	info := r.Info
	q := url.Values{}
	if u, err := url.Parse(r.URL); err == nil {
		q = u.Query()
	}
	if info.Verb == "watch" {
		if !rel.WatchEstimatedAsList() {
			return 1, true
		}
		rv := q.Get("resourceVersion")
		sendInit := q.Get("sendInitialEvents") == "true"
		legacy := rel.LegacyWatchEstimatedAsList() && (rv == "" || rv == "0")
		if !sendInit && !legacy {
			return 1, true
		}
	}
	key := info.Resource
	if info.APIGroup != "" {
		key += "." + info.APIGroup
	}
	st, found := counts[key]
	if !found {
		return 0, false
	}
	if st.Count < 0 {
		// the tracker failed to count: upstream treats a stale count as
		// unbounded
		st = ObjectStats{Count: 1_000_000_000, AvgSize: listMaxObjectSize}
	}
	var limit int64
	if l, err := strconv.ParseInt(q.Get("limit"), 10, 64); err == nil && l > 0 {
		limit = l
	}
	rv, match := q.Get("resourceVersion"), q.Get("resourceVersionMatch")
	// delegator.ShouldDelegateListMeta with CacheWithoutSnapshots
	var fromStorage bool
	switch match {
	case "Exact":
		fromStorage = true
	case "NotOlderThan":
	case "":
		switch {
		case q.Get("continue") != "":
			fromStorage = true
		case limit > 0 && rv != "" && rv != "0":
			fromStorage = true
		}
	default:
		fromStorage = true
	}
	if rel.Minor <= 30 && (rv == "" || (limit > 0 && rv != "0")) {
		// shouldListFromStorage of v0.29/v0.30: consistentReadFromStorage
		// (ConsistentListFromCache off) and hasLimit
		fromStorage = true
	}
	fromCache := info.Verb == "watch" || !fromStorage
	if !rel.SizeBasedListEstimate() {
		return listSeatsByObjects(info.Name != "", fromCache, q, st.Count, limit, maxSeats), true
	}
	if st.AvgSize <= 0 && st.Count != 0 {
		st.AvgSize = listMaxObjectSize
	}
	limited := st.Count
	if limit > 0 && limit < limited {
		limited = limit
	}
	var objects int64
	switch {
	case info.Name != "":
		objects = 1
	case fromCache:
		objects = limited
	case q.Get("fieldSelector") != "" || q.Get("labelSelector") != "":
		objects = max(limited, st.Count/2)
	default:
		objects = limited
	}
	mem := objects * st.AvgSize
	if fromCache {
		mem = min(mem, listCacheMaxMemory)
	}
	seats = uint64(math.Ceil(float64(mem) / listBytesPerSeat))
	return min(max(seats, 1), maxSeats), true
}

// listSeatsByObjects is the estimate of releases up to 1.33: one seat per
// 100 objects processed (list_work_estimator.go of v0.29-v0.33: numStored
// from the watch cache, numStored + limit with a selector, 2 × limit
// otherwise).
func listSeatsByObjects(named bool, fromCache bool, q url.Values, numStored, limit int64, maxSeats uint64) uint64 {
	if named {
		return 1
	}
	lim := numStored
	if limit > 0 && limit < numStored {
		lim = limit
	}
	var objects int64
	switch {
	case fromCache:
		objects = numStored
	case q.Get("fieldSelector") != "" || q.Get("labelSelector") != "":
		objects = numStored + lim
	default:
		objects = 2 * lim
	}
	seats := uint64(math.Ceil(float64(objects) / listObjectsPerSeat))
	return min(max(seats, 1), maxSeats)
}
