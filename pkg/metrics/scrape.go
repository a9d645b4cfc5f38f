package metrics

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Scrape is the APF view of one /metrics body, taken at one time.
type Scrape struct {
	// Time is when the body was read (the client's clock); a store's
	// sample is stamped when its scrape started instead.
	Time time.Time
	// Took is how long the scrape took, where known (a store's
	// scrape_duration_seconds): the server gathered the figures at a
	// moment within Took of Time, not at Time itself. 0 where not known.
	Took time.Duration
	// Families holds the kept families by name.
	Families map[string]*dto.MetricFamily
	// Unknown are, by family, the priority levels the family does not
	// speak for: nil for a scrape of one server, whose family has a
	// series of every level that had one (a level without is at 0); a
	// body joined from several inputs (a directory of greps) has families
	// that one input held and levels only another named (Speaks).
	Unknown map[string]map[string]bool
}

// SetUnknown sets Unknown from lists of levels by family.
func (s *Scrape) SetUnknown(levels map[string][]string) {
	s.Unknown = nil
	for f, ls := range levels {
		if s.Unknown == nil {
			s.Unknown = map[string]map[string]bool{}
		}
		s.Unknown[f] = map[string]bool{}
		for _, l := range ls {
			s.Unknown[f][l] = true
		}
	}
}

// Speaks reports whether the scrape tells family's value for level: true
// unless the scrape was joined from inputs of which those holding the
// family do not name the level (Unknown).
func (s *Scrape) Speaks(family, level string) bool {
	return s != nil && !s.Unknown[family][level]
}

// ParseAPF filters body to the APF families (FilterAPF) and parses what is
// kept with expfmt. It returns the filtered text too, which is what a bundle
// stores.
func ParseAPF(r io.Reader, at time.Time) (*Scrape, []byte, error) {
	kept, err := FilterAPF(r)
	if err != nil {
		return nil, nil, err
	}
	s, err := ParseText(kept, at)
	if err != nil {
		return nil, nil, err
	}
	return s, kept, nil
}

// ParseText parses Prometheus text with expfmt, without filtering (the
// text kube-apiserver writes through parseStrict, which reads the same
// families faster and leaves the rest to expfmt). Metric
// names are validated with the legacy scheme: kube-apiserver only emits
// legacy names, and the text format cannot carry quoted UTF-8 names anyway.
func ParseText(body []byte, at time.Time) (s *Scrape, err error) {
	// expfmt v0.70.0 panics on some malformed input (a line starting with
	// "{", found by FuzzFilterAPF); a bad body must be an error, not a crash.
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("parsing metrics: malformed text (%v)", r)
		}
	}()
	if fams, ok := parseStrict(body); ok {
		return &Scrape{Time: at, Families: fams}, nil
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return &Scrape{Time: at, Families: fams}, nil
}

// Sample is one series of a gauge or counter family.
type Sample struct {
	Labels map[string]string
	Value  float64
}

func labelsOf(m *dto.Metric) map[string]string {
	l := make(map[string]string, len(m.GetLabel()))
	for _, lp := range m.GetLabel() {
		l[lp.GetName()] = lp.GetValue()
	}
	return l
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return math.NaN()
}

// Has reports whether the scrape holds the family.
func (s *Scrape) Has(family string) bool {
	if s == nil {
		return false
	}
	_, ok := s.Families[family]
	return ok
}

// Samples returns the gauge, counter or untyped samples of family.
func (s *Scrape) Samples(family string) []Sample {
	if s == nil {
		return nil
	}
	mf := s.Families[family]
	if mf == nil {
		return nil
	}
	out := make([]Sample, 0, len(mf.GetMetric()))
	for _, m := range mf.GetMetric() {
		v := value(m)
		if math.IsNaN(v) {
			continue
		}
		out = append(out, Sample{Labels: labelsOf(m), Value: v})
	}
	return out
}

