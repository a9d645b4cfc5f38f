package release

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"sigs.k8s.io/krew/pkg/constants"
)

// Platform is one GOOS/GOARCH a release is built for.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Binary is the name of the plugin executable on p: kubectl finds plugins by
// the "kubectl-" prefix, and on Windows only with an executable extension.
func (p Platform) Binary() string {
	if p.OS == "windows" {
		return "kubectl-apf.exe"
	}
	return "kubectl-apf"
}

// ReleasePlatforms are the platforms `make dist` builds.
var ReleasePlatforms = []Platform{
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"linux", "amd64"}, {"linux", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// ParsePlatforms parses a comma-separated "os/arch,os/arch" list; every entry
// must be one of ReleasePlatforms.
func ParsePlatforms(s string) ([]Platform, error) {
	var out []Platform
	seen := map[Platform]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		goos, goarch, ok := strings.Cut(f, "/")
		p := Platform{goos, goarch}
		if !ok || !isReleasePlatform(p) {
			return nil, fmt.Errorf("platform %q is not one of %v", f, ReleasePlatforms)
		}
		if seen[p] {
			return nil, fmt.Errorf("platform %q is listed twice", f)
		}
		seen[p] = true
		out = append(out, p)
	}
	return out, nil
}

func isReleasePlatform(p Platform) bool {
	for _, q := range ReleasePlatforms {
		if p == q {
			return true
		}
	}
	return false
}

// ArchiveName is the release asset of version v for p; plugins/krew.yaml names
// the same files in its URIs.
func ArchiveName(v string, p Platform) string {
	return fmt.Sprintf("kubectl-apf_%s_%s_%s.tar.gz", v, p.OS, p.Arch)
}

// Names of the files `make dist` writes next to the archives.
const (
	SumsFile     = "SHA256SUMS"
	ManifestFile = "krew.yaml"
	// IndexDir is the krew custom index `make dist` writes beside the
	// manifest: a directory to commit as the whole of an index repository
	// (see WriteIndex).
	IndexDir = "krew-index"
	// CompletionScript is the kubectl plugin-completion helper at the
	// repository root; kubectl runs it for "kubectl apf <TAB>".
	CompletionScript = "kubectl_complete-apf"
)

// Config says what Build builds.
type Config struct {
	// RepoDir is the root of the kubectl-apf module (the one holding
	// cmd/kubectl-apf, LICENSE, kubectl_complete-apf and plugins/krew.yaml).
	RepoDir string
	// OutDir receives the archives, SHA256SUMS, krew.yaml and krew-index/.
	OutDir string
	// Stamp is injected into every binary and sets every archive mtime.
	Stamp Stamp
	// Platforms defaults to ReleasePlatforms.
	Platforms []Platform
	// Go is the go command; "go" when empty.
	Go string
	// Jobs is how many platforms build at once; 0 means the number of CPUs, at
	// most 4.
	Jobs int
	// Rebuild compiles every package again (go build -a) instead of taking
	// it from the build cache: a reproducibility check's second build must
	// not be the first one's cached objects, which a -trimpath build of the
	// same source finds in any directory.
	Rebuild bool
	// Log receives one line per step; nil for none. It may be called from
	// several goroutines at once.
	Log func(format string, args ...any)
}

// Result is what Build wrote.
type Result struct {
	// Archives maps archive file name to its lowercase hex sha256.
	Archives map[string]string
	// Manifest is the rendered krew manifest; with only some platforms
	// built, one that offers those alone (RenderPartialManifest).
	Manifest []byte
	// IndexManifest is the manifest's path inside OutDir/krew-index
	// ("plugins/apf.yaml"); empty when no manifest was rendered.
	IndexManifest string
}

