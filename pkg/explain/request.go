package explain

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// Explain classifies r against in.Config with a trace and joins the result
// with the limits and the live state of in.Live. givenGroups are the groups
// the user named; the identity's other groups are reported as implied (the
// authenticator or the impersonation filter adds them).
func Explain(in Input, r engine.Request, givenGroups []string) *Explanation {
	if in.ServerConcurrencyLimit <= 0 {
		in.ServerConcurrencyLimit = engine.DefaultServerConcurrencyLimit
	}
	if in.ServerRequestTimeout <= 0 {
		in.ServerRequestTimeout = engine.DefaultServerRequestTimeout
	}
	if in.Release.IsZero() {
		in.Release = engine.NewestRelease
	}
	ex := &Explanation{Request: requestView(r, givenGroups), Trace: []TraceEntry{}, Release: in.Release.String(), ReleaseFrom: in.ReleaseFrom}
	if in.Live != nil {
		ex.Instance, ex.NoDumps = in.Live.Instance, !hasDumps(in.Live)
		ex.RequestsOnly = hasRequestsOnly(in.Live)
		ex.RequestsWaitingOnly = ex.RequestsOnly && in.Live.RequestsWaitingOnly()
		ex.NoDumps = ex.NoDumps && !ex.RequestsOnly
	}
	cls := in.Config.ClassifyWithTrace(r)
	if cls.Bypass != "" {
		ex.Verdict = Verdict{Kind: VerdictBypass, Reason: cls.Bypass + ": it is never queued or rejected by APF and the response carries no X-Kubernetes-PF-* headers"}
		return ex
	}
	fs, pl := cls.FlowSchema, cls.PriorityLevel
	ex.FlowSchema = &FlowSchemaView{Name: fs.Name, UID: string(fs.UID), Precedence: fs.Spec.MatchingPrecedence, Rule: cls.Rule, Fallback: cls.Fallback}
	ex.Trace = traceEntries(in.Config, cls.Trace)
	for _, t := range ex.Trace {
		if t.Matched && t.Imagined {
			ex.FlowSchema.Imagined = true
		}
	}
	if cls.Flow.Computed {
		ex.FlowDistinguisherMethod = string(cls.Flow.Method)
		ex.FlowDistinguisher = cls.Flow.Distinguisher
		ex.FlowHash = fmt.Sprintf("%016x", cls.Flow.Hash)
	}

	limits := levelLimits(in.Config, in.ServerConcurrencyLimit, pl.Name)
	waitLimit, err := engine.RequestWaitLimit(r, in.ServerRequestTimeout)
	if err != nil {
		// A malformed ?timeout= is answered 400 before APF (request_deadline.go).
		ex.Notes = append(ex.Notes, err.Error())
	}
	ex.PriorityLevel = levelView(pl, limits, in.ServerConcurrencyLimit)
	for _, n := range in.Config.Imagined {
		if n == "PriorityLevelConfiguration/"+pl.Name {
			ex.PriorityLevel.Imagined = true
		}
	}
	queuing := pl.Spec.Limited != nil && pl.Spec.Limited.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue
	if queuing {
		ex.PriorityLevel.WaitLimit = Duration(waitLimit)
	}
	lm := levelMetricsOf(in.Live, pl.Name)
	if lm.found && !math.IsNaN(lm.stats.CurrentLimit) {
		v := lm.stats.CurrentLimit
		ex.PriorityLevel.CurrentLimit = &v
		if n := currentOutsideNote(ex.PriorityLevel); n != "" {
			ex.Notes = append(ex.Notes, n)
		}
	}
	ex.Seats = seatsFromCounts(estimateSeats(in.Release, r, limits), in.Release, r, limits, in.Live)

	if cls.Fallback {
		ex.Notes = append(ex.Notes, fmt.Sprintf("no FlowSchema matched: the identity is in neither %s nor %s, so the server falls back to %s and logs \"no match found\"",
			"system:authenticated", "system:unauthenticated", fs.Name))
	}
	// Only the dangling schemas evaluated before the winner matter here.
	for _, d := range in.Config.Dangling {
		for _, st := range cls.Trace {
			if st.Dangling && st.FlowSchema == d.Name {
				ex.Notes = append(ex.Notes, fmt.Sprintf("FlowSchema %s comes before the winner but is dangling (%s): the server skips it", d.Name, d.Reason))
			}
		}
	}
	if r.Info.IsResourceRequest && r.Info.Resource == "pods" && r.Info.Subresource == "eviction" {
		ex.Notes = append(ex.Notes, "a 429 on pods/eviction usually comes from a PodDisruptionBudget (\"Cannot evict pod as it would violate the pod's disruption budget\"), not from APF: check the PodDisruptionBudgets of the pod")
	}

	if len(cls.Hand) > 0 {
		ex.Queues = queuesView(in.Live, pl.Name, cls.Hand)
	}
	ex.Verdict = verdictForSeats(in, r, ex, pl, limits, lm, waitLimit)
	ex.Advice = advise(in, r, ex, cls)
	return ex
}

