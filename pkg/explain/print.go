package explain

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
)

type printer struct {
	w   io.Writer
	err error
}

// Write lets a tabwriter write through the printer, keeping the first error.
func (p *printer) Write(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	n, err := p.w.Write(b)
	p.err = err
	return n, err
}

func (p *printer) f(format string, args ...any) {
	if p.err != nil {
		return
	}
	_, p.err = fmt.Fprintf(p.w, format, args...)
}

// WriteText renders an Explanation for people.
func WriteText(w io.Writer, ex *Explanation) error {
	p := &printer{w: w}
	rv := ex.Request
	p.f("Request\n")
	p.f("  %s %s\n", sanitize.Line(rv.Method), sanitize.Line(rv.URL))
	if rv.IsResourceRequest {
		group := rv.APIGroup
		if group == "" {
			group = `"" (core)`
		}
		p.f("  verb %s, API group %s, version %s, resource %s", sanitize.Line(rv.Verb), sanitize.Line(group), sanitize.Line(rv.APIVersion), sanitize.Line(rsName(rv.Resource, rv.Subresource)))
		if rv.Namespace != "" {
			p.f(", namespace %s", sanitize.Line(rv.Namespace))
		} else {
			p.f(", cluster-scoped")
		}
		if rv.Name != "" {
			p.f(", name %s", sanitize.Line(rv.Name))
		}
		p.f("\n")
	} else {
		p.f("  verb %s, non-resource path %s\n", sanitize.Line(rv.Verb), sanitize.Line(rv.Path))
	}
	if rv.User != "" {
		p.f("  user %s, groups %s", sanitize.Line(rv.User), sanitize.Line(strings.Join(rv.Groups, ", ")))
		if len(rv.ImpliedGroups) > 0 {
			p.f(" (implied: %s)", sanitize.Line(strings.Join(rv.ImpliedGroups, ", ")))
		}
		p.f("\n")
	}
	switch {
	case ex.Instance != "" && ex.RequestsOnly && ex.RequestsWaitingOnly:
		p.f("  state of %s%s: its dump_requests alone, of a layout before 1.28 (the requests waiting are known; those executing, the levels' current limits and the queues' work are not)\n", sanitize.Line(ex.Instance), stateFrom(ex))
	case ex.Instance != "" && ex.RequestsOnly:
		p.f("  state of %s%s: its dump_requests alone (the requests waiting and executing are known; the levels' current limits and the queues' work are not)\n", sanitize.Line(ex.Instance), stateFrom(ex))
	case ex.Instance != "" && ex.NoDumps:
		p.f("  state of %s%s: its metrics and objects, no debug dump (the seats in use and the queues are not known)\n", sanitize.Line(ex.Instance), stateFrom(ex))
	case ex.Instance != "" && ex.StateFrom != "":
		p.f("  state of %s%s\n", sanitize.Line(ex.Instance), stateFrom(ex))
	case ex.Instance != "":
		p.f("  live state of %s\n", sanitize.Line(ex.Instance))
	}
	if ex.Release != "" {
		p.f("  replaying Kubernetes %s", sanitize.Line(ex.Release))
		if ex.ReleaseFrom != "" {
			p.f(" (%s)", sanitize.Line(ex.ReleaseFrom))
		}
		p.f("\n")
	}

	if ex.FlowSchema == nil {
		p.f("\nVerdict: %s\n  %s\n", ex.Verdict.Kind, sanitize.Line(ex.Verdict.Reason))
		writeRecorded(p, ex.Recorded)
		return p.err
	}

	p.f("\nFlowSchemas in matching order\n")
	for _, t := range ex.Trace {
		mark := "  -"
		if t.Matched {
			mark = "  ✓"
		} else if t.Dangling {
			mark = "  ~"
		}
		extra := ""
		if t.Imagined {
			extra = ", imagined by the server"
		}
		if len(t.TiedWith) > 0 {
			extra += ", same precedence as " + strings.Join(t.TiedWith, ", ") + " (ties are ordered by name)"
		}
		p.f("%s %s (precedence %d, level %s%s)\n      %s\n", mark, sanitize.Line(t.FlowSchema), t.Precedence, sanitize.Line(t.PriorityLevel), sanitize.Line(extra), sanitize.Line(t.Reason))
	}

	fs, pl := ex.FlowSchema, ex.PriorityLevel
	p.f("\nFlowSchema %s (uid %s)", sanitize.Line(fs.Name), uidText(fs.UID, fs.Imagined))
	if fs.Fallback {
		p.f(", fallback")
	}
	p.f("\n")
	p.f("Priority level %s (uid %s): %s", sanitize.Line(pl.Name), uidText(pl.UID, pl.Imagined), pl.Type)
	if pl.LimitResponse != "" {
		p.f(", limitResponse %s", pl.LimitResponse)
	}
	p.f("\n")
	if pl.Type != "Exempt" {
		p.f("  nominal limit %s (of a server limit of %d), lower %d, upper %d", seatsText(pl.NominalLimit), pl.ServerConcurrencyLimit, pl.LowerLimit, pl.UpperLimit)
		if pl.CurrentLimit != nil {
			p.f(", current %v", *pl.CurrentLimit)
		}
		p.f("\n")
		if pl.Queues > 0 {
			p.f("  %d queues, hand size %d, queue length limit %d, wait limit %v\n", pl.Queues, pl.HandSize, pl.QueueLengthLimit, pl.WaitLimit)
		}
	}
	if s := ex.Seats; s != nil {
		if s.Initial == s.Max {
			p.f("  this request takes %s", seatsText(s.Initial))
		} else {
			p.f("  this request takes %d to %d seats", s.Initial, s.Max)
		}
		if s.Note != "" {
			p.f(": %s", s.Note)
		}
		p.f("\n")
	}
	if ex.FlowHash != "" {
		method := ex.FlowDistinguisherMethod
		if method == "" {
			method = "none"
		}
		p.f("\nFlow: distinguisher %q (method %s), hash %s\n", sanitize.Line(ex.FlowDistinguisher), method, ex.FlowHash)
	}
	if q := ex.Queues; q != nil {
		p.f("Hand of queues:")
		for _, s := range q.Hand {
			p.f(" %d", s.Index)
		}
		p.f("\n")
		if q.Live {
			tw := textfmt.NewTableRight(p)
			fmt.Fprintf(tw, "  QUEUE\tWAITING\tEXECUTING\tWAITING-SEATS\tWAITING-WORK\t\n")
			for _, s := range q.Hand {
				fmt.Fprintf(tw, "  %d\t%d\t%d\t%d\t%.3fss\t\n", s.Index, s.Waiting, s.Executing, s.WaitingSeats, s.WaitingWork)
			}
			_ = tw.Flush()
			if len(q.Candidates) == 1 {
				p.f("  a new request goes to queue %d, the least waiting work of its hand\n", q.Candidates[0])
			} else {
				// queueset.go, shuffleShardLocked: the first of the ties from
				// an offset that turns with every request the level queues
				p.f("  a new request goes to one of the queues %v, tied at the least waiting work (the server starts its search at an offset that turns with each request queued)\n", q.Candidates)
			}
		}
	}
	p.f("\nVerdict")
	if ex.Recorded != nil && ex.Past == nil && ex.Recorded.Source != "probe" && ex.Recorded.Source != "trace" {
		// a logged request whose moment is not reconstructed: the verdict is
		// the state's read (or the configuration's), beside the server's
		// answer to it then (a logged 429 read "Verdict: runs")
		p.f(" (not of the logged request's moment)")
	}
	p.f(": %s", ex.Verdict.Kind)
	if ex.Verdict.RejectReason != "" {
		p.f(" (%s)", ex.Verdict.RejectReason)
	}
	p.f("\n  %s\n", sanitize.Line(ex.Verdict.Reason))
	writePast(p, ex.Past)
	if len(ex.Instances) > 1 {
		p.f("\nOn each apiserver\n")
		for _, iv := range ex.Instances {
			kind := iv.Verdict.Kind
			if iv.Verdict.RejectReason != "" {
				kind += " (" + iv.Verdict.RejectReason + ")"
			}
			p.f("  %s: %s\n      %s\n", sanitize.Line(iv.Instance), kind, sanitize.Line(iv.Verdict.Reason))
		}
	}
	if len(ex.Notes) > 0 {
		p.f("\nNotes\n")
		for _, n := range ex.Notes {
			p.f("  - %s\n", sanitize.Line(n))
		}
	}
	writeRecorded(p, ex.Recorded)
	if len(ex.Advice) > 0 {
		p.f("\nAdvice\n")
		for _, a := range ex.Advice {
			p.f("  - %s\n", sanitize.Line(a.Text))
			if a.YAML != "" {
				p.f("\n%s\n", indent(a.YAML, "    "))
			}
		}
	}
	return p.err
}

