package render

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// writeStore prints a store's window: its incidents with the timelines of
// their level, the 429s not from APF, the clients of a joined log, and the
// notes.
func writeStore(p *printer, rep *rejections.Report, o Options) {
	width := o.Width
	if width <= 0 {
		width = 100
	}
	var start, end time.Time
	if rep.Window.Start != nil && rep.Window.End != nil {
		start, end = *rep.Window.Start, *rep.Window.End
	}
	total := 0.0
	for _, v := range rep.Rejected {
		total += v
	}
	p.f("429s from %s to %s (step %s)\n", stamp(start), stamp(end), seconds(rep.Window.StepSeconds))
	p.f("APF rejected %s requests in %s; %s HTTP 429s in all, %s not from APF\n",
		count(total), textfmt.Count(len(rep.Incidents)+rep.Undetailed, "incident", "incidents"), figure(rep.All429), figure(rep.Other429))
	if len(rep.Incidents) == 0 {
		p.f("No priority level rejected a request in the window.\n")
	}
	for i, inc := range rep.Incidents {
		p.f("\n")
		writeTimeline(p, width, i+1, inc)
	}
	if rep.Undetailed > 0 {
		p.f("\n%s not detailed (raise --max-incidents).\n", textfmt.Count(rep.Undetailed, "smaller incident", "smaller incidents"))
	}
	if rep.Other429 != nil && *rep.Other429 > 0 {
		p.f("\n429s not from APF (apiserver_request_total{code=\"429\"} minus APF's rejections): %s\n", count(*rep.Other429))
		p.f("  %s\n", strings.TrimRight(Sparkline(rep.Other429Series, start, end, width-4, math.NaN(), false), " "))
		for _, bu := range rep.Other429Bursts {
			p.f("  %s → %s  %s\n", stamp(bu.Start), stamp(bu.End), count(bu.Count))
		}
		p.f("  Evictions blocked by a PodDisruptionBudget, a watch cache (re)initialising or another filter answer these.\n")
	}
	if len(o.JoinedLog) > 0 {
		writeJoinedClients(p, rep, o.JoinedLog)
	}
	p.notes(rep.Notes)
}

// seconds is a step in seconds as a duration ("30s").
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// timelineRows are the series an incident's timeline draws, in order.
var timelineRows = []struct{ label, name string }{
	{"rejected", rejections.SeriesRejected},
	{"dispatched", rejections.SeriesDispatched},
	{"seats in use", rejections.SeriesSeats},
	{"current limit", rejections.SeriesCurrent},
	{"demand (hw)", rejections.SeriesDemand},
	{"waiting", rejections.SeriesWaiting},
	{"wait p99 (s)", rejections.SeriesWaitP99},
	{"queue len p99", rejections.SeriesQueueP99},
}

func writeTimeline(p *printer, width, n int, inc rejections.Incident) {
	var start, end time.Time
	if inc.Start != nil && inc.End != nil {
		start, end = *inc.Start, *inc.End
	}
	p.f("#%d  %s  %s → %s (%s)  %s rejected\n", n, sanitize.Line(inc.Level), stamp(start), stamp(end),
		end.Sub(start).Round(time.Second), count(inc.Rejected))
	p.f("  reasons:      %s\n", reasons(inc.Reasons))
	p.f("  FlowSchemas:  %s\n", listed(inc.FlowSchemas, 5, func(fs rejections.SchemaCount) string {
		return fmt.Sprintf("%s (%s) %s", sanitize.Line(fs.FlowSchema), sanitize.Line(fs.Reason), count(fs.Count))
	}))
	p.f("  instances:    %s\n", instances(inc.Instances, 5))

	var from, to time.Time
	var step time.Duration
	if w := inc.SeriesWindow; w != nil && w.Start != nil && w.End != nil {
		from, to, step = *w.Start, *w.End, seconds(w.StepSeconds)
	}
	const labelW, peakW = 16, 9
	chartW := max(20, width-labelW-peakW-4)
	p.f("  %s … %s, %s a point\n", from.UTC().Format("15:04:05"), to.UTC().Format("15:04:05"), step)
	// Seats and limits share one scale, so that "in use" reads against
	// "limit".
	seatHi := math.NaN()
	for _, n := range []string{rejections.SeriesSeats, rejections.SeriesCurrent, rejections.SeriesDemand, rejections.SeriesUpper} {
		seatHi = peakOf(inc.Series[n], seatHi)
	}
	var lines []string
	for _, r := range timelineRows {
		s, ok := inc.Series[r.name]
		if !ok {
			continue
		}
		hi := math.NaN()
		switch r.name {
		case rejections.SeriesSeats, rejections.SeriesCurrent, rejections.SeriesDemand:
			hi = seatHi
		}
		line := lipgloss.JoinHorizontal(lipgloss.Top,
			lipgloss.NewStyle().Width(labelW).Render(r.label),
			Sparkline(s, from, to, chartW, hi, r.name != rejections.SeriesRejected),
			lipgloss.NewStyle().Width(peakW).Align(lipgloss.Right).Render(count(peakOf(s, math.NaN()))))
		lines = append(lines, "  "+line)
	}
	// A marker row under the start and the end of the burst.
	marks := []rune(strings.Repeat(" ", chartW))
	for _, t := range []time.Time{start, end} {
		if span := to.Sub(from); span > 0 && !t.Before(from) && !t.After(to) {
			marks[int(float64(t.Sub(from))/float64(span)*float64(chartW-1))] = '^'
		}
	}
	lines = append(lines, "  "+strings.Repeat(" ", labelW)+strings.TrimRight(string(marks), " "))
	if len(lines) > 1 {
		p.f("  %-*s%s%*s\n", labelW, "", strings.Repeat(" ", chartW), peakW, "peak")
		p.f("%s\n", strings.Join(lines, "\n"))
	}
	if lim := limits(inc.Peaks); lim != "" {
		p.f("  limits:       %s\n", lim)
	}
	writeDiagnosis(p, inc)
}

