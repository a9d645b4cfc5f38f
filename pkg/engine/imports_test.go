package engine

import (
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/purity"
)

const enginePackages = "github.com/kubectl-apf/kubectl-apf/pkg/engine/..."

// TestImports keeps pkg/engine (and its subpackages) a pure compute layer:
// no client libraries, no CLI or terminal UI, no kubernetes/kubernetes, and
// not upstream's flowcontrol controller or queue sets that it reimplements.
func TestImports(t *testing.T) {
	purity.CheckImports(t, enginePackages, append(purity.ClientAndUI,
		"k8s.io/apiserver/pkg/util/flowcontrol",
		"k8s.io/apiserver/pkg/util/shufflesharding",
	)...)
}

// TestNoWallClock keeps the wall clock out of the compute layer: time is
// always passed in (docs/architecture.md: no time.Now in the compute packages).
func TestNoWallClock(t *testing.T) {
	purity.CheckNoWallClock(t, enginePackages)
}
