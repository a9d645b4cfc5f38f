package testharness_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const (
	module  = "github.com/kubectl-apf/kubectl-apf"
	harness = module + "/internal/testharness"
)

type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// goList runs go list -json over args from the module's root.
func goList(t *testing.T, args ...string) []listed {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func isHarness(path string) bool {
	return path == harness || strings.HasPrefix(path, harness+"/")
}

// TestNoProductionPackageImportsAHarness fails when a package outside the
// harness folder and test/ imports a harness from its non-test files, and
// when the shipped binary depends on one by any path.
func TestNoProductionPackageImportsAHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	checked := 0
	for _, p := range goList(t, "./...") {
		if isHarness(p.ImportPath) || strings.HasPrefix(p.ImportPath, module+"/test/") {
			continue
		}
		checked++
		for _, imp := range p.Imports {
			if isHarness(imp) {
				t.Errorf("%s imports the test harness %s from a non-test file", p.ImportPath, imp)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("go list found only %d production packages; is the module root ../..?", checked)
	}
	bin := goList(t, "./cmd/kubectl-apf")
	if len(bin) != 1 {
		t.Fatalf("go list ./cmd/kubectl-apf: %d packages", len(bin))
	}
	for _, dep := range bin[0].Deps {
		if isHarness(dep) {
			t.Errorf("kubectl-apf is built with the test harness %s", dep)
		}
	}
}
