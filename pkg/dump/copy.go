package dump

import (
	"context"
	"fmt"
	"os"
	"time"
)

// copyBatch is how many scrapes CopyWatch reads at once: about 65 MB of
// a real watch's.
const copyBatch = 512

// CopyWatch writes the bundle of a watch (a BundleSource that holds more
// than two scrapes of an instance) again as to, redacted by red when not
// nil, through a Spool: the objects, version and dumps first, then each
// scrape, one at a time, so that a watch of any length is copied in the
// memory of one scrape (dump bundle --from WATCH --redact). m is the new
// manifest's header; createdAt stamps it.
func CopyWatch(ctx context.Context, b *BundleSource, to string, red *Redactor, m Manifest, createdAt time.Time) error {
	start, err := b.Capture(ctx, CaptureOptions{Parts: PartAll &^ PartMetrics})
	if err != nil {
		return err
	}
	if red != nil {
		if err := red.RedactCapture(start); err != nil {
			return err
		}
	}
	dir, tarball := to, IsTarball(to)
	if tarball {
		dir = to + PartialSuffix
		if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
			return fmt.Errorf("%s exists; move it away or choose another --to", dir)
		}
	}
	sp, err := CreateSpool(dir, start, m, SpoolOptions{Compress: tarball})
	if err != nil {
		return err
	}
	f := b.in.bundle
	for i, mi := range b.in.manifest.Instances {
		// in order, copyBatch at a time (a pass over a tarball each)
		for ks := scrapeIndexes(instanceNames(mi, f)); len(ks) > 0; {
			batch := ks[:min(copyBatch, len(ks))]
			ks = ks[len(batch):]
			s := &Snapshot{Instance: start.Snapshots[i].Instance, Raw: map[string][]byte{}}
			if err := readScrapes(f, mi.Dir, batch, true, s); err != nil {
				return fmt.Errorf("%w (the copy so far is in %s)", err, dir)
			}
			if err := sp.AddScrapes(&Capture{Snapshots: []*Snapshot{s}}); err != nil {
				return fmt.Errorf("%w (the copy so far is in %s)", err, dir)
			}
		}
	}
	if err := sp.Finish(&Capture{}, createdAt); err != nil {
		return err
	}
	if tarball {
		if err := WriteTarballFrom(dir, to, createdAt); err != nil {
			return fmt.Errorf("%w (the bundle is whole in %s)", err, dir)
		}
		return os.RemoveAll(dir)
	}
	return nil
}
