package e2e

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/hack/krew/release"
)

// TestDistManifest decodes dist/krew.yaml strictly with krew's published types
// and applies krew's and krew-index's rules to it and to the archives it names.
func TestDistManifest(t *testing.T) {
	_, archives, data := loadRelease(t)
	p, err := release.DecodeManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	if errs := release.CheckManifest(p, "apf", archives); len(errs) > 0 {
		t.Fatalf("dist/krew.yaml breaks the release rules:\n%v", errors.Join(errs...))
	}
	// Exactly one platform per archive, and every archive is offered.
	built := builtPlatforms(t, p.Spec.Version, archives)
	if len(p.Spec.Platforms) != len(archives) || len(archives) != len(built) {
		t.Fatalf("%d platforms for %d archives, want %d of each", len(p.Spec.Platforms), len(archives), len(built))
	}
}

// builtPlatforms are the release platforms dist/ holds an archive of, in
// ReleasePlatforms' order: all of them after make dist or make
// test-release, linux/amd64 alone after make test (DIST_PLATFORMS), which
// leaves the cross-compiles to the release. An archive of no release
// platform, or a dist/ without linux/amd64, fails the test.
func builtPlatforms(t *testing.T, version string, archives map[string]release.Archive) []release.Platform {
	t.Helper()
	var out []release.Platform
	for _, rp := range release.ReleasePlatforms {
		if _, ok := archives[release.ArchiveName(version, rp)]; ok {
			out = append(out, rp)
		}
	}
	if len(out) != len(archives) {
		t.Fatalf("dist/ holds %d archives, %d of them of release platforms for spec.version %s", len(archives), len(out), version)
	}
	if !slices.Contains(out, linuxAMD64) {
		t.Fatalf("dist/ holds no linux/amd64 archive for spec.version %s", version)
	}
	if len(out) < len(release.ReleasePlatforms) {
		t.Logf("dist/ holds %d of the %d release platforms (%v): make test-release checks them all", len(out), len(release.ReleasePlatforms), out)
	}
	return out
}

// TestDistArchives checks what each archive holds: the binary for its own
// platform, built without cgo, next to the repository's LICENSE and completion
// script, with one fixed owner and mtime.
func TestDistArchives(t *testing.T) {
	_, archives, data := loadRelease(t)
	p, err := release.DecodeManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	license, err := os.ReadFile(filepath.Join(repoDir(t), "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	completion, err := os.ReadFile(filepath.Join(repoDir(t), release.CompletionScript))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(license, []byte("Apache License")) || !bytes.Contains(license, []byte("END OF TERMS AND CONDITIONS")) {
		t.Error("LICENSE is not the full Apache License 2.0 text")
	}
	for _, rp := range builtPlatforms(t, p.Spec.Version, archives) {
		name := release.ArchiveName(p.Spec.Version, rp)
		t.Run(rp.OS+"_"+rp.Arch, func(t *testing.T) {
			ar := archives[name]
			var names []string
			for _, e := range ar.Entries {
				names = append(names, e.Name)
				if e.Uid != 0 || e.Gid != 0 || e.Uname != "" || e.Gname != "" {
					t.Errorf("%s: owner %d:%d %q:%q", e.Name, e.Uid, e.Gid, e.Uname, e.Gname)
				}
				if !e.ModTime.Equal(ar.Entries[0].ModTime) {
					t.Errorf("%s: mtime %v differs from %v", e.Name, e.ModTime, ar.Entries[0].ModTime)
				}
				switch e.Name {
				case "LICENSE":
					if !bytes.Equal(e.Body, license) {
						t.Error("LICENSE differs from the repository's")
					}
				case release.CompletionScript:
					if !bytes.Equal(e.Body, completion) || e.Mode.Perm() != 0o755 {
						t.Errorf("%s differs from the repository's or is not executable (%v)", e.Name, e.Mode)
					}
				case rp.Binary():
					if e.Mode.Perm() != 0o755 {
						t.Errorf("%s mode %v", e.Name, e.Mode)
					}
					checkBinary(t, rp, e.Body)
				}
			}
			want := []string{"LICENSE", rp.Binary(), release.CompletionScript}
			sort.Strings(want)
			if strings.Join(names, ",") != strings.Join(want, ",") {
				t.Errorf("entries %v, want %v in this order", names, want)
			}
		})
	}
}

// TestDistArchivesExtractWithTar extracts the linux/amd64 archive with the
// system's tar, as the README tells users to, and checks that the files and
// their permissions survive.
func TestDistArchivesExtractWithTar(t *testing.T) {
	tarBin, err := exec.LookPath("tar")
	if err != nil {
		t.Skip("no tar on PATH")
	}
	dir, archives, data := loadRelease(t)
	p, err := release.DecodeManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	name := release.ArchiveName(p.Spec.Version, release.Platform{OS: "linux", Arch: "amd64"})
	out := t.TempDir()
	if b, err := exec.Command(tarBin, "-xzf", filepath.Join(dir, name), "-C", out).CombinedOutput(); err != nil {
		t.Fatalf("tar -xzf %s: %v\n%s", name, err, b)
	}
	for _, e := range archives[name].Entries {
		fi, err := os.Stat(filepath.Join(out, e.Name))
		if err != nil {
			t.Errorf("tar did not extract %s: %v", e.Name, err)
			continue
		}
		if fi.Size() != int64(len(e.Body)) || fi.Mode().Perm()&0o111 != e.Mode.Perm()&0o111 {
			t.Errorf("%s extracted as %v, %d bytes; archive has %v, %d bytes", e.Name, fi.Mode(), fi.Size(), e.Mode, len(e.Body))
		}
	}
}

// checkBinary parses the executable with the object format of its OS and
// checks its architecture; Linux binaries must be static (no cgo, no
// interpreter), which is what lets them run on any distribution.
func checkBinary(t *testing.T, p release.Platform, body []byte) {
	t.Helper()
	r := bytes.NewReader(body)
	switch p.OS {
	case "linux":
		f, err := elf.NewFile(r)
		if err != nil {
			t.Fatalf("not ELF: %v", err)
		}
		want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Arch]
		if f.Machine != want {
			t.Errorf("ELF machine %v, want %v", f.Machine, want)
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
				t.Errorf("dynamically linked (%v): was cgo enabled?", prog.Type)
			}
		}
	case "darwin":
		f, err := macho.NewFile(r)
		if err != nil {
			t.Fatalf("not Mach-O: %v", err)
		}
		want := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[p.Arch]
		if f.Cpu != want {
			t.Errorf("Mach-O CPU %v, want %v", f.Cpu, want)
		}
	case "windows":
		f, err := pe.NewFile(r)
		if err != nil {
			t.Fatalf("not PE: %v", err)
		}
		want := map[string]uint16{"amd64": pe.IMAGE_FILE_MACHINE_AMD64, "arm64": pe.IMAGE_FILE_MACHINE_ARM64}[p.Arch]
		if f.Machine != want {
			t.Errorf("PE machine %#x, want %#x", f.Machine, want)
		}
	default:
		t.Fatalf("no check for %s", p.OS)
	}
}

