package lint

import (
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/purity"
)

// TestImports keeps pkg/lint and pkg/capacity pure compute packages
// (docs/architecture.md: fetch, compute, render): no client libraries, no CLI, no
// kubernetes/kubernetes.
func TestImports(t *testing.T) {
	for _, pkg := range []string{"github.com/kubectl-apf/kubectl-apf/pkg/lint", "github.com/kubectl-apf/kubectl-apf/pkg/capacity"} {
		purity.CheckImports(t, pkg, purity.ClientAndUI...)
	}
}
