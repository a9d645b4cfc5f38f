package lint

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports keeps pkg/lint and pkg/capacity pure compute packages
// (STYLE.md: fetch, compute, render): no client libraries, no CLI, no
// kubernetes/kubernetes.
func TestImports(t *testing.T) {
	forbidden := []string{
		"k8s.io/client-go/",
		"github.com/spf13/cobra",
		"charm.land/",
		"github.com/charmbracelet/",
		"k8s.io/kubernetes/",
	}
	for _, pkg := range []string{"github.com/kubectl-apf/kubectl-apf/pkg/lint", "github.com/kubectl-apf/kubectl-apf/pkg/capacity"} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list returned only %d packages for %s: %q", len(deps), pkg, out)
		}
		for _, dep := range deps {
			for _, f := range forbidden {
				if dep == strings.TrimSuffix(f, "/") || strings.HasPrefix(dep, f) {
					t.Errorf("%s depends on forbidden package %s", pkg, dep)
				}
			}
		}
	}
}