// Build cross-compiles cmd/kubectl-apf for every platform without cgo, packs
// each binary with LICENSE and the completion script into a reproducible
// archive, writes SHA256SUMS (sha256sum's format, sorted by name), renders
// plugins/krew.yaml into OutDir/krew.yaml and lays the same manifest out as a
// krew custom index in OutDir/krew-index (WriteIndex). Building the same commit twice, in
// any directory, gives the same bytes: -trimpath drops the paths,
// -buildvcs=false keeps git state out of the binary, GOAMD64/GOARM64 are pinned
// so the environment cannot change the code generated, and the archive mtimes
// come from the stamp. The compiler makes no DWARF (-dwarf=false): the link's
// -s -w would drop it, and the build then shares the compiles of make test,
// which builds the same way.
func Build(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Go == "" {
		cfg.Go = "go"
	}
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	platforms := cfg.Platforms
	if len(platforms) == 0 {
		platforms = ReleasePlatforms
	}
	if !IsKrewVersion(cfg.Stamp.Version) {
		return nil, fmt.Errorf("version %q is not a semantic version with a v prefix, which krew requires", cfg.Stamp.Version)
	}
	if cfg.Stamp.Commit == "" || cfg.Stamp.Date.IsZero() {
		return nil, fmt.Errorf("the stamp needs a commit and a date, got %+v", cfg.Stamp)
	}
	license, err := os.ReadFile(filepath.Join(cfg.RepoDir, "LICENSE"))
	if err != nil {
		return nil, fmt.Errorf("reading the licence to ship: %w", err)
	}
	completion, err := os.ReadFile(filepath.Join(cfg.RepoDir, CompletionScript))
	if err != nil {
		return nil, fmt.Errorf("reading the completion script to ship: %w", err)
	}
	tmpl, err := os.ReadFile(filepath.Join(cfg.RepoDir, "plugins", "krew.yaml"))
	if err != nil {
		return nil, fmt.Errorf("reading the krew manifest template: %w", err)
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", cfg.OutDir, err)
	}
	binDir, err := os.MkdirTemp("", "kubectl-apf-dist-")
	if err != nil {
		return nil, fmt.Errorf("creating a build directory: %w", err)
	}
	defer os.RemoveAll(binDir)

	// Cross-compiles run a few at a time: linking is mostly single-threaded,
	// so this uses the cores a sequential loop would leave idle.
	jobs := cfg.Jobs
	if jobs <= 0 {
		jobs = min(runtime.NumCPU(), 4)
	}
	type built struct {
		name, sum string
		err       error
	}
	// The first failure cancels the other builds: they would fail the same way
	// (most failures are compile errors) after minutes of work.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	results := make([]built, len(platforms))
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for i, p := range platforms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				results[i] = built{err: context.Cause(ctx)}
				return
			}
			name, sum, err := buildPlatform(ctx, cfg, p, binDir, license, completion)
			if err != nil {
				cancel(err)
			}
			results[i] = built{name, sum, err}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	res := &Result{Archives: map[string]string{}}
	for _, r := range results {
		if r.err != nil {
			return nil, r.err
		}
		res.Archives[r.name] = r.sum
	}

	if err := os.WriteFile(filepath.Join(cfg.OutDir, SumsFile), FormatSums(res.Archives), 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", SumsFile, err)
	}
	if len(platforms) != len(ReleasePlatforms) {
		// The release manifest names every release platform's archive; a
		// subset gets a manifest of its own platforms, to test, never to
		// publish.
		cfg.Log("%d of %d platforms built: %s offers those alone, and is not a release's", len(platforms), len(ReleasePlatforms), ManifestFile)
		res.Manifest, err = RenderPartialManifest(tmpl, cfg.Stamp.Version, res.Archives)
	} else {
		res.Manifest, err = RenderManifest(tmpl, cfg.Stamp.Version, func(asset string) (string, error) {
			sum, ok := res.Archives[asset]
			if !ok {
				return "", fmt.Errorf("%s was not built (built: %s)", asset, strings.Join(sortedKeys(res.Archives), ", "))
			}
			return sum, nil
		})
	}
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(cfg.OutDir, ManifestFile), res.Manifest, 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", ManifestFile, err)
	}
	// The index is written afresh: a manifest left from an earlier build (a
	// plugin since renamed) must not be published with this one.
	indexDir := filepath.Join(cfg.OutDir, IndexDir)
	if err := os.RemoveAll(indexDir); err != nil {
		return nil, fmt.Errorf("removing the old %s: %w", IndexDir, err)
	}
	if res.IndexManifest, err = WriteIndex(indexDir, res.Manifest); err != nil {
		return nil, err
	}
	return res, nil
}

// WriteIndex lays manifest out in dir as a krew custom index: dir is the root
// of a git repository that `kubectl krew index add NAME URL` clones (krew's
// indexoperations.AddIndex: git clone URL into KREW_ROOT/index/NAME), and
// krew reads a plugin's manifest from plugins/PLUGIN.yaml in that clone
// (environment.Paths IndexPluginsPath, indexscanner.LoadPluginByName), where
// PLUGIN must be the manifest's metadata.name (validation.ValidatePlugin).
// It returns the path written, relative to dir ("plugins/apf.yaml"); the
// file holds manifest's bytes unchanged.
func WriteIndex(dir string, manifest []byte) (string, error) {
	p, err := DecodeManifest(manifest)
	if err != nil {
		return "", err
	}
	if !pluginName.MatchString(p.Name) {
		return "", fmt.Errorf("metadata.name %q is not a plugin name krew accepts (%s)", p.Name, pluginName)
	}
	rel := IndexManifestPath(p.Name)
	file := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return "", fmt.Errorf("creating the krew index: %w", err)
	}
	if err := os.WriteFile(file, manifest, 0o644); err != nil {
		return "", fmt.Errorf("writing the krew index: %w", err)
	}
	return rel, nil
}

