package release

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/krew/pkg/index"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const templatePath = "../../../plugins/krew.yaml"

// fakeRelease packs a tiny archive per release platform (the real binaries are
// built by the dist tests) and returns them with their sums.
func fakeRelease(t testing.TB, version string) map[string]Archive {
	t.Helper()
	out := map[string]Archive{}
	for _, p := range ReleasePlatforms {
		var buf bytes.Buffer
		err := WriteArchive(&buf, []ArchiveFile{
			{Name: p.Binary(), Mode: 0o755, Body: []byte("binary for " + p.String())},
			{Name: "LICENSE", Mode: 0o644, Body: []byte("licence")},
			{Name: CompletionScript, Mode: 0o755, Body: []byte("#!/bin/sh\n")},
		}, testMTime)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(buf.Bytes())
		entries, err := ReadArchive(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		out[ArchiveName(version, p)] = Archive{SHA256: hex.EncodeToString(sum[:]), Entries: entries}
	}
	return out
}

func renderTemplate(t testing.TB, version string, archives map[string]Archive) []byte {
	t.Helper()
	tmpl, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	out, err := RenderManifest(tmpl, version, func(asset string) (string, error) {
		a, ok := archives[asset]
		if !ok {
			return "", fmt.Errorf("no asset %s", asset)
		}
		return a.SHA256, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTemplateRendersGolden pins the rendered manifest for fixed sums; review
// a diff of testdata/krew.golden.yaml like code (go test ./release -update).
func TestTemplateRendersGolden(t *testing.T) {
	sums := map[string]string{}
	for i, p := range ReleasePlatforms {
		sums[ArchiveName("v1.2.3", p)] = strings.Repeat(fmt.Sprintf("%x", i+10), 64)
	}
	tmpl, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	got, err := RenderManifest(tmpl, "v1.2.3", func(a string) (string, error) { return sums[a], nil })
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "krew.golden.yaml")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./release -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("rendered manifest differs from %s (go test ./release -update rewrites it):\n%s", golden, got)
	}
}

func TestTemplatePassesChecks(t *testing.T) {
	archives := fakeRelease(t, "v1.2.3")
	p, err := DecodeManifest(renderTemplate(t, "v1.2.3", archives))
	if err != nil {
		t.Fatal(err)
	}
	if errs := CheckManifest(p, "apf", archives); len(errs) > 0 {
		t.Fatalf("the template fails the release checks: %v", errors.Join(errs...))
	}
	// One platform per release archive, and each names its own archive.
	if len(p.Spec.Platforms) != len(ReleasePlatforms) {
		t.Fatalf("%d platforms, want %d", len(p.Spec.Platforms), len(ReleasePlatforms))
	}
	for i, want := range ReleasePlatforms {
		pl := p.Spec.Platforms[i]
		got := Platform{pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"]}
		if got != want {
			t.Errorf("platforms[%d] selects %v, want %v", i, got, want)
		}
		if !strings.HasSuffix(pl.URI, "/v1.2.3/"+ArchiveName("v1.2.3", want)) {
			t.Errorf("platforms[%d].uri = %s", i, pl.URI)
		}
		if pl.Bin != want.Binary() {
			t.Errorf("platforms[%d].bin = %s, want %s", i, pl.Bin, want.Binary())
		}
	}
	if !strings.Contains(p.Spec.Caveats, "/debug/api_priority_and_fairness/*") || !strings.Contains(p.Spec.Caveats, "/metrics") ||
		!strings.Contains(p.Spec.Caveats, "flowschemas") || !strings.Contains(p.Spec.Caveats, "prioritylevelconfigurations") {
		t.Errorf("caveats do not name the RBAC the plugin needs:\n%s", p.Spec.Caveats)
	}
}

func TestCheckManifestRejects(t *testing.T) {
	archives := fakeRelease(t, "v1.2.3")
	base := renderTemplate(t, "v1.2.3", archives)
	tests := []struct {
		name    string
		mutate  func(p *index.Plugin)
		wantErr string
	}{
		{"version without v", func(p *index.Plugin) { p.Spec.Version = "1.2.3" }, "spec.version"},
		{"version not semver", func(p *index.Plugin) { p.Spec.Version = "v1.2" }, "spec.version"},
		{"uppercase sha", func(p *index.Plugin) {
			p.Spec.Platforms[0].Sha256 = strings.ToUpper(p.Spec.Platforms[0].Sha256)
		}, "64 lowercase hex"},
		{"short sha", func(p *index.Plugin) { p.Spec.Platforms[1].Sha256 = "abc" }, "64 lowercase hex"},
		{"sha of another archive", func(p *index.Plugin) {
			p.Spec.Platforms[0].Sha256 = p.Spec.Platforms[1].Sha256
		}, "hashes to"},
		{"extra selector label", func(p *index.Plugin) {
			p.Spec.Platforms[0].Selector.MatchLabels["distro"] = "debian"
		}, "exactly os and arch"},
		{"match expressions", func(p *index.Plugin) {
			p.Spec.Platforms[0].Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "os", Operator: metav1.LabelSelectorOpIn, Values: []string{"linux"}}}
		}, "matchExpressions"},
		{"no selector", func(p *index.Plugin) { p.Spec.Platforms[0].Selector = nil }, "selector: missing"},
		{"unsupported platform", func(p *index.Plugin) { p.Spec.Platforms[0].Selector.MatchLabels["os"] = "plan9" }, "matches no platform"},
		{"two platforms for linux/amd64", func(p *index.Plugin) {
			p.Spec.Platforms[3].Selector.MatchLabels["arch"] = "amd64"
		}, "all match linux/amd64"},
		{"bin not in archive", func(p *index.Plugin) { p.Spec.Platforms[4].Bin = "kubectl-apf" }, "is not in"},
		{"bin not installed by files", func(p *index.Plugin) {
			p.Spec.Platforms[2].Files = p.Spec.Platforms[2].Files[1:]
		}, "is not in"},
		{"no licence installed", func(p *index.Plugin) {
			p.Spec.Platforms[2].Files = []index.FileOperation{{From: "kubectl-apf", To: "."}}
		}, "LICENSE"},
		{"files glob matching nothing", func(p *index.Plugin) {
			p.Spec.Platforms[2].Files = append(p.Spec.Platforms[2].Files, index.FileOperation{From: "*.md", To: "."})
		}, "matches nothing"},
		{"uri of no archive", func(p *index.Plugin) { p.Spec.Platforms[0].URI += ".old" }, "names no archive"},
		{"http uri", func(p *index.Plugin) {
			p.Spec.Platforms[0].URI = strings.Replace(p.Spec.Platforms[0].URI, "https:", "http:", 1)
		}, "https URL"},
		{"wrong name", func(p *index.Plugin) { p.Name = "apf2" }, "metadata.name"},
		{"wrong kind", func(p *index.Plugin) { p.Kind = "Plugins" }, "kind"},
		{"old apiVersion", func(p *index.Plugin) { p.APIVersion = "krew.googlecontainertools.github.com/v1alpha1" }, "apiVersion"},
		{"two-line short description", func(p *index.Plugin) { p.Spec.ShortDescription = "a\nb" }, "shortDescription"},
		{"no platforms", func(p *index.Plugin) { p.Spec.Platforms = nil }, "platforms is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := DecodeManifest(base)
			if err != nil {
				t.Fatal(err)
			}
			tt.mutate(&p)
			errs := CheckManifest(p, "apf", archives)
			joined := errors.Join(errs...)
			if joined == nil || !strings.Contains(joined.Error(), tt.wantErr) {
				t.Fatalf("CheckManifest = %v, want an error containing %q", joined, tt.wantErr)
			}
		})
	}
}

