package lint

import (
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/purity"
)

// TestImports keeps pkg/lint a pure compute package
// (docs/architecture.md: fetch, compute, render): no client libraries, no CLI, no
// kubernetes/kubernetes.
func TestImports(t *testing.T) {
	purity.CheckImports(t, "github.com/kubectl-apf/kubectl-apf/pkg/lint", purity.ClientAndUI...)
}
