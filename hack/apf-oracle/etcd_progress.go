//go:build apf_etcdfeature

package main

import (
	"k8s.io/apiserver/pkg/storage"
	etcdfeature "k8s.io/apiserver/pkg/storage/feature"
)

// progressNotifyEtcd reports what the feature checker of a kube-apiserver
// whose etcd supports progress notify (etcd 3.5.13 and later, as the version
// e2e runs) reports once it has checked its client: RequestWatchProgress is
// supported. The oracle has no etcd client, and the checker answers false
// until it has one; without this a consistent LIST (no resourceVersion) would
// be sized as a read from etcd, as it is only on a server whose etcd lacks
// the feature (v0.31 on: list_work_estimator.go:shouldListFromStorage, and
// from v0.33 storage/cacher/delegator's ConsistentReadSupported).
type progressNotifyEtcd struct {
	etcdfeature.FeatureSupportChecker
}

func (progressNotifyEtcd) Supports(f storage.Feature) bool { return f == storage.RequestWatchProgress }

func init() {
	etcdfeature.DefaultFeatureSupportChecker = progressNotifyEtcd{etcdfeature.DefaultFeatureSupportChecker}
}
