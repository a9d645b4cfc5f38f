package lint

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// The API defaults of flowcontrol v1, as
// k8s.io/kubernetes/pkg/apis/flowcontrol/v1/defaults.go sets them (that module
// must not be imported by the plugin, so they are restated here).
const (
	DefaultMatchingPrecedence      int32 = 1000
	DefaultHandSize                int32 = 8
	DefaultQueues                  int32 = 64
	DefaultQueueLengthLimit        int32 = 50
	DefaultNominalConcurrencyShare int32 = 30
)

// DefaultFlowSchema applies the API server's defaulting to a FlowSchema read
// from a file, in place (SetDefaults_FlowSchemaSpec).
func DefaultFlowSchema(fs *flowcontrolv1.FlowSchema) {
	if fs.Spec.MatchingPrecedence == 0 {
		fs.Spec.MatchingPrecedence = DefaultMatchingPrecedence
	}
}

// DefaultPriorityLevel applies the API server's defaulting to a
// PriorityLevelConfiguration read from a file, in place
// (SetDefaults_ExemptPriorityLevelConfiguration,
// SetDefaults_LimitedPriorityLevelConfiguration and
// SetDefaults_QueuingConfiguration; the latter only when queuing is present, as
// the generated defaulter calls it).
func DefaultPriorityLevel(pl *flowcontrolv1.PriorityLevelConfiguration) {
	if e := pl.Spec.Exempt; e != nil {
		if e.NominalConcurrencyShares == nil {
			e.NominalConcurrencyShares = new(int32)
		}
		if e.LendablePercent == nil {
			e.LendablePercent = new(int32)
		}
	}
	if l := pl.Spec.Limited; l != nil {
		if l.NominalConcurrencyShares == nil {
			v := DefaultNominalConcurrencyShare
			l.NominalConcurrencyShares = &v
		}
		if l.LendablePercent == nil {
			l.LendablePercent = new(int32)
		}
		if q := l.LimitResponse.Queuing; q != nil {
			if q.HandSize == 0 {
				q.HandSize = DefaultHandSize
			}
			if q.Queues == 0 {
				q.Queues = DefaultQueues
			}
			if q.QueueLengthLimit == 0 {
				q.QueueLengthLimit = DefaultQueueLengthLimit
			}
		}
	}
}
