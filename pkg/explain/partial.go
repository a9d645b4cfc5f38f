package explain

import (
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// missingLevelCause is the cause of a rejecting level that is not in the
// configuration: deleted or draining when the input held the objects, but
// merely unknown when it held none (a raw dump or metrics, a bundle without
// them).
func missingLevelCause(live *dump.Snapshot) rejections.Cause {
	if live != nil && !live.HasObjects() {
		return rejections.Cause{Kind: rejections.CauseTooLittleConcurrency,
			Evidence: "the input holds no PriorityLevelConfiguration objects, so the level's configuration (shares, queues, limit response) is unknown; the figures above come from the metrics and dumps alone",
			Fix:      "run 'kubectl apf explain 429' against the cluster, or on a bundle written by 'kubectl apf dump bundle', which holds the objects"}
	}
	return rejections.Cause{Kind: rejections.CauseTooLittleConcurrency, Evidence: "the level is not in the configuration read (deleted, or being drained)", Fix: "compare 'kubectl get prioritylevelconfigurations' with the metrics"}
}
