package explain

import (
	"fmt"
	"net/url"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// estimateSeats mirrors the dispatch of width.go:(*workEstimator).estimate
// of release rel as far as the request alone allows: the LIST estimate needs
// the object count (and, from 1.34, size) of the resource, the mutating one
// the number of watchers, which only the apiserver knows, so the answer is a
// range. The caps and the WATCH rule follow the release
// (engine.Release.MaxListSeats, LegacyWatchEstimatedAsList).
func estimateSeats(rel engine.Release, r engine.Request, l engine.LevelLimits) *Seats {
	capTo := func(limit uint64) uint64 {
		// list/mutating_work_estimator.go: maxSeats = GetMaxSeats(pl), or the
		// global limit when 0 or larger.
		if l.MaxSeats == 0 || l.MaxSeats > limit {
			return limit
		}
		return l.MaxSeats
	}
	ri := r.Info
	switch ri.Verb {
	case "list":
		m := capTo(rel.MaxListSeats())
		if ri.Name != "" {
			return &Seats{Initial: 1, Max: 1, Note: "a LIST of one named object takes 1 seat"}
		}
		note := fmt.Sprintf("a LIST takes ceil(bytes/100kB) seats, between 1 and %d in this level: the objects returned (capped by ?limit) times their average size; served from the watch cache the bytes count at most 1MB (10 seats)", m)
		if !rel.SizeBasedListEstimate() {
			note = fmt.Sprintf("a LIST takes ceil(objects/100) seats in %s, between 1 and %d in this level: the objects stored (from etcd without a selector, twice those returned)", rel, m)
		}
		if m == 1 {
			note = "a LIST takes more than 1 seat only when large, but this level caps every request at 1 seat (max seats = max(1, min(ceil(15% of its nominal limit), nominal limit / hand size)))"
		}
		if u, err := url.ParseRequestURI(r.URL); err == nil && u.Query().Get("limit") == "" {
			note += "; this LIST has no ?limit, so it reads every object"
		}
		return &Seats{Initial: 1, Max: m, Note: note}
	case "watch":
		// a WATCH is always served from the watch cache
		m := capTo(rel.MaxCachedListSeats())
		u, _ := url.ParseRequestURI(r.URL)
		if !rel.WatchEstimatedAsList() {
			return &Seats{Initial: 1, Max: 1, Note: fmt.Sprintf("in %s (WatchList off by default) every WATCH takes 1 seat, only until it is initialized", rel)}
		}
		if u != nil {
			q := u.Query()
			rv := q.Get("resourceVersion")
			initial := q.Get("sendInitialEvents") == "true"
			legacy := rv == "" || rv == "0"
			switch {
			case rel.LegacyWatchEstimatedAsList() && (initial || legacy):
				return &Seats{Initial: 1, Max: m, Note: "a WATCH with initial events (sendInitialEvents=true or resourceVersion \"\"/\"0\") is estimated like a LIST; it holds its seats only until the watch is initialized"}
			case initial:
				return &Seats{Initial: 1, Max: m, Note: "a WATCH with sendInitialEvents=true is estimated like a LIST; it holds its seats only until the watch is initialized"}
			case legacy:
				return &Seats{Initial: 1, Max: 1, Note: fmt.Sprintf("in %s only a WATCH with sendInitialEvents=true is estimated like a LIST; this one takes 1 seat, only until it is initialized", rel)}
			}
		}
		return &Seats{Initial: 1, Max: 1, Note: "a WATCH from a given resourceVersion takes 1 seat, only until it is initialized"}
	case "create", "update", "patch", "delete":
		if ri.Resource == "serviceaccounts" && ri.Subresource == "token" {
			return &Seats{Initial: 1, Max: 1, Note: "serviceaccounts/token is exempt from the mutating estimate"}
		}
		m := capTo(rel.MaxMutatingSeats())
		return &Seats{Initial: 1, Max: m, MaxFinal: m, Note: fmt.Sprintf("a write takes 1 seat, then up to %d final seats for 5ms per 10 watchers of the object when it has 10 or more", m)}
	}
	return &Seats{Initial: 1, Max: 1}
}

// seatsFromCounts gives the one figure upstream's LIST estimator would,
// when the apiserver's metrics carry the object count of the resource
// (apiserver_resource_objects, apiserver_resource_size_estimate_bytes), with
// the estimator of release rel (engine.ListSeats).
func seatsFromCounts(s *Seats, rel engine.Release, r engine.Request, l engine.LevelLimits, live *dump.Snapshot) *Seats {
	if live == nil || s == nil || s.Initial == s.Max {
		return s
	}
	_, cur := live.LatestMetrics()
	if cur == nil {
		return s
	}
	if v := r.Info.Verb; v != "list" && v != "watch" {
		return s
	}
	oc := metrics.ObjectCounts(cur)
	if oc == nil {
		return s
	}
	counts := engine.ObjectCounts{}
	for k, c := range oc {
		counts[k] = engine.ObjectStats{Count: int64(c.Count), AvgSize: c.AverageSize()}
	}
	n, ok := engine.ListSeats(rel, r, counts, l.MaxSeats)
	if !ok {
		return s
	}
	key := r.Info.Resource
	if r.Info.APIGroup != "" {
		key += "." + r.Info.APIGroup
	}
	c := counts[key]
	note := fmt.Sprintf("%s: %d objects of %d bytes on average (the apiserver's object count), so %s, as the LIST estimator of %s computes", key, c.Count, c.AvgSize, seatsText(n), rel)
	if rel.IsZero() || rel.Minor >= 31 {
		note += "; a consistent read is taken to come from the watch cache"
	}
	return &Seats{Initial: n, Max: n, Note: note}
}

// verdictForSeats gives the verdict for the seats the request takes: when
// the estimate is a range (an unsized LIST, a write with watchers), the
// verdict for its low end alone would be given as if the request were
// small, so it is computed for both ends and the reason says which holds
// for which.
func verdictForSeats(in Input, r engine.Request, ex *Explanation, pl *flowcontrolv1.PriorityLevelConfiguration, l engine.LevelLimits, lm levelMetrics, waitLimit time.Duration) Verdict {
	s := ex.Seats
	low := verdict(in, r, ex, pl, l, lm, waitLimit)
	if s == nil || s.Max <= s.Initial || low.Kind == VerdictExempt {
		return low
	}
	hiSeats := *s
	hiSeats.Initial = s.Max
	ex.Seats = &hiSeats
	high := verdict(in, r, ex, pl, l, lm, waitLimit)
	ex.Seats = s
	if low.Reason == high.Reason && low.Kind == high.Kind && low.RejectReason == high.RejectReason {
		low.Reason = fmt.Sprintf("with any of its %d to %d seats: %s", s.Initial, s.Max, low.Reason)
		return low
	}
	kind := high.Kind
	if high.RejectReason != "" {
		kind += " (" + high.RejectReason + ")"
	}
	low.Reason = fmt.Sprintf("with %s, the least it can take: %s; with %d seats, the most it can take: %s: %s", seatsText(s.Initial), low.Reason, s.Max, kind, high.Reason)
	return low
}
