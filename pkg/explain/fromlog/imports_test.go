package fromlog

import (
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/purity"
)

// TestImports keeps pkg/explain/fromlog glue that prints nothing: it takes
// the loaded state (package state, whose flag group brings cli-runtime and
// cobra) and values cmd/kubectl-apf made of its flags, and
// returns explain's answers; no terminal UI, no -o printing, no
// kubernetes/kubernetes, and no wall clock (a store's window is the
// caller's).
func TestImports(t *testing.T) {
	purity.CheckImports(t, "github.com/kubectl-apf/kubectl-apf/pkg/explain/fromlog",
		"charm.land/", "github.com/charmbracelet/", "k8s.io/kubernetes/",
		"github.com/kubectl-apf/kubectl-apf/pkg/tui", "github.com/kubectl-apf/kubectl-apf/pkg/output")
	purity.CheckNoWallClock(t, "github.com/kubectl-apf/kubectl-apf/pkg/explain/fromlog")
}
