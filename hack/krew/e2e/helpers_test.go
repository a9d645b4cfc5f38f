// Package e2e checks a built release the way krew and krew-index see it, and
// installs it with the real krew and kubectl. `make test-release` runs it
// against dist/ (KUBECTL_APF_DIST); without that variable it builds a release
// of the work tree into a temporary directory first.
package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/hack/krew/release"
)

// repoDir is the kubectl-apf repository root.
func repoDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("KUBECTL_APF_REPO"); d != "" {
		return d
	}
	d, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var (
	distOnce sync.Once
	distPath string
	distErr  error
)

// distDir is the release under test: $KUBECTL_APF_DIST, or a release of the
// work tree built once per test binary.
func distDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("KUBECTL_APF_DIST"); d != "" {
		return d
	}
	distOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kubectl-apf-dist-")
		if err != nil {
			distErr = err
			return
		}
		distPath = dir
		ctx := context.Background()
		stamp, err := release.StampFromGit(ctx, repoDir(t))
		if err != nil {
			distErr = err
			return
		}
		_, distErr = release.Build(ctx, release.Config{RepoDir: repoDir(t), OutDir: dir, Stamp: stamp})
	})
	if distErr != nil {
		t.Fatalf("building a release to test (set KUBECTL_APF_DIST to test an existing one): %v", distErr)
	}
	return distPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if distPath != "" {
		os.RemoveAll(distPath)
	}
	os.Exit(code)
}

// loadRelease reads dist: its archives (checked against SHA256SUMS) and the
// strictly decoded manifest.
func loadRelease(t *testing.T) (string, map[string]release.Archive, []byte) {
	t.Helper()
	dir := distDir(t)
	archives, err := release.LoadArchives(dir)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(dir, release.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	return dir, archives, manifest
}

// tool returns the path of a binary printed by one of the caching build
// script (hack/bin.sh), or $envVar when set.
func tool(t *testing.T, envVar, script, name string) string {
	t.Helper()
	if p := os.Getenv(envVar); envVar != "" && p != "" {
		return p
	}
	cmd := exec.Command(script, name)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", script, name, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

func krewBin(t *testing.T) string {
	return tool(t, "", filepath.Join(repoDir(t), "hack", "bin.sh"), "krew")
}

func validatorBin(t *testing.T) string {
	return tool(t, "", filepath.Join(repoDir(t), "hack", "bin.sh"), "validate-krew-manifest")
}

// kubectlBin is a real kubectl v1.37.1 ($KUBECTL, or hack/bin.sh kubectl, whose
// first build takes several minutes).
func kubectlBin(t *testing.T) string {
	return tool(t, "KUBECTL", filepath.Join(repoDir(t), "hack", "bin.sh"), "kubectl")
}

// sandbox is a fresh HOME and KREW_ROOT with an environment that keeps every
// tool off the network: proxies point at a closed loopback port, so anything
// that tried to fetch (krew's index update or upgrade check) would fail loudly
// instead of reaching out.
type sandbox struct {
	home, krewRoot, pathDir string
	env                     []string
}

func newSandbox(t *testing.T, extra ...string) *sandbox {
	t.Helper()
	root := t.TempDir()
	s := &sandbox{
		home:     filepath.Join(root, "home"),
		krewRoot: filepath.Join(root, "krew"),
		pathDir:  filepath.Join(root, "path"),
	}
	for _, d := range []string{s.home, s.pathDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := strings.Join([]string{filepath.Join(s.krewRoot, "bin"), s.pathDir, "/usr/local/bin", "/usr/bin", "/bin"}, string(os.PathListSeparator))
	s.env = append([]string{
		"HOME=" + s.home,
		"KREW_ROOT=" + s.krewRoot,
		"PATH=" + path,
		"KREW_NO_UPGRADE_CHECK=1",
		"KUBECONFIG=" + filepath.Join(s.home, "no-kubeconfig"),
		"HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9",
		"http_proxy=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9",
		"NO_PROXY=", "no_proxy=",
		"TMPDIR=" + root,
	}, extra...)
	return s
}

// link puts target on the sandbox PATH as name.
func (s *sandbox) link(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(s.pathDir, name)); err != nil {
		t.Fatal(err)
	}
}

// run runs a command in the sandbox and returns stdout and stderr.
func (s *sandbox) run(t *testing.T, name string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = s.env
	cmd.Dir = s.home
	cmd.Stdin = strings.NewReader("")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// must runs a command that has to succeed.
func (s *sandbox) must(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, errOut, err := s.run(t, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), strings.Join(args, " "), err, out, errOut)
	}
	return out
}
