// Package purity checks, from tests, that the compute packages (pkg/engine,
// pkg/explain, pkg/lint, pkg/capacity) stay pure (docs/architecture.md: fetch → compute →
// render): no client libraries, no CLI or terminal UI, no k8s.io/kubernetes,
// and no wall clock.
package purity

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// ClientAndUI are the dependencies no compute package may have. A name ending
// in "/" forbids the whole tree below it.
var ClientAndUI = []string{
	"k8s.io/client-go/",
	"github.com/spf13/cobra",
	"charm.land/",
	"github.com/charmbracelet/",
	"k8s.io/kubernetes/",
}

// CheckImports fails t for every package in the dependency closure of the
// package pattern (non-test dependencies, as "go list -deps" gives them) that
// is in forbidden.
func CheckImports(t *testing.T, pattern string, forbidden ...string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pattern).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pattern, err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list returned only %d packages for %s, expected the dependency closure: %q", len(deps), pattern, out)
	}
	for _, dep := range deps {
		for _, f := range forbidden {
			if dep == strings.TrimSuffix(f, "/") || strings.HasPrefix(dep, f) {
				t.Errorf("%s depends on forbidden package %s", pattern, dep)
			}
		}
	}
}

// CheckNoWallClock fails t for every non-test Go file of the package pattern
// that reads the wall clock or sleeps: compute code takes a time or a clock.
func CheckNoWallClock(t *testing.T, pattern string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}} {{end}}`, pattern).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pattern, err, out)
	}
	files := strings.Fields(string(out))
	if len(files) == 0 {
		t.Fatalf("no Go files listed for %s", pattern)
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
