package dump

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Spool writes a bundle directory as its captures arrive (dump bundle
// --watch): the start's capture when it is created, then each scrape as
// the instance's next metrics-N file, then the end's capture. It holds no
// capture: each is on disk when its call returns, and the Spool keeps only
// the instances' directories, their files of the start and the number of
// scrapes each holds, so a watch of any length runs in the same memory.
//
// The directory is a bundle at every moment: bundle.json is rewritten
// (atomically, by a rename) after each capture, and counts the scrapes
// (ManifestInstance.Scrapes) rather than listing them, so that rewriting
// it costs the same at the ten-thousandth scrape as at the first. A watch
// that is killed, or a machine that goes down, leaves a directory that
// --from reads with every scrape taken before it. Finish lists every file
// in the manifest, as WriteBundle does, so that the finished bundle reads
// as any other.
type Spool struct {
	dir string
	m   Manifest
	// index of each instance's entry in m.Instances
	index map[string]int
	// unknown are the instances a later capture found that the start's
	// did not: their scrapes are not kept
	unknown map[string]bool
	bytes   int64
	// held are the times and sizes of the scrapes each instance holds,
	// oldest first, to drop them by (SpoolOptions.Keep)
	held [][]heldScrape
	opts SpoolOptions
}

// SpoolOptions are how a Spool writes its scrapes.
type SpoolOptions struct {
	// Compress writes each scrape's body gzipped, as metrics-N.txt.gz (a
	// tenth of its size), the start's among them: the directory of a
	// watch recorded into a tarball, which WriteTarballFrom writes with
	// the bodies as read.
	Compress bool
	// Keep, when positive, makes the spool a flight recorder: after each
	// scrape, an instance's scrapes taken more than Keep before its
	// newest are removed, so that a watch of any length holds the last
	// Keep of them on disk (0: every scrape).
	Keep time.Duration
}

// gzSuffix ends the name of a scrape body a Spool wrote gzipped: the bundle
// lists it under its name without the suffix, and a reader reads it so.
const gzSuffix = ".gz"

// heldScrape is when a scrape a Spool holds was taken, and its bytes.
type heldScrape struct {
	at   time.Time
	size int64
}

// manifestTmp is the name the manifest is written under before it is
// renamed to bundle.json.
const manifestTmp = manifestFile + ".tmp"

// CreateSpool creates dir (it must not exist, or be empty), writes the
// capture of the start into it as a bundle and returns the Spool that
// appends to it. m is the manifest's header (source, redaction, version).
func CreateSpool(dir string, start *Capture, m Manifest, opts SpoolOptions) (*Spool, error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("bundle directory %s exists and is not empty; choose a new path", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("writing bundle: %w", err)
	}
	s := &Spool{dir: dir, m: m, index: map[string]int{}, unknown: map[string]bool{}, opts: opts}
	s.m.Format = BundleFormat
	s.m.Instances = nil
	for i, snap := range start.Snapshots {
		d := fmt.Sprintf("instance-%d", i)
		mi := ManifestInstance{Dir: d, Instance: snap.Instance, CapturedAt: snap.CapturedAt.UTC(), FlowcontrolVersion: snap.FlowcontrolVersion}
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("writing bundle: %w", err)
		}
		s.index[snap.Instance] = i
		s.m.Instances = append(s.m.Instances, mi)
		s.held = append(s.held, nil)
		if err := s.writeFiles(i, snap, false); err != nil {
			return nil, err
		}
		if err := s.writeScrapes(i, snap); err != nil {
			return nil, err
		}
	}
	s.setFailures(start.Failures)
	return s, s.writeManifest(false)
}

// Dir is the spool's directory.
func (s *Spool) Dir() string { return s.dir }

// Size is the bytes of the files written so far.
func (s *Spool) Size() int64 { return s.bytes }

// Scrapes is the fewest scrapes an instance holds.
func (s *Spool) Scrapes() int {
	least := -1
	for _, mi := range s.m.Instances {
		if n := mi.Scrapes - mi.FirstScrape; least < 0 || n < least {
			least = n
		}
	}
	return max(least, 0)
}

// Unknown are the instances that appeared after the start, sorted.
func (s *Spool) Unknown() []string {
	out := make([]string, 0, len(s.unknown))
	for inst := range s.unknown {
		out = append(out, inst)
	}
	sort.Strings(out)
	return out
}

