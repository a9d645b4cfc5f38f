package explain

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// Explain429 triages the rejections visible in each instance's live state
// against the configuration, into the one explain 429 schema (package
// rejections); the caller sets its Source and Release. Each level's
// figures are pkg/levels' rows, as "top levels" shows them.
func Explain429(c *engine.Config, scl int, requestTimeout time.Duration, lives []*dump.Snapshot) *rejections.Report {
	if scl <= 0 {
		scl = engine.DefaultServerConcurrencyLimit
	}
	if requestTimeout <= 0 {
		requestTimeout = engine.DefaultServerRequestTimeout
	}
	rep := rejections.New(rejections.Source{})
	limits := c.Limits(scl)
	rates, totals := 0, 0
	var other *float64
	for i, live := range lives {
		inst, incidents := triageInstance(c, limits, requestTimeout, live)
		if inst.HasRates {
			rates++
		} else {
			totals++
		}
		switch {
		case inst.Other429 == nil:
		case i == 0:
			other = rejections.Of(*inst.Other429)
		case other != nil:
			*other += *inst.Other429
		}
		if i > 0 && inst.Other429 == nil {
			other = nil
		}
		if i == 0 {
			rep.Window = windowOf(live)
		}
		rep.Instances = append(rep.Instances, inst)
		for _, inc := range incidents {
			rep.Rejected[inc.Level] += inc.Rejected
		}
		rep.Incidents = append(rep.Incidents, incidents...)
	}
	rep.Other429 = other
	switch {
	case totals == 0:
		rep.Counts = rejections.CountsPerSecond
	case rates == 0:
		rep.Counts = rejections.CountsSinceStart
	default:
		rep.Counts = rejections.CountsPerInstance
	}
	return rep
}

// windowOf is the time of the scrapes of live: the two that give rates,
// or the capture.
func windowOf(live *dump.Snapshot) rejections.Window {
	var w rejections.Window
	prev, cur := live.LatestMetrics()
	switch {
	case cur != nil && prev != nil && cur.Time.After(prev.Time):
		s, e := prev.Time, cur.Time
		w.Start, w.End = &s, &e
	case cur != nil && !cur.Time.IsZero():
		e := cur.Time
		w.End = &e
	case !live.CapturedAt.IsZero():
		e := live.CapturedAt
		w.End = &e
	}
	return w
}

// noMetricsNote is the note of an instance read without metrics.
const noMetricsNote = "no metrics were read: rejections are counted from dump_priority_levels only (totals since the apiserver started)"