// ExplainOnEach explains r with the live state of each apiserver in lives:
// the explanation of the first, with the verdict of every one in Instances
// (a request can run at once on one apiserver and be rejected on another).
func ExplainOnEach(in Input, lives []*dump.Snapshot, r engine.Request, givenGroups []string) *Explanation {
	if len(lives) == 0 {
		return Explain(in, r, givenGroups)
	}
	var first *Explanation
	for _, l := range lives {
		in.Live = l
		ex := Explain(in, r, givenGroups)
		if first == nil {
			first = ex
		}
		if len(lives) > 1 {
			first.Instances = append(first.Instances, InstanceVerdict{Instance: l.Instance, Verdict: ex.Verdict, Queues: ex.Queues})
		}
	}
	return first
}

// requestView describes r; groups that the user did not give are implied.
func requestView(r engine.Request, given []string) RequestView {
	ri := r.Info
	v := RequestView{
		Method: r.Method, URL: r.URL, Verb: ri.Verb, IsResourceRequest: ri.IsResourceRequest,
		User: r.Identity.User, Groups: append([]string(nil), r.Identity.Groups...),
	}
	if ri.IsResourceRequest {
		v.APIGroup, v.APIVersion, v.Resource, v.Subresource, v.Namespace, v.Name = ri.APIGroup, ri.APIVersion, ri.Resource, ri.Subresource, ri.Namespace, ri.Name
	} else {
		v.Path = ri.Path
	}
	giv := map[string]bool{}
	for _, g := range given {
		giv[g] = true
	}
	for _, g := range r.Identity.Groups {
		if !giv[g] {
			v.ImpliedGroups = append(v.ImpliedGroups, g)
		}
	}
	return v
}

// traceEntries flattens the engine's trace and marks precedence ties.
func traceEntries(c *engine.Config, steps []engine.TraceStep) []TraceEntry {
	byPrec := map[int32][]string{}
	for _, fs := range c.FlowSchemas {
		byPrec[fs.Spec.MatchingPrecedence] = append(byPrec[fs.Spec.MatchingPrecedence], fs.Name)
	}
	out := make([]TraceEntry, 0, len(steps))
	for _, s := range steps {
		e := TraceEntry{FlowSchema: s.FlowSchema, Precedence: s.Precedence, PriorityLevel: s.PriorityLevel,
			Matched: s.Matched, Dangling: s.Dangling, Imagined: s.Imagined, Reason: s.Reason}
		for _, n := range byPrec[s.Precedence] {
			if n != s.FlowSchema {
				e.TiedWith = append(e.TiedWith, n)
			}
		}
		out = append(out, e)
	}
	return out
}

// levelLimits returns the engine's arithmetic for one level.
func levelLimits(c *engine.Config, scl int, name string) engine.LevelLimits {
	for _, l := range c.Limits(scl) {
		if l.Name == name {
			return l
		}
	}
	return engine.LevelLimits{Name: name}
}

func levelView(pl *flowcontrolv1.PriorityLevelConfiguration, l engine.LevelLimits, scl int) *PriorityLevelView {
	v := &PriorityLevelView{Name: pl.Name, UID: string(pl.UID), Type: string(pl.Spec.Type),
		NominalLimit: l.NominalCL, LowerLimit: l.LowerCL, UpperLimit: l.UpperCL, MaxSeats: l.MaxSeats, ServerConcurrencyLimit: scl}
	if lim := pl.Spec.Limited; lim != nil {
		v.LimitResponse = string(lim.LimitResponse.Type)
		if q := lim.LimitResponse.Queuing; q != nil && lim.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue {
			v.Queues, v.HandSize, v.QueueLengthLimit = q.Queues, q.HandSize, q.QueueLengthLimit
		}
	}
	return v
}

