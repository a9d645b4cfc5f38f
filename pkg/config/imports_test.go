package config

import (
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/purity"
)

// TestImports keeps pkg/config a pure package (docs/architecture.md: fetch,
// compute, render): no client libraries, no CLI, no kubernetes/kubernetes.
func TestImports(t *testing.T) {
	purity.CheckImports(t, "github.com/kubectl-apf/kubectl-apf/pkg/config", purity.ClientAndUI...)
}

// TestNoWallClock: parsing reads no clock.
func TestNoWallClock(t *testing.T) {
	purity.CheckNoWallClock(t, "github.com/kubectl-apf/kubectl-apf/pkg/config")
}