// peakOf is the largest value of pts, or hi when that is larger (NaN
// counts as no value).
func peakOf(pts []rejections.Point, hi float64) float64 {
	for _, p := range pts {
		if !math.IsNaN(p.V) && (math.IsNaN(hi) || p.V > hi) {
			hi = p.V
		}
	}
	return hi
}

// writeDiagnosis prints a store's diagnosis: its one cause with the
// summary, and the facts of its evidence (pkg/history joins them with
// "; "), one a line.
func writeDiagnosis(p *printer, inc rejections.Incident) {
	kind, evidence := rejections.CauseUnclear, ""
	if len(inc.Causes) > 0 {
		kind, evidence = inc.Causes[0].Kind, inc.Causes[0].Evidence
	}
	p.f("  diagnosis:    %s: %s\n", kind, sanitize.Line(inc.Summary))
	if evidence == "" || evidence == inc.Summary {
		return
	}
	for _, e := range strings.Split(evidence, "; ") {
		p.f("                - %s\n", sanitize.Line(e))
	}
}

func limits(peaks map[string]float64) string {
	var parts []string
	for _, x := range []struct{ label, name string }{{"lower", rejections.SeriesLower}, {"nominal", rejections.SeriesNominal},
		{"current (peak)", rejections.SeriesCurrent}, {"upper", rejections.SeriesUpper}} {
		if v, ok := peaks[x.name]; ok {
			p := x.label + " " + count(v)
			if x.name == rejections.SeriesUpper {
				// upper_limit_seats assumes the whole server can be
				// borrowed (kubernetes/kubernetes#129086).
				p += " (overstated: a level borrows only what the others lend, kubernetes/kubernetes#129086)"
			}
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ", ")
}

// writeJoinedClients prints, after a store's incidents, the log's clients
// of each incident, numbered as the incidents are.
func writeJoinedClients(p *printer, rep *rejections.Report, files []string) {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f)
	}
	p.f("\nClients from the log (%s)\n", sanitize.Line(strings.Join(names, ", ")))
	for i, in := range rep.Incidents {
		p.f("\n#%d  %s  %s → %s\n", i+1, sanitize.Line(in.Level), in.Start.UTC().Format(time.RFC3339), in.End.UTC().Format(time.RFC3339))
		if in.Clients == nil {
			p.f("  the log does not cover it\n")
			continue
		}
		if c := in.Clients.Window; c != nil {
			p.f("  counted from %s to %s\n", c.Start.UTC().Format(time.RFC3339Nano), c.End.UTC().Format(time.RFC3339Nano))
		}
		p.clients(in.Clients)
	}
}

var sparks = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws points on width columns between from and to, each column
// the largest value that falls in it, scaled to hi (the series' maximum
// when hi is NaN). A column without points is blank; a zero is "▁" only
// when showZero.
func Sparkline(pts []rejections.Point, from, to time.Time, width int, hi float64, showZero bool) string {
	if width <= 0 {
		return ""
	}
	cols := make([]float64, width)
	for i := range cols {
		cols[i] = math.NaN()
	}
	span := to.Sub(from)
	for _, p := range pts {
		if math.IsNaN(p.V) || p.T.Before(from) || p.T.After(to) {
			continue
		}
		i := width - 1
		if span > 0 {
			i = int(float64(p.T.Sub(from)) / float64(span) * float64(width-1))
		}
		if math.IsNaN(cols[i]) || p.V > cols[i] {
			cols[i] = p.V
		}
	}
	if math.IsNaN(hi) {
		hi = 0
		for _, v := range cols {
			if !math.IsNaN(v) && v > hi {
				hi = v
			}
		}
	}
	var b strings.Builder
	for _, v := range cols {
		switch {
		case math.IsNaN(v):
			b.WriteByte(' ')
		case v <= 0 || hi <= 0:
			if showZero {
				b.WriteRune(sparks[0])
			} else {
				b.WriteByte(' ')
			}
		default:
			i := int(math.Ceil(v/hi*float64(len(sparks)))) - 1
			b.WriteRune(sparks[max(0, min(i, len(sparks)-1))])
		}
	}
	return b.String()
}