func triageInstance(c *engine.Config, limits []engine.LevelLimits, requestTimeout time.Duration, live *dump.Snapshot) (rejections.Instance, []rejections.Incident) {
	it := rejections.Instance{Name: live.Instance}
	prev, cur := live.LatestMetrics()
	if cur == nil {
		it.Notes = append(it.Notes, noMetricsNote)
	}
	rows := map[string]levels.Row{}
	for _, r := range levels.Compute(levels.Input{Snapshot: live, Limits: limits}) {
		rows[r.Name] = r
	}
	it.HasRates = prev != nil && cur != nil && cur.Time.After(prev.Time)
	if it.HasRates {
		it.IntervalSeconds = cur.Time.Sub(prev.Time).Seconds()
	}
	rejectedBy := map[string]map[string]float64{}
	add := func(level, reason string, v float64) {
		if rejectedBy[level] == nil {
			rejectedBy[level] = map[string]float64{}
		}
		rejectedBy[level][reason] = v
	}
	apfTotal := 0.0
	switch {
	case it.HasRates:
		for _, r := range rows {
			for reason, v := range r.RejectedPerSec {
				if v > 0 {
					add(r.Name, reason, v)
					apfTotal += v
				}
			}
		}
		// Subtract counts, not rates: the counters are whole numbers, and the
		// difference of two rates leaves floating-point dust (1e-15/s) where
		// every 429 came from APF.
		interval := cur.Time.Sub(prev.Time)
		all429 := metrics.Rate(count429(prev), count429(cur), interval) * interval.Seconds()
		apf429 := metrics.Rate(countRejected(prev), countRejected(cur), interval) * interval.Seconds()
		it.Other429 = rejections.Of(math.Max(0, math.Round(all429-apf429)) / interval.Seconds())
		if !cur.Has(metrics.RejectedRequestsTotal) {
			var counted []string
			for _, r := range rows {
				if r.RejectedCount > 0 {
					counted = append(counted, fmt.Sprintf("%s %d", r.Name, r.RejectedCount))
				}
			}
			if len(counted) > 0 {
				sort.Strings(counted)
				it.Notes = append(it.Notes, fmt.Sprintf("the metrics read have no %s to give rates, but dump_priority_levels counts rejections since the apiserver started: %s", metrics.RejectedRequestsTotal, strings.Join(counted, ", ")))
			}
		}
	case cur != nil:
		for k, v := range cur.SumBy2(metrics.RejectedRequestsTotal, "priority_level", "reason") {
			if v > 0 {
				add(k[0], k[1], v)
				apfTotal += v
			}
		}
		// A paste of dump_priority_levels beside a grepped metric line: the
		// metrics lack the rejections the dump counts, and both are totals
		// since the apiserver started. RejectedRequests counts every reason
		// (queueset.go increments totRequestsRejected for time-outs too,
		// and never totRequestsTimedout).
		var fromDump []string
		for _, r := range rows {
			if r.RejectedCount > 0 && rejectedBy[r.Name] == nil {
				add(r.Name, rejections.ReasonAny, float64(r.RejectedCount))
				apfTotal += float64(r.RejectedCount)
				fromDump = append(fromDump, r.Name)
			}
		}
		if len(fromDump) > 0 {
			sort.Strings(fromDump)
			it.Notes = append(it.Notes, fmt.Sprintf("the metrics read count no rejections of %s: their rejections are dump_priority_levels' RejectedRequests (totals since the apiserver started, of every reason: queue-full, concurrency-limit and time-out alike; its TimedoutRequests is never counted upstream)", strings.Join(fromDump, ", ")))
		}
		it.Other429 = rejections.Of(math.Max(0, count429(cur)-apfTotal))
	default:
		for _, r := range rows {
			if r.RejectedCount > 0 {
				add(r.Name, rejections.ReasonAny, float64(r.RejectedCount))
			}
		}
	}
	if !cur.Has(metrics.FamilyRequestTotal) {
		// Without apiserver_request_total the other 429s are unknown.
		it.Other429 = nil
	}
	// A counter of a label set is exposed from its first increment on:
	// a whole scrape (its dispatched or request counters read) without
	// rejected_requests_total had no rejection since the apiserver
	// started; a grep of other families cannot tell.
	wholeScrape := cur.Has(metrics.DispatchedRequestsTotal) || cur.Has(metrics.FamilyRequestTotal)
	if !cur.Has(metrics.RejectedRequestsTotal) && !wholeScrape && !countsRejections(live) {
		it.RejectionsUnknown = rejectionsUnknown(live, cur != nil)
		// nothing was counted from dump_priority_levels either
		it.Notes = slices.DeleteFunc(it.Notes, func(n string) bool { return n == noMetricsNote })
	}
	// Metrics joined from several inputs: the rejections of a level that
	// only inputs without the counter name are unknown, not none.
	if cur != nil && cur.Has(metrics.RejectedRequestsTotal) {
		var unknown []string
		for name := range cur.Unknown[metrics.RejectedRequestsTotal] {
			if rejectedBy[name] == nil {
				unknown = append(unknown, name)
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			it.Notes = append(it.Notes, fmt.Sprintf("whether %s reject%s requests is unknown: the metrics read have %s from inputs that do not name %s",
				strings.Join(unknown, ", "), map[bool]string{true: "s"}[len(unknown) == 1], metrics.RejectedRequestsTotal, map[bool]string{true: "it", false: "them"}[len(unknown) == 1]))
		}
	}
	names := make([]string, 0, len(rejectedBy))
	for n := range rejectedBy {
		names = append(names, n)
	}
	sum := func(m map[string]float64) float64 {
		s := 0.0
		for _, v := range m {
			s += v
		}
		return s
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := sum(rejectedBy[names[i]]), sum(rejectedBy[names[j]])
		if a != b {
			return a > b
		}
		return names[i] < names[j]
	})
	incidents := make([]rejections.Incident, 0, len(names))
	for _, n := range names {
		row, ok := rows[n]
		if !ok {
			row = levels.Empty(live.Instance, n)
		}
		inc := triageLevel(c, row, requestTimeout, live, rejectedBy[n])
		inc.Rejected = sum(rejectedBy[n])
		inc.Instances = []rejections.InstanceCount{{Instance: live.Instance, Count: inc.Rejected}}
		incidents = append(incidents, inc)
	}
	var unconfigured []string
	for _, inc := range incidents {
		if c.PriorityLevels[inc.Level] == nil && !live.HasObjects() {
			unconfigured = append(unconfigured, inc.Level)
		}
	}
	if len(unconfigured) > 0 {
		it.Notes = append(it.Notes, fmt.Sprintf("the input holds no PriorityLevelConfiguration objects (none for %s): the causes come from the rejections' reasons and the seats in use alone, and the shares, queues and limit response are unknown (explain 429 on the cluster, or on a bundle written by 'kubectl apf dump bundle', has them)", strings.Join(unconfigured, ", ")))
	}
	if it.Other429 != nil && *it.Other429 > 0 {
		it.Notes = append(it.Notes, other429Note(*it.Other429, apfTotal, it.HasRates))
	}
	return it, incidents
}