// SumBy sums a gauge or counter family by the value of one label; label ""
// sums everything under the key "".
func (s *Scrape) SumBy(family, label string) map[string]float64 {
	samples := s.Samples(family)
	if samples == nil {
		return nil
	}
	out := map[string]float64{}
	for _, sm := range samples {
		out[sm.Labels[label]] += sm.Value
	}
	return out
}

// SumBy2 sums a family by two labels, keyed by [2]string{a, b}.
func (s *Scrape) SumBy2(family, a, b string) map[[2]string]float64 {
	samples := s.Samples(family)
	if samples == nil {
		return nil
	}
	out := map[[2]string]float64{}
	for _, sm := range samples {
		out[[2]string{sm.Labels[a], sm.Labels[b]}] += sm.Value
	}
	return out
}

// Bucket is one cumulative histogram bucket.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// Histogram is a cumulative histogram: the merge of the series of a family
// that share a grouping label value.
type Histogram struct {
	Buckets []Bucket // sorted by UpperBound, cumulative; +Inf not included
	Count   float64
	Sum     float64
}

// HistogramsBy merges the histogram series of family by one label. Series
// with different bucket layouts are merged on the union of bounds, which is
// exact for the bounds all series share.
func (s *Scrape) HistogramsBy(family, label string, keep func(map[string]string) bool) map[string]*Histogram {
	if s == nil || s.Families[family] == nil {
		return nil
	}
	out := map[string]*Histogram{}
	for _, m := range s.Families[family].GetMetric() {
		h := m.GetHistogram()
		if h == nil {
			continue
		}
		l := labelsOf(m)
		if keep != nil && !keep(l) {
			continue
		}
		agg := out[l[label]]
		if agg == nil {
			agg = &Histogram{}
			out[l[label]] = agg
		}
		agg.Count += float64(h.GetSampleCount())
		agg.Sum += h.GetSampleSum()
		for _, b := range h.GetBucket() {
			ub := b.GetUpperBound()
			if math.IsInf(ub, +1) {
				continue
			}
			i := sort.Search(len(agg.Buckets), func(i int) bool { return agg.Buckets[i].UpperBound >= ub })
			if i < len(agg.Buckets) && agg.Buckets[i].UpperBound == ub {
				agg.Buckets[i].Count += float64(b.GetCumulativeCount())
				continue
			}
			agg.Buckets = append(agg.Buckets, Bucket{})
			copy(agg.Buckets[i+1:], agg.Buckets[i:])
			agg.Buckets[i] = Bucket{UpperBound: ub, Count: float64(b.GetCumulativeCount())}
		}
	}
	return out
}

// Sub returns h - prev: the observations made between two scrapes. A counter
// reset (a count going down, as after an apiserver restart) yields h itself,
// as Prometheus' rate() treats resets.
func (h *Histogram) Sub(prev *Histogram) *Histogram {
	if prev == nil || h.Count < prev.Count {
		return h
	}
	d := &Histogram{Count: h.Count - prev.Count, Sum: h.Sum - prev.Sum}
	for _, b := range h.Buckets {
		pc := 0.0
		for _, pb := range prev.Buckets {
			if pb.UpperBound == b.UpperBound {
				pc = pb.Count
			}
		}
		if b.Count < pc {
			return h
		}
		d.Buckets = append(d.Buckets, Bucket{UpperBound: b.UpperBound, Count: b.Count - pc})
	}
	return d
}

