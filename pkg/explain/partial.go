package explain

import (
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// missingLevelCause is the cause of a rejecting level that is not in the
// configuration read from an input that held the objects: deleted, or
// being drained. (Without the objects, the rejections' reasons and the
// seats in use tell the cause: triageLevel.)
func missingLevelCause() rejections.Cause {
	return rejections.Cause{Kind: rejections.CauseTooLittleConcurrency, Evidence: "the level is not in the configuration read (deleted, or being drained)", Fix: "compare 'kubectl get prioritylevelconfigurations' with the metrics"}
}
