package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	k8sversion "k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/krew/pkg/index"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-apf/kubectl-apf/hack/krew/release"
)

// releaseURL is where plugins/krew.yaml says the archives are published; the
// index test serves them from a loopback server instead.
const releaseURL = "https://github.com/kubectl-apf/kubectl-apf/releases/download/"

var linuxAMD64 = release.Platform{OS: "linux", Arch: "amd64"}

// TestDistKrewIndex checks the krew index dist/ holds: exactly
// krew-index/plugins/apf.yaml, byte for byte dist/krew.yaml.
func TestDistKrewIndex(t *testing.T) {
	dir, data := distManifest(t)
	root := filepath.Join(dir, release.IndexDir)
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(files, []string{"plugins/apf.yaml"}) {
		t.Fatalf("dist/%s holds %v, want only plugins/apf.yaml", release.IndexDir, files)
	}
	got, err := os.ReadFile(filepath.Join(root, "plugins", "apf.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("dist/%s/plugins/apf.yaml differs from dist/%s", release.IndexDir, release.ManifestFile)
	}
}

// TestKrewIndexUpgrade is the upgrade path through a custom index, with the
// real krew run as a kubectl plugin by the real kubectl. The index is a local
// git repository laid out as dist/krew-index (the same files, their URIs
// moved to a server on 127.0.0.1 that serves the linux/amd64 archives):
//
//  1. `kubectl krew index add kubectl-apf file://REPO` with the release's
//     manifest (v1) committed;
//  2. the problem this index solves: a plugin installed with --manifest is
//     "detached", and `kubectl krew upgrade` passes it over; installing
//     kubectl-apf/apf over it only warns; the way out is uninstall, then
//     install from the index;
//  3. `kubectl krew install kubectl-apf/apf` downloads v1; kubectl apf
//     version says v1;
//  4. a second build, stamped with a higher version (v2, linux/amd64 only),
//     is committed to the index; `kubectl krew update` announces the upgrade
//     and `kubectl krew upgrade` downloads and installs it: kubectl apf
//     version says v2, and v1 is gone.
//
// Nothing leaves the machine: git clones and fetches a file:// URL, krew
// downloads from the loopback server (Go's proxy settings never apply to
// loopback; every other request meets the sandbox's closed proxy port), and
// with an index present krew never adds the default one from GitHub.
func TestKrewIndexUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kubectl-apf once more")
	}
	dir, data := distManifest(t)
	p1, err := release.DecodeManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	v1 := p1.Spec.Version
	v2 := higherVersion(t, v1)
	index1, err := os.ReadFile(filepath.Join(dir, release.IndexDir, "plugins", "apf.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kubectl, krew := kubectlBin(t), krewBin(t)

	// v2: the work tree built again for linux/amd64 with only the version
	// changed, so Go's build cache (make dist's) leaves just the link to do.
	ctx := context.Background()
	stamp, err := release.StampFromGit(ctx, repoDir(t))
	if err != nil {
		t.Fatal(err)
	}
	stamp.Version = v2
	dir2 := t.TempDir()
	start := time.Now()
	res2, err := release.Build(ctx, release.Config{RepoDir: repoDir(t), OutDir: dir2, Stamp: stamp, Platforms: []release.Platform{linuxAMD64}})
	if err != nil {
		t.Fatalf("building %s: %v", v2, err)
	}
	t.Logf("built %s for linux/amd64 in %s", v2, time.Since(start).Round(time.Second))
	index2 := res2.Manifest
	checkLinuxAMD64Manifest(t, v2, index2)

	// The archives, at the paths the manifests' URIs name.
	archives := map[string]string{}
	for v, d := range map[string]string{v1: dir, v2: dir2} {
		name := release.ArchiveName(v, linuxAMD64)
		archives["/"+v+"/"+name] = filepath.Join(d, name)
	}
	var mu sync.Mutex
	var served []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served = append(served, r.Method+" "+r.URL.Path)
		mu.Unlock()
		f, ok := archives[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, f)
	}))
	defer srv.Close()
	local := func(m []byte) []byte {
		t.Helper()
		if !bytes.Contains(m, []byte("uri: "+releaseURL)) {
			t.Fatalf("no uri under %s in the manifest:\n%s", releaseURL, m)
		}
		return bytes.ReplaceAll(m, []byte("uri: "+releaseURL), []byte("uri: "+srv.URL+"/"))
	}

	start = time.Now()
	defer func() { t.Logf("krew's steps took %s", time.Since(start).Round(time.Second)) }()
	s := newSandbox(t)
	s.link(t, krew, "kubectl-krew")
	s.link(t, kubectl, "kubectl")

	// 1. The index repository, as a maintainer would fill it from
	// dist/krew-index, added to krew.
	repo := filepath.Join(t.TempDir(), "krew-index")
	s.must(t, "git", "init", "--quiet", repo)
	publish := func(manifest []byte, version string) {
		t.Helper()
		if _, err := release.WriteIndex(repo, local(manifest)); err != nil {
			t.Fatal(err)
		}
		s.must(t, "git", "-C", repo, "add", "-A")
		s.must(t, "git", "-C", repo, "-c", "user.name=kubectl-apf release", "-c", "user.email=release@kubectl-apf.invalid",
			"-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "apf "+version)
	}
	publish(index1, v1)
	url := "file://" + repo
	s.must(t, "kubectl", "krew", "index", "add", "kubectl-apf", url)
	if list := s.must(t, "kubectl", "krew", "index", "list"); !strings.Contains(list, "kubectl-apf") || !strings.Contains(list, url) {
		t.Errorf("kubectl krew index list does not show kubectl-apf at %s:\n%s", url, list)
	}

	// 2. A --manifest install is detached: upgrade passes it over.
	archive1 := filepath.Join(dir, release.ArchiveName(v1, linuxAMD64))
	s.must(t, "kubectl", "krew", "install", "--manifest="+filepath.Join(dir, release.ManifestFile), "--archive="+archive1)
	if src := receiptSource(t, s); src != "detached" {
		t.Errorf("a --manifest install is recorded as from %q, want detached", src)
	}
	if errOut := mustStderr(t, s, "kubectl", "krew", "upgrade"); !strings.Contains(errOut, "because it was installed via manifest") {
		t.Errorf("kubectl krew upgrade did not pass the detached apf over:\n%s", errOut)
	}
	// Nor does installing from the index replace it: krew only warns (the
	// README says to uninstall first).
	if errOut := mustStderr(t, s, "kubectl", "krew", "install", "kubectl-apf/apf"); !strings.Contains(errOut, "already installed") {
		t.Errorf("kubectl krew install kubectl-apf/apf over the detached apf:\n%s", errOut)
	}
	if src := receiptSource(t, s); src != "detached" {
		t.Errorf("after install kubectl-apf/apf over the detached apf, it is recorded as from %q", src)
	}
	mustStderr(t, s, "kubectl", "krew", "uninstall", "apf")

	// 3. Install v1 from the index.
	if errOut := mustStderr(t, s, "kubectl", "krew", "install", "kubectl-apf/apf"); !strings.Contains(errOut, "Installed plugin: apf") {
		t.Errorf("kubectl krew install kubectl-apf/apf:\n%s", errOut)
	}
	if src := receiptSource(t, s); src != "kubectl-apf" {
		t.Errorf("kubectl krew install kubectl-apf/apf recorded the plugin as from %q, want kubectl-apf", src)
	}
	checkVersion(t, s, v1)

	// 4. Publish v2; update sees it, upgrade installs it.
	publish(index2, v2)
	if errOut := mustStderr(t, s, "kubectl", "krew", "update"); !strings.Contains(errOut, "kubectl-apf/apf "+v1+" -> "+v2) {
		t.Errorf("kubectl krew update does not announce kubectl-apf/apf %s -> %s:\n%s", v1, v2, errOut)
	}
	if errOut := mustStderr(t, s, "kubectl", "krew", "upgrade"); !strings.Contains(errOut, "Upgraded plugin: kubectl-apf/apf") {
		t.Errorf("kubectl krew upgrade did not upgrade kubectl-apf/apf:\n%s", errOut)
	}
	checkVersion(t, s, v2)
	if _, err := os.Stat(filepath.Join(s.krewRoot, "store", "apf", v1)); !os.IsNotExist(err) {
		t.Errorf("%s is still in krew's store after the upgrade (%v)", v1, err)
	}

	// krew downloaded each version once, from the loopback server.
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"GET /" + v1 + "/" + release.ArchiveName(v1, linuxAMD64),
		"GET /" + v2 + "/" + release.ArchiveName(v2, linuxAMD64),
	}
	if !reflect.DeepEqual(served, want) {
		t.Errorf("the archive server answered %q, want %q", served, want)
	}
}

