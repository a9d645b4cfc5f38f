// Package promunit writes the input series of promtool rule unit tests
// ("promtool test rules") from real /metrics scrapes, so that rules are
// evaluated on what real apiservers export.
package promunit

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// WriteSeries writes, as promtool input_series entries indented for a
// test's list, one series per flowcontrol sample of after, with the extra
// label matchers (for example `instance="a"`) added: counters (and histogram
// buckets, sums and counts) rise linearly over steps samples from their
// value in before (0 when before is nil or lacks them) to the one in after
// and on at the same pace; gauges keep after's value. It returns the number
// of series.
func WriteSeries(w io.Writer, before, after *metrics.Scrape, steps int, extra string) int {
	n := 0
	line := func(name string, labels []string, from, to float64, counter bool) {
		d := 0.0
		if counter {
			d = to - from
		} else {
			from = to
		}
		ls := append([]string{extra}, labels...)
		fmt.Fprintf(w, "      - series: '%s{%s}'\n        values: '%s+%sx%d'\n", name, strings.Join(ls, ", "),
			num(from), num(d), steps-1)
		n++
	}
	names := make([]string, 0, len(after.Families))
	for name := range after.Families {
		if strings.HasPrefix(name, metrics.FlowcontrolPrefix) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		fam := after.Families[name]
		prev := map[string]*dto.Metric{}
		if before != nil {
			for _, m := range before.Families[name].GetMetric() {
				prev[key(m)] = m
			}
		}
		for _, m := range fam.GetMetric() {
			labels := pairs(m)
			p := prev[key(m)]
			switch fam.GetType() {
			case dto.MetricType_COUNTER:
				line(name, labels, p.GetCounter().GetValue(), m.GetCounter().GetValue(), true)
			case dto.MetricType_GAUGE:
				line(name, labels, 0, m.GetGauge().GetValue(), false)
			case dto.MetricType_HISTOGRAM:
				h, ph := m.GetHistogram(), p.GetHistogram()
				pb := map[float64]uint64{}
				for _, b := range ph.GetBucket() {
					pb[b.GetUpperBound()] = b.GetCumulativeCount()
				}
				for _, b := range h.GetBucket() {
					le := fmt.Sprintf("le=%q", num(b.GetUpperBound()))
					line(name+"_bucket", append(labels, le), float64(pb[b.GetUpperBound()]), float64(b.GetCumulativeCount()), true)
				}
				line(name+"_bucket", append(labels, `le="+Inf"`), float64(ph.GetSampleCount()), float64(h.GetSampleCount()), true)
				line(name+"_sum", labels, ph.GetSampleSum(), h.GetSampleSum(), true)
				line(name+"_count", labels, float64(ph.GetSampleCount()), float64(h.GetSampleCount()), true)
			}
		}
	}
	return n
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func pairs(m *dto.Metric) []string {
	var out []string
	for _, l := range m.GetLabel() {
		out = append(out, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	return out
}

func key(m *dto.Metric) string { return strings.Join(pairs(m), ",") }

// ExpectSamples writes a promql_expr_test entry: expr evaluated at
// evalMinute must give one sample per key of values, labelled with the
// extra matchers and label=key.
func ExpectSamples(w io.Writer, expr string, evalMinute int, extra, label string, values map[string]float64) {
	fmt.Fprintf(w, "      - expr: '%s'\n        eval_time: %dm\n        exp_samples:\n", expr, evalMinute)
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "          - labels: '{%s, %s=%q}'\n            value: %s\n", extra, label, k, num(values[k]))
	}
}
