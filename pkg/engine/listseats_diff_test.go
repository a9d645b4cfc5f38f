package engine

import (
	"net/http"
	"testing"

	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
)

// TestListSeatsMatchUpstream runs upstream's work estimator
// (request.NewWorkEstimator, v0.37) and ListSeats on the same LISTs and
// object counts. Consistent reads (no resourceVersion) are left out: upstream
// sizes them as reads from etcd in a process that has not seen etcd's
// progress notify support (any CLI), while ListSeats takes them, as a 1.34+
// server does, from the watch cache; the recordings test checks those
// against a real server's apf_iseats.
func TestListSeatsMatchUpstream(t *testing.T) {
	counts := ObjectCounts{
		"pods":             {Count: 5000, AvgSize: 20_000},
		"configmaps":       {Count: 105, AvgSize: 32_900},
		"deployments.apps": {Count: 40, AvgSize: 3_000},
		"secrets":          {Count: 0},
		"events":           {Count: -1},
	}
	stats := func(key string) (storage.Stats, error) {
		c, ok := counts[key]
		if !ok {
			return storage.Stats{}, fcrequest.ObjectCountNotFoundErr
		}
		if c.Count < 0 {
			return storage.Stats{}, fcrequest.ObjectCountStaleErr
		}
		return storage.Stats{ObjectCount: c.Count, EstimatedAverageObjectSizeBytes: c.AvgSize}, nil
	}
	paths := []string{
		"/api/v1/pods?resourceVersion=0",
		"/api/v1/pods?resourceVersion=0&limit=500",
		"/api/v1/pods?limit=500&resourceVersion=12345",
		"/api/v1/pods?limit=500&continue=abc",
		"/api/v1/pods?resourceVersion=12345&resourceVersionMatch=Exact",
		"/api/v1/pods?resourceVersion=12345&resourceVersionMatch=NotOlderThan",
		"/api/v1/pods?labelSelector=app%3Dx&resourceVersion=12345&resourceVersionMatch=Exact",
		"/api/v1/pods?fieldSelector=metadata.name%3Dx&resourceVersion=0",
		"/api/v1/namespaces/ns/configmaps?resourceVersion=0",
		"/api/v1/namespaces/ns/configmaps?resourceVersion=0&limit=4",
		"/apis/apps/v1/deployments?resourceVersion=0",
		"/api/v1/secrets?resourceVersion=0",
		"/api/v1/events?resourceVersion=0",
		"/api/v1/pods?watch=true&resourceVersion=0",
		"/api/v1/pods?watch=true&resourceVersion=12345",
		"/api/v1/pods?watch=true&resourceVersion=12345&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
	}
	for _, maxSeats := range []uint64{0, 1, 5, 10, 37} {
		est := fcrequest.NewWorkEstimator(stats, func(*apirequest.RequestInfo) int { return 0 }, fcrequest.DefaultWorkEstimatorConfig(),
			func(string) uint64 { return maxSeats })
		for _, p := range paths {
			r, err := ParseRequest("GET", p, Identity{User: "u"})
			if err != nil {
				t.Fatal(err)
			}
			hr, err := http.NewRequest("GET", "https://apiserver"+p, nil)
			if err != nil {
				t.Fatal(err)
			}
			info := r.Info
			hr = hr.WithContext(apirequest.WithRequestInfo(hr.Context(), &info))
			want := est(hr, "fs", "pl").InitialSeats
			got, ok := ListSeats(NewestRelease, r, counts, maxSeats)
			if !ok {
				// a resource without a count: upstream gives 1 seat
				got = 1
			}
			if got != want {
				t.Errorf("max seats %d, %s: ListSeats %d, upstream %d", maxSeats, p, got, want)
			}
		}
	}
}
