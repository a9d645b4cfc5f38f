package engine

import (
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	fcboot "k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
)

// DefaultFlowSchemas returns the FlowSchemas kube-apiserver creates: the
// mandatory ones then the suggested ones, from
// k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap (the objects are shared:
// do not modify them). They are complete: DefaultFlowSchema leaves them
// unchanged (a test checks).
func DefaultFlowSchemas() []*flowcontrolv1.FlowSchema {
	out := append([]*flowcontrolv1.FlowSchema{}, fcboot.MandatoryFlowSchemas...)
	return append(out, fcboot.SuggestedFlowSchemas...)
}

// DefaultPriorityLevels returns the PriorityLevelConfigurations kube-apiserver
// creates, mandatory then suggested, from the bootstrap package (shared: do
// not modify).
func DefaultPriorityLevels() []*flowcontrolv1.PriorityLevelConfiguration {
	out := append([]*flowcontrolv1.PriorityLevelConfiguration{}, fcboot.MandatoryPriorityLevelConfigurations...)
	return append(out, fcboot.SuggestedPriorityLevelConfigurations...)
}

// DefaultConfig returns the digested default configuration, what a fresh
// kube-apiserver of this version uses.
func DefaultConfig() *Config {
	return NewConfig(DefaultFlowSchemas(), DefaultPriorityLevels())
}

// DefaultServerConcurrencyLimit is kube-apiserver's default total
// concurrency: --max-requests-inflight=400 plus
// --max-mutating-requests-inflight=200 (server/config.go:NewConfig,
// server/options/feature.go:ApplyTo).
const DefaultServerConcurrencyLimit = 600

// DefaultServerRequestTimeout is kube-apiserver's default --request-timeout
// (server/config.go:NewConfig: RequestTimeout 60 s).
const DefaultServerRequestTimeout = time.Minute

// MaxRequestWaitLimit is the hard limit of a request's wait in its queue
// (server/filters/priority-and-fairness.go:getRequestWaitContext: "must not
// exceed the hard limit of 1m").
const MaxRequestWaitLimit = time.Minute

// DefaultRequestWaitLimit is how long a request with the server's default
// deadline may wait in its queue: a quarter of serverRequestTimeout, at
// most MaxRequestWaitLimit (getRequestWaitContext). RequestWaitLimit gives
// a request's own, which a ?timeout= may shorten.
func DefaultRequestWaitLimit(serverRequestTimeout time.Duration) time.Duration {
	return min(serverRequestTimeout/4, MaxRequestWaitLimit)
}
