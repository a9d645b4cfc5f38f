package engine

import (
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
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

// Upstream constants of request/list_work_estimator.go, config.go and
// mutating_work_estimator.go.
const (
	listBytesPerSeat        = 100_000
	listCacheMaxMemory      = 1_000_000
	listMaxObjectSize       = 1_500_000
	listObjectsPerSeat      = 100 // up to 1.33
	watchesPerSeat          = 10
	eventAdditionalDuration = 5 * time.Millisecond
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
// also with resourceVersion ""/"0" (Release.LegacyWatchEstimatedAsList). A
// query the apiserver cannot read as ListOptions (?limit=abc) takes the cap,
// as upstream sizes a request "destined to fail in the validation layer".
// ok is false when counts has no entry for the resource: the caller then
// does not know the figure (upstream itself gives 1 seat to a resource its
// tracker does not know, but a missing entry here usually means the counts
// were not captured). A negative Count is a count the tracker let go stale,
// which upstream sizes as the cap.
//
// A consistent read (no resourceVersion) is taken to be served from the
// watch cache, as by a 1.31+ server whose etcd supports progress notify; a
// CLI cannot see that support, which is why calling upstream's estimator
// from a CLI sizes such LISTs as reads from etcd. Up to 1.30
// (ConsistentListFromCache off by default) a consistent read, and any
// ?limit except with resourceVersion "0", is served from etcd
// (Release.ConsistentListFromCache, listFromStorage).
func ListSeats(rel Release, r Request, counts ObjectCounts, maxSeats uint64) (seats uint64, ok bool) {
	if rel.IsZero() {
		rel = NewestRelease
	}
	if relCap := rel.MaxListSeats(); maxSeats == 0 || maxSeats > relCap {
		maxSeats = relCap
	}
	info := r.Info
	if info.Verb == "watch" && !rel.WatchEstimatedAsList() {
		return 1, true
	}
	if info.Name != "" && !rel.SizeBasedListEstimate() {
		// up to 1.33 a request for one named object takes 1 seat before its
		// query is read
		return 1, true
	}
	q := url.Values{}
	if u, err := url.Parse(r.URL); err == nil {
		q = u.Query()
	}
	opts, err := readListOptions(q)
	if err != nil {
		return maxSeats, true
	}
	if info.Verb == "watch" {
		legacy := rel.LegacyWatchEstimatedAsList() && (opts.resourceVersion == "" || opts.resourceVersion == "0")
		if !opts.sendInitialEvents && !legacy {
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
		// the tracker's count went stale: up to 1.33 upstream gives the cap,
		// from 1.34 it counts a billion objects of the largest size
		if !rel.SizeBasedListEstimate() {
			return maxSeats, true
		}
		st = ObjectStats{Count: 1_000_000_000, AvgSize: listMaxObjectSize}
	}
	fromCache := info.Verb == "watch" || !listFromStorage(rel, opts)
	selector := opts.fieldSelector != "" || opts.labelSelector != ""
	limited := st.Count
	if opts.limit > 0 && opts.limit < limited {
		limited = opts.limit
	}
	if !rel.SizeBasedListEstimate() {
		// one seat per 100 objects processed (list_work_estimator.go of
		// v0.29-v0.33): numStored from the watch cache, numStored + limit
		// with a selector, 2 × limit otherwise
		var objects int64
		switch {
		case fromCache:
			objects = st.Count
		case selector:
			objects = st.Count + limited
		default:
			objects = 2 * limited
		}
		seats = uint64(math.Ceil(float64(objects) / listObjectsPerSeat))
		return min(max(seats, 1), maxSeats), true
	}
	if st.AvgSize <= 0 && st.Count != 0 {
		st.AvgSize = listMaxObjectSize
	}
	var objects int64
	switch {
	case info.Name != "":
		objects = 1
	case fromCache:
		objects = limited
	case selector:
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

// listOptions is what the LIST estimator reads of a request's query.
type listOptions struct {
	limit                                       int64
	resourceVersion, resourceVersionMatch       string
	continueToken, fieldSelector, labelSelector string
	sendInitialEvents                           bool
}

// readListOptions reads q as metav1.Convert_url_Values_To_v1_ListOptions
// does: the first value of each parameter; an integer that does not parse
// (limit, timeoutSeconds) is an error; a boolean is false only as "0" or
// "false" in any case, and true otherwise, even empty.
func readListOptions(q url.Values) (listOptions, error) {
	var o listOptions
	for _, p := range []string{"limit", "timeoutSeconds"} {
		if v, ok := q[p]; ok && len(v) > 0 {
			n, err := strconv.ParseInt(v[0], 10, 64)
			if err != nil {
				return o, err
			}
			if p == "limit" {
				o.limit = n
			}
		}
	}
	if v, ok := q["sendInitialEvents"]; ok && len(v) > 0 {
		o.sendInitialEvents = v[0] != "0" && !strings.EqualFold(v[0], "false")
	}
	o.resourceVersion, o.resourceVersionMatch = q.Get("resourceVersion"), q.Get("resourceVersionMatch")
	o.continueToken, o.fieldSelector, o.labelSelector = q.Get("continue"), q.Get("fieldSelector"), q.Get("labelSelector")
	return o, nil
}

// listFromStorage is whether the estimator of release rel takes a LIST to be
// served from etcd rather than the watch cache. Up to 1.32
// list_work_estimator.go:shouldListFromStorage: a consistent read up to 1.30
// (Release.ConsistentListFromCache), a continue token, a ?limit with a
// resourceVersion other than "0" (up to 1.30 also without one), and a
// resourceVersionMatch other than NotOlderThan. From 1.33
// storage/cacher/delegator's ShouldDelegateListMeta with
// CacheWithoutSnapshots, which differs in one case: with
// resourceVersionMatch=NotOlderThan a continue token no longer sends the
// LIST to etcd.
func listFromStorage(rel Release, o listOptions) bool {
	rv, match := o.resourceVersion, o.resourceVersionMatch
	exactRV := o.limit > 0 && rv != "" && rv != "0"
	if rel.Minor <= 32 {
		consistentFromStorage := rv == "" && !rel.ConsistentListFromCache()
		hasLimit := !rel.ConsistentListFromCache() && o.limit > 0 && rv != "0"
		legacyExact := rel.ConsistentListFromCache() && exactRV && match == ""
		unsupportedMatch := match != "" && match != "NotOlderThan" || legacyExact
		return consistentFromStorage || o.continueToken != "" || hasLimit || unsupportedMatch
	}
	switch match {
	case "NotOlderThan":
		return false
	case "":
		return o.continueToken != "" || exactRV
	}
	return true
}

// WorkEstimate is the work upstream's estimator assigns a request
// (request.WorkEstimate): seats while it executes, and seats held for
// AdditionalLatency after it, for the watch events a write sends.
type WorkEstimate struct {
	InitialSeats, FinalSeats uint64
	AdditionalLatency        time.Duration
}

// EstimateWork is the work estimate of release rel for r
// (request/width.go:(*workEstimator).estimate): a LIST, and a WATCH, by
// ListSeats from counts; a create, update, patch or delete 1 seat, plus
// ceil(watchers/10) final seats (capped like ListSeats by maxSeats and
// Release.MaxMutatingSeats) for 5ms of work per seat when the object has 10
// or more watchers (mutating_work_estimator.go; serviceaccounts/token sends
// no events); anything else 1 seat. ok is false as for ListSeats.
func EstimateWork(rel Release, r Request, counts ObjectCounts, watchers int, maxSeats uint64) (w WorkEstimate, ok bool) {
	info := r.Info
	switch info.Verb {
	case "list", "watch":
		seats, ok := ListSeats(rel, r, counts, maxSeats)
		return WorkEstimate{InitialSeats: seats}, ok
	case "create", "update", "patch", "delete":
	default:
		return WorkEstimate{InitialSeats: 1}, true
	}
	w.InitialSeats = 1
	if info.Resource == "serviceaccounts" && info.Subresource == "token" || watchers < watchesPerSeat {
		return w, true
	}
	if relCap := rel.MaxMutatingSeats(); maxSeats == 0 || maxSeats > relCap {
		maxSeats = relCap
	}
	final := uint64(math.Ceil(float64(watchers) / watchesPerSeat))
	// the work in request/seat_seconds.go's units (1e-8 seat-seconds),
	// rounded as SeatsTimesDuration does, spread over the capped seats as
	// SeatSeconds.DurationPerSeat does
	work := uint64(int64(math.Round(float64(final) * float64(eventAdditionalDuration/time.Nanosecond) / 10)))
	w.FinalSeats = min(final, maxSeats)
	w.AdditionalLatency = time.Duration(float64(work) / float64(w.FinalSeats) * (float64(time.Second) / 1e8))
	return w, true
}
