//go:build !apf_stats

package main

import (
	"k8s.io/apiserver/pkg/endpoints/request"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
)

// newEstimator is the release's work estimator with the case's object count
// and watchers (v0.29 to v0.33: an object-count getter).
func newEstimator(e EstimateCase, maxSeats func(string) uint64) fcrequest.WorkEstimatorFunc {
	count := func(string) (int64, error) {
		switch {
		case e.Objects == ObjectsStale:
			return 0, fcrequest.ObjectCountStaleErr
		case e.Objects < 0:
			return 0, fcrequest.ObjectCountNotFoundErr
		}
		return e.Objects, nil
	}
	watchers := func(*request.RequestInfo) int { return e.Watchers }
	return fcrequest.NewWorkEstimator(count, watchers, fcrequest.DefaultWorkEstimatorConfig(), maxSeats)
}
