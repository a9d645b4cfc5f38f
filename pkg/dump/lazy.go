package dump

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// heldBodies is how many bytes of scrape bodies a bundle tarball read by
// --from keeps in memory as it is read: beyond it, the bodies are read
// again from the tarball when a capture asks for them. A capture's bundle
// holds two scrapes per instance, about 130 kB each; a day's watch at 5s
// holds 17,280 of them. A variable for the tests.
var heldBodies = 64 << 20

// bundleFiles are the files of a bundle: every file held in memory but the
// scrapes' bodies (metrics-N.txt) that are lazy, read from the bundle
// directory or tarball when a capture asks for them. A command then reads
// the scrapes it uses (the latest two of each instance; simulate, those
// around the window it replays) and not the thousands a watch recorded.
type bundleFiles struct {
	held map[string][]byte
	// lazy are the bodies present in dir or tarball but not held
	lazy map[string]bool
	// gzipped are the lazy bodies of dir a Spool wrote gzipped (as
	// NAME.gz)
	gzipped map[string]bool
	// dir or tarball is where the lazy bodies are read from
	dir, tarball string
}

// isScrapeBody reports whether a bundle file is a scrape's body, the only
// files of a bundle that may be many and large.
func isScrapeBody(name string) bool {
	base := path.Base(name)
	return strings.HasPrefix(base, "metrics-") && strings.HasSuffix(base, ".txt")
}

// has reports whether the bundle holds the file.
func (f *bundleFiles) has(name string) bool {
	_, ok := f.held[name]
	return ok || f.lazy[name]
}

// load returns the named files the bundle holds, reading the lazy ones
// (in one pass over a tarball).
func (f *bundleFiles) load(names []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(names))
	err := f.each(names, func(n string, b []byte) error {
		out[n] = b
		return nil
	})
	return out, err
}

// each calls fn with the named files that the bundle holds, one at a time
// (in one pass over a tarball, in its order), so that a watch's thousands
// of scrapes are read in the memory of one.
func (f *bundleFiles) each(names []string, fn func(name string, b []byte) error) error {
	want := map[string]bool{}
	for _, n := range names {
		if b, ok := f.held[n]; ok {
			if err := fn(n, b); err != nil {
				return err
			}
		} else if f.lazy[n] {
			want[n] = true
		}
	}
	if len(want) == 0 {
		return nil
	}
	if f.dir != "" {
		for _, n := range names {
			if want[n] {
				b, err := f.readDirBody(n)
				if err != nil {
					return err
				}
				if err := fn(n, b); err != nil {
					return err
				}
			}
		}
		return nil
	}
	r, err := os.Open(f.tarball)
	if err != nil {
		return fmt.Errorf("reading bundle: %w", err)
	}
	defer r.Close()
	err = walkTarball(f.tarball, r, func(name string, tr io.Reader) (bool, error) {
		if !want[name] {
			return true, nil
		}
		b, err := readLimited(f.tarball, name, tr)
		if err != nil {
			return false, err
		}
		delete(want, name)
		return len(want) > 0, fn(name, b)
	})
	if err != nil {
		return err
	}
	for n := range want {
		return fmt.Errorf("reading bundle %s: %s is no longer in it", f.tarball, n)
	}
	return nil
}

// readDirBody reads the scrape body n of a bundle directory, unzipped
// when a Spool wrote it gzipped.
func (f *bundleFiles) readDirBody(n string) ([]byte, error) {
	if f.gzipped[n] {
		b, err := gunzipFile(filepath.Join(f.dir, filepath.FromSlash(n)+gzSuffix))
		if err != nil {
			return nil, fmt.Errorf("reading bundle %s: %w", f.dir, err)
		}
		return b, nil
	}
	b, err := readBundleFile(os.DirFS(f.dir), n)
	if err != nil {
		return nil, fmt.Errorf("reading bundle %s: %w", f.dir, err)
	}
	return b, nil
}

