//go:build apf_stats

package main

import (
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
)

// newEstimator is the release's work estimator with the case's object count,
// average size and watchers (v0.34 on: a storage.Stats getter).
func newEstimator(e EstimateCase, maxSeats func(string) uint64) fcrequest.WorkEstimatorFunc {
	stats := func(string) (storage.Stats, error) {
		switch {
		case e.Objects == ObjectsStale:
			return storage.Stats{}, fcrequest.ObjectCountStaleErr
		case e.Objects < 0:
			return storage.Stats{}, fcrequest.ObjectCountNotFoundErr
		}
		return storage.Stats{ObjectCount: e.Objects, EstimatedAverageObjectSizeBytes: e.AvgSize}, nil
	}
	watchers := func(*request.RequestInfo) int { return e.Watchers }
	return fcrequest.NewWorkEstimator(stats, watchers, fcrequest.DefaultWorkEstimatorConfig(), maxSeats)
}
