package reconstruct

import (
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/purity"
)

const reconstructPackage = "github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"

// TestImports keeps pkg/reconstruct a pure compute layer: no client
// libraries, no CLI or terminal UI, no kubernetes/kubernetes, and not
// pkg/fetch (it reads a workload and a configuration it is given).
func TestImports(t *testing.T) {
	purity.CheckImports(t, reconstructPackage, append(purity.ClientAndUI, "github.com/kubectl-apf/kubectl-apf/pkg/fetch")...)
}

// TestNoWallClock keeps the wall clock out of the reconstruction: every
// time comes from the log.
func TestNoWallClock(t *testing.T) {
	purity.CheckNoWallClock(t, reconstructPackage)
}
