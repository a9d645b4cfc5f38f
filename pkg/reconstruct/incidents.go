package reconstruct

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// incidentAcc is an incident of a level being accumulated: from its first
// 429 to its last, with the clients' integrals at both ends.
type incidentAcc struct {
	first, last int64
	// seatsAt and waitAt are each client's integrals at first, seatsEnd
	// at endAt: the incident's seat-seconds are those from its first 429
	// to its last, and at least incidentMinSpan
	seatsAt, waitAt map[int32]float64
	seatsEnd        map[int32]float64
	endAt           int64
	rejected        map[int32]int64
	reasons         map[string]float64
	schemas         map[[2]string]float64
	// crowded counts queue-full rejections whose hand's queues held more
	// requests of other flows than of the rejected one's; crowders by flow
	crowded, queueFull int64
	crowders           map[int32]int64
	// arrived counts each flow's requests that arrived at the level while
	// the incident was open
	arrived    map[int32]int64
	seats      int64 // seats of the rejected requests
	maxWaiting int
	limit      int
	total      int64
}

// note429 adds a recorded 429 to its level's incident.
func (s *state) note429(l *level, r *req, f *Fate) {
	t := s.now
	inc := l.inc
	if inc != nil && t-inc.last > int64(s.opts.IncidentGap) {
		s.closeIncident(l)
		inc = nil
	}
	if inc == nil {
		inc = &incidentAcc{first: t, seatsAt: map[int32]float64{}, waitAt: map[int32]float64{}, rejected: map[int32]int64{},
			reasons: map[string]float64{}, schemas: map[[2]string]float64{}, crowders: map[int32]int64{}, arrived: map[int32]int64{r.flow: 1}}
		for ci, a := range l.clients {
			a.to(t)
			inc.seatsAt[ci], inc.waitAt[ci] = a.seatNs, a.waitNs
		}
		l.inc = inc
		s.push(t+int64(incidentMinSpan), evMark, &req{lv: l})
	}
	inc.last = t
	if t >= inc.first+int64(incidentMinSpan) {
		s.markIncident(l)
	}
	inc.total++
	inc.rejected[r.client]++
	inc.reasons[f.Reason]++
	inc.schemas[[2]string{f.FlowSchema, f.Reason}]++
	inc.seats += int64(r.seats)
	inc.maxWaiting = max(inc.maxWaiting, l.waiting)
	inc.limit = max(inc.limit, l.limit)
	if f.Reason == "queue-full" && l.queues != nil {
		inc.queueFull++
		own, others := 0, 0
		by := map[int32]int{}
		for _, qi := range f.Hand {
			for q := l.queues[qi].head; q != nil; q = q.next {
				if q.flow == r.flow {
					own++
				} else {
					others++
					by[q.flow]++
				}
			}
		}
		if others > own {
			inc.crowded++
			top, _ := topFlow(by)
			inc.crowders[top]++
		}
	}
}

// incidentMinSpan is the shortest time over which an incident's seat
// holders are counted.
const incidentMinSpan = time.Second

// markIncident takes the clients' integrals as the incident's end, now.
func (s *state) markIncident(l *level) {
	inc := l.inc
	if inc == nil || inc.seatsEnd != nil && !l.dirty {
		return
	}
	inc.seatsEnd, inc.endAt, l.dirty = map[int32]float64{}, s.now, false
	for ci, a := range l.clients {
		a.to(s.now)
		inc.seatsEnd[ci] = a.seatNs
	}
}

// closeIncidents closes the incidents whose last 429 is more than the gap
// before t.
func (s *state) closeIncidents(t int64) {
	for _, l := range s.order {
		if l.inc != nil && t-l.inc.last > int64(s.opts.IncidentGap) {
			s.closeIncident(l)
		}
	}
}

