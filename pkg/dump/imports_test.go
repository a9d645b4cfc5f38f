package dump

import (
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/purity"
)

// TestImports keeps pkg/dump pure: parsing, bundles, redaction and whois
// need no client library (package fetch reads a live cluster), no CLI and no
// terminal UI.
func TestImports(t *testing.T) {
	purity.CheckImports(t, "github.com/kubectl-apf/kubectl-apf/pkg/dump", purity.ClientAndUI...)
}
