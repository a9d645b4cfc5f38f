package history

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// Label names of the flowcontrol families (k8s.io/apiserver
// pkg/util/flowcontrol/metrics/metrics.go); the same from 1.20 to 1.37.
const (
	LabelLevel  = "priority_level"
	LabelSchema = "flow_schema"
	LabelReason = "reason"
	// LabelSeries tags each part of a query that asks several things at
	// once, so that one request answers them all.
	LabelSeries = "apf_series"
)

// Family names queried besides those of pkg/metrics.
const (
	familyLowerLimit  = metrics.LowerLimitSeats
	familyUpperLimit  = metrics.UpperLimitSeats
	familyDemandHW    = metrics.FlowcontrolPrefix + "demand_seats_high_watermark"
	familyDemandSmth  = metrics.FlowcontrolPrefix + "demand_seats_smoothed"
	familyQueueLength = metrics.FlowcontrolPrefix + "request_queue_length_after_enqueue"
)

// renamed lists, for each family a query names, the older names that
// carried the same value, newest first (pkg/metrics: Levels): a mixed fleet
// (1.20 to 1.37) answers with whichever name each apiserver exports.
var renamed = map[string][]string{
	metrics.NominalLimitSeats:     {metrics.RequestConcurrencyLimit},
	metrics.CurrentExecutingSeats: {metrics.RequestConcurrencyInUse, metrics.CurrentExecutingRequests},
	// Servers without borrowing (before 1.26) export no current, lower or
	// upper limit: all three were the nominal limit (pkg/metrics: Levels
	// falls back the same way for one scrape).
	metrics.CurrentLimitSeats: {metrics.NominalLimitSeats, metrics.RequestConcurrencyLimit},
	familyLowerLimit:          {metrics.NominalLimitSeats, metrics.RequestConcurrencyLimit},
	familyUpperLimit:          {metrics.NominalLimitSeats, metrics.RequestConcurrencyLimit},
	// current_inqueue_seats (1.29+) has no older name; the waiting requests
	// are the best stand-in the older servers give (one seat each unless
	// their work estimate said more).
	metrics.CurrentInqueueSeats: {metrics.CurrentInqueueRequests},
}

// Query builds the PromQL of one store: the selector of the apiserver series
// and the label that tells apiserver instances apart.
type Query struct {
	// Selector holds label matchers ANDed into every series selector, such
	// as cluster="prod",job="apiserver" (validated by ParseSelector).
	Selector string
	// InstanceLabel names the label of an apiserver instance ("instance").
	InstanceLabel string
	// PerInstance keeps the instance label in every answer.
	PerInstance bool
	// Lookback is how far before a range a counter's series must have no
	// sample to count as created in the range (10 m when zero; at least a
	// few scrape intervals). A failed scrape marks every series of the
	// target stale, so "no sample at the range's start" is not enough.
	Lookback time.Duration
}

// ParseSelector checks a list of label matchers (name="v", name!="v",
// name=~"re", name!~"re", comma-separated, with or without the braces) and
// returns it normalised without braces, the matchers joined by ",".
func ParseSelector(s string) (string, error) {
	ms, err := ParseMatchers(s)
	return strings.Join(ms, ","), err
}

