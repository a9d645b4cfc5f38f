package history

import (
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/purity"
)

// TestPure keeps pkg/history a compute package: it reads the store through
// the Querier interface only, and takes every time it needs.
func TestPure(t *testing.T) {
	purity.CheckImports(t, "github.com/kubectl-apf/kubectl-apf/pkg/history", append(purity.ClientAndUI,
		"github.com/kubectl-apf/kubectl-apf/pkg/dump", "github.com/prometheus/client_golang/")...)
	purity.CheckNoWallClock(t, "github.com/kubectl-apf/kubectl-apf/pkg/history")
}
