package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/hack/krew/release"
)

// TestKrewInstallEveryPlatform installs every platform of dist/krew.yaml (the
// six of a release; linux/amd64 alone after make test) with
// the real krew from its local archive (KREW_OS/KREW_ARCH select the platform,
// --archive replaces the download), as krew-index's validator does with the
// published URIs, and checks that the licence is installed and the binary
// linked. It then shows that krew really verifies the sha256: the archive of
// another platform, or one byte longer, is refused.
func TestKrewInstallEveryPlatform(t *testing.T) {
	dir, archives, data := loadRelease(t)
	p, err := release.DecodeManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	krew := krewBin(t)
	manifest := filepath.Join(dir, release.ManifestFile)
	for _, rp := range builtPlatforms(t, p.Spec.Version, archives) {
		t.Run(rp.OS+"_"+rp.Arch, func(t *testing.T) {
			s := newSandbox(t, "KREW_OS="+rp.OS, "KREW_ARCH="+rp.Arch)
			archive := filepath.Join(dir, release.ArchiveName(p.Spec.Version, rp))
			s.must(t, krew, "install", "--manifest="+manifest, "--archive="+archive)
			store := filepath.Join(s.krewRoot, "store", "apf", p.Spec.Version)
			for _, f := range []string{"LICENSE", rp.Binary(), release.CompletionScript} {
				if _, err := os.Stat(filepath.Join(store, f)); err != nil {
					t.Errorf("not installed: %v", err)
				}
			}
			// krew links the bin as kubectl-apf, with .exe on Windows
			// (internal/installation pluginNameToBin).
			link := filepath.Join(s.krewRoot, "bin", rp.Binary())
			if target, err := os.Readlink(link); err != nil || target != filepath.Join(store, rp.Binary()) {
				t.Errorf("%s -> %q, %v; want a link to %s", link, target, err, filepath.Join(store, rp.Binary()))
			}
		})
	}

	t.Run("wrong archive", func(t *testing.T) {
		s := newSandbox(t, "KREW_OS=linux", "KREW_ARCH=amd64")
		// another platform's archive where dist/ has one, else the
		// linux/amd64 archive with one byte more
		other := filepath.Join(dir, release.ArchiveName(p.Spec.Version, release.Platform{OS: "darwin", Arch: "arm64"}))
		if _, ok := archives[filepath.Base(other)]; !ok {
			body, err := os.ReadFile(filepath.Join(dir, release.ArchiveName(p.Spec.Version, linuxAMD64)))
			if err != nil {
				t.Fatal(err)
			}
			other = filepath.Join(t.TempDir(), release.ArchiveName(p.Spec.Version, linuxAMD64))
			if err := os.WriteFile(other, append(body, 0), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out, errOut, err := s.run(t, krew, "install", "--manifest="+manifest, "--archive="+other)
		if err == nil {
			t.Fatalf("krew installed the darwin archive for linux/amd64:\n%s%s", out, errOut)
		}
		if !strings.Contains(errOut, "checksum does not match") {
			t.Errorf("krew failed, but not on the checksum:\n%s", errOut)
		}
	})
}

// TestKrewInstallThroughKubectl is the user's path: krew installed as a kubectl
// plugin, `kubectl krew install --manifest --archive` of the linux/amd64
// archive into a fresh KREW_ROOT, then `kubectl apf` through a real kubectl
// with KREW_ROOT/bin on PATH, shell completion through kubectl's
// plugin-completion hook, and `kubectl krew uninstall apf`. Nothing reaches the
// network: the sandbox's proxies point at a closed loopback port, and no krew
// index is ever fetched (install --manifest skips it, install.go PreRunE).
func TestKrewInstallThroughKubectl(t *testing.T) {
	dir, _, data := loadRelease(t)
	p, err := release.DecodeManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	kubectl := kubectlBin(t)
	s := newSandbox(t)
	s.link(t, krewBin(t), "kubectl-krew")
	s.link(t, kubectl, "kubectl")

	archive := filepath.Join(dir, release.ArchiveName(p.Spec.Version, release.Platform{OS: "linux", Arch: "amd64"}))
	_, errOut, err := s.run(t, "kubectl", "krew", "install", "--manifest="+filepath.Join(dir, release.ManifestFile), "--archive="+archive)
	if err != nil {
		t.Fatalf("kubectl krew install: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "Installed plugin: apf") || !strings.Contains(errOut, "/debug/api_priority_and_fairness/*") {
		t.Errorf("krew's install output lacks the success line or the RBAC caveats:\n%s", errOut)
	}
	if list := s.must(t, "kubectl", "plugin", "list", "--name-only"); !strings.Contains(list, "kubectl-apf\n") {
		t.Errorf("kubectl plugin list does not show kubectl-apf:\n%s", list)
	}

	// The version dist stamped is the one kubectl runs.
	var v struct{ Version, Commit, BuildDate, Platform string }
	out := s.must(t, "kubectl", "apf", "version", "-o", "json")
	t.Logf("kubectl apf version -o json:\n%s", out)
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("kubectl apf version -o json: %v\n%s", err, out)
	}
	if v.Version != p.Spec.Version || v.Platform != "linux/amd64" || len(v.Commit) != 40 || v.BuildDate == "unknown" {
		t.Errorf("kubectl apf version = %+v, want version %s on linux/amd64 with a full commit and a build date", v, p.Spec.Version)
	}
	if text := s.must(t, "kubectl", "apf", "version"); !strings.Contains(text, p.Spec.Version) {
		t.Errorf("kubectl apf version = %q, want it to name %s", text, p.Spec.Version)
	}
	help := s.must(t, "kubectl", "apf", "--help")
	if !strings.Contains(help, "kubectl apf") || strings.Contains(help, "kubectl-apf [") {
		t.Errorf("kubectl apf --help does not speak of \"kubectl apf\":\n%s", help)
	}

	// Completion: kubectl runs kubectl_complete-apf from PATH, which krew
	// installed next to the binary; the caveats tell users to link it.
	store := filepath.Join(s.krewRoot, "store", "apf", p.Spec.Version)
	s.link(t, filepath.Join(store, release.CompletionScript), release.CompletionScript)
	comp := s.must(t, "kubectl", "__complete", "apf", "vers")
	t.Logf("kubectl __complete apf vers:\n%s", comp)
	if !strings.Contains(comp, "version") {
		t.Errorf("kubectl __complete apf vers = %q, want the version command", comp)
	}

	// krew list and uninstall check that an index exists (root.go checkIndex:
	// a git clone under KREW_ROOT/index) even though they never read it; an
	// empty local repository stands in for `kubectl krew update`, which would
	// clone krew-index from GitHub. Install, above, ran without any.
	indexDir := filepath.Join(s.krewRoot, "index", "default")
	s.must(t, "git", "init", "--quiet", indexDir)
	if list := s.must(t, "kubectl", "krew", "list"); !strings.Contains(list, "apf") {
		t.Errorf("kubectl krew list does not show apf:\n%s", list)
	}
	_, errOut, err = s.run(t, "kubectl", "krew", "uninstall", "apf")
	if err != nil || !strings.Contains(errOut, "Uninstalled plugin: apf") {
		t.Fatalf("kubectl krew uninstall apf: %v\n%s", err, errOut)
	}
	for _, gone := range []string{
		filepath.Join(s.krewRoot, "bin", "kubectl-apf"),
		filepath.Join(s.krewRoot, "store", "apf"),
		filepath.Join(s.krewRoot, "receipts", "apf.yaml"),
	} {
		if _, err := os.Lstat(gone); !os.IsNotExist(err) {
			t.Errorf("%s is still there after uninstall (%v)", gone, err)
		}
	}
	if out, errOut, err := s.run(t, "kubectl", "apf", "version"); err == nil {
		t.Errorf("kubectl apf still runs after uninstall:\n%s%s", out, errOut)
	}
}
