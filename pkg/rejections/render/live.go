package render

import (
	"fmt"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// writeLive prints a Report of the state read now, instance by instance:
// each rejecting level with its figures, heaviest flows and causes.
func writeLive(p *printer, t *rejections.Report) {
	if t.Release != "" {
		p.f("Replaying Kubernetes %s (%s)\n\n", sanitize.Line(t.Release), sanitize.Line(t.ReleaseFrom))
	}
	for i, it := range t.Instances {
		if i > 0 {
			p.f("\n")
		}
		unit := "total since the apiserver started"
		if it.HasRates {
			// to the millisecond: two scrapes of a bundle are as far apart
			// as they happened to be, not a round --interval
			unit = fmt.Sprintf("per second over %v", time.Duration(it.IntervalSeconds*float64(time.Second)).Round(time.Millisecond))
		}
		p.f("Apiserver %s (rejections %s)\n", sanitize.Line(it.Name), unit)
		var incidents []rejections.Incident
		for _, l := range t.Incidents {
			if len(l.Instances) > 0 && l.Instances[0].Instance == it.Name {
				incidents = append(incidents, l)
			}
		}
		switch {
		case len(incidents) == 0 && it.RejectionsUnknown != "":
			p.f("  cannot tell whether a priority level is rejecting requests: %s\n", sanitize.Line(it.RejectionsUnknown))
		case len(incidents) == 0:
			p.f("  no priority level is rejecting requests\n")
		}
		for _, l := range incidents {
			writeLiveLevel(p, l)
		}
		for _, n := range it.Notes {
			p.f("  note: %s\n", sanitize.Line(n))
		}
	}
	p.notes(t.Notes)
}

func writeLiveLevel(p *printer, l rejections.Incident) {
	st := l.State
	p.f("\n  Level %s: rejected %s\n", sanitize.Line(l.Level), reasons(l.Reasons))
	inUse := figure(st.SeatsInUse) + " in use"
	if st.SeatsInUse == nil && st.Executing != nil {
		// a dump counts the requests executing, not their seats
		inUse = figure(st.Executing) + " executing (seats in use unknown)"
	}
	p.f("    limit %s %s (nominal %s), %s, %s waiting", figure(st.CurrentLimit), textfmt.PluralFigure(st.CurrentLimit, "seat", "seats"), figure(st.NominalLimit), inUse, figure(st.Waiting))
	if st.Queues > 0 {
		p.f("; %d queues, hand %d, queue length limit %d, wait limit %v", st.Queues, st.HandSize, st.QueueLengthLimit, time.Duration(st.WaitLimitSeconds*float64(time.Second)))
	} else if st.LimitResponse != "" {
		p.f("; limitResponse %s", sanitize.Line(st.LimitResponse))
	}
	p.f("\n")
	if len(l.Flows) > 0 {
		tw := textfmt.NewTable(p)
		fmt.Fprintf(tw, "    FLOWSCHEMA\tDISTINGUISHER\tWAITING\tEXECUTING\tSEATS\tFULL QUEUES OF ITS HAND\n")
		for _, f := range l.Flows {
			// the hand unknown (no queues), or which of it is full (no queue dump): "-"
			hand := "-"
			switch {
			case len(f.Hand) > 0 && f.Full != nil:
				hand = fmt.Sprintf("%d of %d %v", *f.Full, len(f.Hand), f.Hand)
			case len(f.Hand) > 0:
				hand = fmt.Sprintf("- of %d %v", len(f.Hand), f.Hand)
			}
			fmt.Fprintf(tw, "    %s\t%q\t%d\t%d\t%d\t%s\n", sanitize.Line(f.FlowSchema), sanitize.Line(f.Distinguisher), f.Waiting, f.Executing, f.Seats, hand)
		}
		_ = tw.Flush()
	}
	for _, c := range l.Causes {
		p.f("    cause %s: %s\n      fix: %s\n", c.Kind, sanitize.Line(c.Evidence), sanitize.Line(c.Fix))
	}
}
