package explain

import (
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/purity"
)

const explainPackage = "github.com/kubectl-apf/kubectl-apf/pkg/explain"

// TestImports keeps pkg/explain a pure compute layer: no client libraries
// (so not pkg/dump either), no CLI or terminal UI and no kubernetes/kubernetes.
func TestImports(t *testing.T) {
	purity.CheckImports(t, explainPackage, append(purity.ClientAndUI, "github.com/kubectl-apf/kubectl-apf/pkg/dump")...)
}

// TestNoWallClock keeps the wall clock out of the compute layer: time is
// always passed in (STYLE.md: no time.Now in pkg/explain).
func TestNoWallClock(t *testing.T) {
	purity.CheckNoWallClock(t, explainPackage)
}
