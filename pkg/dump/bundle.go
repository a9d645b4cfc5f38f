package dump

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// BundleFormat is the version of the bundle layout written by WriteBundle.
const BundleFormat = 1

// manifestFile is the bundle's table of contents.
const manifestFile = "bundle.json"

// maxBundleFile bounds one file read from a bundle (a tarball is untrusted
// input: a bomb must not exhaust memory).
const maxBundleFile = 256 << 20

// Manifest describes a bundle: what was captured, from where and when.
//
// Layout (a directory, or the same tree in a .tar.gz):
//
//	bundle.json                       this manifest
//	instance-N/version.json           /version
//	instance-N/flowschemas.json       FlowSchemaList, converted to v1
//	instance-N/prioritylevelconfigurations.json
//	instance-N/dump_priority_levels.txt, dump_queues.txt, dump_requests.txt
//	instance-N/metrics-0.txt, metrics-1.txt  APF families of /metrics
//	instance-N/metrics-0.time, metrics-1.time  scrape times (RFC 3339)
//	instance-N/metrics-0.unknown.json  of metrics joined from several raw
//	                                   inputs: the levels each family does
//	                                   not speak for (MetricsUnknownKey)
type Manifest struct {
	Format      int                `json:"format"`
	CreatedAt   time.Time          `json:"createdAt"`
	Source      string             `json:"source"`
	Redacted    bool               `json:"redacted"`
	Instances   []ManifestInstance `json:"instances"`
	Failures    []InstanceError    `json:"failures,omitempty"`
	ToolVersion string             `json:"toolVersion,omitempty"`
}

// ManifestInstance is one instance's entry in a bundle manifest.
type ManifestInstance struct {
	Dir                string    `json:"dir"`
	Instance           string    `json:"instance"`
	CapturedAt         time.Time `json:"capturedAt"`
	FlowcontrolVersion string    `json:"flowcontrolVersion,omitempty"`
	Files              []string  `json:"files"`
	// Scrapes, in a bundle that dump bundle --watch is still writing (or
	// that it left when it was killed), counts the instance's scrapes
	// instead of listing them in Files: metrics-0.txt up to
	// metrics-(Scrapes-1).txt, each with its .time and .unknown.json when
	// present (Spool). A finished bundle lists every file.
	Scrapes int `json:"scrapes,omitempty"`
	// FirstScrape, in such a bundle recorded with --keep, is the oldest
	// scrape it still holds: metrics-FirstScrape.txt up to
	// metrics-(Scrapes-1).txt.
	FirstScrape int `json:"firstScrape,omitempty"`
}

// IsTarball reports whether a bundle path names a .tar.gz (or .tgz) file
// rather than a directory.
func IsTarball(p string) bool {
	return strings.HasSuffix(p, ".tar.gz") || strings.HasSuffix(p, ".tgz")
}

// BundleFiles returns the files of a bundle for capture c, by path inside
// the bundle.
func BundleFiles(c *Capture, m Manifest) (map[string][]byte, error) {
	files := map[string][]byte{}
	m.Format = BundleFormat
	m.Instances = nil
	m.Failures = c.Failures
	for i := range m.Failures {
		m.Failures[i].Message = m.Failures[i].Error()
	}
	for i, s := range c.Snapshots {
		dir := fmt.Sprintf("instance-%d", i)
		mi := ManifestInstance{Dir: dir, Instance: s.Instance, CapturedAt: s.CapturedAt.UTC(), FlowcontrolVersion: s.FlowcontrolVersion}
		names := make([]string, 0, len(s.Raw))
		for name := range s.Raw {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			files[path.Join(dir, name)] = s.Raw[name]
			mi.Files = append(mi.Files, name)
		}
		m.Instances = append(m.Instances, mi)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	files[manifestFile] = append(b, '\n')
	return files, nil
}

// WriteBundle writes capture c to out: a directory (created; it must not
// exist or be empty) or, when out ends in .tar.gz, a gzipped tarball.
func WriteBundle(out string, c *Capture, m Manifest) error {
	files, err := BundleFiles(c, m)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	if IsTarball(out) {
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		for _, n := range names {
			hdr := &tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), ModTime: m.CreatedAt, Typeflag: tar.TypeReg}
			if err := tw.WriteHeader(hdr); err != nil {
				return fmt.Errorf("writing bundle %s: %w", out, err)
			}
			if _, err := tw.Write(files[n]); err != nil {
				return fmt.Errorf("writing bundle %s: %w", out, err)
			}
		}
		if err := tw.Close(); err != nil {
			return fmt.Errorf("writing bundle %s: %w", out, err)
		}
		if err := gz.Close(); err != nil {
			return fmt.Errorf("writing bundle %s: %w", out, err)
		}
		if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("writing bundle: %w", err)
		}
		return nil
	}
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return fmt.Errorf("bundle directory %s exists and is not empty; choose a new path", out)
	}
	for _, n := range names {
		p := filepath.Join(out, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("writing bundle: %w", err)
		}
		if err := os.WriteFile(p, files[n], 0o644); err != nil {
			return fmt.Errorf("writing bundle: %w", err)
		}
	}
	return nil
}

