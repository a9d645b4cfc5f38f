package metrics

import (
	"bytes"
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// TestNativeHistogramsCountedOnce: Kubernetes 1.36 can give its histograms
// native buckets beside the classic ones (behind a feature gate). kubectl-apf
// asks /metrics for the text format (text/plain;version=0.0.4), in which a
// native histogram has no buckets of its own: a histogram with both shows its
// classic buckets once, and a native-only one shows only its count, sum and
// +Inf bucket. Each is counted once, whether read from the text or from the
// protobuf a store scrapes (one dto.Histogram holding both kinds of bucket),
// and a native-only histogram's quantile is absent (NaN), never made up.
func TestNativeHistogramsCountedOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	both := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: RequestWaitDurationSecond, Help: "h",
		Buckets: []float64{0.1, 1, 10}, NativeHistogramBucketFactor: 1.1}, []string{"priority_level", "execute"})
	native := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: FlowcontrolPrefix + "request_execution_seconds", Help: "h",
		NativeHistogramBucketFactor: 1.1}, []string{"priority_level"})
	limit := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NominalLimitSeats, Help: "h"}, []string{"priority_level"})
	limit.WithLabelValues("a").Set(10)
	reg.MustRegister(both, native, limit)
	for i := 0; i < 90; i++ {
		both.WithLabelValues("a", "true").Observe(0.05)
		native.WithLabelValues("a").Observe(0.05)
	}
	for i := 0; i < 10; i++ {
		both.WithLabelValues("a", "false").Observe(5)
		native.WithLabelValues("a").Observe(5)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	if h := byName[RequestWaitDurationSecond].GetMetric()[0].GetHistogram(); len(h.GetPositiveSpan()) == 0 || len(h.GetBucket()) == 0 {
		t.Fatalf("the scrape does not hold both kinds of bucket: %v", h)
	}
	var text bytes.Buffer
	enc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	fromText, err := ParseText(text.Bytes(), t0)
	if err != nil {
		t.Fatal(err)
	}
	fromProto := &Scrape{Time: t0, Families: byName}
	for name, s := range map[string]*Scrape{"text": fromText, "protobuf": fromProto} {
		h := s.HistogramsBy(RequestWaitDurationSecond, "priority_level", nil)["a"]
		if h == nil || h.Count != 100 || math.Abs(h.Sum-(90*0.05+10*5)) > 1e-9 || len(h.Buckets) != 3 || h.Buckets[0].Count != 90 {
			t.Errorf("%s: classic and native: %+v, want 100 observations once, 90 under 0.1", name, h)
		}
		// The p99 lies in the (1, 10] bucket: 1 + 9*(99-90)/10.
		if q := h.Quantile(0.99); math.Abs(q-9.1) > 1e-9 {
			t.Errorf("%s: p99 %v, want 9.1", name, q)
		}
		n := s.HistogramsBy(FlowcontrolPrefix+"request_execution_seconds", "priority_level", nil)["a"]
		if n == nil || n.Count != 100 || len(n.Buckets) != 0 || !math.IsNaN(n.Quantile(0.99)) {
			t.Errorf("%s: native only: %+v, want 100 observations, no bucket and no quantile", name, n)
		}
	}
	// The levels' wait p99 is read from the same histograms: once.
	levels := Levels(nil, fromText)
	if len(levels) != 1 || levels[0].Name != "a" || math.Abs(levels[0].WaitP99-9.1) > 1e-9 {
		t.Errorf("levels %+v, want a with a wait p99 of 9.1", levels)
	}
}