// IndexManifestPath is where a krew index repository holds the manifest of
// plugin name: plugins/NAME.yaml, slash-separated.
func IndexManifestPath(name string) string {
	return "plugins/" + name + constants.ManifestExtension
}

// buildPlatform compiles and packs one platform, returning the archive's name
// and sha256.
func buildPlatform(ctx context.Context, cfg Config, p Platform, binDir string, license, completion []byte) (string, string, error) {
	bin := filepath.Join(binDir, p.OS+"_"+p.Arch, p.Binary())
	cfg.Log("building %s", p)
	if err := goBuild(ctx, cfg, p, bin); err != nil {
		return "", "", err
	}
	body, err := os.ReadFile(bin)
	if err != nil {
		return "", "", fmt.Errorf("reading the %s binary: %w", p, err)
	}
	var buf bytes.Buffer
	err = WriteArchive(&buf, []ArchiveFile{
		{Name: p.Binary(), Mode: 0o755, Body: body},
		{Name: "LICENSE", Mode: 0o644, Body: license},
		{Name: CompletionScript, Mode: 0o755, Body: completion},
	}, cfg.Stamp.Date)
	if err != nil {
		return "", "", fmt.Errorf("packing the %s archive: %w", p, err)
	}
	name := ArchiveName(cfg.Stamp.Version, p)
	if err := os.WriteFile(filepath.Join(cfg.OutDir, name), buf.Bytes(), 0o644); err != nil {
		return "", "", fmt.Errorf("writing %s: %w", name, err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return name, hex.EncodeToString(sum[:]), nil
}

func goBuild(ctx context.Context, cfg Config, p Platform, out string) error {
	args := []string{"build", "-trimpath", "-gcflags=all=-dwarf=false", "-buildvcs=false", "-mod=readonly"}
	if cfg.Rebuild {
		args = append(args, "-a")
	}
	cmd := exec.CommandContext(ctx, cfg.Go, append(args, "-ldflags", cfg.Stamp.LDFlags(), "-o", out, "./cmd/kubectl-apf")...)
	cmd.Dir = cfg.RepoDir
	cmd.Env = append(os.Environ(),
		"CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch,
		"GOAMD64=v1", "GOARM64=v8.0", "GOEXPERIMENT=", "GOFLAGS=", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building kubectl-apf for %s: %w\n%s", p, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// FormatSums renders sums as sha256sum prints them ("HASH  NAME"), sorted by
// name so the file itself is reproducible; `sha256sum -c SHA256SUMS` checks it.
func FormatSums(sums map[string]string) []byte {
	var b bytes.Buffer
	for _, name := range sortedKeys(sums) {
		fmt.Fprintf(&b, "%s  %s\n", sums[name], name)
	}
	return b.Bytes()
}

// ParseSums parses a SHA256SUMS file in sha256sum's format.
func ParseSums(data []byte) (map[string]string, error) {
	out := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			// sha256sum's binary mode writes "HASH *NAME".
			sum, name, ok = strings.Cut(line, " *")
		}
		if !ok || !sha256RE.MatchString(sum) || name == "" || strings.ContainsAny(name, "/\\") {
			return nil, fmt.Errorf("line %d of the sums file is not \"SHA256  NAME\": %q", i+1, truncate(line, 120))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("line %d of the sums file: %s is listed twice", i+1, name)
		}
		out[name] = sum
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the sums file lists no file")
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// LoadArchives reads every archive SHA256SUMS lists in dir, checking each
// archive's bytes against its listed sum.
func LoadArchives(dir string) (map[string]Archive, error) {
	data, err := os.ReadFile(filepath.Join(dir, SumsFile))
	if err != nil {
		return nil, fmt.Errorf("reading the release sums: %w", err)
	}
	sums, err := ParseSums(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, SumsFile), err)
	}
	out := map[string]Archive{}
	for name, want := range sums {
		body, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("reading archive listed in %s: %w", SumsFile, err)
		}
		got := sha256.Sum256(body)
		if hex.EncodeToString(got[:]) != want {
			return nil, fmt.Errorf("%s hashes to %x, but %s says %s", name, got, SumsFile, want)
		}
		entries, err := ReadArchive(body)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = Archive{SHA256: want, Entries: entries}
	}
	return out, nil
}