// readBundleDir reads a bundle directory: every file but the scrapes'
// bodies, which stay on disk until asked for (gzipped or not).
func readBundleDir(p string) (*bundleFiles, error) {
	f := &bundleFiles{held: map[string][]byte{}, lazy: map[string]bool{}, gzipped: map[string]bool{}, dir: p}
	root := os.DirFS(p)
	err := fs.WalkDir(root, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if isScrapeBody(name) {
			f.lazy[name] = true
			return nil
		}
		if body := strings.TrimSuffix(name, gzSuffix); body != name && isScrapeBody(body) {
			f.lazy[body], f.gzipped[body] = true, true
			return nil
		}
		b, err := readBundleFile(root, name)
		f.held[name] = b
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading bundle %s: %w", p, err)
	}
	return f, nil
}

// readBundleFile reads one file of a bundle directory, at most
// maxBundleFile bytes.
func readBundleFile(root fs.FS, name string) ([]byte, error) {
	info, err := fs.Stat(root, name)
	if err != nil {
		return nil, err
	}
	if info.Size() > maxBundleFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, maxBundleFile)
	}
	return fs.ReadFile(root, name)
}

// readBundleTarball reads a bundle tarball file: every file, but once the
// scrapes' bodies pass heldBodies, none of them, which are read again from
// the tarball when asked for.
func readBundleTarball(p string) (*bundleFiles, error) {
	r, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("reading bundle: %w", err)
	}
	defer r.Close()
	f := &bundleFiles{held: map[string][]byte{}, lazy: map[string]bool{}, tarball: p}
	bodies, spilled := 0, false
	err = walkTarball(p, r, func(name string, tr io.Reader) (bool, error) {
		if spilled && isScrapeBody(name) {
			f.lazy[name] = true
			return true, nil
		}
		b, err := readLimited(p, name, tr)
		if err != nil {
			return false, err
		}
		f.held[name] = b
		if isScrapeBody(name) {
			if bodies += len(b); bodies > heldBodies {
				spilled = true
				for n := range f.held {
					if isScrapeBody(n) {
						delete(f.held, n)
						f.lazy[n] = true
					}
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// walkTarball calls each with every regular file of the gzipped tarball
// named p, by its cleaned name, until each returns false or an error.
func walkTarball(p string, r io.Reader, each func(name string, tr io.Reader) (bool, error)) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("reading bundle %s: not a directory or a .tar.gz: %w", p, err)
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading bundle %s: %w", p, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		more, err := each(path.Clean(strings.TrimPrefix(hdr.Name, "./")), tr)
		if err != nil || !more {
			return err
		}
	}
}

// readLimited reads one file of a tarball, at most maxBundleFile bytes.
func readLimited(p, name string, r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxBundleFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading bundle %s: %s: %w", p, name, err)
	}
	if len(b) > maxBundleFile {
		return nil, fmt.Errorf("reading bundle %s: %s is larger than %d bytes", p, name, maxBundleFile)
	}
	return b, nil
}

// scrapeIndexes returns the k of the names metrics-k.txt, ascending.
func scrapeIndexes(names []string) []int {
	var ks []int
	for _, n := range names {
		if !isScrapeBody(n) {
			continue
		}
		if k, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(n, "metrics-"), ".txt")); err == nil && k >= 0 {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

// scrapeTime is when the k-th scrape of an instance was taken: its .time
// file, else the instance's capture (as ParseRaw reads it).
func scrapeTime(files map[string][]byte, dir string, k int, capturedAt time.Time) time.Time {
	if ts, ok := files[path.Join(dir, MetricsTimeKey(k))]; ok {
		if t, err := time.Parse(time.RFC3339Nano, string(ts)); err == nil {
			return t
		}
	}
	return capturedAt
}

// scrapeTimes are the times of the instance's scrapes ks.
func (f *bundleFiles) scrapeTimes(mi ManifestInstance, ks []int) []time.Time {
	at := make([]time.Time, len(ks))
	for n, k := range ks {
		at[n] = scrapeTime(f.held, mi.Dir, k, mi.CapturedAt)
	}
	return at
}

// latestPair are, of the instance's scrapes ks (more than two), the two
// whose rates stand for its end (metrics.LatestPair).
func (f *bundleFiles) latestPair(mi ManifestInstance, ks []int) []int {
	i, j := metrics.LatestPair(f.scrapeTimes(mi, ks))
	return []int{ks[i], ks[j]}
}

// InstanceScrapes are the scrapes a bundle holds of one apiserver instance
// around a window (BundleSource.ScrapesAround).
type InstanceScrapes struct {
	Instance string
	// Scrapes, parsed and oldest first, each once: the first and the last
	// the instance holds, the latest at or before the window's start (else
	// the first), the earliest at or after its end (else the last), and
	// the earliest and the latest inside it. The pair of scrapes that best
	// brackets the window is among them, and the widest inside it,
	// whatever the bundle holds between.
	Scrapes []*metrics.Scrape
	// Times are the times of every scrape the instance holds, oldest
	// first.
	Times []time.Time
}

// MostScrapes is the most scrapes the bundle holds of one instance (0 for
// a raw input, or one that cannot be read: Capture says why).
func (b *BundleSource) MostScrapes() int {
	if b.load() != nil || b.in.bundle == nil {
		return 0
	}
	_, ks := b.longestInstance()
	return len(ks)
}

// longestInstance is the loaded bundle's instance of the most scrapes (the
// first of a tie), and their indexes.
func (b *BundleSource) longestInstance() (lead ManifestInstance, ks []int) {
	for _, mi := range b.in.manifest.Instances {
		if k := scrapeIndexes(instanceNames(mi, b.in.bundle)); len(k) > len(ks) {
			lead, ks = mi, k
		}
	}
	return lead, ks
}

// ScrapesAround reads the bundle's scrapes of each instance around the
// window [from, to] (InstanceScrapes): a long watch (dump bundle --watch) is
// evidence for any window inside it, and only the scrapes that bracket the
// window, and the widest pair inside it (metrics.Inside), are read and
// parsed; none for a raw input.
func (b *BundleSource) ScrapesAround(from, to time.Time) ([]InstanceScrapes, error) {
	if err := b.load(); err != nil || b.in.bundle == nil {
		return nil, err
	}
	f := b.in.bundle
	var out []InstanceScrapes
	for _, mi := range b.in.manifest.Instances {
		ks := scrapeIndexes(instanceNames(mi, f))
		if len(ks) == 0 {
			continue
		}
		is := InstanceScrapes{Instance: mi.Instance, Times: f.scrapeTimes(mi, ks)}
		i, j := metrics.Bracket(is.Times, from, to)
		picked := []int{0, i, j, len(ks) - 1}
		if a, b, ok := metrics.Inside(is.Times, from, to); ok {
			// and the widest pair inside it, for APF's measure of the
			// executions in the window (simulate); none without a window
			picked = append(picked, a, b)
		}
		slices.Sort(picked)
		picked = slices.Compact(picked)
		var names []string
		for _, n := range picked {
			names = append(names, path.Join(mi.Dir, MetricsFile(ks[n])))
		}
		bodies, err := f.load(names)
		if err != nil {
			return nil, err
		}
		for _, n := range picked {
			k := ks[n]
			sc, err := parseMetricsBody(MetricsFile(k), bodies[path.Join(mi.Dir, MetricsFile(k))], is.Times[n])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", mi.Dir, err)
			}
			if err := setUnknown(sc, f.held, mi.Dir, k); err != nil {
				return nil, fmt.Errorf("%s: %w", mi.Dir, err)
			}
			is.Scrapes = append(is.Scrapes, sc)
		}
		out = append(out, is)
	}
	return out, nil
}

// setUnknown sets what the k-th scrape cannot tell, from its .unknown.json
// when the bundle holds one (as ParseRaw does).
func setUnknown(sc *metrics.Scrape, files map[string][]byte, dir string, k int) error {
	u, ok := files[path.Join(dir, MetricsUnknownKey(k))]
	if !ok {
		return nil
	}
	var levels map[string][]string
	if err := json.Unmarshal(u, &levels); err != nil {
		return fmt.Errorf("%s: %w", MetricsUnknownKey(k), err)
	}
	sc.SetUnknown(levels)
	return nil
}