func writeRecorded(p *printer, r *Recorded) {
	if r == nil {
		return
	}
	p.f("\nCompared with the server (%s)", r.Source)
	if r.Status != 0 {
		p.f(", HTTP %d", r.Status)
	}
	p.f("\n")
	verdict := "nothing to compare"
	if r.Agrees != nil {
		verdict = "AGREES"
		if !*r.Agrees {
			verdict = "DISAGREES"
		}
	}
	p.f("  %s: %s\n", verdict, sanitize.Line(r.Detail))
	writeFate(p, r)
	if r.InitialSeats != nil {
		p.f("  the server estimated %s", seatsText(*r.InitialSeats))
		switch {
		case r.FinalSeats != nil && *r.FinalSeats == 0:
			// apf_fseats=0 apf_additionalLatency=0s: nothing held after
			// the execution (it read "then 0 final seats for 0s")
			p.f(", and no final seats")
		case r.FinalSeats != nil && r.AdditionalLatency != nil:
			p.f(", then %s for %v", textfmt.Count(*r.FinalSeats, "final seat", "final seats"), time.Duration(*r.AdditionalLatency))
		}
		p.f("\n")
	}
	if r.Latency != nil || r.ExecutionTime != nil {
		var parts []string
		if r.Latency != nil {
			parts = append(parts, fmt.Sprintf("latency %v", time.Duration(*r.Latency)))
		}
		if r.ExecutionTime != nil {
			parts = append(parts, fmt.Sprintf("execution %v", time.Duration(*r.ExecutionTime)))
		}
		p.f("  the server took %s\n", strings.Join(parts, ", "))
	}
}

