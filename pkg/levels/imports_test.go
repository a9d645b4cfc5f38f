package levels

import (
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/purity"
)

// TestPure keeps pkg/levels a compute package: values in, values out.
func TestPure(t *testing.T) {
	purity.CheckImports(t, "github.com/kubectl-apf/kubectl-apf/pkg/levels", append(purity.ClientAndUI, "github.com/kubectl-apf/kubectl-apf/pkg/fetch")...)
	purity.CheckNoWallClock(t, "github.com/kubectl-apf/kubectl-apf/pkg/levels")
}
