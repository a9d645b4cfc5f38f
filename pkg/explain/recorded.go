package explain

import "fmt"

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

// CompareSeats records the server's seat estimate (httplog apf_iseats) and
// notes when it falls outside the replay's range.
func (ex *Explanation) CompareSeats(initialSeats uint64) {
	if ex.Recorded == nil {
		return
	}
	ex.Recorded.InitialSeats = &initialSeats
	if s := ex.Seats; s != nil && (initialSeats < s.Initial || initialSeats > s.Max) {
		ex.Notes = append(ex.Notes, fmt.Sprintf("the server estimated %d seat(s), outside the replay's range %d..%d", initialSeats, s.Initial, s.Max))
	}
}
