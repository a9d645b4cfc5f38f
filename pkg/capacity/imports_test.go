package capacity

import (
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/purity"
)

// TestImports keeps pkg/capacity a compute package (docs/architecture.md,
// Purity rules): no client library, no CLI or terminal UI, nothing of
// k8s.io/kubernetes, no fetch or store client, and no wall clock.
func TestImports(t *testing.T) {
	purity.CheckImports(t, "github.com/kubectl-apf/kubectl-apf/pkg/capacity", append(purity.ClientAndUI,
		"github.com/kubectl-apf/kubectl-apf/pkg/fetch", "github.com/kubectl-apf/kubectl-apf/pkg/promfetch",
		"github.com/kubectl-apf/kubectl-apf/pkg/load")...)
	purity.CheckNoWallClock(t, "github.com/kubectl-apf/kubectl-apf/pkg/capacity")
}
