package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// writeLogReport prints a log's incidents.
func writeLogReport(w io.Writer, rep *rejections.Report) error {
	p := &errWriter{w: w}
	if len(rep.Incidents) == 0 {
		p.f("No 429 from APF in the log.\n")
	}
	for i, in := range rep.Incidents {
		if i > 0 {
			p.f("\n")
		}
		p.f("Incident %d: %s, %s to %s: %.0f rejected (%s)\n", i+1, sanitize.Line(in.Level), in.Start.UTC().Format(time.RFC3339Nano), in.End.UTC().Format(time.RFC3339Nano), in.Rejected, reasonsText(in.Reasons))
		if len(rep.Instances) > 1 {
			p.f("  on %s\n", instanceCounts(in.Instances))
		}
		if in.Summary != "" {
			p.f("  %s\n", sanitize.Line(in.Summary))
		}
		if in.Clients != nil {
			p.clients(in.Clients)
		}
		p.f("  Causes\n")
		for _, c := range in.Causes {
			p.f("    - %s: %s\n", c.Kind, sanitize.Line(c.Evidence))
			if c.Fix != "" {
				p.f("      fix: %s\n", sanitize.Line(c.Fix))
			}
		}
	}
	if len(rep.Instances) > 1 {
		p.f("\nInstances (each reconstructed on its own; the incidents above merge theirs)\n")
		for _, ri := range rep.Instances {
			p.f("  %s: server concurrency limit %d", sanitize.Line(ri.Name), ri.ServerConcurrencyLimit)
			if f := ri.Fates; f != nil && f.Total > 0 {
				p.f(", fates agree on %d of %d requests (%.1f%%)", f.Agreeing, f.Total, 100*float64(f.Agreeing)/float64(f.Total))
			}
			var n float64
			for _, in := range ri.Incidents {
				n += in.Rejected
			}
			p.f(", %d %s, %.0f rejected\n", len(ri.Incidents), plural(len(ri.Incidents), "incident", "incidents"), n)
		}
	}
	p.notes(rep.Notes)
	return p.err
}

// instanceCounts says how many rejections each instance gave.
func instanceCounts(ics []rejections.InstanceCount) string {
	parts := make([]string, len(ics))
	for i, ic := range ics {
		parts[i] = fmt.Sprintf("%s %.0f", sanitize.Line(ic.Instance), ic.Count)
	}
	return strings.Join(parts, ", ")
}

// clients prints who was rejected, who held the seats and who waited.
func (p *errWriter) clients(cl *rejections.Clients) {
	seatSeconds := func(c rejections.ClientShare) string { return fmt.Sprintf("%.3f", *c.SeatSeconds) }
	p.table("Rejected", cl.Rejected, func(c rejections.ClientShare) string { return fmt.Sprintf("%.0f", c.Count) })
	p.table("Held the seats", cl.HeldSeats, seatSeconds)
	p.table("Waited in the queues", cl.Queued, seatSeconds)
}

func (p *errWriter) notes(notes []string) {
	if len(notes) > 0 {
		p.f("\nNotes\n")
		for _, n := range notes {
			p.f("  - %s\n", sanitize.Line(n))
		}
	}
}

func reasonsText(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// maxClientRows bounds the clients listed per table.
const maxClientRows = 10

type errWriter struct {
	w   io.Writer
	err error
}

func (p *errWriter) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// table prints clients with their figure and share.
func (p *errWriter) table(title string, cs []rejections.ClientShare, figure func(rejections.ClientShare) string) {
	if len(cs) == 0 || p.err != nil {
		return
	}
	head := "REQUESTS"
	if title != "Rejected" {
		head = "SEAT-SECONDS"
	}
	p.f("  %s\n", title)
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "    CLIENT\tUSER-AGENT\tFLOWSCHEMA\tFLOW\t%s\tSHARE\n", head)
	for i, c := range cs {
		if i == maxClientRows {
			fmt.Fprintf(tw, "    (%d more)\t\t\t\t\t\n", len(cs)-maxClientRows)
			break
		}
		fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t%s\t%.0f%%\n", dash(clientOf(c)), dash(sanitize.Line(c.UserAgent)), dash(sanitize.Line(c.FlowSchema)), dash(sanitize.Line(c.Distinguisher)), figure(c), 100*c.Share)
	}
	p.err = tw.Flush()
}

func clientOf(c rejections.ClientShare) string {
	if c.ServiceAccount != "" {
		return "serviceaccount " + sanitize.Line(c.ServiceAccount)
	}
	return sanitize.Line(c.User)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
