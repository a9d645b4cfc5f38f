package monitoring

import (
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/purity"
)

const monitoringPackage = "github.com/kubectl-apf/kubectl-apf/pkg/monitoring"

// TestImports: generating rules and dashboards needs no client, no CLI and
// no clock; the command reads the configuration and hands it over.
func TestImports(t *testing.T) {
	purity.CheckImports(t, monitoringPackage, append(purity.ClientAndUI, "github.com/kubectl-apf/kubectl-apf/pkg/dump")...)
}

func TestNoWallClock(t *testing.T) {
	purity.CheckNoWallClock(t, monitoringPackage)
}
