package testcluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestSharedModulesAtOneVersion keeps the plugin's modules and the test
// kube-apiserver's (hack/go.mod, which hack/bin.sh builds from) at one
// version wherever both builds compile a package of the same module. make
// test builds both as hack/bin.sh does (CGO_ENABLED=0, -trimpath: the
// Makefile exports them), so a package at one version is compiled once for
// both; a module at two versions is compiled twice, with everything that
// imports it (client-go alone is some 330 packages). The plugin therefore
// requires the k8s.io staging modules of the release it is tested against
// (v0.37.1 for kube-apiserver v1.37.1), and hack/go.mod the plugin's
// versions of the modules they share (golang.org/x/..., protobuf, ...).
func TestSharedModulesAtOneVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("lists two module graphs with the go command")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	plugin := moduleVersions(t, root, "./...")
	server := moduleVersions(t, filepath.Join(root, "hack"), "k8s.io/kubernetes/cmd/kube-apiserver")
	var differ []string
	for mod, v := range plugin {
		if sv, ok := server[mod]; ok && sv != v {
			differ = append(differ, mod+": "+v+" in go.mod, "+sv+" in hack/go.mod")
		}
	}
	sort.Strings(differ)
	if len(differ) > 0 {
		t.Errorf("modules both builds compile at two versions, each compiled twice on a cold make test: give go.mod and hack/go.mod one version of each (go get mod@version in the module that is behind; the k8s.io staging modules follow the kube-apiserver release hack/bin.sh builds):\n  %s", strings.Join(differ, "\n  "))
	}
	// the test sees the graphs it should: client-go is in both
	if plugin["k8s.io/client-go"] == "" || server["k8s.io/client-go"] == "" {
		t.Fatalf("k8s.io/client-go missing from a build list (plugin %q, kube-apiserver %q)", plugin["k8s.io/client-go"], server["k8s.io/client-go"])
	}
}

// moduleVersions is the version of every module a package of pkgs (and
// their dependencies, tests included for the plugin's) is compiled from.
func moduleVersions(t *testing.T, dir string, pkgs ...string) map[string]string {
	t.Helper()
	args := append([]string{"list", "-deps", "-test", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}"}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, msg)
	}
	versions := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			versions[f[0]] = f[1]
		}
	}
	return versions
}