// ParseMatchers is ParseSelector's list of normalised matchers. Values are
// double-quoted strings with PromQL's (Go's) escapes; __name__ is refused,
// since the plugin chooses the metric names.
func ParseMatchers(sel string) ([]string, error) {
	const space = " \t\n\r"
	s := strings.Trim(sel, space)
	if strings.HasPrefix(s, "{") {
		if !strings.HasSuffix(s, "}") {
			return nil, fmt.Errorf("selector %q: a selector that opens with { must close with }", sel)
		}
		s = strings.Trim(s[1:len(s)-1], space)
	}
	var out []string
	for s != "" {
		i := 0
		for i < len(s) && (s[i] == '_' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || i > 0 && s[i] >= '0' && s[i] <= '9') {
			i++
		}
		if i == 0 {
			return nil, fmt.Errorf("selector %q: want label matchers like cluster=\"prod\",job=\"apiserver\"", s)
		}
		name := s[:i]
		if name == "__name__" {
			return nil, fmt.Errorf("selector: the metric names are chosen by kubectl apf; match other labels only")
		}
		s = strings.TrimLeft(s[i:], space)
		var op string
		for _, o := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(s, o) {
				op = o
				break
			}
		}
		if op == "" {
			return nil, fmt.Errorf("selector: label %s needs =, !=, =~ or !~ and a quoted value", name)
		}
		s = strings.TrimLeft(s[len(op):], space)
		if s == "" || s[0] != '"' {
			return nil, fmt.Errorf("selector: the value of %s must be in double quotes", name)
		}
		prefix, err := strconv.QuotedPrefix(s)
		if err != nil {
			return nil, fmt.Errorf("selector: the value of %s is not a quoted string", name)
		}
		s = strings.TrimLeft(s[len(prefix):], space)
		if s != "" {
			if s[0] != ',' {
				return nil, fmt.Errorf("selector: matchers must be separated by commas, at %q", s)
			}
			s = strings.TrimLeft(s[1:], space)
		}
		out = append(out, name+op+prefix)
	}
	return out, nil
}

// sel is the series selector of family with extra matchers.
func (q Query) sel(family string, extra ...string) string {
	m := extra
	if q.Selector != "" {
		m = append([]string{q.Selector}, extra...)
	}
	if len(m) == 0 {
		return family
	}
	return family + "{" + strings.Join(m, ",") + "}"
}

func (q Query) instance() string {
	if q.InstanceLabel == "" {
		return "instance"
	}
	return q.InstanceLabel
}

// by is the outer grouping: the labels asked for, plus the instance with
// PerInstance.
func (q Query) by(labels ...string) string {
	if q.PerInstance {
		labels = append(labels, q.instance())
	}
	return "sum by (" + strings.Join(labels, ", ") + ") "
}

// Gauge sums a gauge family by labels, across the renames: each instance's
// series come from the newest name it exports (the inner sums keep the
// instance, so "or" picks per instance), then instances are summed unless
// PerInstance.
func (q Query) Gauge(family string, labels []string, extra ...string) string {
	names := append([]string{family}, renamed[family]...)
	inner := append(append([]string{}, labels...), q.instance())
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = "sum by (" + strings.Join(inner, ", ") + ") (" + q.sel(n, extra...) + ")"
	}
	if len(parts) == 1 && !q.PerInstance {
		return q.by(labels...) + "(" + q.sel(family, extra...) + ")"
	}
	return q.by(labels...) + "(" + strings.Join(parts, " or ") + ")"
}

// Count is how many times a counter family grew over the r before each
// evaluation time, summed by labels: increase(), extrapolated to the ends
// of the range as rate() is, for timelines of short ranges. increase()
// misses what a series counted before its first sample, and APF creates a
// rejected_requests_total series at its first rejection: so a series that
// did not exist r earlier adds its first sample in the range (min_over_time
// of a counter), which is what it counted since it was created.
func (q Query) Count(family string, labels []string, r time.Duration, extra ...string) string {
	s := q.sel(family, extra...)
	d := promDuration(r)
	inc := "increase(" + s + "[" + d + "])"
	return q.by(labels...) + q.withBorn(inc, s, d)
}

// ExactCount is Count without the extrapolation, for totals over a range
// that holds whole bursts: the last sample minus the first for a series
// that did not reset in the range (max_over_time - min_over_time of a
// counter), increase() for one that did.
func (q Query) ExactCount(family string, labels []string, r time.Duration, extra ...string) string {
	s := q.sel(family, extra...)
	d := promDuration(r)
	rng := s + "[" + d + "]"
	exact := "((max_over_time(" + rng + ") - min_over_time(" + rng + ")) unless resets(" + rng + ") > 0)"
	return q.by(labels...) + q.withBorn("("+exact+" or increase("+rng+"))", s, d)
}