// queuesView describes the hand, with lengths from the dump when present.
func queuesView(live *dump.Snapshot, level string, hand []int) *QueuesView {
	qv := &QueuesView{Hand: make([]QueueState, 0, len(hand)), Live: hasDumps(live)}
	rows := queuesOf(live, level)
	work := map[int]uint64{}
	for _, q := range hand {
		row := rows[q]
		qv.Hand = append(qv.Hand, QueueState{Index: q, Waiting: row.PendingRequests, Executing: row.ExecutingRequests,
			WaitingSeats: row.MaxSeatsSum, WaitingWork: row.TotalWorkSum})
		// SeatSeconds are fixed-point with scale 1e8 (request/seat_seconds.go).
		work[q] = uint64(row.TotalWorkSum*1e8 + 0.5)
	}
	if qv.Live {
		qv.Candidates = engine.CandidateQueues(hand, work)
	}
	return qv
}

// seatsInUse returns the seats executing in a level: from the metrics when
// they give them, else from the executing rows of dump_requests.
func seatsInUse(live *dump.Snapshot, lm levelMetrics, level string) (float64, bool) {
	if lm.found && !math.IsNaN(lm.stats.SeatsInUse) {
		return lm.stats.SeatsInUse, true
	}
	if !hasDumps(live) {
		return 0, false
	}
	n := 0
	for _, r := range live.RequestDump {
		if r.PriorityLevel == level && r.Executing() {
			n += max(r.InitialSeats, 1)
		}
	}
	if live.RequestsWaitingOnly() {
		// a dump_requests before 1.28 lists no executing request: the
		// levels' dump counts them (requests, one seat each at least),
		// where its rows read "0 of 1 seat in use" beside 17 waiting
		for _, pl := range live.PriorityLevelDump {
			if pl.Name == level {
				n = max(n, pl.ExecutingRequests)
			}
		}
	}
	return float64(n), true
}

