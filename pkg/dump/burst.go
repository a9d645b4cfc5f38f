package dump

import (
	"fmt"
	"path"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// burst is a run of scrapes of one instance between which APF rejected
// requests: from its scrape at from to its scrape at to (indexes into the
// instance's scrapes), count rejections.
type burst struct {
	from, to int
	count    float64
}

// rejectedAt are the rejections APF had counted at each of an instance's
// scrapes (every level and reason), oldest first.
func (f *bundleFiles) rejectedAt(mi ManifestInstance, ks []int) ([]float64, []time.Time, error) {
	at := f.scrapeTimes(mi, ks)
	index := map[string]int{}
	var names []string
	for n, k := range ks {
		name := path.Join(mi.Dir, MetricsFile(k))
		index[name] = n
		names = append(names, name)
	}
	rejected := make([]float64, len(ks))
	err := f.each(names, func(name string, b []byte) error {
		n := index[name]
		sc, err := parseMetricsBody(path.Base(name), b, at[n])
		if err != nil {
			return fmt.Errorf("%s: %w", mi.Dir, err)
		}
		for _, v := range sc.SumBy(metrics.RejectedRequestsTotal, "priority_level") {
			rejected[n] += v
		}
		return nil
	})
	return rejected, at, err
}

// burstGap ends a burst of rejections, as explain 429 --workload's default
// --incident-gap ends an incident: 10s without a 429.
const burstGap = 10 * time.Second

// bursts are the runs of scrapes between which the rejection counter rose
// (a counter that fell restarted: its value is what it counted since),
// those at most burstGap apart one run.
func bursts(rejected []float64, at []time.Time) []burst {
	var out []burst
	for n := 1; n < len(rejected); n++ {
		d := rejected[n] - rejected[n-1]
		if d < 0 {
			d = rejected[n]
		}
		if d <= 0 {
			continue
		}
		if k := len(out) - 1; k >= 0 && at[n-1].Sub(at[out[k].to]) <= burstGap {
			out[k].to, out[k].count = n, out[k].count+d
			continue
		}
		out = append(out, burst{from: n - 1, to: n, count: d})
	}
	return out
}

// largestBurst chooses, for a bundle whose instances hold more than two
// scrapes (dump bundle --watch), the scrapes of each instance around a
// burst of rejections (CaptureOptions.LargestBurst), by instance directory,
// with the note that says so: the burst the watch ends in, when one of its
// instances still rejects at its end and did before its last scrape (atEnd:
// the end's dumps are of it), else the largest burst any instance
// recorded; nil when the latest two are kept.
func (f *bundleFiles) largestBurst(m *Manifest, name string) (pick map[string][]int, note string, atEnd bool, err error) {
	type series struct {
		mi ManifestInstance
		ks []int
		at []time.Time
		bs []burst
	}
	var all []series
	long := false
	for _, mi := range m.Instances {
		ks := scrapeIndexes(instanceNames(mi, f))
		long = long || len(ks) > 2
		all = append(all, series{mi: mi, ks: ks})
	}
	if !long {
		return nil, "", false, nil
	}
	var best *burst
	var bestAt []time.Time
	count := 0
	for i := range all {
		s := &all[i]
		if len(s.ks) < 2 {
			continue
		}
		rejected, at, err := f.rejectedAt(s.mi, s.ks)
		if err != nil {
			return nil, "", false, err
		}
		s.at, s.bs = at, bursts(rejected, at)
		count += len(s.bs)
		for b := range s.bs {
			ends := s.bs[b].to == len(s.ks)-1
			switch {
			case ends && !atEnd, ends && at[s.bs[b].from].Before(bestAt[best.from]):
				// the burst the watch ends in, from its earliest start
				best, bestAt, atEnd = &s.bs[b], at, true
			case !atEnd && (best == nil || s.bs[b].count > best.count):
				best, bestAt = &s.bs[b], at
			}
		}
	}
	if best == nil || atEnd && best.from == best.to-1 && best.to == len(bestAt)-1 {
		// none, or only between the latest two: they explain it
		return nil, "", false, nil
	}
	from, to := bestAt[best.from], bestAt[best.to]
	pick = map[string][]int{}
	scrapes := 0
	for _, s := range all {
		scrapes = max(scrapes, len(s.ks))
		if len(s.ks) < 2 {
			continue
		}
		i, j := metrics.Bracket(s.at, from, to)
		if atEnd {
			j = len(s.ks) - 1
		}
		pick[s.mi.Dir] = []int{s.ks[min(i, len(s.ks)-2)], s.ks[min(max(j, i+1), len(s.ks)-1)]}
	}
	span := fmt.Sprintf("%.0f 429s between the scrapes at %s and %s (%v)", best.count, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), to.Sub(from).Round(time.Second))
	if atEnd {
		return pick, fmt.Sprintf("note: %s holds %d scrapes of each apiserver, and its latest ones show 429s from APF: explained is the burst it ends in, %s, from the scrapes around it", name, scrapes, span), true, nil
	}
	which := "the burst of 429s it recorded"
	if count > 1 {
		which = fmt.Sprintf("the largest of the %d bursts of 429s it recorded", count)
	}
	return pick, fmt.Sprintf("note: %s holds %d scrapes of each apiserver, and its latest two show no 429 from APF: explained is %s, %s; its debug dumps, of the watch's start and end, are left out", name, scrapes, which, span), false, nil
}
