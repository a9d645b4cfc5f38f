package history

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// RawQuerier fetches the raw samples of a series selector over [start,
// end] (a range-vector instant query, which Prometheus, Thanos, Mimir and
// VictoriaMetrics answer with the samples as scraped). pkg/promfetch
// implements it.
type RawQuerier interface {
	RawSamples(ctx context.Context, selector string, start, end time.Time) ([]Series, error)
}

// evidenceCounters and evidenceGauges are the series of the CPU evidence
// simulate reads from a scrape pair (metrics.CPUUseBetween,
// metrics.GCActivityBetween): the process's CPU, the Go runtime's garbage
// collector and GOMAXPROCS, and APF's own counters; the scheduler's
// latency histogram is read beside them (evidenceHistogram).
var (
	evidenceCounters = []string{metrics.FamilyProcessCPU, metrics.FamilyGCCycles, metrics.FamilyGCMarkAssistCPU,
		metrics.FamilyGCMarkDedicated, metrics.FamilyGCMarkIdleCPU, metrics.DispatchedRequestsTotal, metrics.RejectedRequestsTotal}
	evidenceGauges    = []string{metrics.FamilyGOMAXPROCS}
	evidenceHistogram = metrics.FamilySchedLatencies
	// evidenceSums are histograms read by their sum and count alone: the
	// executions APF measured per level (metrics.ExecutionsBetween)
	evidenceSums = []string{metrics.RequestExecutionSeconds}
)

// scrapeDuration is the series a Prometheus (or VictoriaMetrics) writes of
// each scrape, how long it took, stamped like its samples when it started:
// the server gathered them within it (Scrape.Took).
const scrapeDuration = "scrape_duration_seconds"

// InstanceEvidence is what a store holds of one apiserver instance around
// a window: the samples of the scrape at or before its start (else the
// first inside it), of the scrape at or after its end (else the last
// inside it) and of the widest pair of scrapes inside it (metrics.Inside,
// where two are), each made into a metrics.Scrape of the evidence's
// families, oldest first, each once; and the instance's scrape interval in
// the store (the median time between its samples around the window).
type InstanceEvidence struct {
	Instance string
	Scrapes  []*metrics.Scrape
	Interval time.Duration
}

// Evidence reads, for each apiserver instance the query selects, the
// store's two scrapes that bracket [from, to] and the two widest inside it
// (looking up to lookback
// beyond either end), with the samples of every family of the CPU
// evidence, at the store's resolution: the samples as scraped, not a
// rate the store computed. An instance without process_cpu_seconds_total
// around the window is left out.
func Evidence(ctx context.Context, q RawQuerier, query Query, from, to time.Time, lookback time.Duration) ([]InstanceEvidence, error) {
	if lookback <= 0 {
		lookback = 10 * time.Minute
	}
	inst := query.instance()
	// the scrape times, from the one series every scrape has
	times, err := q.RawSamples(ctx, query.sel(metrics.FamilyProcessCPU), from.Add(-lookback), to.Add(lookback))
	if err != nil {
		return nil, fmt.Errorf("reading %s around %s: %w", metrics.FamilyProcessCPU, from.UTC().Format(time.RFC3339), err)
	}
	type pick struct {
		ev InstanceEvidence
		// at are the scrapes' times read, oldest first: the pair that
		// brackets the window, and the widest pair inside it
		at []time.Time
	}
	picks := map[string]*pick{}
	var names []string
	for _, s := range times {
		name := s.Labels[inst]
		if len(s.Points) == 0 || picks[name] != nil {
			continue
		}
		pts := s.Points
		ts := make([]time.Time, len(pts))
		for i, p := range pts {
			ts[i] = p.T
		}
		gaps := make([]time.Duration, 0, len(pts))
		for i := 1; i < len(ts); i++ {
			gaps = append(gaps, ts[i].Sub(ts[i-1]))
		}
		sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
		// the pair that brackets the window, as a bundle's is chosen
		i, j := metrics.Bracket(ts, from, to)
		at := []time.Time{ts[i], ts[j]}
		if a, b, ok := metrics.Inside(ts, from, to); ok {
			at = append(at, ts[a], ts[b])
		}
		slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
		at = slices.CompactFunc(at, func(a, b time.Time) bool { return a.Equal(b) })
		p := &pick{ev: InstanceEvidence{Instance: name}, at: at}
		if len(gaps) > 0 {
			// the store's jitter of a few milliseconds is not the interval
			p.ev.Interval = gaps[len(gaps)/2].Round(10 * time.Millisecond)
		}
		picks[name] = p
		names = append(names, name)
	}
	sort.Strings(names)
	// every family of the scrapes picked, by time (instances scraped at
	// the same moment share a query)
	names2 := append(append(append([]string{}, evidenceCounters...), evidenceGauges...),
		evidenceHistogram+"_bucket", evidenceHistogram+"_sum", evidenceHistogram+"_count", scrapeDuration)
	for _, f := range evidenceSums {
		names2 = append(names2, f+"_sum", f+"_count")
	}
	m := []string{`__name__=~"` + strings.Join(names2, "|") + `"`}
	if query.Selector != "" {
		m = append(m, query.Selector)
	}
	sel := "{" + strings.Join(m, ",") + "}"
	answers := map[int64][]Series{}
	for _, name := range names {
		for _, at := range picks[name].at {
			k := at.UnixMilli()
			if _, ok := answers[k]; ok {
				continue
			}
			ss, err := q.RawSamples(ctx, sel, at.Add(-time.Millisecond), at)
			if err != nil {
				return nil, fmt.Errorf("reading the CPU evidence at %s: %w", at.UTC().Format(time.RFC3339Nano), err)
			}
			answers[k] = ss
		}
	}
	out := make([]InstanceEvidence, 0, len(names))
	for _, name := range names {
		p := picks[name]
		for _, at := range p.at {
			p.ev.Scrapes = append(p.ev.Scrapes, evidenceScrape(answers[at.UnixMilli()], inst, name, at))
		}
		out = append(out, p.ev)
	}
	return out, nil
}