// closeIncident turns a level's incident into a rejections.Incident.
func (s *state) closeIncident(l *level) {
	inc := l.inc
	l.inc = nil
	start, end := s.start.Add(time.Duration(inc.first)), s.start.Add(time.Duration(inc.last))
	out := rejections.Incident{Level: l.name, Start: &start, End: &end, Rejected: float64(inc.total), Reasons: inc.reasons,
		Instances: []rejections.InstanceCount{}, Causes: []rejections.Cause{}}
	for k, n := range inc.schemas {
		out.FlowSchemas = append(out.FlowSchemas, rejections.SchemaCount{FlowSchema: k[0], Reason: k[1], Count: n})
	}
	slices.SortFunc(out.FlowSchemas, func(a, b rejections.SchemaCount) int {
		if a.Count != b.Count {
			return int(b.Count - a.Count)
		}
		return strings.Compare(a.FlowSchema+a.Reason, b.FlowSchema+b.Reason)
	})
	cl := &rejections.Clients{}
	for ci, n := range inc.rejected {
		c := s.share(ci)
		c.Count, c.Share = float64(n), float64(n)/float64(inc.total)
		cl.Rejected = append(cl.Rejected, c)
	}
	var held float64
	seatSec := map[int32]float64{}
	// summed in the clients' order, not the map's: the shares are then the
	// same at every run to the last bit
	for _, ci := range slices.Sorted(maps.Keys(inc.seatsEnd)) {
		if v := (inc.seatsEnd[ci] - inc.seatsAt[ci]) / 1e9; v > 0 {
			seatSec[ci] = v
			held += v
		}
	}
	for ci, v := range seatSec {
		c := s.share(ci)
		c.SeatSeconds = rejections.Of(v)
		c.Share = v / held
		cl.HeldSeats = append(cl.HeldSeats, c)
	}
	sortShares(cl.Rejected, func(c rejections.ClientShare) float64 { return c.Count })
	sortShares(cl.HeldSeats, func(c rejections.ClientShare) float64 { return *c.SeatSeconds })
	out.Clients = cl
	lim := float64(inc.limit)
	out.State = rejections.LevelState{CurrentLimit: &lim, NominalLimit: rejections.Of(float64(l.limits.NominalCL)), QueueLengthLimit: int32(l.qll)}
	out.State.From = map[string]string{"currentLimit": "reconstruction", "nominalLimit": "configuration"}
	if l.queues != nil {
		out.State.LimitResponse = "Queue"
		out.State.Queues, out.State.HandSize = int32(len(l.queues)), int32(l.shard.HandSize())
		out.State.Waiting = rejections.Of(float64(inc.maxWaiting))
		out.State.From["waiting"] = "reconstruction (most waiting at a 429)"
	} else if !l.exempt {
		out.State.LimitResponse = "Reject"
	}
	out.Summary, out.Causes = s.diagnose(l, inc, cl, seatSec)
	s.res.Incidents = append(s.res.Incidents, out)
}

func sortShares(cs []rejections.ClientShare, key func(rejections.ClientShare) float64) {
	slices.SortFunc(cs, func(a, b rejections.ClientShare) int {
		if ka, kb := key(a), key(b); ka != kb {
			if ka > kb {
				return -1
			}
			return 1
		}
		return strings.Compare(a.User+a.UserAgent+a.Distinguisher, b.User+b.UserAgent+b.Distinguisher)
	})
}

// share is a client's identifying fields.
func (s *state) share(ci int32) rejections.ClientShare { return shareOf(s.clients[ci]) }

// shareOf is a client's identifying fields.
func shareOf(k clientKey) rejections.ClientShare {
	c := rejections.ClientShare{UserAgent: k.userAgent, FlowSchema: k.fs, Distinguisher: k.dist}
	if ns, name, ok := serviceAccount(k.user); ok {
		c.ServiceAccount = ns + "/" + name
	} else {
		c.User = k.user
	}
	return c
}

func serviceAccount(user string) (ns, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	ns, name, ok = strings.Cut(rest, ":")
	return ns, name, ok
}

// clientName names a client in a sentence.
func clientName(c rejections.ClientShare) string {
	switch {
	case c.User != "":
		return c.User
	case c.ServiceAccount != "":
		return "serviceaccount " + c.ServiceAccount
	case c.Distinguisher != "":
		return c.FlowSchema + "/" + c.Distinguisher
	}
	return c.FlowSchema + " (" + c.UserAgent + ")"
}

// topHolder is the client, by name, that held the largest share of the
// seat-seconds, and that share: the rows of one name (a user's requests
// under several user agents) summed. The top row alone read "load-8 held
// 95%" where load-8's kubectl held the other 5%.
func topHolder(held []rejections.ClientShare) (name string, share float64) {
	by := map[string]float64{}
	var order []string
	for _, c := range held {
		n := clientName(c)
		if _, ok := by[n]; !ok {
			order = append(order, n)
		}
		by[n] += c.Share
	}
	for _, n := range order {
		if by[n] > share {
			name, share = n, by[n]
		}
	}
	return name, share
}

