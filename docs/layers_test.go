package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The layers of docs/architecture.md ("Layers"), lowest first. A package
// imports packages of lower layers and of its own; sources and compute sit
// side by side and never import each other: a store client returns rows or
// a workload and never runs a reconstruction, and the compute packages get
// values, never a client.
const (
	layerBase = iota
	layerModel
	layerInputs
	layerSources
	layerCompute
	layerRender
	layerCommands
)

var layerNames = map[int]string{
	layerBase: "base", layerModel: "model", layerInputs: "inputs", layerSources: "sources",
	layerCompute: "compute", layerRender: "render", layerCommands: "commands",
}

// layerOf is each production package's layer, by its path in the module.
var layerOf = map[string]int{
	"internal/sanitize":     layerBase,
	"internal/ctxsleep":     layerBase,
	"internal/grafana":      layerBase,
	"internal/textfmt":      layerBase,
	"internal/utctime":      layerBase,
	"internal/jsonstr":      layerBase,
	"pkg/engine":            layerModel,
	"pkg/metrics":           layerModel,
	"pkg/dump":              layerModel,
	"pkg/config":            layerModel,
	"pkg/rejections":        layerModel,
	"pkg/history":           layerModel,
	"pkg/state":             layerModel,
	"pkg/engine/workload":   layerModel,
	"pkg/input":             layerInputs,
	"pkg/logs":              layerModel,
	"pkg/fetch":             layerSources,
	"pkg/promfetch":         layerSources,
	"pkg/vlogs":             layerSources,
	"pkg/load":              layerSources,
	"pkg/engine/fairqueue":  layerCompute,
	"pkg/engine/calibrate":  layerCompute,
	"pkg/reconstruct":       layerCompute,
	"pkg/levels":            layerCompute,
	"pkg/capacity":          layerCompute,
	"pkg/lint":              layerCompute,
	"pkg/explain":           layerCompute,
	"pkg/explain/fromlog":   layerCompute,
	"pkg/simulate":          layerCompute,
	"pkg/tune":              layerCompute,
	"pkg/monitoring":        layerCompute,
	"pkg/output":            layerRender,
	"pkg/dump/render":       layerRender,
	"pkg/levels/render":     layerRender,
	"pkg/lint/render":       layerRender,
	"pkg/history/render":    layerRender,
	"pkg/rejections/render": layerRender,
	"pkg/simulate/render":   layerRender,
	"pkg/tune/render":       layerRender,
	"pkg/tui":               layerRender,
	"pkg/tui/record":        layerRender,
	"cmd/kubectl-apf":       layerCommands,
}

// allowedImport reports whether a package of layer from may import one of
// layer to.
func allowedImport(from, to int) bool {
	switch {
	case from == layerSources && to == layerCompute, from == layerCompute && to == layerSources:
		return false // side by side
	case from == layerRender && to == layerSources:
		return false // render prints values
	}
	return to <= from
}

// TestImportsFollowTheLayers fails on any import of a production package
// that runs upward, or between sources and compute, and on a package with
// no layer.
func TestImportsFollowTheLayers(t *testing.T) {
	for _, p := range modulePackages(t) {
		from, ok := layerOf[p.path]
		if !ok {
			if strings.HasPrefix(p.path, "internal/testharness") || strings.HasPrefix(p.path, "hack/") || strings.HasPrefix(p.path, "test/") || p.path == "docs" {
				continue // harnesses and tests
			}
			t.Errorf("%s has no layer: give it one in docs/layers_test.go (layerOf) and in docs/architecture.md's Layers", p.path)
			continue
		}
		for _, imp := range p.imports {
			to, ok := layerOf[imp]
			if !ok {
				continue // reported as a package of its own
			}
			if !allowedImport(from, to) {
				t.Errorf("%s (%s) imports %s (%s): against the layers' direction (docs/architecture.md, Layers)", p.path, layerNames[from], imp, layerNames[to])
			}
		}
	}
}