// other429Note says what the 429s that apiserver_request_total counts
// beyond rejected_requests_total are (per second with rates, else since
// the apiserver started; apf is APF's rejections in the same unit). A
// scrape reads the two counter families moments apart, and a burst of
// rejections between the two readings makes APF's own 429s read as
// others: on the demo cluster, scraped every second, their difference
// was 0 for 697 of 713 scrapes and from -9 to +21 in the others, each
// back to 0 at the next. So a difference of at most a quarter of APF's
// rejections is given with that reading first.
func other429Note(other, apf float64, rates bool) string {
	unit := "since the apiserver started"
	if rates {
		unit = "per second"
	}
	const causes = "evictions blocked by a PodDisruptionBudget, a watch cache that is (re)initializing or (1.37+, ConsistentListFromCacheSkipTimeoutFallback) too far behind etcd for a consistent LIST, the EventRateLimit admission plugin, or another filter"
	if apf > 0 && other <= apf/4 {
		return fmt.Sprintf("apiserver_request_total{code=\"429\"} counts %s HTTP 429 answers %s more than rejected_requests_total, %s of APF's %s: a scrape reads the two counters moments apart, and a burst of rejections between the readings gives such a difference; if a later reading still shows it, they are other 429s (%s)", count(other), unit, fmt.Sprintf("%.0f%%", 100*other/apf), count(apf), causes)
	}
	return fmt.Sprintf("%s HTTP 429 answers %s did not come from APF (apiserver_request_total{code=\"429\"} minus rejected_requests_total): %s", count(other), unit, causes)
}

// Num formats a figure for a sentence: "-" when absent, a whole number
// (a count, seats) in full (1533, not 1.53e+03).
func Num(v *float64) string {
	if v == nil {
		return "-"
	}
	return count(*v)
}

// count formats a count or a rate (rejections.Count).
func count(v float64) string { return rejections.Count(v) }

