package simulate

import (
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/purity"
)

// TestImports keeps pkg/simulate glue that prints nothing: it takes the
// loaded state (package state, whose flag group brings cli-runtime and
// cobra, and which sanitises the notes it returns) and returns values;
// cmd/kubectl-apf parses the flags and prints in the format -o asks for. It
// reads no wall clock: the replay's times are the recording's.
func TestImports(t *testing.T) {
	purity.CheckImports(t, "github.com/kubectl-apf/kubectl-apf/pkg/simulate",
		"charm.land/", "github.com/charmbracelet/", "k8s.io/kubernetes/", "github.com/kubectl-apf/kubectl-apf/pkg/tui",
		"github.com/kubectl-apf/kubectl-apf/pkg/output")
	purity.CheckNoWallClock(t, "github.com/kubectl-apf/kubectl-apf/pkg/simulate")
}