// evidenceScrape makes the samples of instance at t, among ss, into a
// scrape of the evidence's families.
func evidenceScrape(ss []Series, instLabel, instance string, t time.Time) *metrics.Scrape {
	sc := &metrics.Scrape{Time: t.UTC(), Families: map[string]*dto.MetricFamily{}}
	// a histogram's series by family and labels (but le), in the order
	// first met
	type histKey struct{ family, labels string }
	hists := map[histKey]*dto.Metric{}
	var histOrder []histKey
	hist := func(family string, labels map[string]string) *dto.Histogram {
		var parts []string
		var pairs []*dto.LabelPair
		for _, k := range sortedKeys(labels) {
			if k != "__name__" && k != "le" && k != instLabel {
				parts = append(parts, k+"="+labels[k])
				pairs = append(pairs, &dto.LabelPair{Name: proto.String(k), Value: proto.String(labels[k])})
			}
		}
		k := histKey{family, strings.Join(parts, ",")}
		m := hists[k]
		if m == nil {
			m = &dto.Metric{Label: pairs, Histogram: &dto.Histogram{SampleCount: proto.Uint64(0), SampleSum: proto.Float64(0)}}
			hists[k] = m
			histOrder = append(histOrder, k)
		}
		return m.Histogram
	}
	sumFamily := func(name string) (family, part string) {
		for _, f := range evidenceSums {
			if rest, ok := strings.CutPrefix(name, f); ok && (rest == "_sum" || rest == "_count") {
				return f, rest
			}
		}
		return "", ""
	}
	for _, s := range ss {
		if s.Labels[instLabel] != instance {
			continue
		}
		v := math.NaN()
		for _, p := range s.Points {
			if p.T.Equal(t) {
				v = p.V
			}
		}
		if math.IsNaN(v) {
			continue
		}
		name := s.Labels["__name__"]
		sf, part := sumFamily(name)
		switch {
		case name == scrapeDuration:
			// the store's own series of the scrape: not a family of the
			// server's
			if v > 0 {
				sc.Took = time.Duration(v * float64(time.Second))
			}
		case name == evidenceHistogram+"_bucket":
			le, err := strconv.ParseFloat(s.Labels["le"], 64)
			if err != nil || math.IsInf(le, 1) {
				continue
			}
			h := hist(evidenceHistogram, s.Labels)
			h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(le), CumulativeCount: proto.Uint64(uint64(math.Max(0, v)))})
		case name == evidenceHistogram+"_sum":
			hist(evidenceHistogram, s.Labels).SampleSum = proto.Float64(v)
		case name == evidenceHistogram+"_count":
			hist(evidenceHistogram, s.Labels).SampleCount = proto.Uint64(uint64(math.Max(0, v)))
		case part == "_sum":
			hist(sf, s.Labels).SampleSum = proto.Float64(v)
		case part == "_count":
			hist(sf, s.Labels).SampleCount = proto.Uint64(uint64(math.Max(0, v)))
		default:
			typ := dto.MetricType_COUNTER
			for _, g := range evidenceGauges {
				if g == name {
					typ = dto.MetricType_GAUGE
				}
			}
			var labels []*dto.LabelPair
			for _, k := range sortedKeys(s.Labels) {
				if k != "__name__" {
					labels = append(labels, &dto.LabelPair{Name: proto.String(k), Value: proto.String(s.Labels[k])})
				}
			}
			mm := &dto.Metric{Label: labels}
			if typ == dto.MetricType_GAUGE {
				mm.Gauge = &dto.Gauge{Value: proto.Float64(v)}
			} else {
				mm.Counter = &dto.Counter{Value: proto.Float64(v)}
			}
			f := sc.Families[name]
			if f == nil {
				f = &dto.MetricFamily{Name: proto.String(name), Type: typ.Enum()}
				sc.Families[name] = f
			}
			f.Metric = append(f.Metric, mm)
		}
	}
	for _, k := range histOrder {
		m := hists[k]
		h := m.Histogram
		sort.Slice(h.Bucket, func(i, j int) bool { return h.Bucket[i].GetUpperBound() < h.Bucket[j].GetUpperBound() })
		f := sc.Families[k.family]
		if f == nil {
			f = &dto.MetricFamily{Name: proto.String(k.family), Type: dto.MetricType_HISTOGRAM.Enum()}
			sc.Families[k.family] = f
		}
		f.Metric = append(f.Metric, m)
	}
	return sc
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