// AddScrapes writes the metrics scrapes of c as each instance's next, and
// the manifest that counts them.
func (s *Spool) AddScrapes(c *Capture) error {
	for _, snap := range c.Snapshots {
		i, ok := s.index[snap.Instance]
		if !ok {
			s.unknown[snap.Instance] = true
			continue
		}
		if err := s.writeScrapes(i, snap); err != nil {
			return err
		}
		if err := s.drop(i); err != nil {
			return err
		}
	}
	return s.writeManifest(false)
}

// drop removes the instance's scrapes taken more than SpoolOptions.Keep
// before its newest, oldest first, once the manifest no longer counts
// them: a reader (or a crash) between the two finds every scrape the
// manifest counts.
func (s *Spool) drop(i int) error {
	h := s.held[i]
	if s.opts.Keep <= 0 || len(h) < 2 {
		return nil
	}
	n := 0
	for n < len(h)-2 && h[len(h)-1].at.Sub(h[n].at) > s.opts.Keep {
		n++
	}
	if n == 0 {
		return nil
	}
	mi := &s.m.Instances[i]
	first := mi.FirstScrape
	mi.FirstScrape += n
	if err := s.writeManifest(false); err != nil {
		return err
	}
	for k := first; k < mi.FirstScrape; k++ {
		for _, name := range []string{MetricsFile(k), MetricsFile(k) + gzSuffix, MetricsTimeKey(k), MetricsUnknownKey(k)} {
			if err := os.Remove(filepath.Join(s.dir, mi.Dir, name)); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("writing bundle: %w", err)
			}
		}
		s.bytes -= h[k-first].size
	}
	s.held[i] = append([]heldScrape(nil), h[n:]...)
	return nil
}

// Finish writes the capture of the end: its objects, version and dumps
// replace the start's (which the caller kept under other names), its
// scrape is each instance's last, its failures join the start's, and the
// manifest lists every file. createdAt stamps the manifest.
func (s *Spool) Finish(end *Capture, createdAt time.Time) error {
	for _, snap := range end.Snapshots {
		i, ok := s.index[snap.Instance]
		if !ok {
			s.unknown[snap.Instance] = true
			continue
		}
		if err := s.writeFiles(i, snap, true); err != nil {
			return err
		}
		if err := s.writeScrapes(i, snap); err != nil {
			return err
		}
		if err := s.drop(i); err != nil {
			return err
		}
		s.m.Instances[i].CapturedAt = snap.CapturedAt.UTC()
	}
	s.setFailures(append(append([]InstanceError(nil), s.m.Failures...), end.Failures...))
	s.m.CreatedAt = createdAt
	return s.writeManifest(true)
}

func (s *Spool) setFailures(f []InstanceError) {
	s.m.Failures = f
	for i := range s.m.Failures {
		s.m.Failures[i].Message = s.m.Failures[i].Error()
	}
}

// writeFiles writes the snapshot's files other than its scrapes; replace
// says the end's replace the start's of the same name.
func (s *Spool) writeFiles(i int, snap *Snapshot, replace bool) error {
	mi := &s.m.Instances[i]
	names := make([]string, 0, len(snap.Raw))
	for name := range snap.Raw {
		if !strings.HasPrefix(name, "metrics-") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if name != path.Base(name) || name == "." || name == ".." {
			return fmt.Errorf("writing bundle: %q is not a file name", name)
		}
		if err := s.write(mi.Dir, name, snap.Raw[name]); err != nil {
			return err
		}
		known := false
		for _, f := range mi.Files {
			known = known || f == name
		}
		if !known {
			mi.Files = append(mi.Files, name)
		}
	}
	if replace && snap.FlowcontrolVersion != "" {
		mi.FlowcontrolVersion = snap.FlowcontrolVersion
	}
	return nil
}

// writeScrapes appends the snapshot's metrics scrapes (metrics-0, -1, ...
// of its Raw, with their times and unknowns) to the instance's.
func (s *Spool) writeScrapes(i int, snap *Snapshot) error {
	mi := &s.m.Instances[i]
	for k := 0; HasMetrics(snap, k); k++ {
		j := mi.Scrapes
		var size int64
		for _, f := range [][2]string{{MetricsFile(k), MetricsFile(j)}, {MetricsTimeKey(k), MetricsTimeKey(j)}, {MetricsUnknownKey(k), MetricsUnknownKey(j)}} {
			b, ok := snap.Raw[f[0]]
			if !ok {
				continue
			}
			name := f[1]
			if s.opts.Compress && name == MetricsFile(j) {
				var err error
				if b, err = gzipped(b); err != nil {
					return fmt.Errorf("writing bundle: %w", err)
				}
				name += gzSuffix
			}
			if err := s.write(mi.Dir, name, b); err != nil {
				return err
			}
			size += int64(len(b))
		}
		s.held[i] = append(s.held[i], heldScrape{scrapeTime(snap.Raw, "", k, snap.CapturedAt), size})
		mi.Scrapes = j + 1
	}
	return nil
}