// topFlow is the flow of the largest count, and the count (the lowest
// flow index on a tie; -1 for no count): the flow that held most of a
// rejected request's hand, or crowded most rejected requests out.
func topFlow[N int | int64](counts map[int32]N) (flow int32, n N) {
	flow = -1
	for f, c := range counts {
		if c > n || c == n && f < flow {
			flow, n = f, c
		}
	}
	return flow, n
}

// oneElephant reports whether one flow crowded out at least half of the
// crowded rejections: an elephant; otherwise many flows crowd each other,
// and the level is short of seats for them all.
func oneElephant(crowded, top int64) bool { return crowded > 0 && top*2 >= crowded }

// heavy reports whether flow sent at least heavyFactor times the mean of
// the flows that sent the level requests in the incident: a flow behind
// most crowded rejections that sent no more than the others is not an
// elephant, its queues lie in the others' hands (the demo cluster's six
// equal load users on 8 queues, hand 2: one behind 1,783 of 3,016, with
// 8% of the level's 429s and 22% of its seat-seconds).
func heavy(arrived map[int32]int64, flow int32) (bool, int64, int64) {
	var total int64
	for _, n := range arrived {
		total += n
	}
	if len(arrived) == 0 || total == 0 {
		return false, 0, 0
	}
	n := arrived[flow]
	return float64(n) >= heavyFactor*float64(total)/float64(len(arrived)), n, total
}

// heavyFactor is how many times the mean flow's requests an elephant
// sends at least.
const heavyFactor = 1.5

// diagnose gives an incident's summary and causes, in the cause names of
// every explain 429 source.
func (s *state) diagnose(l *level, inc *incidentAcc, cl *rejections.Clients, seatSec map[int32]float64) (string, []rejections.Cause) {
	var causes []rejections.Cause
	var summary []string
	if name, share := topHolder(cl.HeldSeats); name != "" {
		summary = append(summary, fmt.Sprintf("%s held %.0f%% of %s's seat-seconds", name, 100*share, l.name))
	}
	switch {
	case l.queues == nil && !l.exempt:
		causes = append(causes, rejections.Cause{Kind: rejections.CauseNoQueues,
			Evidence: fmt.Sprintf("%s has no queues (limitResponse Reject): %d requests found its %s in use", l.name, inc.total, textfmt.Count(inc.limit, "seat", "seats")),
			Fix:      "give the level queues (limitResponse.type: Queue) or more seats"})
	case inc.queueFull > 0 && inc.crowded*2 > inc.queueFull:
		crowder, n := topFlow(inc.crowders)
		name := "-"
		if crowder >= 0 {
			name = s.flows[crowder]
		}
		isHeavy, sent, all := heavy(inc.arrived, crowder)
		if oneElephant(inc.crowded, n) && !isHeavy {
			summary = append(summary, fmt.Sprintf("the flows crowded each other out: %d of %d queue-full 429s were of flows whose hands' queues other flows held, most often %s (%d times), which sent %d of the level's %d requests in the incident, from %d flows: under 1.5 times the mean flow's, no elephant; its queues lie in the others' hands", inc.crowded, inc.queueFull, name, n, sent, all, len(inc.arrived)))
			causes = append(causes, rejections.Cause{Kind: rejections.CauseTooLittleConcurrency,
				Evidence: fmt.Sprintf("%d of %d queue-full rejections found their hand's queues held mostly by other flows, most often by %s (%d times), which sent %d of the level's %d requests in the incident from %d flows, under 1.5 times the mean flow's: the hands of the level's %d queues overlap, and %s", inc.crowded, inc.queueFull, name, n, sent, all, len(inc.arrived), len(l.queues), allTaken("its", inc.limit)),
				Fix:      "give the level more seats (nominalConcurrencyShares), or more queues (and a larger hand) so that fewer flows share each"})
			break
		}
		if !oneElephant(inc.crowded, n) {
			// crowded out by many flows alike, as live triage calls a
			// level whose waiting requests no one flow holds half of
			summary = append(summary, fmt.Sprintf("the flows crowded each other out: %d of %d queue-full 429s were of flows whose hands' queues other flows held, %d flows among them, none behind half of them (%s the most, %d)", inc.crowded, inc.queueFull, len(inc.crowders), name, n))
			causes = append(causes, rejections.Cause{Kind: rejections.CauseTooLittleConcurrency,
				Evidence: fmt.Sprintf("%d of %d queue-full rejections found their hand's queues held mostly by other flows, spread over %d flows, none behind half of them (%s the most, %d): the level is saturated by many clients rather than one, with %s", inc.crowded, inc.queueFull, len(inc.crowders), name, n, everyTaken("its", inc.limit)),
				Fix:      "give the level more seats (nominalConcurrencyShares), or more queues (and a larger hand) so that fewer flows share each"})
			break
		}
		summary = append(summary, fmt.Sprintf("fair queuing did not protect the other flows: %d of %d queue-full 429s were of flows crowded out of their hands' queues, most by %s", inc.crowded, inc.queueFull, name))
		causes = append(causes, rejections.Cause{Kind: rejections.CauseElephantFlow,
			Evidence: fmt.Sprintf("%d of %d queue-full rejections found their hand's queues held mostly by other flows (%s most often, %d times)", inc.crowded, inc.queueFull, name, n),
			Fix:      "give the level more queues or a larger hand (shuffle sharding then separates the flows), or move the heavy client to a level of its own"})
	case inc.queueFull > 0:
		summary = append(summary, fmt.Sprintf("fair queuing kept the flows apart: %d of %d queue-full 429s were of flows that filled their own hand's queues", inc.queueFull-inc.crowded, inc.queueFull))
		causes = append(causes, rejections.Cause{Kind: rejections.CauseTooLittleConcurrency,
			Evidence: fmt.Sprintf("%d of %d queue-full rejections were of flows whose own requests filled their hand's queues, with %s", inc.queueFull-inc.crowded, inc.queueFull, everyTaken("the level's", inc.limit)),
			Fix:      "give the level more seats (nominalConcurrencyShares) or its clients less traffic"})
	}
	if n := inc.reasons["time-out"]; n > 0 {
		causes = append(causes, rejections.Cause{Kind: rejections.CauseTimeOuts,
			Evidence: fmt.Sprintf("%.0f requests waited their whole wait limit in %s's queues", n, l.name)})
	}
	if inc.total > 0 && float64(inc.seats)/float64(inc.total) > 1.5 {
		causes = append(causes, rejections.Cause{Kind: rejections.CauseWideRequests,
			Evidence: fmt.Sprintf("the rejected requests took %.1f seats each on average", float64(inc.seats)/float64(inc.total))})
	}
	if len(causes) == 0 {
		causes = append(causes, rejections.Cause{Kind: rejections.CauseUnclear, Evidence: "the reconstruction found no full queue nor full level for these 429s"})
	}
	return strings.Join(summary, "; "), causes
}