// Quantile estimates the q-quantile (0 <= q <= 1) as Prometheus'
// histogram_quantile does: linear interpolation inside the bucket holding the
// rank, the lower bound of the first bucket taken as 0 (when positive), and
// the highest finite bound returned when the rank falls in the +Inf bucket.
// It returns NaN for an empty histogram.
func (h *Histogram) Quantile(q float64) float64 {
	if h == nil || h.Count == 0 || math.IsNaN(q) {
		return math.NaN()
	}
	if q < 0 {
		return math.Inf(-1)
	}
	if q > 1 {
		return math.Inf(+1)
	}
	rank := q * h.Count
	prevBound, prevCount := 0.0, 0.0
	for i, b := range h.Buckets {
		if b.Count >= rank {
			if i == 0 && b.UpperBound <= 0 {
				return b.UpperBound
			}
			if b.Count == prevCount {
				return b.UpperBound
			}
			return prevBound + (b.UpperBound-prevBound)*(rank-prevCount)/(b.Count-prevCount)
		}
		prevBound, prevCount = b.UpperBound, b.Count
	}
	// The rank is in the +Inf bucket.
	if len(h.Buckets) == 0 {
		return math.NaN()
	}
	return h.Buckets[len(h.Buckets)-1].UpperBound
}

// Rate is the per-second increase of a counter between two values, with a
// reset (cur < prev) counted from zero. It returns NaN when the interval is
// not positive.
func Rate(prev, cur float64, interval time.Duration) float64 {
	if interval <= 0 {
		return math.NaN()
	}
	inc := cur - prev
	if cur < prev {
		inc = cur
	}
	return inc / interval.Seconds()
}

// Inside are the indexes of the scrapes taken at times (oldest first)
// that lie widest inside [from, to]: the earliest at or after from and
// the latest at or before to; ok is false where fewer than two do. An
// apiserver's counters between them count only what happened inside the
// window: simulate reads APF's executions between such a pair, so that a
// long bundle's many scrapes measure any window cut inside them.
func Inside(times []time.Time, from, to time.Time) (i, j int, ok bool) {
	i, j = -1, -1
	for n, t := range times {
		if i < 0 && !t.Before(from) {
			i = n
		}
		if !t.After(to) {
			j = n
		}
	}
	return i, j, i >= 0 && j > i
}

// MedianGap is the median time between consecutive scrapes taken at times
// (oldest first), to 10 ms (a recorder's jitter of a few milliseconds is
// not its interval); 0 for fewer than three scrapes, whose one or two gaps
// are the moments a capture was taken, not an interval.
func MedianGap(times []time.Time) time.Duration {
	if len(times) < 3 {
		return 0
	}
	gaps := make([]time.Duration, 0, len(times)-1)
	for i := 1; i < len(times); i++ {
		gaps = append(gaps, times[i].Sub(times[i-1]))
	}
	slices.Sort(gaps)
	return gaps[len(gaps)/2].Round(10 * time.Millisecond)
}

// LatestPair are the indexes of the scrapes taken at times (oldest first)
// whose rates stand for the end of a watch of more than two: the last, and
// the latest before it at least half the watch's median interval earlier
// (PairStart). A watch's last scrape comes with its end's dumps, a few
// milliseconds after the last of its interval: rates over that gap are
// noise. For two scrapes or fewer, the latest two.
func LatestPair(times []time.Time) (i, j int) {
	j = len(times) - 1
	return PairStart(times, j, MedianGap(times)/2), j
}

// PairStart is the index of the scrape whose rates up to the j-th (j > 0)
// stand for that moment: the latest at least minGap before it, else the
// one just before it.
func PairStart(times []time.Time, j int, minGap time.Duration) int {
	for k := j - 1; k >= 0; k-- {
		if times[j].Sub(times[k]) >= minGap {
			return k
		}
	}
	return max(j-1, 0)
}

// Bracket are the indexes of the scrapes taken at times (oldest first) that
// best bracket [from, to]: the latest at or before from, else the first;
// the earliest at or after to, else the last. simulate reads its CPU
// evidence between such a pair, and a long bundle reads only them.
func Bracket(times []time.Time, from, to time.Time) (i, j int) {
	i, j = 0, len(times)-1
	for n, t := range times {
		if !t.After(from) {
			i = n
		}
	}
	for n := len(times) - 1; n >= 0; n-- {
		if !times[n].Before(to) {
			j = n
		}
	}
	return i, j
}
