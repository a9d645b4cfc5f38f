package explain

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
)

// CompareNames records what the server logged (httplog apf_fs and apf_pl,
// or an audit or JSONL record) next to the replay. Empty names mean "not
// recorded": the server writes none for requests that bypass APF.
func (ex *Explanation) CompareNames(source, flowSchema, priorityLevel string, status int) {
	rec := &Recorded{Source: source, FlowSchema: flowSchema, PriorityLevel: priorityLevel, Status: status}
	ex.Recorded = rec
	gotFS, gotPL := "", ""
	if ex.FlowSchema != nil {
		gotFS, gotPL = ex.FlowSchema.Name, ex.PriorityLevel.Name
	}
	if flowSchema == "" && priorityLevel == "" {
		if gotFS == "" {
			t := true
			rec.Agrees = &t
			rec.Detail = "the server recorded no classification, as expected for a request that bypasses APF"
			return
		}
		rec.Detail = "the record carries no apf_fs/apf_pl, nothing to compare"
		return
	}
	agree := gotFS == flowSchema && gotPL == priorityLevel
	rec.Agrees = &agree
	if agree {
		rec.Detail = fmt.Sprintf("the replay agrees with the server: FlowSchema %s, priority level %s", flowSchema, priorityLevel)
		return
	}
	rec.Detail = fmt.Sprintf("the replay disagrees: the server used FlowSchema %q and priority level %q, the replay %q and %q (the configuration may have changed since, or the identity differs: the log line carries no user)",
		flowSchema, priorityLevel, gotFS, gotPL)
}

// maxLoggedField is how much of a name the server's httplog keeps
// (k8s.io/apiserver pkg/server/filters/priority-and-fairness.go,
// truncateLogField).
const maxLoggedField = 64

// CompareDistinguisher records the flow distinguisher the server logged
// (httplog apf_fd, which some releases wrote) next to the replay's. A
// different one means the identity explained is not the request's, so the
// flow, hand and queues shown are another flow's: the comparison then
// disagrees, whatever the FlowSchema and level.
func (ex *Explanation) CompareDistinguisher(logged string) {
	rec := ex.Recorded
	if rec == nil || ex.FlowSchema == nil {
		return
	}
	rec.FlowDistinguisher = &logged
	got := ex.FlowDistinguisher
	if len(got) > maxLoggedField && len(logged) == maxLoggedField {
		got = got[:maxLoggedField]
	}
	if got == logged {
		return
	}
	flow := fmt.Sprintf("the server's flow distinguisher (apf_fd) was %q, the replay's %q: the identity explained is not the request's", logged, ex.FlowDistinguisher)
	if ex.FlowDistinguisherMethod == "ByUser" {
		flow += fmt.Sprintf(" (the server's user was %q)", logged)
	}
	flow += ", so the flow, hand and queues shown are another flow's"
	if rec.Agrees != nil && *rec.Agrees {
		rec.Detail = fmt.Sprintf("the replay's FlowSchema %s and priority level %s are the server's, but its flow is not: %s", rec.FlowSchema, rec.PriorityLevel, flow)
	} else {
		rec.Detail += "; and " + flow
	}
	disagree := false
	rec.Agrees = &disagree
}