func triageLevel(c *engine.Config, row levels.Row, requestTimeout time.Duration, live *dump.Snapshot, rejected map[string]float64) rejections.Incident {
	name := row.Name
	lt := rejections.Incident{Level: name, Reasons: rejected, State: row.State(), Causes: []rejections.Cause{}}
	st := &lt.State
	pl := c.PriorityLevels[name]
	var q *flowcontrolv1.QueuingConfiguration
	if pl != nil && pl.Spec.Limited != nil {
		st.LimitResponse = string(pl.Spec.Limited.LimitResponse.Type)
		if pl.Spec.Limited.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue {
			q = pl.Spec.Limited.LimitResponse.Queuing
			st.Queues, st.HandSize, st.QueueLengthLimit = q.Queues, q.HandSize, q.QueueLengthLimit
		}
	}
	// The default wait limit; a request with a shorter ?timeout= has less.
	waitLimit := engine.DefaultRequestWaitLimit(requestTimeout)
	st.WaitLimitSeconds = waitLimit.Seconds()
	// full is nil when the queue dump holds no queue of the level: which
	// queues are full is then unknown.
	var full map[int]bool
	if qs := queuesOf(live, name); len(qs) > 0 {
		full = map[int]bool{}
		for i, r := range qs {
			if q != nil && int32(r.PendingRequests) >= q.QueueLengthLimit {
				full[i] = true
			}
		}
	}
	lt.Flows = flowLoads(c, live, name, full)
	share := func(x *float64) string {
		if x == nil && st.Executing != nil {
			return fmt.Sprintf("seats in use unknown (of %s; %s requests executing, from %s)", Num(st.CurrentLimit), Num(st.Executing), row.From[levels.FigureExecuting])
		}
		if x == nil {
			return fmt.Sprintf("seats in use unknown (of %s)", Num(st.CurrentLimit))
		}
		if st.CurrentLimit != nil && *x > *st.CurrentLimit {
			return fmt.Sprintf("%s of %s %s in use (beyond the limit: %s, and it runs alone)", Num(x), Num(st.CurrentLimit), textfmt.PluralFigure(st.CurrentLimit, "seat", "seats"), widerRule)
		}
		return fmt.Sprintf("%s of %s %s in use", Num(x), Num(st.CurrentLimit), textfmt.PluralFigure(st.CurrentLimit, "seat", "seats"))
	}

	if pl == nil && (live == nil || live.HasObjects()) {
		lt.Causes = append(lt.Causes, missingLevelCause())
		return lt
	}
	// Without the objects (a raw dump or metrics) the level's configuration
	// is unknown: the reasons of the rejections and the seats in use tell
	// the cause, as they do with it (concurrency-limit is the reason of a
	// level without queues alone: queueset.go, StartRequest's step 0).
	lengthLimit := func(format string) string {
		if q == nil {
			return ""
		}
		return fmt.Sprintf(format, st.QueueLengthLimit)
	}
	if rejected[rejections.ReasonConcurrencyLimit] > 0 {
		lt.Causes = append(lt.Causes, rejections.Cause{Kind: rejections.CauseNoQueues,
			Evidence: fmt.Sprintf("%s has limitResponse Reject (no queues; the reason concurrency-limit is given by no other level): every request beyond its %s %s gets 429 at once; %s", name, Num(st.CurrentLimit), textfmt.PluralFigure(st.CurrentLimit, "seat", "seats"), share(st.SeatsInUse)),
			Fix:      fmt.Sprintf("move the rejected clients to a queuing level with a FlowSchema of their own (see 'kubectl apf explain request' for one of them), or give %s queues and more nominalConcurrencyShares", name)})
	}
	var top *rejections.FlowLoad
	if len(lt.Flows) > 0 {
		top = &lt.Flows[0]
	}
	waiting := math.NaN()
	if st.Waiting != nil {
		waiting = *st.Waiting
	}
	if rejected[rejections.ReasonQueueFull] > 0 || rejected[rejections.ReasonAny] > 0 {
		// An elephant holds half the waiting requests or more and fills
		// queues of its hand; one whose queues the dump shows none of full
		// is one of many flows, not what rejects the others (Full is nil
		// without a hand or a queue dump).
		elephant := top != nil && waiting > 1 && float64(top.Waiting*2) >= waiting && (top.Full == nil || *top.Full > 0)
		if elephant {
			e := rejections.Cause{Kind: rejections.CauseElephantFlow,
				Evidence: fmt.Sprintf("flow %s/%q holds %d of the %s waiting requests of %s%s",
					top.FlowSchema, top.Distinguisher, top.Waiting, Num(st.Waiting), name, handFill(top, st.QueueLengthLimit))}
			fs := findFlowSchema(c, top.FlowSchema)
			switch {
			case fs != nil && fs.Spec.DistinguisherMethod == nil:
				e.Fix = fmt.Sprintf("FlowSchema %s has no distinguisherMethod, so all its clients are one flow: set distinguisherMethod ByUser (or ByNamespace), or isolate the heavy client with a FlowSchema and level of its own", top.FlowSchema)
			default:
				e.Fix = fmt.Sprintf("isolate the heavy client %q with a FlowSchema of lower matchingPrecedence and a level of its own (kubectl apf explain request --user-name ... prints ready YAML), or raise queues/handSize of %s so fewer flows share its queues", top.Distinguisher, name)
			}
			lt.Causes = append(lt.Causes, e)
		} else if math.IsNaN(waiting) && st.SeatsInUse == nil && math.IsNaN(row.MeanUtilisation) {
			// the reason alone: full queues, but whether the level is
			// short of seats, hit by bursts or by one flow is not in the
			// input
			lt.Causes = append(lt.Causes, rejections.Cause{Kind: rejections.CauseUnclear,
				Evidence: fmt.Sprintf("%s's queues were full (reason queue-full), but its seats in use and its waiting requests are unknown (no debug dump, no %s and no %s were read): whether the level is short of seats, hit by bursts or crowded by one flow, the input does not tell", name, metrics.CurrentExecutingSeats, metrics.CurrentInqueueRequests),
				Fix:      fmt.Sprintf("read the level's seats in use and waiting requests: explain 429 on the cluster, or on its debug dumps (kubectl get --raw /debug/api_priority_and_fairness/dump_priority_levels) or its metrics (kubectl get --raw /metrics | grep -E '%s|%s')", metrics.CurrentExecutingSeats, metrics.CurrentInqueueRequests)})
		} else {
			var ev string
			switch {
			case math.IsNaN(waiting):
				ev = fmt.Sprintf("%s; how many requests wait is unknown (no debug dump and no %s were read)", share(st.SeatsInUse), metrics.CurrentInqueueRequests)
			case waiting == 0:
				size := "level" // its limit unknown: not "the --seat level"
				if st.NominalLimit != nil {
					size = Num(st.NominalLimit) + "-seat level"
				}
				ev = fmt.Sprintf("%s and no request waits (from %s): the rejections come in bursts that fill the %s and its queues%s faster than they drain", share(st.SeatsInUse), row.From[levels.FigureWaiting], size, lengthLimit(" of %d"))
			case len(lt.Flows) == 0:
				ev = fmt.Sprintf("%s; %s %s (from %s): the level is saturated", share(st.SeatsInUse), Num(st.Waiting), textfmt.PluralFigure(st.Waiting, "request waits", "requests wait"), row.From[levels.FigureWaiting])
			default:
				ev = fmt.Sprintf("%s; %s %s across %d flows: the level is saturated by many clients rather than one", share(st.SeatsInUse), Num(st.Waiting), textfmt.PluralFigure(st.Waiting, "request waits", "requests wait"), len(lt.Flows))
			}
			lt.Causes = append(lt.Causes, rejections.Cause{Kind: rejections.CauseTooLittleConcurrency,
				Evidence: ev + utilisationOver(row),
				Fix:      fmt.Sprintf("raise nominalConcurrencyShares of %s (or its borrowingLimitPercent, or lendablePercent of idle levels), or the queueLengthLimit%s for bursts; 'kubectl apf capacity --set %s.shares=N' shows the effect", name, lengthLimit(" of %d"), name)})
		}
	}
	if w := wideRequests(live, name); w != "" {
		lt.Causes = append(lt.Causes, rejections.Cause{Kind: rejections.CauseWideRequests, Evidence: w,
			Fix: "paginate LISTs (?limit=500), read from the watch cache (?resourceVersion=0) or use informers; wide requests take several seats each"})
	}
	if rejected[rejections.ReasonTimeOut] > 0 {
		ev := fmt.Sprintf("requests waited in %s longer than their wait limit (%v by default, a quarter of the request deadline)", name, waitLimit)
		if st.WaitP99Seconds != nil {
			ev += fmt.Sprintf("; p99 wait %.3gs", *st.WaitP99Seconds)
		}
		if u := row.Utilisation; !math.IsNaN(u) {
			ev += fmt.Sprintf("; %s (%.0f%%)", share(st.SeatsInUse), 100*u)
			if u < 0.9 && math.IsNaN(row.FullFraction) {
				ev += ": the level is not full now, so the time-outs came from bursts that held every seat while they waited"
			}
		}
		ev += utilisationOver(row)
		lt.Causes = append(lt.Causes, rejections.Cause{Kind: rejections.CauseTimeOuts, Evidence: ev,
			Fix: fmt.Sprintf("give %s more concurrency so queues drain faster; clients with a short ?timeout= (kubectl --request-timeout) get a shorter wait limit", name)})
	}
	return lt
}

