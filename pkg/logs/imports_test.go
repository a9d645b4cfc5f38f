package logs

import (
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/purity"
)

// TestImports keeps pkg/logs below its users: it opens no file (pkg/input
// does, through its Opener), reads the loaded
// state, and neither replays (fairqueue, calibrate), reconstructs nor
// explains; no terminal UI and no wall clock.
func TestImports(t *testing.T) {
	const pkg = "github.com/kubectl-apf/kubectl-apf/pkg/logs"
	purity.CheckImports(t, pkg, "charm.land/", "github.com/charmbracelet/", "k8s.io/kubernetes/",
		"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue", "github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate",
		"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct", "github.com/kubectl-apf/kubectl-apf/pkg/explain",
		"github.com/kubectl-apf/kubectl-apf/pkg/simulate", "github.com/kubectl-apf/kubectl-apf/pkg/vlogs", "github.com/kubectl-apf/kubectl-apf/pkg/input")
	purity.CheckNoWallClock(t, pkg)
}
