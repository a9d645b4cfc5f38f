package explain

import (
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/purity"
)

const explainPackage = "github.com/kubectl-apf/kubectl-apf/pkg/explain"

// TestImports keeps pkg/explain a pure compute layer: no client libraries
// (it reads pkg/dump's snapshots, never pkg/fetch), no CLI or terminal UI and
// no kubernetes/kubernetes.
func TestImports(t *testing.T) {
	purity.CheckImports(t, explainPackage, append(purity.ClientAndUI, "github.com/kubectl-apf/kubectl-apf/pkg/fetch")...)
}

// TestNoWallClock keeps the wall clock out of the compute layer: time is
// always passed in (docs/architecture.md: no time.Now in the compute packages).
func TestNoWallClock(t *testing.T) {
	purity.CheckNoWallClock(t, explainPackage)
}
