// Package render prints the answer of "kubectl apf explain 429"
// (rejections.Report) as text, whatever its source: the live state of a
// cluster or a bundle (instance by instance), a store's window (each
// incident with the timelines of its level) or a log (each incident with
// its clients). It is the one text renderer of the schema; -o json and
// yaml print the Report itself (pkg/output).
package render

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// Options are the printing options.
type Options struct {
	// Width is the terminal width a store's timelines are drawn to (100
	// when zero).
	Width int
	// JoinedLog names the log files whose clients a store's incidents
	// carry (explain 429 --prometheus --workload); their section is
	// printed after the incidents. Empty: no log was joined.
	JoinedLog []string
}

// WriteText prints rep for people, in the layout of its source: a store's
// window (rejections.SourcePrometheus), a log (rejections.SourceLog), or
// the state read now (a cluster or a bundle, and a Report without a
// source).
func WriteText(w io.Writer, rep *rejections.Report, o Options) error {
	var p printer
	switch rep.Source.Kind {
	case rejections.SourcePrometheus:
		writeStore(&p, rep, o)
	case rejections.SourceLog:
		writeLog(&p, rep)
	default:
		writeLive(&p, rep)
	}
	_, err := io.WriteString(w, p.String())
	return err
}

// printer builds the text, which WriteText writes in one piece.
type printer struct{ strings.Builder }

func (p *printer) f(format string, args ...any) { fmt.Fprintf(p, format, args...) }

// count formats a count or a rate (rejections.Count).
func count(v float64) string { return rejections.Count(v) }

// figure formats a figure of the schema: "-" when absent.
func figure(v *float64) string {
	if v == nil {
		return "-"
	}
	return count(*v)
}

// reasons lists the rejections by reason, the largest first (ties by
// name): "queue-full 5, time-out 0.5".
func reasons(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = sanitize.Line(k) + " " + count(m[k])
	}
	return strings.Join(parts, ", ")
}

// listed joins the first limit items of a list (every item when limit is
// 0), and says how many more there are.
func listed[T any](items []T, limit int, item func(T) string) string {
	var parts []string
	for i, it := range items {
		if limit > 0 && i == limit {
			parts = append(parts, fmt.Sprintf("and %d more", len(items)-limit))
			break
		}
		parts = append(parts, item(it))
	}
	return strings.Join(parts, ", ")
}

// instances lists the rejections by instance: "apiserver-0 60, apiserver-1 2".
func instances(ics []rejections.InstanceCount, limit int) string {
	return listed(ics, limit, func(ic rejections.InstanceCount) string {
		return sanitize.Line(ic.Instance) + " " + count(ic.Count)
	})
}

// notes prints the report's notes under their heading.
func (p *printer) notes(notes []string) {
	if len(notes) > 0 {
		p.f("\nNotes\n")
		for _, n := range notes {
			p.f("  - %s\n", sanitize.Line(n))
		}
	}
}

// maxClientRows bounds the clients listed per table.
const maxClientRows = 10

// clients prints who was rejected, who held the seats and who waited.
func (p *printer) clients(cl *rejections.Clients) {
	seatSeconds := func(c rejections.ClientShare) string { return fmt.Sprintf("%.3f", *c.SeatSeconds) }
	p.clientTable("Rejected", "REQUESTS", cl.Rejected, func(c rejections.ClientShare) string { return fmt.Sprintf("%.0f", c.Count) })
	p.clientTable("Held the seats", "SEAT-SECONDS", cl.HeldSeats, seatSeconds)
	p.clientTable("Waited in the queues", "SEAT-SECONDS", cl.Queued, seatSeconds)
}

// clientTable prints clients with their figure and share.
func (p *printer) clientTable(title, head string, cs []rejections.ClientShare, figure func(rejections.ClientShare) string) {
	if len(cs) == 0 {
		return
	}
	p.f("  %s\n", title)
	tw := textfmt.NewTable(p)
	fmt.Fprintf(tw, "    CLIENT\tUSER-AGENT\tFLOWSCHEMA\tFLOW\t%s\tSHARE\n", head)
	for i, c := range cs {
		if i == maxClientRows {
			fmt.Fprintf(tw, "    (%d more)\t\t\t\t\t\n", len(cs)-maxClientRows)
			break
		}
		fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t%s\t%.0f%%\n", dash(clientOf(c)), dash(sanitize.Line(c.UserAgent)), dash(sanitize.Line(c.FlowSchema)), dash(sanitize.Line(c.Distinguisher)), figure(c), 100*c.Share)
	}
	_ = tw.Flush()
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