// TestLowerLayersHoldNoClient: no package of the model, inputs or compute
// layers depends, directly or not, on client-go, cli-runtime, cobra or
// os/exec. (net/http is reached by every package that uses an object's
// metadata, through k8s.io/apimachinery's meta/v1: those packages may not
// import it themselves.)
func TestLowerLayersHoldNoClient(t *testing.T) {
	banned := []string{"k8s.io/client-go/", "k8s.io/cli-runtime/", "github.com/spf13/cobra", "os/exec"}
	var pure []string
	for path, l := range layerOf {
		if l == layerModel || l == layerInputs || l == layerCompute {
			pure = append(pure, "../"+path)
		}
	}
	sort.Strings(pure)
	for _, pkg := range pure {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, b := range banned {
				if dep == b || strings.HasPrefix(dep, b) {
					t.Errorf("%s depends on %s", strings.TrimPrefix(pkg, "../"), dep)
				}
			}
		}
		imports, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, imp := range strings.Fields(string(imports)) {
			if imp == "net/http" && !httpValues[strings.TrimPrefix(pkg, "../")] {
				t.Errorf("%s imports net/http: HTTP belongs to the sources (pkg/fetch, pkg/promfetch, pkg/vlogs)", strings.TrimPrefix(pkg, "../"))
			}
		}
	}
}

// readers is the input layer's package of workload readers: the files,
// standard input and directories they open reach the model and the compute
// packages as values (a workload.Reader, a workload.Files, or a
// logs.Opener that the commands hand in), never as an import.
const readers = "github.com/kubectl-apf/kubectl-apf/pkg/input"

// opens are the functions of package os that open, read or list a file,
// or read standard input; fileValues are the model packages that read
// files themselves (pkg/dump: bundles and raw dumps) or spill to one
// (pkg/engine/workload: the Tape's temporary file, os.CreateTemp, not
// listed).
var (
	opens      = map[string]bool{"Open": true, "OpenFile": true, "ReadFile": true, "ReadDir": true, "Stat": true, "Lstat": true, "DirFS": true, "Stdin": true}
	fileValues = map[string]bool{"pkg/dump": true}
)

// TestComputeOpensNothing: no package of the model or compute layers
// depends, even indirectly, on the workload readers (pkg/input), and none
// but fileValues names os's functions that open a file or read standard
// input: the compute packages take a workload opened (docs/architecture.md,
// Layers).
func TestComputeOpensNothing(t *testing.T) {
	var pkgs []string
	for path, l := range layerOf {
		if l == layerModel || l == layerCompute {
			pkgs = append(pkgs, path)
		}
	}
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		out, err := exec.Command("go", "list", "-deps", "../"+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == readers {
				t.Errorf("%s depends on the workload readers (pkg/input): take a workload.Reader, a workload.Files or a logs.Opener instead", pkg)
			}
		}
		if fileValues[pkg] {
			continue
		}
		for _, call := range osOpens(t, pkg) {
			t.Errorf("%s: %s opens a file or reads standard input: the input layer does (pkg/input)", pkg, call)
		}
	}
}

// osOpens lists the uses of os's opening functions (opens) in the
// production files of the package at path, as "file:line: os.Name".
func osOpens(t *testing.T, path string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.Dir}}{{range .GoFiles}} {{.}}{{end}}`, "../"+path).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", path, err)
	}
	f := strings.Fields(string(out))
	var found []string
	fset := token.NewFileSet()
	for _, name := range f[1:] {
		file, err := parser.ParseFile(fset, filepath.Join(f[0], name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		local := ""
		for _, imp := range file.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "os" {
				local = "os"
				if imp.Name != nil {
					local = imp.Name.Name
				}
			}
		}
		if local == "" {
			continue
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == local && opens[sel.Sel.Name] {
					found = append(found, fmt.Sprintf("%s:%d: os.%s", name, fset.Position(sel.Pos()).Line, sel.Sel.Name))
				}
			}
			return true
		})
	}
	return found
}

// httpValues are the lower packages that import net/http for its values
// alone, sending nothing: pkg/engine builds the *http.Request that
// upstream's RequestInfoFactory.NewRequestInfo reads, as kube-apiserver's
// filter does.
var httpValues = map[string]bool{"pkg/engine": true}

type modulePackage struct {
	path    string
	imports []string
}

// modulePackages are the module's packages with their imports of the
// module, both relative to it (production imports only: no test files).
func modulePackages(t *testing.T) []modulePackage {
	t.Helper()
	const module = "github.com/kubectl-apf/kubectl-apf/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "../...").Output()
	if err != nil {
		t.Fatalf("go list ../...: %v", err)
	}
	var pkgs []modulePackage
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		p := modulePackage{path: strings.TrimPrefix(f[0], module)}
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				p.imports = append(p.imports, strings.TrimPrefix(imp, module))
			}
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}
