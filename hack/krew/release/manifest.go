package release

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"text/template"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/krew/pkg/constants"
	"sigs.k8s.io/krew/pkg/index"
	"sigs.k8s.io/yaml"
)

// TemplateValues are the fields plugins/krew.yaml may use, named as
// krew-release-bot names them (pkg/source/template.go), so the same template
// serves both our `make dist` and the bot that opens krew-index pull requests.
type TemplateValues struct {
	// TagName is the release tag, e.g. "v0.1.0".
	TagName string
}

// RenderManifest executes the krew manifest template tmpl for tag. Like
// krew-release-bot, the template may call
//
//	{{ addURIAndSha "https://.../{{ .TagName }}/kubectl-apf_{{ .TagName }}_linux_amd64.tar.gz" .TagName }}
//
// which renders the inner URL template and prints "uri: URL" and, on the next
// line indented by four spaces, "sha256: SUM"; and {{ ... | indent N }}. Where
// the bot downloads the asset to hash it, sha256Of is given the asset's file
// name (the last element of the URL) and answers from the local dist directory.
func RenderManifest(tmpl []byte, tag string, sha256Of func(asset string) (string, error)) ([]byte, error) {
	funcs := template.FuncMap{
		"addURIAndSha": func(url, tag string) (string, error) {
			u, err := renderURL(url, tag)
			if err != nil {
				return "", err
			}
			sum, err := sha256Of(path.Base(u))
			if err != nil {
				return "", fmt.Errorf("sha256 of %s: %w", u, err)
			}
			return fmt.Sprintf("uri: %s\n    sha256: %s", u, sum), nil
		},
		"indent": indentLikeReleaseBot,
	}
	t, err := template.New("krew.yaml").Funcs(funcs).Option("missingkey=error").Parse(string(tmpl))
	if err != nil {
		return nil, fmt.Errorf("parsing the krew manifest template: %w", err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, TemplateValues{TagName: tag}); err != nil {
		return nil, fmt.Errorf("rendering the krew manifest template: %w", err)
	}
	return buf.Bytes(), nil
}

// RenderPartialManifest renders the manifest of a build of some release
// platforms (make test builds linux/amd64 alone): the platforms whose
// archive sums holds, and none other rather than any with a made-up sum.
// Its form is sigs.k8s.io/yaml's, not the release bot's: it is for tests,
// never for publishing.
func RenderPartialManifest(tmpl []byte, tag string, sums map[string]string) ([]byte, error) {
	// Not a sha256 (64 zeros would read as the YAML integer 0): nothing
	// real can equal it.
	const absent = "no-archive"
	rendered, err := RenderManifest(tmpl, tag, func(asset string) (string, error) {
		if sum, ok := sums[asset]; ok {
			return sum, nil
		}
		return absent, nil
	})
	if err != nil {
		return nil, err
	}
	p, err := DecodeManifest(rendered)
	if err != nil {
		return nil, err
	}
	var kept []index.Platform
	for _, pl := range p.Spec.Platforms {
		if pl.Sha256 != absent {
			kept = append(kept, pl)
		}
	}
	if len(kept) != len(sums) {
		return nil, fmt.Errorf("the manifest offers %d of the %d archives built", len(kept), len(sums))
	}
	p.Spec.Platforms = kept
	return yaml.Marshal(p)
}

func renderURL(url, tag string) (string, error) {
	t, err := template.New("url").Option("missingkey=error").Parse(url)
	if err != nil {
		return "", fmt.Errorf("parsing URL template %q: %w", url, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, TemplateValues{TagName: tag}); err != nil {
		return "", fmt.Errorf("rendering URL template %q: %w", url, err)
	}
	return buf.String(), nil
}

// indentLikeReleaseBot mirrors krew-release-bot's "indent" template function
// (pkg/source/template.go indent): addURIAndSha's four-space sha256 line is first
// reset to column zero, then every line after the first is padded by n spaces.
func indentLikeReleaseBot(n int, v string) string {
	v = strings.ReplaceAll(v, "    sha256:", "sha256:")
	pad := strings.Repeat(" ", n)
	return strings.TrimSpace(pad + strings.ReplaceAll(v, "\n", "\n"+pad))
}

// DecodeManifest decodes a krew plugin manifest strictly into krew's published
// type: unknown or duplicated fields are errors (krew itself decodes leniently,
// internal/index/indexscanner decodeFile, so a typo like "sha265" would be
// silently dropped and only fail at install time).
func DecodeManifest(data []byte) (index.Plugin, error) {
	var p index.Plugin
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return index.Plugin{}, fmt.Errorf("decoding krew manifest: %w", err)
	}
	return p, nil
}

// OSArch is one platform krew installs on.
type OSArch struct{ OS, Arch string }

func (p OSArch) String() string { return p.OS + "/" + p.Arch }

// KrewPlatforms are the <os,arch> pairs krew-index's validator knows
// (sigs.k8s.io/krew cmd/validate-krew-manifest allPlatforms).
var KrewPlatforms = []OSArch{
	{"windows", "386"}, {"windows", "amd64"}, {"windows", "arm64"},
	{"linux", "386"}, {"linux", "amd64"}, {"linux", "arm"}, {"linux", "arm64"}, {"linux", "ppc64le"},
	{"darwin", "386"}, {"darwin", "amd64"}, {"darwin", "arm64"},
}

// Archive is a release archive as the manifest checks see it.
type Archive struct {
	// SHA256 is the lowercase hex digest of the archive's bytes.
	SHA256 string
	// Entries are the archive's files.
	Entries []ArchiveEntry
}

var (
	sha256RE   = regexp.MustCompile(`^[a-f0-9]{64}$`)
	pluginName = regexp.MustCompile(`^[\w-]+$`)
)

// licenseNames are the file names krew-index's validator accepts as a licence
// (cmd/validate-krew-manifest licenseFiles).
var licenseNames = map[string]bool{
	"license": true, "license.txt": true, "license.md": true, "licenses": true,
	"licenses.txt": true, "licenses.md": true, "copying": true, "copying.txt": true,
}

// CheckManifest applies krew's structural validation (internal/index/validation
// ValidatePlugin) and krew-index's release rules to p, and checks every platform
// against its archive, looked up in archives by the last element of its URI. It
// returns every problem found, each naming the field at fault, or nil.
func CheckManifest(p index.Plugin, name string, archives map[string]Archive) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if p.APIVersion != constants.CurrentAPIVersion {
		add("apiVersion is %q, want %q", p.APIVersion, constants.CurrentAPIVersion)
	}
	if p.Kind != constants.PluginKind {
		add("kind is %q, want %q", p.Kind, constants.PluginKind)
	}
	if p.Name != name {
		add("metadata.name is %q, want %q", p.Name, name)
	}
	if !pluginName.MatchString(p.Name) {
		add("metadata.name %q must match %s", p.Name, pluginName)
	}
	if !IsKrewVersion(p.Spec.Version) {
		add("spec.version %q is not a semantic version with a v prefix", p.Spec.Version)
	}
	if s := p.Spec.ShortDescription; s == "" || strings.ContainsAny(s, "\r\n") {
		add("spec.shortDescription must be one non-empty line, got %q", s)
	}
	if strings.TrimSpace(p.Spec.Description) == "" {
		add("spec.description is empty")
	}
	if !strings.HasPrefix(p.Spec.Homepage, "https://") {
		add("spec.homepage %q must be an https URL", p.Spec.Homepage)
	}
	if len(p.Spec.Platforms) == 0 {
		add("spec.platforms is empty")
	}

	for i, pl := range p.Spec.Platforms {
		at := fmt.Sprintf("spec.platforms[%d]", i)
		if !strings.HasPrefix(pl.URI, "https://") {
			add("%s.uri %q must be an https URL", at, pl.URI)
		}
		if !sha256RE.MatchString(pl.Sha256) {
			add("%s.sha256 %q must be 64 lowercase hex digits", at, pl.Sha256)
		}
		if pl.Bin == "" {
			add("%s.bin is empty", at)
		}
		if err := checkSelector(pl.Selector); err != nil {
			add("%s.selector: %v", at, err)
		} else if len(matchingPlatforms(pl.Selector)) == 0 {
			add("%s.selector %v matches no platform krew supports", at, pl.Selector.MatchLabels)
		}
		if pl.Files != nil && len(pl.Files) == 0 {
			add("%s.files must be left out or non-empty", at)
		}
		for j, op := range pl.Files {
			if op.From == "" || op.To == "" {
				add("%s.files[%d] needs both from and to", at, j)
			} else if path.Clean(op.To) != op.To {
				add("%s.files[%d].to %q is not a clean path (krew refuses it)", at, j, op.To)
			}
		}
		ar, ok := archives[path.Base(pl.URI)]
		if !ok {
			add("%s.uri %q names no archive of this release", at, pl.URI)
			continue
		}
		if ar.SHA256 != pl.Sha256 {
			add("%s.sha256 is %s, but %s hashes to %s", at, pl.Sha256, path.Base(pl.URI), ar.SHA256)
		}
		installed, err := installedFiles(ar.Entries, pl.Files)
		if err != nil {
			add("%s.files: %v", at, err)
			continue
		}
		if mode, ok := installed[pl.Bin]; !ok {
			add("%s.bin %q is not in %s once files are applied (it has %s)", at, pl.Bin, path.Base(pl.URI), names(installed))
		} else if mode&0o111 == 0 {
			add("%s.bin %q is not executable in %s (mode %v)", at, pl.Bin, path.Base(pl.URI), mode)
		}
		if !hasLicense(installed) {
			add("%s: %s installs no LICENSE file (krew-index requires one)", at, path.Base(pl.URI))
		}
	}

	// No supported <os,arch> may be matched by two platforms: krew would pick
	// the first silently (installation.matchPlatform), krew-index rejects it
	// (validate-krew-manifest isOverlappingPlatformSelectors).
	for _, env := range KrewPlatforms {
		var idx []int
		for i, pl := range p.Spec.Platforms {
			if checkSelector(pl.Selector) == nil && selectorMatches(pl.Selector, env) {
				idx = append(idx, i)
			}
		}
		if len(idx) > 1 {
			add("spec.platforms %v all match %s", idx, env)
		}
	}
	return errs
}