func verdict(in Input, r engine.Request, ex *Explanation, pl *flowcontrolv1.PriorityLevelConfiguration, l engine.LevelLimits, lm levelMetrics, waitLimit time.Duration) Verdict {
	seats := float64(ex.Seats.Initial)
	if pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt {
		return Verdict{Kind: VerdictExempt, Reason: fmt.Sprintf("priority level %s is exempt: the request runs at once, is never queued or rejected, and only counts towards the level's seats", pl.Name)}
	}
	cl := float64(l.NominalCL)
	if ex.PriorityLevel.CurrentLimit != nil {
		cl = *ex.PriorityLevel.CurrentLimit
	}
	inUse, known := seatsInUse(in.Live, lm, pl.Name)
	lim := pl.Spec.Limited
	if lim == nil || lim.LimitResponse.Type != flowcontrolv1.LimitResponseTypeQueue {
		// Reject level: queueset.go:StartRequest step 0, canAccommodateSeatsLocked.
		if ro, ok := requestsOnlyOf(in.Live, pl.Name); !known && ok && ro.inUseKnown {
			return ro.rejectVerdict(pl.Name, seats, cl)
		}
		if !known && seats > cl {
			return Verdict{Kind: VerdictUnknown, Reason: fmt.Sprintf("without live state: %s has no queues, so the request runs at once only when nothing else executes there (%s), and gets 429 (%s) at once otherwise", pl.Name, widerThan(seats, cl), ReasonConcurrencyLimit)}
		}
		if !known {
			return Verdict{Kind: VerdictUnknown, Reason: fmt.Sprintf("without live state: %s has no queues, so the request runs at once if its %s %s beside those in use (limit %v), and gets 429 (%s) at once otherwise", pl.Name, seatsText(int(seats)), textfmt.Plural(int(seats), "fits", "fit"), cl, ReasonConcurrencyLimit)}
		}
		if inUse == 0 && seats > cl {
			return Verdict{Kind: VerdictRuns, Reason: fmt.Sprintf("%s has no queues and nothing executes there, so the request runs at once, alone (%s)", pl.Name, widerThan(seats, cl))}
		}
		if inUse == 0 || inUse+seats <= cl {
			return Verdict{Kind: VerdictRuns, Reason: fmt.Sprintf("%s has no queues, with %s, so the %s of this request %s and it runs at once", pl.Name, inUseOf(inUse, cl, "its "), seatsText(int(seats)), textfmt.Plural(int(seats), "fits", "fit"))}
		}
		return Verdict{Kind: VerdictRejected, RejectReason: ReasonConcurrencyLimit,
			Reason: fmt.Sprintf("%s has no queues (limitResponse Reject), with %s: the request would get 429 at once (%s)", pl.Name, inUseOf(inUse, cl, "its "), ReasonConcurrencyLimit)}
	}
	q := lim.LimitResponse.Queuing
	if ro, ok := requestsOnlyOf(in.Live, pl.Name); ok {
		return ro.queueVerdict(pl.Name, seats, cl, q.QueueLengthLimit, ex.Queues, waitLimit)
	}
	if (!known || !hasDumps(in.Live)) && seats > cl {
		return Verdict{Kind: VerdictUnknown, WaitLimit: Duration(waitLimit),
			Reason: fmt.Sprintf("without live state: the request runs at once if nothing executes in %s and nobody waits (%s); otherwise it waits in the least loaded of its %d queues for up to %v, or gets 429 (%s) when that queue already holds %d requests",
				pl.Name, widerThan(seats, cl), len(ex.Queues.Hand), waitLimit, ReasonQueueFull, q.QueueLengthLimit)}
	}
	if !known || !hasDumps(in.Live) {
		return Verdict{Kind: VerdictUnknown, WaitLimit: Duration(waitLimit),
			Reason: fmt.Sprintf("without live state: the request runs at once if %s has a free seat and nobody waits; otherwise it waits in the least loaded of its %d queues for up to %v, or gets 429 (%s) when %s and that queue already holds %d requests",
				pl.Name, len(ex.Queues.Hand), waitLimit, ReasonQueueFull, allSeats(cl, "")+" busy", q.QueueLengthLimit)}
	}
	waiting := 0
	for _, row := range queuesOf(in.Live, pl.Name) {
		waiting += row.PendingRequests
	}
	if waiting == 0 && inUse < cl && (inUse+seats <= cl || inUse == 0) {
		// queueset.go: enqueue then dispatchAsMuchAsPossibleLocked, which
		// dispatches at once while canAccommodateSeatsLocked.
		if seats > cl {
			return Verdict{Kind: VerdictRuns, Reason: fmt.Sprintf("nobody waits in %s and nothing executes there, so the request is dispatched at once, alone (%s)", pl.Name, widerThan(seats, cl))}
		}
		return Verdict{Kind: VerdictRuns, Reason: fmt.Sprintf("nobody waits in %s, with %s, so the request is dispatched at once", pl.Name, inUseOf(inUse, cl, "its "))}
	}
	cand := ex.Queues.Candidates
	if len(cand) == 0 {
		return Verdict{Kind: VerdictUnknown, Reason: "the hand of queues is unknown"}
	}
	chosen := cand[0]
	var st QueueState
	for _, s := range ex.Queues.Hand {
		if s.Index == chosen {
			st = s
		}
	}
	v := Verdict{Queue: &chosen, Ahead: st.Waiting, WaitLimit: Duration(waitLimit)}
	// queueset.go:rejectOrEnqueueToBoundLocked counts requests, not seats,
	// and rejects only when no seat is free.
	if inUse >= cl && int32(st.Waiting) >= q.QueueLengthLimit {
		v.Kind, v.RejectReason = VerdictRejected, ReasonQueueFull
		v.Reason = fmt.Sprintf("%s in use and the least loaded queue of the hand (queue %d) already holds %d requests, its queue length limit: 429 (%s)", allSeats(cl, pl.Name), chosen, st.Waiting, ReasonQueueFull)
		return v
	}
	v.Kind = VerdictQueued
	behind := "nobody"
	if st.Waiting > 0 {
		behind = fmt.Sprintf("%s (%s, %.3f seat-seconds of work)", textfmt.Count(st.Waiting, "request", "requests"), seatsText(int(st.WaitingSeats)), st.WaitingWork)
	}
	v.Reason = fmt.Sprintf("%s in %s, with %s: the request joins queue %d behind %s",
		textfmt.Count(waiting, "request waits", "requests wait"), pl.Name, inUseOf(inUse, cl, ""), chosen, behind)
	if w, ok := expectedWait(in.Live, lm, pl.Name, st.Waiting, cl); ok {
		d := Duration(w)
		v.ExpectedWait = &d
		if w > waitLimit {
			v.RejectReason = ReasonTimeOut
			v.Reason += fmt.Sprintf("; the expected wait of about %v exceeds the wait limit of %v, so it will likely get 429 (%s)", w.Round(time.Millisecond), waitLimit, ReasonTimeOut)
		} else {
			v.Reason += fmt.Sprintf("; expected wait about %v, within the wait limit of %v", w.Round(time.Millisecond), waitLimit)
		}
	}
	return v
}