// TestKrewIndexValidator runs krew-index's own validator
// (sigs.k8s.io/krew/cmd/validate-krew-manifest, which krew-index's CI runs on
// every pull request) on dist/krew.yaml, and checks that it and CheckManifest
// agree on manifests broken in ways the validator knows. -skip-install: the
// validator would download each URI; TestKrewInstallEveryPlatform does its
// install step with the local archives instead.
func TestKrewIndexValidator(t *testing.T) {
	_, archives, data := loadRelease(t)
	validator := validatorBin(t)
	s := newSandbox(t)
	manifest := string(data)
	validate := func(t *testing.T, text string) error {
		// The validator takes the plugin name from the file name.
		path := filepath.Join(t.TempDir(), "apf.yaml")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, err := s.run(t, validator, "-manifest", path, "-skip-install")
		if err != nil {
			return errors.New(out + errOut)
		}
		return nil
	}
	if err := validate(t, manifest); err != nil {
		t.Fatalf("validate-krew-manifest rejects dist/krew.yaml:\n%v", err)
	}

	p, err := release.DecodeManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	sha0 := p.Spec.Platforms[0].Sha256
	tests := []struct {
		name         string
		old, new     string
		validatorSay string
	}{
		{"version without v", "version: " + p.Spec.Version, "version: " + strings.TrimPrefix(p.Spec.Version, "v"), "not starting with 'v'"},
		{"uppercase sha256", "sha256: " + sha0, "sha256: " + strings.ToUpper(sha0), "is not valid"},
		{"selector key other than os/arch", "        os: linux\n", "        os: linux\n        distro: debian\n", `key "distro" not supported`},
		{"two platforms for one os/arch", "        arch: arm64\n", "        arch: amd64\n", "overlapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(manifest, tt.old) {
				if len(p.Spec.Platforms) < len(release.ReleasePlatforms) {
					t.Skipf("dist/krew.yaml offers %d of the release platforms, none with %q to break (make test-release checks them all)", len(p.Spec.Platforms), tt.old)
				}
				t.Fatalf("dist/krew.yaml has no %q to break", tt.old)
			}
			broken := strings.Replace(manifest, tt.old, tt.new, 1)
			verr := validate(t, broken)
			if verr == nil || !strings.Contains(verr.Error(), tt.validatorSay) {
				t.Errorf("validate-krew-manifest: %v; want it to say %q", verr, tt.validatorSay)
			}
			bp, err := release.DecodeManifest([]byte(broken))
			if err != nil {
				t.Fatal(err)
			}
			if errs := release.CheckManifest(bp, "apf", archives); len(errs) == 0 {
				t.Errorf("CheckManifest accepts what validate-krew-manifest rejects")
			}
		})
	}
}
