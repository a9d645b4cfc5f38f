package explain

import (
	"fmt"
	"time"
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

// CompareUIDs records the X-Kubernetes-PF-FlowSchema-UID and
// X-Kubernetes-PF-PriorityLevel-UID headers of a probe next to the replay;
// names maps UIDs to names (nil: unresolved). Imagined mandatory objects
// have an empty UID on both sides.
func (ex *Explanation) CompareUIDs(fsUID, plUID string, headersPresent bool, status int, names map[string]string) {
	rec := &Recorded{Source: "probe", FlowSchemaUID: fsUID, PriorityLevelUID: plUID, Status: status,
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
		ex.Notes = append(ex.Notes, fmt.Sprintf("the server estimated %d initial seat(s), outside the replay's range %d..%d", i, s.Initial, s.Max))
	}
	if f > s.MaxFinal {
		ex.Notes = append(ex.Notes, fmt.Sprintf("the server estimated %d final seat(s), above the replay's maximum of %d for this request and level", f, s.MaxFinal))
	}
	if f == 0 && w.AdditionalLatency > 0 {
		ex.Notes = append(ex.Notes, fmt.Sprintf("the server recorded an additional latency of %v with no final seats: the estimator gives one only with final seats", w.AdditionalLatency))
	}
}