// widerThan says that a request of seats is wider than a level of limit
// cl, and what upstream does with it: it starts when nothing else executes
// in the level (queueset.go canAccommodateSeatsLocked), which makes a level
// of 0 seats admit one request at a time (kubernetes/kubernetes#134196).
func widerThan(seats, cl float64) string {
	n := int(seats)
	text := widerThanLevel(n, fmt.Sprintf("limit of %v", cl))
	if cl < 1 {
		// a level of 1 seat or more said it too, of a level of 0
		text += ", so a level of 0 seats admits one request at a time: kubernetes/kubernetes#134196"
	}
	return text
}

// widerThanLevel is "its 10 seats are more than the level's 1, and
// upstream starts …": a request wider than the level it ran in, the
// level's limit given as words ("1", "limit of 0.5").
func widerThanLevel[N ~int | ~uint64](seats N, limit string) string {
	return fmt.Sprintf("its %s %s more than the level's %s, and %s", seatsText(seats), textfmt.Plural(seats, "is", "are"), limit, widerRule)
}

// widerRule is upstream's rule for a request of more seats than its
// level's limit (canAccommodateSeatsLocked, queueset.go), in the words
// explain request and explain 429 both give it.
const widerRule = "upstream starts a request wider than the level when nothing else executes there"

// expectedWait estimates the wait in fair queuing: before this request,
// every other queue of the level can dispatch at most as many requests as
// are ahead of it in its own queue plus one (round-robin by virtual finish
// time), each taking the mean execution time of the level, with the level's
// seats shared. It needs the mean execution time from the metrics.
func expectedWait(live *dump.Snapshot, lm levelMetrics, level string, ahead int, cl float64) (time.Duration, bool) {
	if lm.meanExec <= 0 || cl <= 0 {
		return 0, false
	}
	rows := queuesOf(live, level)
	idx := make([]int, 0, len(rows))
	for i := range rows {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	// The own queue counts min(ahead, ahead+1) = ahead; the request itself
	// then runs once a seat frees up.
	before := 0
	for _, i := range idx {
		before += min(rows[i].PendingRequests, ahead+1)
	}
	return time.Duration(float64(before) / cl * float64(lm.meanExec)), true
}

// currentOutsideNote says when the server's current limit of a level (its
// metrics) lies outside the lower and upper limits of the configuration
// explained: borrowing keeps it between them, so the server's
// configuration is not the one explained, and its nominal limit is not the
// server's.
func currentOutsideNote(pl *PriorityLevelView) string {
	c := pl.CurrentLimit
	if c == nil || pl.Type == "Exempt" || (*c >= float64(pl.LowerLimit) && *c <= float64(pl.UpperLimit)) {
		return ""
	}
	return fmt.Sprintf("%s's current limit %v is the server's (its metrics), outside the lower and upper limits (%d to %d) of the configuration explained, whose nominal limit is %d: the server's configuration is not the one explained (its levels or its limit differ), so %d is not the server's nominal limit",
		pl.Name, *c, pl.LowerLimit, pl.UpperLimit, pl.NominalLimit, pl.NominalLimit)
}

// seatsText is n seats, "1 seat" for one.
func seatsText[N ~int | ~uint64](n N) string { return textfmt.Count(n, "seat", "seats") }

// inUseOf is "0 of its 1 seat in use", "2 of 3 seats in use": the seats
// in use of a limit, the noun agreeing with the limit. More in use than
// the limit is a request wider than the limit, which upstream's queueset
// dispatches when nothing else executes (canAccommodateSeatsLocked): a
// LIST of 10 seats in a Reject level of 1 (make demo's apf-load-reject)
// read "10 of its 1 seat in use".
func inUseOf(inUse, limit float64, its string) string {
	if inUse > limit && limit > 0 {
		return fmt.Sprintf("%v seats in use, more than %s%v %s (%s)", inUse, its, limit, textfmt.PluralFigure(&limit, "seat", "seats"), widerRule)
	}
	return fmt.Sprintf("%v of %s%v %s in use", inUse, its, limit, textfmt.PluralFigure(&limit, "seat", "seats"))
}

// allSeats is "the 1 seat of level is", "all 3 seats of level are";
// without a level, "its 1 seat is", "all 3 seats are".
func allSeats(n float64, level string) string {
	switch {
	case n == 1 && level == "":
		return "its 1 seat is"
	case n == 1:
		return "the 1 seat of " + level + " is"
	case level == "":
		return fmt.Sprintf("all %v seats are", n)
	}
	return fmt.Sprintf("all %v seats of %s are", n, level)
}

// currentLimitUnknown says what a dump_requests alone does not give: the
// level's current limit, which borrowing moves from the configuration's.
func currentLimitUnknown(cl float64) string {
	return fmt.Sprintf("its current limit, which the configuration puts at %v %s and borrowing moves, is in dump_priority_levels or the metrics", cl, textfmt.PluralFigure(&cl, "seat", "seats"))
}

// rejectVerdict is the verdict in a Reject level (no queues) from a
// dump_requests alone: the seats executing there are known, its current
// limit is not.
func (ro requestsOnly) rejectVerdict(level string, seats, cl float64) Verdict {
	if ro.inUse == 0 {
		if seats > cl {
			return Verdict{Kind: VerdictRuns, Reason: fmt.Sprintf("dump_requests shows nothing executing in %s, which has no queues, so the request runs at once, alone (%s)", level, widerThan(seats, cl))}
		}
		return Verdict{Kind: VerdictRuns, Reason: fmt.Sprintf("dump_requests shows nothing executing in %s, which has no queues, so the request runs at once", level)}
	}
	return Verdict{Kind: VerdictUnknown, Reason: fmt.Sprintf("dump_requests shows %s executing in %s, which has no queues: the request runs at once if its %s %s beside them under the level's current limit, and gets 429 (%s) at once otherwise; %s",
		seatsText(ro.inUse), level, seatsText(int(seats)), textfmt.Plural(int(seats), "fits", "fit"), ReasonConcurrencyLimit, currentLimitUnknown(cl))}
}

// queueVerdict is the verdict in a queuing level from a dump_requests
// alone. Upstream enqueues a request whenever another waits in its level
// (queueset.go, StartRequest, then dispatchAsMuchAsPossibleLocked), and
// puts it in the queue of its hand with the least waiting work
// (shuffleShardLocked): an empty queue has none, so the candidates are
// known where the hand has one. A queue-full 429 needs that queue at its
// length limit and every seat of the level in use.
func (ro requestsOnly) queueVerdict(level string, seats, cl float64, lengthLimit int32, qv *QueuesView, waitLimit time.Duration) Verdict {
	executing := fmt.Sprintf("%s executing", seatsText(ro.inUse))
	if !ro.inUseKnown {
		executing = "its executing requests not listed (a layout before 1.28 lists the waiting ones alone)"
		if ro.waiting == 0 {
			return Verdict{Kind: VerdictUnknown, WaitLimit: Duration(waitLimit), Reason: fmt.Sprintf("dump_requests shows nobody waiting in %s, and, of a layout before 1.28, not the requests executing: the request is dispatched at once if its %s %s beside them under the level's current limit, and otherwise waits in one of its hand's queues, all empty",
				level, seatsText(int(seats)), textfmt.Plural(int(seats), "fits", "fit"))}
		}
	}
	if ro.waiting == 0 {
		if ro.inUse == 0 {
			if seats > cl {
				return Verdict{Kind: VerdictRuns, Reason: fmt.Sprintf("dump_requests shows nothing waiting or executing in %s, so the request is dispatched at once, alone (%s)", level, widerThan(seats, cl))}
			}
			return Verdict{Kind: VerdictRuns, Reason: fmt.Sprintf("dump_requests shows nothing waiting or executing in %s, so the request is dispatched at once", level)}
		}
		return Verdict{Kind: VerdictUnknown, WaitLimit: Duration(waitLimit), Reason: fmt.Sprintf("dump_requests shows nobody waiting in %s and %s: the request is dispatched at once if its %s %s beside them under the level's current limit, and otherwise waits in one of its hand's queues, all empty; %s",
			level, executing, seatsText(int(seats)), textfmt.Plural(int(seats), "fits", "fit"), currentLimitUnknown(cl))}
	}
	waits := fmt.Sprintf("dump_requests shows %s in %s and %s", textfmt.Count(ro.waiting, "request waiting", "requests waiting"), level, executing)
	if ro.inUse == 0 && ro.inUseKnown {
		// upstream dispatches a waiting request whenever nothing executes
		// in its level: a whole dump shows executing requests beside
		// waiting ones, and one that does not is cut
		return Verdict{Kind: VerdictUnknown, WaitLimit: Duration(waitLimit), Reason: fmt.Sprintf("dump_requests shows %s in %s and none executing, which a whole dump never shows (the server dispatches whenever nothing executes in a level): it is likely cut, and the level's state is not known from it; in the rows it has, %s",
			textfmt.Count(ro.waiting, "request waiting", "requests waiting"), level, ro.handRows(qv))}
	}
	if qv == nil || len(qv.Hand) == 0 {
		return Verdict{Kind: VerdictUnknown, Reason: waits + ": the request is queued (another waits), and the hand of queues is unknown"}
	}
	least, cand := -1, []int(nil)
	for _, s := range qv.Hand {
		n := ro.byQueue[s.Index]
		switch {
		case least < 0 || n < least:
			least, cand = n, []int{s.Index}
		case n == least:
			cand = append(cand, s.Index)
		}
	}
	v := Verdict{Kind: VerdictQueued, WaitLimit: Duration(waitLimit)}
	switch {
	case least == 0 && len(cand) == 1:
		v.Queue, v.Ahead = &cand[0], 0
		v.Reason = fmt.Sprintf("%s: the request is queued (another waits), in queue %d, the one empty queue of its hand, behind nobody; when it is dispatched depends on the level's current limit and the other queues' work, which dump_priority_levels, dump_queues or the metrics give", waits, cand[0])
	case least == 0:
		v.Reason = fmt.Sprintf("%s: the request is queued (another waits), in one of the empty queues %v of its hand, behind nobody; when it is dispatched depends on the level's current limit and the other queues' work, which dump_priority_levels, dump_queues or the metrics give", waits, cand)
	case int32(least) < lengthLimit:
		v.Reason = fmt.Sprintf("%s: the request is queued (another waits) in the queue of its hand with the least waiting work, each of which holds %d or more of its %d; which one, and when it is dispatched, dump_queues and dump_priority_levels tell", waits, least, lengthLimit)
	case ro.widest == 1:
		// queueset.go: a request of one seat waits only while no seat is
		// free (dispatchAsMuchAsPossibleLocked dispatches the head of the
		// queue it picks while canAccommodateSeatsLocked), and the dump
		// reads a level under its lock, at one moment
		return Verdict{Kind: VerdictRejected, RejectReason: ReasonQueueFull, WaitLimit: Duration(waitLimit), Reason: fmt.Sprintf("%s, each asking 1 seat, which the server dispatches while a seat is free: every seat of %s is in use, and every queue of its hand holds its length limit of %d or more: 429 (%s)",
			waits, level, lengthLimit, ReasonQueueFull)}
	default:
		return Verdict{Kind: VerdictUnknown, WaitLimit: Duration(waitLimit), Reason: fmt.Sprintf("%s: every queue of its hand holds its length limit of %d or more, so the request gets 429 (%s) if every seat of the level is in use, and is queued otherwise; %s",
			waits, lengthLimit, ReasonQueueFull, currentLimitUnknown(cl))}
	}
	return v
}

// handRows says how many requests the rows of a dump_requests put in each
// queue of the hand: "queue 14 holds 2 of them and queues 74, 109, 18, 115
// and 113 none".
func (ro requestsOnly) handRows(qv *QueuesView) string {
	if qv == nil || len(qv.Hand) == 0 {
		return "the hand of queues is unknown"
	}
	var held, empty []string
	for _, s := range qv.Hand {
		if n := ro.byQueue[s.Index]; n > 0 {
			held = append(held, fmt.Sprintf("queue %d holds %d", s.Index, n))
		} else {
			empty = append(empty, strconv.Itoa(s.Index))
		}
	}
	parts := held
	if len(empty) > 0 {
		parts = append(parts, textfmt.Plural(len(empty), "queue", "queues")+" "+textfmt.JoinAnd(empty)+" of its hand "+textfmt.Plural(len(empty), "holds", "hold")+" none")
	}
	return textfmt.JoinAnd(parts)
}