func TestDecodeManifestIsStrict(t *testing.T) {
	archives := fakeRelease(t, "v1.2.3")
	base := string(renderTemplate(t, "v1.2.3", archives))
	tests := []struct {
		name    string
		yaml    string
		wantErr string
	}{
		{"misspelt field", strings.Replace(base, "    sha256:", "    sha265:", 1), `unknown field "sha265"`},
		{"duplicate field", strings.Replace(base, "  version:", "  homepage: https://example.com\n  version:", 1), `key "homepage" already set`},
		{"not yaml", "apiVersion: [", "decoding krew manifest"},
		{"wrong type", strings.Replace(base, "platforms:\n", "platforms: 3\n", 1), "decoding krew manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeManifest([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("DecodeManifest = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestWriteIndex checks the krew index layout: the manifest, byte for byte,
// at plugins/<metadata.name>.yaml, the one path krew reads it from; a
// manifest krew could not file under its name is refused.
func TestWriteIndex(t *testing.T) {
	manifest := renderTemplate(t, "v1.2.3", fakeRelease(t, "v1.2.3"))
	dir := t.TempDir()
	rel, err := WriteIndex(dir, manifest)
	if err != nil {
		t.Fatal(err)
	}
	if rel != "plugins/apf.yaml" {
		t.Errorf("WriteIndex wrote %s, want plugins/apf.yaml", rel)
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			r, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(r))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(files, []string{"plugins/apf.yaml"}) {
		t.Errorf("the index holds %v, want only plugins/apf.yaml", files)
	}
	got, err := os.ReadFile(filepath.Join(dir, "plugins", "apf.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, manifest) {
		t.Error("plugins/apf.yaml differs from the manifest it was given")
	}

	for name, bad := range map[string]string{
		"unsafe name": strings.Replace(string(manifest), "  name: apf\n", "  name: ../apf\n", 1),
		"not strict":  strings.Replace(string(manifest), "    sha256:", "    sha265:", 1),
	} {
		t.Run(name, func(t *testing.T) {
			if bad == string(manifest) {
				t.Fatal("nothing replaced")
			}
			dir := t.TempDir()
			if rel, err := WriteIndex(dir, []byte(bad)); err == nil {
				t.Errorf("WriteIndex wrote %s", rel)
			}
		})
	}
}

func TestRenderManifest(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	lookup := func(asset string) (string, error) {
		if asset != "x_v1.0.0.tar.gz" {
			return "", fmt.Errorf("unknown asset %s", asset)
		}
		return sum, nil
	}
	tests := []struct {
		name    string
		tmpl    string
		want    string
		wantErr string
	}{
		{"tag", "version: {{ .TagName }}", "version: v1.0.0", ""},
		{"uri and sha", `    {{ addURIAndSha "https://h/{{ .TagName }}/x_{{ .TagName }}.tar.gz" .TagName }}`,
			"    uri: https://h/v1.0.0/x_v1.0.0.tar.gz\n    sha256: " + sum, ""},
		// krew-release-bot's indent: the sha256 line moves to the given column.
		{"indent 6", `      {{ addURIAndSha "https://h/x_{{ .TagName }}.tar.gz" .TagName | indent 6 }}`,
			"      uri: https://h/x_v1.0.0.tar.gz\n      sha256: " + sum, ""},
		{"unknown asset", `{{ addURIAndSha "https://h/y.tar.gz" .TagName }}`, "", "unknown asset y.tar.gz"},
		{"unknown field", "{{ .Tag }}", "", "rendering the krew manifest template"},
		{"bad template", "{{ .TagName ", "", "parsing the krew manifest template"},
		{"bad url template", `{{ addURIAndSha "https://h/{{ .Nope }}" .TagName }}`, "", "rendering URL template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RenderManifest([]byte(tt.tmpl), "v1.0.0", lookup)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("RenderManifest = %q, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("RenderManifest = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestSumsRoundTrip(t *testing.T) {
	sums := map[string]string{"b.tar.gz": strings.Repeat("1", 64), "a.tar.gz": strings.Repeat("f", 64)}
	text := FormatSums(sums)
	want := strings.Repeat("f", 64) + "  a.tar.gz\n" + strings.Repeat("1", 64) + "  b.tar.gz\n"
	if string(text) != want {
		t.Fatalf("FormatSums = %q, want %q", text, want)
	}
	got, err := ParseSums(text)
	if err != nil || !reflect.DeepEqual(got, sums) {
		t.Fatalf("ParseSums = %v, %v", got, err)
	}
}

func TestParseSumsRejects(t *testing.T) {
	h := strings.Repeat("a", 64)
	tests := []struct {
		name, in, wantErr string
	}{
		{"empty", "", "lists no file"},
		{"one space", h + " a.tar.gz\n", `line 1`},
		{"uppercase", strings.ToUpper(h) + "  a.tar.gz\n", "line 1"},
		{"path", h + "  ../a.tar.gz\n", "line 1"},
		{"twice", h + "  a\n" + h + "  a\n", "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSums([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseSums = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// FuzzDecodeManifest: any bytes decode to an error or a plugin the checks can
// judge, never a panic.
func FuzzDecodeManifest(f *testing.F) {
	archives := fakeRelease(f, "v1.2.3")
	f.Add(renderTemplate(f, "v1.2.3", archives))
	f.Add([]byte("apiVersion: krew.googlecontainertools.github.com/v1alpha2\nkind: Plugin\nspec:\n  platforms:\n  - selector: {matchExpressions: [{key: os, operator: Bogus}]}\n    files: []\n"))
	f.Add([]byte("spec: {platforms: [{selector: {matchLabels: {os: linux, arch: amd64}}, files: [{from: '[', to: .}]}]}"))
	f.Add([]byte("- a\n- b"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodeManifest(data)
		if err != nil {
			return
		}
		_ = CheckManifest(p, "apf", archives)
	})
}

// FuzzParseSums: what ParseSums accepts, FormatSums writes back so that it
// parses to the same sums.
func FuzzParseSums(f *testing.F) {
	h := strings.Repeat("0", 64)
	f.Add([]byte(h + "  a.tar.gz\n"))
	f.Add([]byte(h + " *a.tar.gz\n" + h + "  b\n"))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sums, err := ParseSums(data)
		if err != nil {
			return
		}
		again, err := ParseSums(FormatSums(sums))
		if err != nil || !reflect.DeepEqual(again, sums) {
			t.Fatalf("round trip of %q: %v, %v", data, again, err)
		}
	})
}

// TestRenderPartialManifest: a build of some platforms gets a manifest
// that offers exactly those, each with its own sum, and one that names an
// archive of no platform of the template is refused.
func TestRenderPartialManifest(t *testing.T) {
	tmpl, err := os.ReadFile(filepath.Join("..", "..", "..", "plugins", "krew.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	linux := Platform{OS: "linux", Arch: "amd64"}
	sum := strings.Repeat("cd", 32)
	out, err := RenderPartialManifest(tmpl, "v1.2.3", map[string]string{ArchiveName("v1.2.3", linux): sum})
	if err != nil {
		t.Fatal(err)
	}
	p, err := DecodeManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Spec.Platforms) != 1 || p.Spec.Platforms[0].Sha256 != sum || p.Spec.Platforms[0].Selector.MatchLabels["os"] != "linux" || p.Spec.Platforms[0].Selector.MatchLabels["arch"] != "amd64" {
		t.Errorf("the partial manifest offers %+v, want linux/amd64 alone with its sum", p.Spec.Platforms)
	}
	if _, err := RenderPartialManifest(tmpl, "v1.2.3", map[string]string{"kubectl-apf_v1.2.3_plan9_386.tar.gz": sum}); err == nil {
		t.Error("a partial manifest of an archive no platform offers was rendered")
	}
}