// Report is the reconstruction's incidents in the schema of every explain
// 429 source.
func (r *Result) Report(name string) *rejections.Report {
	rep := rejections.New(rejections.Source{Kind: rejections.SourceLog, Name: name})
	rep.Counts = rejections.CountsInWindow
	if !r.Start.IsZero() {
		start, end := r.Start, r.End
		rep.Window = rejections.Window{Start: &start, End: &end}
	}
	for _, in := range r.Incidents {
		rep.Rejected[in.Level] += in.Rejected
	}
	rep.Incidents = append(rep.Incidents, r.Incidents...)
	byRejected := func(a, b rejections.Incident) int { return int(b.Rejected - a.Rejected) }
	slices.SortStableFunc(rep.Incidents, byRejected)
	if len(r.Instances) <= 1 {
		rep.Instances = append(rep.Instances, rejections.Instance{Name: name})
		return rep
	}
	for _, in := range r.Instances {
		sum := in.Sum()
		ri := rejections.Instance{Name: in.Name, ServerConcurrencyLimit: in.ServerConcurrencyLimit,
			Fates: &rejections.Fates{Agreeing: sum.Agreeing(), Total: sum.Total()}, Incidents: []rejections.Incident{}}
		for _, inc := range in.Incidents {
			inc.Instances = []rejections.InstanceCount{{Instance: in.Name, Count: inc.Rejected}}
			ri.Incidents = append(ri.Incidents, inc)
		}
		slices.SortStableFunc(ri.Incidents, byRejected)
		rep.Instances = append(rep.Instances, ri)
	}
	return rep
}

// allTaken is "its 1 seat was taken", "its 3 seats were all taken".
func allTaken(whose string, n int) string {
	if n == 1 {
		return whose + " 1 seat was taken"
	}
	return fmt.Sprintf("%s %d seats were all taken", whose, n)
}

// everyTaken is "its 1 seat taken", "every one of its 3 seats taken".
func everyTaken(whose string, n int) string {
	return textfmt.EveryOne(whose, n, "seat", "seats") + " taken"
}