// CompareUIDs records the X-Kubernetes-PF-FlowSchema-UID and
// X-Kubernetes-PF-PriorityLevel-UID headers of a probe next to the replay;
// names maps UIDs to names (nil: unresolved). Imagined mandatory objects
// have an empty UID on both sides.
func (ex *Explanation) CompareUIDs(source, fsUID, plUID string, headersPresent bool, status int, names map[string]string) {
	rec := &Recorded{Source: source, FlowSchemaUID: fsUID, PriorityLevelUID: plUID, Status: status,
		FlowSchema: names[fsUID], PriorityLevel: names[plUID]}
	ex.Recorded = rec
	if !headersPresent {
		agree := ex.FlowSchema == nil
		rec.Agrees = &agree
		if agree {
			rec.Detail = "the response carries no X-Kubernetes-PF-* headers, as expected for a request that bypasses APF"
		} else {
			rec.Detail = "the response carries no X-Kubernetes-PF-* headers although the replay classifies the request: APF may be disabled (--enable-priority-and-fairness=false) or a proxy dropped the headers"
		}
		return
	}
	if ex.FlowSchema == nil {
		f := false
		rec.Agrees = &f
		rec.Detail = "the server classified the request although the replay says it bypasses APF"
		return
	}
	agree := ex.FlowSchema.UID == fsUID && ex.PriorityLevel.UID == plUID
	rec.Agrees = &agree
	if agree {
		rec.Detail = fmt.Sprintf("the server's response headers agree with the replay: FlowSchema %s (uid %s), priority level %s (uid %s)", ex.FlowSchema.Name, fsUID, ex.PriorityLevel.Name, plUID)
		return
	}
	rec.Detail = fmt.Sprintf("the server answered FlowSchema uid %q (%s) and priority level uid %q (%s), the replay %s (%q) and %s (%q)",
		fsUID, orUnknown(names[fsUID]), plUID, orUnknown(names[plUID]), ex.FlowSchema.Name, ex.FlowSchema.UID, ex.PriorityLevel.Name, ex.PriorityLevel.UID)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// RecordedWork is what an httplog line records of a request's work and
// time: apf_iseats, apf_fseats and apf_additionalLatency (HasSeats),
// apf_execution_time (HasExecution) and latency.
type RecordedWork struct {
	HasSeats                 bool
	InitialSeats, FinalSeats uint64
	AdditionalLatency        time.Duration
	HasExecution             bool
	ExecutionTime            time.Duration
	Latency                  time.Duration
}

// CompareWork records the server's work estimate and times next to the
// replay, and notes every figure the replay's estimate cannot produce: seats
// outside its range, final seats or additional latency on a request that has
// none (only writes do, for their watchers), an execution time longer than
// the whole latency.
func (ex *Explanation) CompareWork(w RecordedWork) {
	rec := ex.Recorded
	if rec == nil {
		return
	}
	if w.Latency > 0 {
		l := Duration(w.Latency)
		rec.Latency = &l
	}
	if w.HasExecution {
		e := Duration(w.ExecutionTime)
		rec.ExecutionTime = &e
		if w.Latency > 0 && w.ExecutionTime > w.Latency {
			ex.Notes = append(ex.Notes, fmt.Sprintf("the server recorded an execution time (%v) longer than the request's whole latency (%v): the line is not consistent", w.ExecutionTime, w.Latency))
		}
	}
	if !w.HasSeats {
		return
	}
	i, f, a := w.InitialSeats, w.FinalSeats, Duration(w.AdditionalLatency)
	rec.InitialSeats, rec.FinalSeats, rec.AdditionalLatency = &i, &f, &a
	s := ex.Seats
	if s == nil {
		return
	}
	if i < s.Initial || i > s.Max {
		ex.Notes = append(ex.Notes, fmt.Sprintf("the server estimated %d initial %s, outside the replay's range %d..%d", i, textfmt.Plural(i, "seat", "seats"), s.Initial, s.Max))
	}
	if f > s.MaxFinal {
		ex.Notes = append(ex.Notes, fmt.Sprintf("the server estimated %s, above the replay's maximum of %d for this request and level", textfmt.Count(f, "final seat", "final seats"), s.MaxFinal))
	}
	if f == 0 && w.AdditionalLatency > 0 {
		ex.Notes = append(ex.Notes, fmt.Sprintf("the server recorded an additional latency of %v with no final seats: the estimator gives one only with final seats", w.AdditionalLatency))
	}
}

// Past is a logged request's moment as reconstructed from the log (package
// reconstruct): the state of its level when it reached APF.
type Past struct {
	// At is when the request reached APF, as the log tells it: without its
	// year when the log does not tell it (YearUnknown); Level its priority
	// level.
	At          LogTime `json:"at"`
	YearUnknown bool    `json:"yearUnknown,omitempty"`
	Level       string  `json:"level"`
	// Fate is VerdictRuns, VerdictQueued or VerdictRejected, with Reason
	// (queue-full, concurrency-limit, time-out) for a rejection.
	Fate   string `json:"fate"`
	Reason string `json:"reason,omitempty"`
	// Reconstructed is the fate the reconstruction decided from the state
	// alone (VerdictRuns or VerdictRejected); Disagreement names how it
	// differs from the server's answer, which Fate follows (a 429 it found
	// room for is still a rejection, with the likeliest reason).
	Reconstructed string `json:"reconstructed"`
	Disagreement  string `json:"disagreement,omitempty"`
	// SeatsInUse and Limit are the level's seats when it arrived; Waiting
	// the requests waiting in all its queues.
	SeatsInUse int `json:"seatsInUse"`
	Limit      int `json:"limit"`
	Waiting    int `json:"waiting"`
	// NominalLimit is the level's nominal limit; Limit, its current
	// limit, differs from it by borrowing between levels: from the log's
	// demand when LimitFromLog, else (the log's first 10 s) the share
	// borrowing gives the level when no level has any demand.
	NominalLimit int  `json:"nominalLimit"`
	LimitFromLog bool `json:"limitFromLog"`
	// Queue is the queue it was put in (or turned away from), nil for a
	// level without queues; QueueLengthLimit the level's.
	Queue            *int `json:"queue,omitempty"`
	QueueLengthLimit int  `json:"queueLengthLimit,omitempty"`
	// Queues are the queues of its hand and who waited in each; Holders
	// the flows holding the level's seats.
	Queues  []PastQueue `json:"queues,omitempty"`
	Holders []PastFlow  `json:"holders"`
	// Wait is the time it waited before dispatch (served requests), from
	// WaitFrom: "httplog", "audit" (apf-queue-wait) or "estimated" (the
	// reconstruction's, the log recording none).
	Wait     *Duration `json:"wait,omitempty"`
	WaitFrom string    `json:"waitFrom,omitempty"`
	// WaitLimit is the request's wait limit.
	WaitLimit Duration `json:"waitLimit"`
}

// LogTime is a time read from a log. klog's text header
// ("I0305 22:40:41.976983") carries no year: unless something else read
// with it does (a container runtime's or kubectl logs --timestamps' prefix,
// an audit event), YearKnown is false and the time is written without a
// year, in ISO 8601's form for a date whose year is left out:
// "--03-05T22:40:41.965396684Z". With the year it is RFC 3339.
type LogTime struct {
	Time      time.Time
	YearKnown bool
}

// noYearLayout writes a time without its year.
const noYearLayout = "--01-02T15:04:05.999999999Z07:00"

// MarshalJSON writes RFC 3339, or the time without its year.
func (t LogTime) MarshalJSON() ([]byte, error) {
	if t.YearKnown {
		return t.Time.MarshalJSON()
	}
	return json.Marshal(t.Time.Format(noYearLayout))
}

// UnmarshalJSON reads either form.
func (t *LogTime) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if strings.HasPrefix(s, "--") {
		v, err := time.Parse(noYearLayout, s)
		if err != nil {
			return err
		}
		*t = LogTime{Time: v}
		return nil
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	*t = LogTime{Time: v, YearKnown: true}
	return nil
}

// PastQueue is one queue of the hand at the request's moment.
type PastQueue struct {
	Index  int        `json:"index"`
	Length int        `json:"length"`
	Chosen bool       `json:"chosen,omitempty"`
	Flows  []PastFlow `json:"flows,omitempty"`
}

// PastFlow is one flow's requests and seats.
type PastFlow struct {
	Flow     string `json:"flow"`
	Requests int    `json:"requests"`
	Seats    int    `json:"seats"`
}

// SetPast makes the reconstructed moment the verdict: the fate the log's
// state gives the request, in place of the one of the state read now.
func (ex *Explanation) SetPast(p *Past) {
	ex.Past = p
	v := Verdict{Kind: p.Fate, RejectReason: p.Reason, WaitLimit: p.WaitLimit}
	if p.Queue != nil {
		q := *p.Queue
		v.Queue = &q
		for _, pq := range p.Queues {
			if pq.Index == q {
				v.Ahead = pq.Length
			}
		}
	}
	at := p.At.Time.UTC().Format("15:04:05.000")
	switch {
	case p.Fate == VerdictRejected && p.Reconstructed != VerdictRejected:
		v.Reason = fmt.Sprintf("at %s the server answered 429; %s had %s, %s waiting, and its hand's queues: %s", at, p.Level, inUseOf(float64(p.SeatsInUse), float64(p.Limit), ""), textfmt.Count(p.Waiting, "request", "requests"), queuesText(p.Queues))
	case p.Fate == VerdictRejected && p.Reason == "queue-full":
		v.Reason = fmt.Sprintf("at %s %s was taken and the queues of its hand were at their length limit (%d): %s", at, textfmt.EveryOne(p.Level+"'s", p.Limit, "seat", "seats"), p.QueueLengthLimit, queuesText(p.Queues))
	case p.Fate == VerdictRejected && p.Reason == "concurrency-limit":
		v.Reason = fmt.Sprintf("at %s %s, a level without queues, had %s, held by %s", at, p.Level, inUseOf(float64(p.SeatsInUse), float64(p.Limit), "its "), flowsText(p.Holders))
	case p.Fate == VerdictRejected && p.Reason == "time-out":
		v.Reason = fmt.Sprintf("at %s it waited in queue %s of %s for its whole wait limit (%v) with every seat taken", at, queueText(p.Queue), p.Level, time.Duration(p.WaitLimit))
	case p.Fate == VerdictQueued:
		v.ExpectedWait = p.Wait
		v.Reason = fmt.Sprintf("at %s it waited %v (%s) in queue %s of %s, with %s and %s waiting in the level", at, time.Duration(*p.Wait), p.WaitFrom, queueText(p.Queue), p.Level, inUseOf(float64(p.SeatsInUse), float64(p.Limit), ""), textfmt.Count(p.Waiting, "request", "requests"))
	default:
		v.Reason = fmt.Sprintf("at %s it was dispatched at once: %s had %s", at, p.Level, inUseOf(float64(p.SeatsInUse), float64(p.Limit), "its "))
		if ex.Seats != nil && p.Limit > 0 && ex.Seats.Initial > uint64(p.Limit) {
			// queueset.go, canAccommodateSeatsLocked
			v.Reason += fmt.Sprintf(", and it ran alone: %s", widerThanLevel(ex.Seats.Initial, fmt.Sprint(p.Limit)))
		}
	}
	if n := limitNote(p); n != "" {
		ex.Notes = append(ex.Notes, n)
	}
	if p.Disagreement != "" {
		found := "found room for it"
		if p.Reconstructed == VerdictRejected {
			found = "rejects it (" + p.Reason + ")"
		}
		v.Reason += fmt.Sprintf("; the reconstruction %s: %s", found, p.Disagreement)
	}
	ex.Verdict = v
	ex.Instances = nil
}

// limitNote says where the reconstruction's current limit of the level
// comes from when it is not the nominal limit the explanation shows.
func limitNote(p *Past) string {
	if p.NominalLimit == 0 || p.Limit == p.NominalLimit {
		return ""
	}
	if p.LimitFromLog {
		return fmt.Sprintf("%s's %s at the time: its current limit as borrowing between levels set it from the demand in the log; its nominal limit is %d", p.Level, seatsText(p.Limit), p.NominalLimit)
	}
	return fmt.Sprintf("%s's %s at the time: an assumed current limit, not a figure of the log: the share borrowing between levels gives it when no level has any demand (the reconstruction's state at the log's start; its nominal limit is %d); the server's own current limit then depended on its load before the log, which the log does not hold", p.Level, seatsText(p.Limit), p.NominalLimit)
}

// CompareFate records whether the reconstructed fate is what the server
// answered.
func (ex *Explanation) CompareFate(status int) {
	rec, p := ex.Recorded, ex.Past
	if rec == nil || p == nil || status == 0 {
		return
	}
	rejected, got429 := p.Reconstructed == VerdictRejected, status == 429
	agree := rejected == got429
	rec.FateAgrees = &agree
	switch {
	case agree && got429:
		rec.FateDetail = fmt.Sprintf("the server answered 429 and the reconstruction rejects it (%s)", p.Reason)
	case agree:
		rec.FateDetail = fmt.Sprintf("APF let it through (the server answered %d) and the reconstruction does", status)
	case got429:
		rec.FateDetail = fmt.Sprintf("the server answered 429 but the reconstruction found room for it; the likeliest reason is %s", p.Reason)
	default:
		rec.FateDetail = fmt.Sprintf("APF let it through (the server answered %d) but the reconstruction rejects it (%s): the log's times put more in its queues than the server had", status, p.Reason)
	}
}

func queueText(q *int) string {
	if q == nil {
		return "-"
	}
	return fmt.Sprint(*q)
}

func queuesText(qs []PastQueue) string {
	if len(qs) == 0 {
		return "none (the level has no queues)"
	}
	parts := make([]string, 0, len(qs))
	for _, q := range qs {
		parts = append(parts, fmt.Sprintf("queue %d held %d (%s)", q.Index, q.Length, flowsText(q.Flows)))
	}
	return strings.Join(parts, "; ")
}

func flowsText(fs []PastFlow) string {
	if len(fs) == 0 {
		return "nobody"
	}
	parts := make([]string, 0, len(fs))
	for _, f := range fs {
		parts = append(parts, fmt.Sprintf("%s ×%d", f.Flow, f.Requests))
	}
	return strings.Join(parts, ", ")
}

// writePast prints the reconstructed moment under the verdict.
func writePast(p *printer, past *Past) {
	if past == nil {
		return
	}
	p.f("\nAt the time (reconstructed from the log)\n")
	limit := ""
	if past.NominalLimit != 0 && past.Limit != past.NominalLimit {
		limit = fmt.Sprintf(" (current limit; nominal %d)", past.NominalLimit)
	}
	p.f("  %s: %s%s, %d waiting\n", sanitize.Line(past.Level), inUseOf(float64(past.SeatsInUse), float64(past.Limit), ""), limit, past.Waiting)
	for _, q := range past.Queues {
		mark := " "
		if q.Chosen {
			mark = "*"
		}
		p.f("  %s queue %d: %d of %d waiting: %s\n", mark, q.Index, q.Length, past.QueueLengthLimit, sanitize.Line(flowsText(q.Flows)))
	}
	p.f("  seats held by: %s\n", sanitize.Line(flowsText(past.Holders)))
}

// writeFate prints the comparison of the fate with the server's answer.
func writeFate(p *printer, r *Recorded) {
	if r.FateAgrees == nil {
		return
	}
	verdict := "AGREES"
	if !*r.FateAgrees {
		verdict = "DISAGREES"
	}
	p.f("  fate %s: %s\n", verdict, sanitize.Line(r.FateDetail))
}
