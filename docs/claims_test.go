package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/purity"
)

// productionFiles are the non-test Go files of the module's packages
// matching pattern (relative to the module), as "go list" gives them.
func productionFiles(t *testing.T, pattern string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}} {{end}}`, pattern).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pattern, err)
	}
	files := strings.Fields(string(out))
	if len(files) == 0 {
		t.Fatalf("go list %s: no files", pattern)
	}
	return files
}

// TestForbiddenSaidOnce: every 403 line, a cluster's or a store's, is
// written by pkg/fetch (Forbidden, ServiceProxyForbidden), as
// docs/architecture.md's Purity rules say: no other production file
// writes "forbidden (403)".
func TestForbiddenSaidOnce(t *testing.T) {
	module, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range productionFiles(t, "../...") {
		rel, _ := filepath.Rel(module, f)
		if filepath.Dir(rel) == filepath.Join("pkg", "fetch") || strings.HasPrefix(rel, "internal/testharness") || strings.HasPrefix(rel, "hack") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(strings.ToLower(string(src)), "forbidden (403)") {
			t.Errorf("%s writes a 403 line itself: say it through fetch.Forbidden or fetch.ServiceProxyForbidden", rel)
		}
	}
}

// Commands only parse, call and print (issue 57, docs/architecture.md's
// Layers): the checks of TestCommandsAreThin.
var (
	// cmdForbiddenImports are the imports that mean work a command should
	// hand to its package: HTTP (pkg/fetch and the store clients),
	// regular expressions over input (the packages that own the format),
	// tables (the render packages).
	cmdForbiddenImports = map[string]string{
		"net/http":       "HTTP belongs to pkg/fetch and the store clients",
		"regexp":         "a diagnosis of input belongs to the package that owns the format",
		"text/tabwriter": "tables belong to a render package (internal/textfmt's setups)",
	}
	// cmdWorkloadFiles are the files of cmd/kubectl-apf that may name
	// pkg/engine/workload's types: none. A command takes the values it
	// needs from their package (fromlog.Recorded, logs.Spec, a
	// vlogs.Source that is a fromlog.Store, vlogs.OpenWorkload).
	cmdWorkloadFiles = map[string]bool{}
	// cmdMaxFuncLines is the longest body of a function in
	// cmd/kubectl-apf, but for cmdLongFuncs.
	cmdMaxFuncLines = 60
	// cmdLongFuncs are the longer functions left: none.
	cmdLongFuncs = map[string]bool{}
)

// TestCommandsAreThin keeps cmd/kubectl-apf to parsing flags, calling
// packages and printing: it imports no net/http, regexp or
// text/tabwriter, names pkg/engine/workload only in the files listed, and
// has no function body over cmdMaxFuncLines lines but those listed.
func TestCommandsAreThin(t *testing.T) {
	const workload = module + "/pkg/engine/workload"
	fset := token.NewFileSet()
	for _, f := range productionFiles(t, "../cmd/kubectl-apf") {
		name := filepath.Base(f)
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if why, bad := cmdForbiddenImports[path]; bad {
				t.Errorf("cmd/kubectl-apf/%s imports %s: %s", name, path, why)
			}
			if path == workload && !cmdWorkloadFiles[name] {
				t.Errorf("cmd/kubectl-apf/%s imports pkg/engine/workload: take the values the command prints from its package (docs/claims_test.go lists the files that may)", name)
			}
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.Body.Rbrace).Line - fset.Position(fd.Body.Lbrace).Line - 1
			if id := name + ":" + fd.Name.Name; n > cmdMaxFuncLines && !cmdLongFuncs[id] {
				t.Errorf("cmd/kubectl-apf/%s is %d lines long (at most %d): move the work into its package", id, n, cmdMaxFuncLines)
			}
		}
	}
}

// TestComputeReadsNoWallClock: no package of the compute layer reads the
// wall clock or sleeps (docs/architecture.md, Purity rules), whether or
// not it has a wall-clock test of its own.
func TestComputeReadsNoWallClock(t *testing.T) {
	for path, l := range layerOf {
		if l == layerCompute {
			purity.CheckNoWallClock(t, module+"/"+path)
		}
	}
}