// distManifest is the release under test and its krew.yaml, read without
// checking every archive against SHA256SUMS as loadRelease does (TestDist*
// do that; krew checks the one archive it installs).
func distManifest(t *testing.T) (string, []byte) {
	t.Helper()
	dir := distDir(t)
	data, err := os.ReadFile(filepath.Join(dir, release.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	return dir, data
}

// higherVersion is the next patch release after v, which krew's semver
// comparison (installation.Upgrade) must rank above it: v0.0.1 after a
// v0.0.0-<commit> of an untagged tree, v0.3.1 after v0.3.0 or
// v0.3.0-5-gabc1234.
func higherVersion(t *testing.T, v string) string {
	t.Helper()
	sv, err := k8sversion.ParseSemantic(v)
	if err != nil {
		t.Fatalf("dist version %q: %v", v, err)
	}
	v2 := fmt.Sprintf("v%d.%d.%d", sv.Major(), sv.Minor(), sv.Patch()+1)
	next, err := k8sversion.ParseSemantic(v2)
	if err != nil || !sv.LessThan(next) || !release.IsKrewVersion(v2) {
		t.Fatalf("%s does not rank above %s", v2, v)
	}
	return v2
}

// checkLinuxAMD64Manifest checks the manifest release.Build rendered for
// version with the linux/amd64 archive alone (the one platform built).
func checkLinuxAMD64Manifest(t *testing.T, version string, manifest []byte) {
	t.Helper()
	p, err := release.DecodeManifest(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Version != version {
		t.Fatalf("the manifest built for %s is of version %s", version, p.Spec.Version)
	}
	if kept := p.Spec.Platforms; len(kept) != 1 || kept[0].Selector.MatchLabels["os"] != "linux" || kept[0].Selector.MatchLabels["arch"] != "amd64" {
		t.Fatalf("the %s manifest offers %d platforms, want linux/amd64 alone", version, len(kept))
	}
}

// receiptSource is the index krew recorded apf as installed from.
func receiptSource(t *testing.T, s *sandbox) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.krewRoot, "receipts", "apf.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var r index.Receipt
	if err := yaml.Unmarshal(data, &r); err != nil {
		t.Fatalf("krew's receipt for apf: %v", err)
	}
	return r.Status.Source.Name
}

// checkVersion checks the version `kubectl apf version` reports through
// kubectl and krew's link.
func checkVersion(t *testing.T, s *sandbox, want string) {
	t.Helper()
	out := s.must(t, "kubectl", "apf", "version", "-o", "json")
	var v struct{ Version, Platform string }
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("kubectl apf version -o json: %v\n%s", err, out)
	}
	if v.Version != want || v.Platform != "linux/amd64" {
		t.Errorf("kubectl apf version = %+v, want %s on linux/amd64", v, want)
	}
}

// mustStderr runs a command that has to succeed and returns its stderr, where
// krew reports what it did.
func mustStderr(t *testing.T, s *sandbox, name string, args ...string) string {
	t.Helper()
	out, errOut, err := s.run(t, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, out, errOut)
	}
	return errOut
}
