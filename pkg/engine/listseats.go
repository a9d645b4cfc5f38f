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
	listBytesPerSeat      = 100_000
	listCacheMaxMemory    = 1_000_000
	listMaxObjectSize     = 1_500_000
	maximumListSeatsLimit = 100
)

// ListSeats is the initial seats upstream's size-based LIST work estimator
// (request/list_work_estimator.go:(*listWorkEstimator).estimate with
// SizeBasedListCostEstimate, the default since 1.34) gives a list or watch,
// from the resource's object count; maxSeats is the level's cap
// (LevelLimits.MaxSeats; 0 for the global limit). ok is false when counts has no entry
// for the resource: the caller then does not know the figure (upstream
// itself gives 1 seat to a resource its tracker does not know, but a
// missing entry here usually means the counts were not captured).
//
// A consistent read (no resourceVersion) is taken to be served from the
// watch cache, as by a 1.34+ server whose etcd supports progress notify; a
// CLI cannot see that support, which is why calling upstream's estimator
// from a CLI sizes such LISTs as reads from etcd.
func ListSeats(r Request, counts ObjectCounts, maxSeats uint64) (seats uint64, ok bool) {
	if maxSeats == 0 || maxSeats > maximumListSeatsLimit {
		maxSeats = maximumListSeatsLimit
	}
	info := r.Info
	q := url.Values{}
	if u, err := url.Parse(r.URL); err == nil {
		q = u.Query()
	}
	if info.Verb == "watch" {
		rv := q.Get("resourceVersion")
		sendInit := q.Get("sendInitialEvents") == "true"
		if !sendInit && rv != "" && rv != "0" {
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
	fromCache := info.Verb == "watch" || !fromStorage
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
