package history

import (
	"math"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// Schema returns the report in the one explain 429 schema (package
// rejections), read from src. A figure the store did not answer is
// absent: a level state figure is its peak in the incident when the store
// has the series.
func (r *Report) Schema(src rejections.Source) *rejections.Report {
	out := rejections.New(src)
	start, end := r.Start, r.End
	out.Window = rejections.Window{Start: &start, End: &end, StepSeconds: r.Step.Seconds()}
	out.Counts = rejections.CountsInWindow
	for l, v := range r.Rejected {
		out.Rejected[l] = v
	}
	out.All429, out.Other429 = rejections.Of(r.All429), rejections.Of(r.Other429)
	out.Other429Series = r.Other429Series.Points
	out.Other429Bursts = r.Other429Bursts
	out.Undetailed = r.Undetailed
	seen := map[string]bool{}
	for _, inc := range r.Incidents {
		out.Incidents = append(out.Incidents, incident(inc))
		for _, ic := range inc.Instances {
			if !seen[ic.Instance] {
				seen[ic.Instance] = true
				out.Instances = append(out.Instances, rejections.Instance{Name: ic.Instance})
			}
		}
	}
	return out
}

func incident(inc Incident) rejections.Incident {
	start, end := inc.Start, inc.End
	out := rejections.Incident{Level: inc.Level, Start: &start, End: &end, Rejected: inc.Rejected, Reasons: map[string]float64{},
		Series: map[string][]rejections.Point{}, Peaks: map[string]float64{}, Summary: inc.Diagnosis.Summary}
	for k, v := range inc.Reasons {
		out.Reasons[k] = v
	}
	out.FlowSchemas, out.Instances = inc.FlowSchemas, inc.Instances
	from, to := inc.State.From, inc.State.To
	out.SeriesWindow = &rejections.Window{Start: &from, End: &to, StepSeconds: inc.State.Step.Seconds()}
	for name, s := range inc.State.Series {
		out.Series[name] = s.Points
	}
	for name, v := range inc.State.Peaks {
		if !math.IsNaN(v) {
			out.Peaks[name] = v
		}
	}
	peak := func(name string) *float64 {
		if v, ok := out.Peaks[name]; ok {
			return rejections.Of(v)
		}
		return nil
	}
	st := &out.State
	st.NominalLimit, st.CurrentLimit, st.SeatsInUse = peak(StateNominal), peak(StateCurrent), peak(StateSeats)
	st.Waiting, st.WaitP99Seconds = peak(StateWaiting), peak(StateWaitP99)
	st.From = map[string]string{}
	for figure, name := range map[string]string{"nominalLimit": StateNominal, "currentLimit": StateCurrent, "seatsInUse": StateSeats, "waiting": StateWaiting} {
		if _, ok := out.Peaks[name]; ok {
			st.From[figure] = "peak of the store's " + name + " series"
		}
	}
	if len(st.From) == 0 {
		st.From = nil
	}
	// The diagnosis is one cause; its summary says what to do.
	ev := strings.Join(inc.Diagnosis.Evidence, "; ")
	if ev == "" {
		ev = inc.Diagnosis.Summary
	}
	out.Causes = []rejections.Cause{{Kind: inc.Diagnosis.Kind, Evidence: ev}}
	return out
}