// utilisationOver is the seat use over time that seat_utilization gives,
// for evidence: "" when the server does not export it.
func utilisationOver(row levels.Row) string {
	if math.IsNaN(row.MeanUtilisation) {
		return ""
	}
	over := "since the apiserver started"
	if row.HasRates {
		over = "over the interval"
	}
	if row.CurrentLimit == 1 {
		// one seat: in use on average is every seat in use
		return fmt.Sprintf("; %s its seat was in use %.0f%% of the time (%s)", over, 100*row.MeanUtilisation, metrics.SeatUtilization)
	}
	s := fmt.Sprintf("; %s the seats were %.0f%% in use on average", over, 100*row.MeanUtilisation)
	if !math.IsNaN(row.FullFraction) {
		s += fmt.Sprintf(", every seat %.0f%% of the time", 100*row.FullFraction)
	}
	return s + " (" + metrics.SeatUtilization + ")"
}

// handFill says how much of an elephant's hand its queues' lengths fill,
// and what that does to the others: a request goes to the shortest queue
// of its hand and is rejected when that one is full (queueset.go,
// rejectOrEnqueueToBoundLocked).
func handFill(f *rejections.FlowLoad, limit int32) string {
	switch {
	case len(f.Hand) == 0:
		return ""
	case f.Full == nil:
		return fmt.Sprintf(", dealt the queues %v; which of them are full, the input does not tell (no queue dump)", f.Hand)
	case *f.Full == len(f.Hand):
		all := fmt.Sprintf("all %d", len(f.Hand))
		if len(f.Hand) == 2 {
			all = "both"
		}
		return fmt.Sprintf(", and fills %s of its queues %v (queue length limit %d): its next requests are rejected, and so are those of every flow dealt only full queues", all, f.Hand, limit)
	}
	return fmt.Sprintf(", and fills %d of its %d queues %v (queue length limit %d): every flow dealt one of them has that many fewer queues to wait in", *f.Full, len(f.Hand), f.Hand, limit)
}

