package monitoring

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// Families that pkg/metrics does not read itself, by the release that
// exports them (k8s.io/apiserver pkg/util/flowcontrol/metrics/metrics.go).
const (
	// seatUtilization is the timing-ratio histogram of executing seats over
	// the level's concurrency denominator (1.26+): observed at the end of
	// every nanosecond, so rate(_sum)/rate(_count) is the time average that a
	// scraped gauge, read once every scrape interval, cannot give.
	seatUtilization = metrics.FlowcontrolPrefix + "priority_level_seat_utilization"
	// seatCountSamples is its 1.24-1.25 predecessor, sampled every
	// millisecond; despite the name it held the same ratio (the 1.26
	// release notes say so when they replace it).
	seatCountSamples = metrics.FlowcontrolPrefix + "priority_level_seat_count_samples"
	// requestCountSamples{phase="executing"} is the 1.20-1.23 one, a ratio
	// of requests to the limit; before 1.22 every request took one seat.
	requestCountSamples = metrics.FlowcontrolPrefix + "priority_level_request_count_samples"
	// demandSeats is the timing-ratio histogram of seat demand over the
	// concurrency denominator (1.26+). The help text says "nominal" but
	// apf_controller.go updateBorrowingLocked sets the denominator to the
	// current limit (serverCL/10 when that is 0).
	demandSeats = metrics.FlowcontrolPrefix + "demand_seats"
	// demandSeatsSmoothed is the smoothed seat demand the borrowing
	// allocation works from (1.26+), in seats.
	demandSeatsSmoothed = metrics.FlowcontrolPrefix + "demand_seats_smoothed"
	// queueLengthAfterEnqueue is the histogram of a queue's length just
	// after a request joined it (all releases).
	queueLengthAfterEnqueue = metrics.FlowcontrolPrefix + "request_queue_length_after_enqueue"
	// trafficFamilies matches the dispatched and rejected counters at once:
	// together they are every request APF classified (waiting ones aside).
	trafficFamilies = `__name__=~"` + metrics.FlowcontrolPrefix + `(dispatched|rejected)_requests_total"`
)

const (
	labelLevel      = "priority_level"
	labelFlowSchema = "flow_schema"
	labelReason     = "reason"
	// leftQueue are the reasons of requests that waited in a queue and
	// left it without running: "time-out" (1.20+; since 1.29 also a client
	// that went away) and "cancelled" (1.26-1.28 only).
	leftQueue = `reason=~"time-out|cancelled"`
)

// q builds the PromQL of one set of series: a selector (matchers without
// braces, "" for none) and the rate window ("5m", or Grafana's
// "$__rate_interval").
type q struct {
	sel    string
	window string
	// keys are the labels that identify one apiserver instance: the cluster
	// label (when set) and the instance label. Version fallbacks are chosen
	// per instance, so every fallback chain is grouped by at least these.
	keys []string
}

// m is a series selector: the family with the base selector and extra
// matchers.
func (e q) m(family string, extra ...string) string {
	var ms []string
	if e.sel != "" {
		ms = append(ms, e.sel)
	}
	ms = append(ms, extra...)
	if len(ms) == 0 {
		return family
	}
	return family + "{" + strings.Join(ms, ", ") + "}"
}

// all is a selector of several families by name ({__name__=~...}).
func (e q) all(nameMatcher string, extra ...string) string {
	ms := []string{nameMatcher}
	if e.sel != "" {
		ms = append(ms, e.sel)
	}
	ms = append(ms, extra...)
	return "{" + strings.Join(ms, ", ") + "}"
}

// by returns "by (keys..., extra...)".
func (e q) by(extra ...string) string {
	return "by (" + strings.Join(append(append([]string(nil), e.keys...), extra...), ", ") + ")"
}

// rate is rate(sel[window]).
func (e q) rate(sel string) string { return "rate(" + sel + "[" + e.window + "])" }

// firstOf joins per-instance aggregations with "or": where an instance
// exports the first family the others are ignored for it, so a fleet that
// mixes releases gets one series per instance and level.
func firstOf(parts ...string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	return "(\n  " + strings.Join(parts, "\nor\n  ") + "\n)"
}

