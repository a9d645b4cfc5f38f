package explain

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestImports keeps pkg/explain a pure compute layer:
// no client libraries (so not pkg/dump either), no CLI or terminal UI and no
// kubernetes/kubernetes.
func TestImports(t *testing.T) {
	forbidden := []string{
		"k8s.io/client-go/",
		"github.com/spf13/cobra",
		"charm.land/",
		"github.com/charmbracelet/",
		"k8s.io/kubernetes/",
		"github.com/kubectl-apf/kubectl-apf/pkg/dump",
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "github.com/kubectl-apf/kubectl-apf/pkg/explain").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list returned only %d packages, expected the dependency closure: %q", len(deps), out)
	}
	for _, dep := range deps {
		for _, f := range forbidden {
			if dep == strings.TrimSuffix(f, "/") || strings.HasPrefix(dep, f) {
				t.Errorf("pkg/explain depends on forbidden package %s", dep)
			}
		}
	}
}

// TestNoWallClock keeps the wall clock out of the compute layer: time is
// always passed in (STYLE.md: no time.Now in pkg/explain).
func TestNoWallClock(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}} {{end}}`, "github.com/kubectl-apf/kubectl-apf/pkg/explain").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	files := strings.Fields(string(out))
	if len(files) == 0 {
		t.Fatal("no Go files listed")
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"time.Now()", "time.Since(", "time.Sleep("} {
			if strings.Contains(string(src), bad) {
				t.Errorf("%s uses %s; take a time or a clock instead", f, bad)
			}
		}
	}
}
