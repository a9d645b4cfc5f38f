package engine

import (
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