// checkSelector allows what krew allows (validation.validateSelector) and, as
// the release rule, nothing but matchLabels with exactly os and arch: one
// platform per archive.
func checkSelector(sel *metav1.LabelSelector) error {
	if sel == nil {
		return fmt.Errorf("missing")
	}
	if len(sel.MatchExpressions) > 0 {
		return fmt.Errorf("matchExpressions are not used by kubectl-apf; give matchLabels os and arch")
	}
	if len(sel.MatchLabels) != 2 || sel.MatchLabels["os"] == "" || sel.MatchLabels["arch"] == "" {
		return fmt.Errorf("matchLabels must hold exactly os and arch, got %v", sel.MatchLabels)
	}
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		return err
	}
	return nil
}

func selectorMatches(sel *metav1.LabelSelector, env OSArch) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	return s.Matches(labels.Set{"os": env.OS, "arch": env.Arch})
}

func matchingPlatforms(sel *metav1.LabelSelector) []OSArch {
	var out []OSArch
	for _, env := range KrewPlatforms {
		if selectorMatches(sel, env) {
			out = append(out, env)
		}
	}
	return out
}

// installedFiles applies krew's file operations to a flat archive and returns
// the installed paths with their modes, mirroring internal/installation
// (applyDefaults: no files means from "*" to "."; findMoveTargets: a "from"
// naming one file is moved to "to", or keeps its name when "to" is "."; a glob
// moves every match into the "to" directory).
func installedFiles(entries []ArchiveEntry, ops []index.FileOperation) (map[string]fsMode, error) {
	if ops == nil {
		ops = []index.FileOperation{{From: "*", To: "."}}
	}
	byName := map[string]ArchiveEntry{}
	for _, e := range entries {
		byName[e.Name] = e
	}
	out := map[string]fsMode{}
	for i, op := range ops {
		if e, ok := byName[path.Clean(op.From)]; ok {
			to := op.To
			if path.Clean(to) == "." {
				to = path.Base(e.Name)
			}
			out[path.Clean(to)] = fsMode(e.Mode)
			continue
		}
		matched := false
		for _, e := range entries {
			ok, err := path.Match(op.From, e.Name)
			if err != nil {
				return nil, fmt.Errorf("files[%d].from %q: %w", i, op.From, err)
			}
			if ok {
				matched = true
				out[path.Join(op.To, path.Base(e.Name))] = fsMode(e.Mode)
			}
		}
		if !matched {
			return nil, fmt.Errorf("files[%d].from %q matches nothing in the archive", i, op.From)
		}
	}
	return out, nil
}

type fsMode uint32

func hasLicense(installed map[string]fsMode) bool {
	for p := range installed {
		if licenseNames[strings.ToLower(path.Base(p))] {
			return true
		}
	}
	return false
}

func names(m map[string]fsMode) string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}