func (s *Spool) write(dir, name string, b []byte) error {
	if err := os.WriteFile(filepath.Join(s.dir, dir, name), b, 0o644); err != nil {
		return fmt.Errorf("writing bundle: %w", err)
	}
	s.bytes += int64(len(b))
	return nil
}

// writeManifest writes bundle.json by a rename, so that a reader (or a
// crash) sees the old manifest or the new one, never half of one. final
// lists the scrapes' files by name, as WriteBundle does; before it, the
// manifest counts them (a constant size, whatever the watch's length).
func (s *Spool) writeManifest(final bool) error {
	m := s.m
	if final {
		m.Instances = make([]ManifestInstance, len(s.m.Instances))
		for i, mi := range s.m.Instances {
			mi.Files = append([]string(nil), mi.Files...)
			for k := mi.FirstScrape; k < mi.Scrapes; k++ {
				for _, name := range []string{MetricsFile(k), MetricsTimeKey(k), MetricsUnknownKey(k)} {
					_, err := os.Stat(filepath.Join(s.dir, mi.Dir, name))
					if name == MetricsFile(k) && err != nil {
						_, err = os.Stat(filepath.Join(s.dir, mi.Dir, name+gzSuffix))
					}
					if err == nil {
						mi.Files = append(mi.Files, name)
					}
				}
			}
			sort.Strings(mi.Files)
			mi.Scrapes, mi.FirstScrape = 0, 0
			m.Instances[i] = mi
		}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.dir, manifestTmp)
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing bundle: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, manifestFile)); err != nil {
		return fmt.Errorf("writing bundle: %w", err)
	}
	return nil
}

// WriteTarballFrom writes the bundle directory dir as the gzipped tarball
// out, one file at a time (it holds no more than a copy buffer), through a
// temporary file renamed to out when it is whole. modTime stamps the
// entries.
func WriteTarballFrom(dir, out string, modTime time.Time) (err error) {
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("writing bundle: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	add := func(name string) error {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, gzSuffix) && isScrapeBody(strings.TrimSuffix(name, gzSuffix)) {
			// a body the spool gzipped: the tarball holds it as read
			b, err := gunzipFile(p)
			if err != nil {
				return err
			}
			if err := tw.WriteHeader(&tar.Header{Name: strings.TrimSuffix(name, gzSuffix), Mode: 0o644, Size: int64(len(b)), ModTime: modTime, Typeflag: tar.TypeReg}); err != nil {
				return err
			}
			_, err = tw.Write(b)
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		st, err := src.Stat()
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: st.Size(), ModTime: modTime, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = io.Copy(tw, src)
		return err
	}
	wrap := func(err error) error { return fmt.Errorf("writing bundle %s: %w", out, err) }
	if err := add(manifestFile); err != nil {
		return wrap(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return wrap(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		d, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return wrap(err)
		}
		for {
			// a batch at a time: a day's watch holds tens of thousands
			files, rerr := d.ReadDir(1024)
			for _, fe := range files {
				if fe.Type().IsRegular() {
					if err := add(path.Join(e.Name(), fe.Name())); err != nil {
						_ = d.Close()
						return wrap(err)
					}
				}
			}
			if errors.Is(rerr, io.EOF) || (rerr == nil && len(files) == 0) {
				break
			}
			if rerr != nil {
				_ = d.Close()
				return wrap(rerr)
			}
		}
		_ = d.Close()
	}
	if err := tw.Close(); err != nil {
		return wrap(err)
	}
	if err := gz.Close(); err != nil {
		return wrap(err)
	}
	if err := f.Close(); err != nil {
		return wrap(err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return wrap(err)
	}
	return nil
}

// gzipped is b gzipped, fast: a scrape's text shrinks to about a tenth.
func gzipped(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gunzipFile reads the gzipped file p, at most maxBundleFile bytes of it
// unzipped.
func gunzipFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(p), err)
	}
	b, err := io.ReadAll(io.LimitReader(zr, maxBundleFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(p), err)
	}
	if len(b) > maxBundleFile {
		return nil, fmt.Errorf("%s is larger than %d bytes unzipped", filepath.Base(p), maxBundleFile)
	}
	return b, nil
}
