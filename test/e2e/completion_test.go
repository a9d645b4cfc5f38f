package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
)

// TestCompletionThroughKubectl checks plugin completion the way kubectl does it:
// the real kubectl v1.37.1 finds kubectl_complete-apf on PATH and runs it for
// "kubectl apf <TAB>".
func TestCompletionThroughKubectl(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kubectl")
	}
	kubectl, err := testcluster.Binary("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(pluginBinary(t), filepath.Join(dir, "kubectl-apf")); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "kubectl_complete-apf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubectl_complete-apf"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(kubectl, filepath.Join(dir, "kubectl")); err != nil {
		t.Fatal(err)
	}

	complete := func(args ...string) string {
		cmd := exec.Command(filepath.Join(dir, "kubectl"), append([]string{"__complete", "apf"}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+dir+":/usr/bin:/bin", "HOME="+dir, "KUBECONFIG="+filepath.Join(dir, "none"))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kubectl __complete apf %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
		}
		return string(out)
	}
	offers := func(out, choice string) bool {
		for _, line := range strings.Split(out, "\n") {
			if line == choice || strings.HasPrefix(line, choice+"\t") {
				return true
			}
		}
		return false
	}
	if out := complete("vers"); !offers(out, "version") {
		t.Errorf("kubectl __complete apf vers =\n%s\nwant it to offer version", out)
	}
	if out := complete("version", "--out"); !offers(out, "--output") {
		t.Errorf("kubectl __complete apf version --out =\n%s\nwant it to offer --output", out)
	}
	// explain request completes as kubectl get does: the verb, then the type
	if out := complete("explain", "request", "get", "depl"); !offers(out, "deployments") || offers(out, "pods") {
		t.Errorf("kubectl __complete apf explain request get depl =\n%s\nwant deployments alone", out)
	}
	if out := complete("explain", "request", "de"); !offers(out, "delete") || !offers(out, "deletecollection") {
		t.Errorf("kubectl __complete apf explain request de =\n%s\nwant delete and deletecollection", out)
	}
}
