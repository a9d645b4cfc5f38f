package render

import (
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// writeLog prints a log's incidents: each with its clients and causes,
// then, for a log of several instances, what each was reconstructed with.
func writeLog(p *printer, rep *rejections.Report) {
	if len(rep.Incidents) == 0 {
		p.f("No 429 from APF in the log.\n")
	}
	for i, in := range rep.Incidents {
		if i > 0 {
			p.f("\n")
		}
		p.f("Incident %d: %s, %s to %s: %s rejected (%s)\n", i+1, sanitize.Line(in.Level), in.Start.UTC().Format(time.RFC3339Nano), in.End.UTC().Format(time.RFC3339Nano), count(in.Rejected), reasons(in.Reasons))
		if len(rep.Instances) > 1 {
			p.f("  on %s\n", instances(in.Instances, 0))
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
			word := "incidents"
			if len(ri.Incidents) == 1 {
				word = "incident"
			}
			p.f(", %d %s, %s rejected\n", len(ri.Incidents), word, count(n))
		}
	}
	p.notes(rep.Notes)
}