// flowLoads groups the dumped requests of a level by flow, heaviest first.
func flowLoads(c *engine.Config, live *dump.Snapshot, level string, full map[int]bool) []rejections.FlowLoad {
	type key struct{ fs, d string }
	m := map[key]*rejections.FlowLoad{}
	for _, r := range live.RequestDump {
		if r.PriorityLevel != level {
			continue
		}
		k := key{r.FlowSchema, r.FlowDistinguisher}
		f := m[k]
		if f == nil {
			f = &rejections.FlowLoad{FlowSchema: r.FlowSchema, Distinguisher: r.FlowDistinguisher}
			m[k] = f
		}
		if r.Executing() {
			f.Executing++
		} else {
			f.Waiting++
		}
		f.Seats += max(r.InitialSeats, 1)
	}
	out := make([]rejections.FlowLoad, 0, len(m))
	for _, f := range m {
		if pl := c.PriorityLevels[level]; pl != nil && pl.Spec.Limited != nil && pl.Spec.Limited.LimitResponse.Queuing != nil &&
			pl.Spec.Limited.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue {
			qc := pl.Spec.Limited.LimitResponse.Queuing
			if d, err := engine.NewDealer(int(qc.Queues), int(qc.HandSize)); err == nil {
				// The hash of apf_controller.go:hashFlowID; a single queue gets hash 0.
				h := uint64(0)
				if qc.Queues > 1 {
					h = engine.HashFlowID(f.FlowSchema, f.Distinguisher)
				}
				f.Hand = d.DealIntoHand(h, nil)
				if full != nil {
					n := 0
					for _, q := range f.Hand {
						if full[q] {
							n++
						}
					}
					f.Full = &n
				}
			}
		}
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Waiting != out[j].Waiting {
			return out[i].Waiting > out[j].Waiting
		}
		if out[i].Seats != out[j].Seats {
			return out[i].Seats > out[j].Seats
		}
		if out[i].FlowSchema != out[j].FlowSchema {
			return out[i].FlowSchema < out[j].FlowSchema
		}
		return out[i].Distinguisher < out[j].Distinguisher
	})
	if len(out) > 5 {
		out = out[:5]
	}
	return out
}