// nominal is the nominal limit in seats per instance and level:
// nominal_limit_seats (1.26+) or request_concurrency_limit (1.20-1.29).
func (e q) nominal(extra ...string) string {
	return firstOf(
		"max "+e.by(labelLevel)+" ("+e.m(metrics.NominalLimitSeats, extra...)+")",
		"max "+e.by(labelLevel)+" ("+e.m(metrics.RequestConcurrencyLimit, extra...)+")",
	)
}

// limitOrNominal is a limit gauge of 1.26+ (current, lower or upper) per
// instance and level, falling back to the nominal limit on older servers,
// which did not borrow: there every limit was the nominal one.
func (e q) limitOrNominal(family string, extra ...string) string {
	return firstOf(
		"max "+e.by(labelLevel)+" ("+e.m(family, extra...)+")",
		"max "+e.by(labelLevel)+" ("+e.m(metrics.NominalLimitSeats, extra...)+")",
		"max "+e.by(labelLevel)+" ("+e.m(metrics.RequestConcurrencyLimit, extra...)+")",
	)
}

// seatsInUse is the executing seats per instance and level:
// current_executing_seats (1.28+), request_concurrency_in_use (1.26-1.30),
// current_executing_requests (1.20+, one seat per request before 1.22).
func (e q) seatsInUse(extra ...string) string {
	return firstOf(
		"sum "+e.by(labelLevel)+" ("+e.m(metrics.CurrentExecutingSeats, extra...)+")",
		"sum "+e.by(labelLevel)+" ("+e.m(metrics.RequestConcurrencyInUse, extra...)+")",
		"sum "+e.by(labelLevel)+" ("+e.m(metrics.CurrentExecutingRequests, extra...)+")",
	)
}

// histAvg is the average of a histogram over the window,
// rate(_sum)/rate(_count), per instance and level; no series where nothing
// was observed (the > 0 keeps a 0/0 out).
func (e q) histAvg(family string, extra ...string) string {
	return "sum " + e.by(labelLevel) + " (" + e.rate(e.m(family+"_sum", extra...)) + ")\n    / (sum " +
		e.by(labelLevel) + " (" + e.rate(e.m(family+"_count", extra...)) + ") > 0)"
}

// utilisation is the time-averaged executing seats over the current limit,
// per instance and level, from the histogram families that observe it
// continuously (never from the gauge, which a scrape samples once per
// interval). exempt is left out: it is never limited and its denominator
// means nothing. Levels whose current limit is 0 (everything lent) get no
// series; upstream divides by serverCL/10 for them.
func (e q) utilisation(extra ...string) string {
	x := append([]string{labelLevel + `!="exempt"`}, extra...)
	return firstOf(
		e.histAvg(seatUtilization, x...),
		e.histAvg(seatCountSamples, x...),
		e.histAvg(requestCountSamples, append([]string{`phase="executing"`}, x...)...),
	) + "\nand on (" + strings.Join(append(append([]string(nil), e.keys...), labelLevel), ", ") + ")\n(" +
		e.limitOrNominal(metrics.CurrentLimitSeats, extra...) + " > 0)"
}

// waitQuantile is the φ-quantile of the time requests waited in their
// queue, per instance and level, over the window. Only execute="true":
// immediate rejections are observed with execute="false" and a wait of 0,
// while requests that timed out in the queue are observed with
// execute="true" (apf_filter.go Handle), as they should be here.
func (e q) waitQuantile(phi string, extra ...string) string {
	return "histogram_quantile(" + phi + ", sum " + e.by(labelLevel, "le") + " (" +
		e.rate(e.m(metrics.RequestWaitDurationSecond+"_bucket", append([]string{`execute="true"`}, extra...)...)) + "))"
}

// A matcher of a label value, quoted for PromQL. "$" is written \x24 so
// that Grafana never takes part of a name for a variable.
func eq(label, value string) string {
	return label + `="` + escape(value) + `"`
}

func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '$':
			b.WriteString(`\x24`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\x%02x`, r)
				continue
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

var (
	labelNameRe = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// ValidLabelName reports whether s can name a Prometheus label.
func ValidLabelName(s string) bool { return labelNameRe.MatchString(s) }