// withBorn adds to inc, per series, the first sample in the range of the
// series that had no sample in the Lookback before the range.
func (q Query) withBorn(inc, s, d string) string {
	lb := q.Lookback
	if lb <= 0 {
		lb = 10 * time.Minute
	}
	born := "(min_over_time(" + s + "[" + d + "]) unless max_over_time(" + s + "[" + promDuration(lb) + "] offset " + d + "))"
	return "((" + inc + " + " + born + ") or " + inc + " or " + born + ")"
}

// Quantile is the phi-quantile of a histogram family over the r before each
// evaluation, by labels: from the classic buckets (family_bucket), or, for
// the label sets that have none, from the native histogram (the series
// named family itself), which Kubernetes 1.36 can export beside or instead
// of the classic buckets (behind a feature gate) and a store ingests when
// it scrapes protobuf. A store that keeps both has each observation in
// both; "or" takes the classic answer where there is one, so nothing is
// counted twice.
func (q Query) Quantile(phi float64, family string, labels []string, r time.Duration, extra ...string) string {
	by := append([]string{}, labels...)
	if q.PerInstance {
		by = append(by, q.instance())
	}
	p := strconv.FormatFloat(phi, 'g', -1, 64)
	classic := fmt.Sprintf("histogram_quantile(%s, sum by (%s) (increase(%s[%s])))", p,
		strings.Join(append(append([]string{}, labels...), append([]string{"le"}, by[len(labels):]...)...), ", "), q.sel(family+"_bucket", extra...), promDuration(r))
	native := fmt.Sprintf("histogram_quantile(%s, sum by (%s) (increase(%s[%s])))", p,
		strings.Join(by, ", "), q.sel(family, extra...), promDuration(r))
	return "(" + classic + " or " + native + ")"
}

// Buckets is the increase of a histogram family's buckets over r, by labels
// and le.
func (q Query) Buckets(family string, labels []string, r time.Duration, extra ...string) string {
	return q.Increase(family+"_bucket", append(append([]string{}, labels...), "le"), r, extra...)
}

// Increase is the increase of a series over r, summed by labels (and the
// instance with PerInstance), without Count's extrapolation of a series
// born in the range: for histograms' buckets, sums and counts.
func (q Query) Increase(series string, labels []string, r time.Duration, extra ...string) string {
	return q.by(labels...) + "(increase(" + q.sel(series, extra...) + "[" + promDuration(r) + "]))"
}

// MaxOver is the largest value of expr over the window w before each
// evaluation, sampled every step (a subquery).
func MaxOver(expr string, w, step time.Duration) string { return overTime("max", expr, w, step) }

// MinOver is the smallest value of expr over w, sampled every step.
func MinOver(expr string, w, step time.Duration) string { return overTime("min", expr, w, step) }

// AvgOver is the mean value of expr over w, sampled every step.
func AvgOver(expr string, w, step time.Duration) string { return overTime("avg", expr, w, step) }

// overTime is the subquery agg_over_time((expr)[w:step]).
func overTime(agg, expr string, w, step time.Duration) string {
	return agg + "_over_time((" + expr + ")[" + promDuration(w) + ":" + promDuration(step) + "])"
}

// Tagged is a set of named expressions asked in one query: each answer
// carries its name in LabelSeries.
type Tagged []struct{ Name, Expr string }

// Add appends a named expression.
func (t *Tagged) Add(name, expr string) {
	*t = append(*t, struct{ Name, Expr string }{name, expr})
}

// String is the union of the tagged expressions.
func (t Tagged) String() string {
	parts := make([]string, len(t))
	for i, e := range t {
		parts[i] = fmt.Sprintf("label_replace(%s, %q, %q, \"\", \"\")", e.Expr, LabelSeries, e.Name)
	}
	return strings.Join(parts, " or ")
}

// promDuration writes d in PromQL's syntax, in whole milliseconds at least.
func promDuration(d time.Duration) string {
	if d <= 0 {
		d = time.Millisecond
	}
	ms := d.Milliseconds()
	var b strings.Builder
	for _, u := range []struct {
		n    int64
		unit string
	}{{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}} {
		if ms >= u.n {
			b.WriteString(strconv.FormatInt(ms/u.n, 10) + u.unit)
			ms %= u.n
		}
	}
	return b.String()
}