// ReadBundleFiles reads every file of a bundle directory or tarball.
func ReadBundleFiles(p string) (map[string][]byte, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("reading bundle: %w", err)
	}
	if !st.IsDir() {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("reading bundle: %w", err)
		}
		defer f.Close()
		return readTarball(p, f)
	}
	f, err := readBundleDir(p)
	if err != nil {
		return nil, err
	}
	bodies, err := f.load(slices.Collect(maps.Keys(f.lazy)))
	if err != nil {
		return nil, err
	}
	maps.Copy(f.held, bodies)
	return f.held, nil
}

// readTarball reads every regular file of a gzipped tarball named p.
func readTarball(p string, r io.Reader) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := walkTarball(p, r, func(name string, tr io.Reader) (bool, error) {
		b, err := readLimited(p, name, tr)
		files[name] = b
		return true, err
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

// BundleSource reads snapshots from what --from names; it needs no
// cluster. Path is a bundle (a directory or a .tar.gz written by "kubectl
// apf dump bundle"), a raw dump or /metrics file, a directory of such files,
// or "-" for Stdin (os.Stdin when nil); the kind is told by the content
// (readInput). The input is read once, so a command that captures twice
// sees the same.
type BundleSource struct {
	Path  string
	Stdin io.Reader
	// ObjectFiles is true when the command takes -f: the notes on an input
	// without FlowSchemas and PriorityLevelConfigurations point to it then,
	// and to the cluster or a bundle only otherwise.
	ObjectFiles bool
	// ReadObjects reads the FlowSchemas and PriorityLevelConfigurations of
	// a file (YAML or JSON, any served version) in a directory of raw
	// files, which are then used as a bundle's are; nil: such files are
	// ignored. The state package sets it to the reader of -f.
	ReadObjects ObjectReader

	in *input
	// err is why the input could not be read: kept, so a command that
	// captures twice (with metrics, then without) gives the reason again
	// instead of reading an emptied standard input.
	err error
}

// Describe names the source.
func (b *BundleSource) Describe() string {
	switch {
	case b.in != nil && b.in.raw != nil:
		return "raw input " + b.in.name
	case b.Path == StdinPath:
		return "standard input"
	}
	return "bundle " + b.Path
}

// load reads the input the first time, and keeps it or why it could not be
// read.
func (b *BundleSource) load() error {
	if b.in == nil && b.err == nil {
		b.in, b.err = readInput(b.Path, b.Stdin, b.ReadObjects)
	}
	return b.err
}

// Capture returns the bundle's snapshots. Parts not in opts are dropped, so
// a command shows the same from a bundle as from the cluster.
func (b *BundleSource) Capture(ctx context.Context, opts CaptureOptions) (*Capture, error) {
	if err := b.load(); err != nil {
		return nil, err
	}
	if b.in.raw != nil {
		b.in.raw.ObjectFiles = b.ObjectFiles
		return b.in.captureRaw(opts)
	}
	var pick map[string][]int
	var note string
	atEnd := false
	if opts.LargestBurst && opts.Parts&PartMetrics != 0 && !opts.AllScrapes {
		var err error
		if pick, note, atEnd, err = b.in.bundle.largestBurst(b.in.manifest, b.in.name); err != nil {
			return nil, fmt.Errorf("%s: %w", b.in.name, err)
		}
	}
	c, err := captureFrom(b.in.bundle, b.in.manifest, opts, pick, pick != nil && !atEnd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.in.name, err)
	}
	if note != "" {
		c.Notes = append(c.Notes, note)
	}
	if opts.AtWatchEnd && pick == nil && !opts.AllScrapes {
		if n := b.watchEndNote(opts.Parts); n != "" {
			c.Notes = append(c.Notes, n)
		}
	}
	if n := elidedRows(b.in.bundle.held, opts.Parts); n > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("note: %s: skipped %s in its dumps: the rows they stand for are not in it", b.in.name, plural(n, "elision line")))
	}
	if opts.Parts&PartObjects != 0 && len(c.Snapshots) > 0 && !c.Snapshots[0].HasObjects() {
		c.Notes = append(c.Notes, fmt.Sprintf("note: %s holds %s", b.in.name, noObjectsNote(b.ObjectFiles)))
	}
	return c, nil
}

