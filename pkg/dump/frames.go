package dump

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// WatchFrame is one step of a watch's bundle played back by the live view
// (top --from): the files of a bundle that holds, of each instance, two
// consecutive scrapes of the watch (their rates are the step's) and the
// objects of its end, and the time of the second scrape.
type WatchFrame struct {
	At    time.Time
	Files map[string][]byte
}

// maxFrameBodies bounds the bytes of scrapes the frames of a watch hold
// (they share each body): a longer watch is played back over the part of
// it around its largest burst of 429s, else its end. A variable for the
// tests.
var maxFrameBodies = 256 << 20

// WatchFrames are the steps of a bundle that holds more than two scrapes of
// an instance (dump bundle --watch), oldest first, one per scrape of its
// first instance after the first (the others' pair is their latest scrapes
// at that time), with a note when only a part of the watch fits in
// maxFrameBodies; none for another input.
func (b *BundleSource) WatchFrames() ([]WatchFrame, string, error) {
	if err := b.load(); err != nil {
		return nil, "", err
	}
	if b.MostScrapes() <= 2 {
		return nil, "", nil
	}
	f, m := b.in.bundle, b.in.manifest
	type inst struct {
		mi ManifestInstance
		ks []int
		at []time.Time
		// half is half the median interval of its scrapes
		half time.Duration
	}
	var insts []inst
	for _, mi := range m.Instances {
		ks := scrapeIndexes(instanceNames(mi, f))
		if len(ks) < 2 {
			continue
		}
		at := f.scrapeTimes(mi, ks)
		insts = append(insts, inst{mi: mi, ks: ks, at: at, half: metrics.MedianGap(at) / 2})
	}
	if len(insts) == 0 {
		return nil, "", nil
	}
	lead := insts[0]
	// the steps to play: every one, else those around the largest burst
	// (or the end) that fit
	from, to := 1, len(lead.ks)-1
	note := ""
	// a step adds a scrape of each instance: about 130 kB of a real
	// /metrics' families a bundle keeps, counted at 160
	if fit := max(maxFrameBodies/(len(insts)*160<<10), 2); to-from+1 > fit {
		centre := to
		if pick, _, _, err := f.largestBurst(m, b.in.name); err == nil && pick != nil {
			centre = indexOf(lead.ks, pick[lead.mi.Dir][1])
		}
		from = max(1, centre-fit/2)
		to = min(len(lead.ks)-1, from+fit-1)
		from = max(1, to-fit+1)
		note = fmt.Sprintf("note: %s holds %d scrapes; played back are the %d from %s to %s, around its largest burst of 429s (else its end)",
			b.in.name, len(lead.ks), to-from+1, lead.at[from-1].UTC().Format(time.RFC3339), lead.at[to].UTC().Format(time.RFC3339))
	}
	// each step's pair of every instance, and the bodies they read
	pairs := make([][][2]int, to-from+1)
	var names []string
	seen := map[string]bool{}
	for s := range pairs {
		at := lead.at[from+s]
		for _, it := range insts {
			i, _ := metrics.Bracket(it.at, at, at)
			// the pair ending at its latest scrape at the step, from one
			// at least half an interval before (not the watch's end's,
			// milliseconds after its last)
			j := max(i, 1)
			k0 := metrics.PairStart(it.at, j, it.half)
			pairs[s] = append(pairs[s], [2]int{it.ks[k0], it.ks[j]})
			for _, k := range []int{it.ks[k0], it.ks[j]} {
				if n := path.Join(it.mi.Dir, MetricsFile(k)); !seen[n] {
					seen[n] = true
					names = append(names, n)
				}
			}
		}
	}
	bodies, err := f.load(names)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", b.in.name, err)
	}
	frames := make([]WatchFrame, len(pairs))
	for s, ps := range pairs {
		fm := Manifest{Format: BundleFormat, CreatedAt: lead.at[from+s], Source: m.Source, Redacted: m.Redacted, ToolVersion: m.ToolVersion}
		files := map[string][]byte{}
		for i, it := range insts {
			mi := ManifestInstance{Dir: it.mi.Dir, Instance: it.mi.Instance, CapturedAt: lead.at[from+s], FlowcontrolVersion: it.mi.FlowcontrolVersion}
			for _, name := range it.mi.Files {
				if !strings.HasPrefix(name, "metrics-") && !strings.HasPrefix(name, "dump_") && !strings.HasPrefix(name, StartDumpPrefix) {
					files[path.Join(mi.Dir, name)] = f.held[path.Join(mi.Dir, name)]
					mi.Files = append(mi.Files, name)
				}
			}
			for n, k := range ps[i] {
				files[path.Join(mi.Dir, MetricsFile(n))] = bodies[path.Join(mi.Dir, MetricsFile(k))]
				mi.Files = append(mi.Files, MetricsFile(n))
				if ts, ok := f.held[path.Join(mi.Dir, MetricsTimeKey(k))]; ok {
					files[path.Join(mi.Dir, MetricsTimeKey(n))] = ts
					mi.Files = append(mi.Files, MetricsTimeKey(n))
				}
			}
			fm.Instances = append(fm.Instances, mi)
		}
		mb, err := json.Marshal(fm)
		if err != nil {
			return nil, "", err
		}
		files[manifestFile] = mb
		frames[s] = WatchFrame{At: lead.at[from+s], Files: files}
	}
	return frames, note, nil
}

// indexOf is the index of k in ks, else the last.
func indexOf(ks []int, k int) int {
	for n, v := range ks {
		if v == k {
			return n
		}
	}
	return len(ks) - 1
}