func uidText(uid string, imagined bool) string {
	switch {
	case imagined:
		return "none: imagined by the server"
	case uid == "":
		return "none: not read from a cluster"
	}
	return sanitize.Line(uid)
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}

// WriteMessageText renders a message that ParseMessage recognised.
func WriteMessageText(w io.Writer, m *Message) error {
	p := &printer{w: w}
	kind := "not API Priority and Fairness"
	if m.APF {
		kind = "API Priority and Fairness"
	}
	p.f("Message: %s (%s)\n", m.Kind, kind)
	target := m.Path
	if target == "" {
		target = m.Resource
	}
	if m.Method != "" || target != "" {
		p.f("  request %s", sanitize.Line(strings.TrimSpace(m.Method+" "+target)))
		if m.Delay != "" {
			p.f(", delayed %s", sanitize.Line(m.Delay))
		}
		p.f("\n")
	}
	if m.Status != "" {
		p.f("  answered %s", sanitize.Line(m.Status))
		if m.RetryAfter != "" {
			p.f(", Retry-After %s", sanitize.Line(m.RetryAfter))
		}
		p.f("\n")
	}
	for _, u := range []struct {
		header string
		uid    *string
	}{{"X-Kubernetes-PF-FlowSchema-UID", m.FlowSchemaUID}, {"X-Kubernetes-PF-PriorityLevel-UID", m.PriorityLevelUID}} {
		switch {
		case u.uid == nil:
		case *u.uid == "":
			p.f("  %s: (empty: a mandatory object the apiserver imagined)\n", u.header)
		default:
			p.f("  %s: %s\n", u.header, sanitize.Line(*u.uid))
		}
	}
	p.f("  %s\n", sanitize.Line(m.Explanation))
	return p.err
}

// stateFrom is " in " the input the state was read from, when that was
// not the cluster now.
func stateFrom(ex *Explanation) string {
	if ex.StateFrom == "" {
		return ""
	}
	if rest, ok := strings.CutPrefix(ex.StateFrom, ex.Instance); ok && ex.Instance != "" {
		// a raw file is its own instance: "state of FILE, captured …",
		// not "state of FILE in FILE, captured …"
		return sanitize.Line(rest)
	}
	return " in " + sanitize.Line(ex.StateFrom)
}