// elidedRows counts the elision lines ("...") of a bundle's dumps, which
// the dump parsers skip as the raw route does.
func elidedRows(files map[string][]byte, parts Parts) int {
	n := 0
	for name, b := range files {
		switch base := path.Base(name); base {
		case FilePriorityLevels, FileQueues, FileRequests:
			if !wanted(base, parts) {
				continue
			}
			for _, l := range strings.Split(string(b), "\n") {
				if isElision(strings.TrimSpace(l)) {
					n++
				}
			}
		}
	}
	return n
}

// CaptureFromFiles rebuilds a capture from bundle files.
func CaptureFromFiles(files map[string][]byte, opts CaptureOptions) (*Capture, *Manifest, error) {
	m, err := readManifest(files)
	if err != nil {
		return nil, nil, err
	}
	c, err := captureFrom(&bundleFiles{held: files}, m, opts, nil, false)
	return c, m, err
}

// readManifest decodes a bundle's manifest.
func readManifest(files map[string][]byte) (*Manifest, error) {
	mb, ok := files[manifestFile]
	if !ok {
		return nil, fmt.Errorf("no %s: not a kubectl-apf bundle", manifestFile)
	}
	var m Manifest
	if err := json.Unmarshal(mb, &m); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", manifestFile, err)
	}
	if m.Format != BundleFormat {
		return nil, fmt.Errorf("bundle format %d; this kubectl-apf reads format %d", m.Format, BundleFormat)
	}
	return &m, nil
}

// instanceNames are the files of an instance's directory that its manifest
// entry names: Files, and the scrapes it counts (Scrapes, in a bundle a
// watch is writing) with their .time and .unknown.json where present.
func instanceNames(mi ManifestInstance, f *bundleFiles) []string {
	if mi.Scrapes <= 0 {
		return mi.Files
	}
	names := append([]string(nil), mi.Files...)
	for k := max(mi.FirstScrape, 0); k < mi.Scrapes; k++ {
		names = append(names, MetricsFile(k))
		if !f.has(path.Join(mi.Dir, MetricsFile(k))) {
			break // missing: the capture says so (a manifest's count is no bound)
		}
		for _, opt := range []string{MetricsTimeKey(k), MetricsUnknownKey(k)} {
			if f.has(path.Join(mi.Dir, opt)) {
				names = append(names, opt)
			}
		}
	}
	return names
}

// captureFrom rebuilds a capture from a bundle's files and its manifest m.
// Of each instance's scrapes, it reads those opts asks for (the pair of its
// end, metrics.LatestPair, or every one with AllScrapes), or those pick names by the instance's
// directory, numbered from 0 in the snapshot's Raw; noDumps leaves the
// debug dumps out (they are not of the scrapes picked).
func captureFrom(f *bundleFiles, m *Manifest, opts CaptureOptions, pick map[string][]int, noDumps bool) (*Capture, error) {
	if noDumps {
		opts.Parts &^= PartPriorityLevels | PartQueues | PartRequests
	}
	c := &Capture{Failures: m.Failures}
	for i := range c.Failures {
		c.Failures[i].Err = errors.New(c.Failures[i].Message)
	}
	for _, mi := range m.Instances {
		s := &Snapshot{Instance: mi.Instance, CapturedAt: mi.CapturedAt, FlowcontrolVersion: mi.FlowcontrolVersion, Raw: map[string][]byte{}}
		names := instanceNames(mi, f)
		var kept []string
		for _, name := range names {
			if !f.has(path.Join(mi.Dir, name)) {
				return nil, fmt.Errorf("%s lists %s/%s, which is missing", manifestFile, mi.Dir, name)
			}
			if !strings.HasPrefix(name, "metrics-") && wanted(name, opts.Parts) {
				kept = append(kept, name)
			}
		}
		held, err := f.load(prefixed(mi.Dir, kept))
		if err != nil {
			return nil, err
		}
		for _, name := range kept {
			s.Raw[name] = held[path.Join(mi.Dir, name)]
		}
		if opts.Parts&PartMetrics != 0 {
			ks := scrapeIndexes(names)
			if p, ok := pick[mi.Dir]; ok {
				ks = p
			} else if !opts.AllScrapes && len(ks) > 2 {
				ks = f.latestPair(mi, ks)
			}
			if err := readScrapes(f, mi.Dir, ks, opts.AllScrapes, s); err != nil {
				return nil, err
			}
		}
		if err := s.ParseRaw(); err != nil {
			return nil, fmt.Errorf("%s: %w", mi.Dir, err)
		}
		c.Snapshots = append(c.Snapshots, s)
	}
	return c, nil
}

