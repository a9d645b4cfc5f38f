package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/hack/krew/release"
)

// TestDistReproducible builds the release of HEAD from a fresh export of the
// commit, in a directory other than the repository, compiling every package
// again (release.Config.Rebuild: a -trimpath build of the same source would
// otherwise take the first build's objects from the build cache, whatever
// the directory), and compares the bytes with a second build: with dist/
// when dist/ was built from a clean HEAD (what CI has), else with a second
// export, rebuilt the same way, in yet another directory. The same commit
// must give the same archives and, when every platform is built, the same
// krew.yaml.
//
// KUBECTL_APF_REPRO_PLATFORMS (comma-separated os/arch) limits the check to
// some platforms: "make test" checks linux/amd64, "make test-release" all of
// them.
//
// KUBECTL_APF_REPRO_REBUILD=0 builds from the build cache instead: each
// build still runs in its own directory, links, stamps and packs afresh and
// renders the manifest again, which is where a build stops being
// reproducible (a date or a path in the binary, an archive's metadata, map
// order), but the compiler's objects are the cache's, so the compiler's own
// determinism is not checked. "make test" sets it (the cold rebuild is about
// 250 CPU seconds of a cold make test); "make test-release" does not.
func TestDistReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every platform again")
	}
	platforms := release.ReleasePlatforms
	if s := os.Getenv("KUBECTL_APF_REPRO_PLATFORMS"); s != "" {
		var err error
		if platforms, err = release.ParsePlatforms(s); err != nil {
			t.Fatalf("KUBECTL_APF_REPRO_PLATFORMS: %v", err)
		}
	}
	all := len(platforms) == len(release.ReleasePlatforms)
	rebuild := true
	if s := os.Getenv("KUBECTL_APF_REPRO_REBUILD"); s != "" {
		var err error
		if rebuild, err = strconv.ParseBool(s); err != nil {
			t.Fatalf("KUBECTL_APF_REPRO_REBUILD: %v", err)
		}
	}
	ctx := context.Background()
	repo := repoDir(t)
	stamp, err := release.StampForCommit(ctx, repo, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	build := func(label string) (sums map[string]string, manifest []byte) {
		src := exportCommit(t, repo, "HEAD")
		out := t.TempDir()
		res, err := release.Build(ctx, release.Config{RepoDir: src, OutDir: out, Stamp: stamp, Platforms: platforms, Rebuild: rebuild})
		if err != nil {
			t.Fatalf("%s build: %v", label, err)
		}
		return res.Archives, res.Manifest
	}
	sumsA, manA := build("first")

	dist := distDir(t)
	distSums, distMan := readOut(t, dist)
	sameCommit := bytes.Contains(distMan, []byte("version: "+stamp.Version+"\n"))
	var sumsB map[string]string
	var manB []byte
	if sameCommit {
		t.Logf("dist/ is a clean build of HEAD (%s): comparing with it", stamp.Version)
		listed, err := release.ParseSums(distSums)
		if err != nil {
			t.Fatalf("dist/%s: %v", release.SumsFile, err)
		}
		sumsB = map[string]string{}
		for name := range sumsA {
			sumsB[name] = listed[name]
		}
		manB = distMan
	} else {
		t.Logf("dist/ is not a clean build of HEAD (%s): building HEAD a second time", stamp.Version)
		sumsB, manB = build("second")
	}
	a, b := release.FormatSums(sumsA), release.FormatSums(sumsB)
	if !bytes.Equal(a, b) {
		t.Errorf("two builds of %s differ:\n%s\nvs\n%s", stamp.Commit, a, b)
	}
	if all && !bytes.Equal(manA, manB) {
		t.Errorf("two renderings of krew.yaml for %s differ", stamp.Commit)
	}
	how := "every package compiled again"
	if !rebuild {
		how = "compiled objects from the build cache, linked and packed afresh"
	}
	t.Logf("%d of %d platforms, %s:\n%s", len(platforms), len(release.ReleasePlatforms), how, a)
}

func readOut(t *testing.T, dir string) (sums, manifest []byte) {
	t.Helper()
	sums, err := os.ReadFile(filepath.Join(dir, release.SumsFile))
	if err != nil {
		t.Fatal(err)
	}
	manifest, err = os.ReadFile(filepath.Join(dir, release.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	return sums, manifest
}

// exportCommit writes the tree of rev (git archive: committed files only, no
// .git) into a new temporary directory.
func exportCommit(t *testing.T, repo, rev string) string {
	t.Helper()
	dst := t.TempDir()
	cmd := exec.Command("git", "archive", "--format=tar", rev)
	cmd.Dir = repo
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	data, err := cmd.Output()
	if err != nil {
		t.Fatalf("git archive %s: %v\n%s", rev, err, stderr.String())
	}
	if err := untar(bytes.NewReader(data), dst); err != nil {
		t.Fatalf("extracting git archive %s: %v", rev, err)
	}
	return dst
}

func untar(r io.Reader, dst string) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(hdr.Name)
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("unsafe path %q", hdr.Name)
		}
		path := filepath.Join(dst, name)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(hdr.Mode).Perm())
			if err != nil {
				return err
			}
			if _, err := io.Copy(f, tr); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(hdr.Linkname, path); err != nil {
				return err
			}
		case tar.TypeXGlobalHeader:
			// git archive's commit id record.
		default:
			return fmt.Errorf("%s: unexpected type %q", hdr.Name, hdr.Typeflag)
		}
	}
}