// wideRequests describes requests of several seats in the dump, "" if none.
func wideRequests(live *dump.Snapshot, level string) string {
	n, wide, maxSeats := 0, 0, 0
	for _, r := range live.RequestDump {
		if r.PriorityLevel != level {
			continue
		}
		n++
		if r.InitialSeats > 1 {
			wide++
		}
		maxSeats = max(maxSeats, r.InitialSeats)
	}
	if wide == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d dumped requests take more than one seat (up to %d)", wide, n, maxSeats)
}

func findFlowSchema(c *engine.Config, name string) *flowcontrolv1.FlowSchema {
	for _, fs := range c.FlowSchemas {
		if fs.Name == name {
			return fs
		}
	}
	return nil
}

// count429 sums apiserver_request_total{code="429"}, which counts APF's
// rejections (epmetrics.RecordDroppedRequest) and every other 429.
// countRejected sums apiserver_flowcontrol_rejected_requests_total.
func countRejected(s *metrics.Scrape) float64 {
	t := 0.0
	for _, v := range s.SumBy2(metrics.RejectedRequestsTotal, "priority_level", "reason") {
		t += v
	}
	return t
}

func count429(s *metrics.Scrape) float64 {
	t := 0.0
	for _, smp := range s.Samples(metrics.FamilyRequestTotal) {
		if smp.Labels["code"] == "429" {
			t += smp.Value
		}
	}
	return t
}

// countsRejections reports whether live's dump_priority_levels counts
// rejections: the layouts from 1.27 have RejectedRequests, the older ones
// (and the exempt level's "<none>" row) do not.
func countsRejections(live *dump.Snapshot) bool {
	for _, r := range live.PriorityLevelDump {
		if r.HasCounters && !r.Placeholder {
			return true
		}
	}
	return false
}

// rejectionsUnknown says why an input without a rejection counter cannot
// tell whether a level rejects, and what input would.
func rejectionsUnknown(live *dump.Snapshot, hasMetrics bool) string {
	var held []string
	if live.PriorityLevelDump != nil {
		held = append(held, "its dump_priority_levels has no RejectedRequests column (a layout before 1.27)")
	}
	if hasMetrics {
		held = append(held, "its metrics have no "+metrics.RejectedRequestsTotal)
	}
	if len(held) == 0 {
		held = append(held, "it holds no rejection counter")
	}
	return strings.Join(held, " and ") + ": give the metrics with " + metrics.RejectedRequestsTotal + " (kubectl get --raw /metrics), or a dump_priority_levels of 1.27 or later"
}