// readScrapes puts the scrapes ks of the instance directory dir (the
// latest two, or every one with all) in s.Raw, numbered from 0, each with
// its .time and .unknown.json where the bundle holds them.
func readScrapes(f *bundleFiles, dir string, ks []int, all bool, s *Snapshot) error {
	if !all && len(ks) > 2 {
		ks = ks[len(ks)-2:]
	}
	var names []string
	for _, k := range ks {
		names = append(names, MetricsFile(k), MetricsTimeKey(k), MetricsUnknownKey(k))
	}
	files, err := f.load(prefixed(dir, names))
	if err != nil {
		return err
	}
	for n, k := range ks {
		for _, key := range [][2]string{{MetricsFile(k), MetricsFile(n)}, {MetricsTimeKey(k), MetricsTimeKey(n)}, {MetricsUnknownKey(k), MetricsUnknownKey(n)}} {
			if b, ok := files[path.Join(dir, key[0])]; ok {
				s.Raw[key[1]] = b
			}
		}
	}
	return nil
}

// prefixed joins dir to each name.
func prefixed(dir string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = path.Join(dir, n)
	}
	return out
}

func wanted(name string, p Parts) bool {
	switch {
	case name == FileVersion:
		return p&PartVersion != 0
	case name == FileFlowSchemas || name == FilePLCs:
		return p&PartObjects != 0
	case name == FilePriorityLevels:
		return p&PartPriorityLevels != 0
	case name == FileQueues:
		return p&PartQueues != 0
	case name == FileRequests:
		return p&PartRequests != 0
	case strings.HasPrefix(name, "metrics-"):
		return p&PartMetrics != 0
	}
	return true
}

// watchEndNote says that a watch's bundle (more than two scrapes of an
// instance) is shown at its end (CaptureOptions.AtWatchEnd); empty for
// another bundle.
func (b *BundleSource) watchEndNote(parts Parts) string {
	lead, ks := b.longestInstance()
	if len(ks) <= 2 {
		return ""
	}
	at := b.in.bundle.scrapeTimes(lead, ks)
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	i, j := metrics.LatestPair(at)
	var shown []string
	if parts&(PartPriorityLevels|PartQueues|PartRequests) != 0 {
		// a watch that was killed (its .partial directory) holds its
		// start's dumps alone, of the instance's capture time
		if lead.CapturedAt.Before(at[i]) {
			shown = append(shown, fmt.Sprintf("its start's dumps (%s; it ended without taking its end's)", stamp(lead.CapturedAt)))
		} else {
			shown = append(shown, "the dumps taken at its end")
		}
	}
	if parts&PartMetrics != 0 {
		shown = append(shown, fmt.Sprintf("the rates over its last %v of scrapes (%s to %s)", at[j].Sub(at[i]).Round(time.Second/10), stamp(at[i]), stamp(at[j])))
	}
	if len(shown) == 0 {
		return ""
	}
	path := b.Path
	if path == StdinPath {
		path = "-"
	}
	return fmt.Sprintf("note: %s is a watch of %d scrapes of each apiserver, from %s to %s: shown are %s; 'kubectl apf explain 429 --from %s' explains the largest burst of 429s it recorded, and 'kubectl apf top --from %s' in a terminal steps through every scrape",
		b.in.name, len(ks), stamp(at[0]), stamp(at[len(at)-1]), strings.Join(shown, " and "), path, path)
}
