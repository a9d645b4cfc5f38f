// Package render prints the answers of pkg/history: the incidents of
// "explain 429 --prometheus" as terminal timelines (drawn with lipgloss, so
// that they sit in the live view as well), and the level table of
// "top levels --since".
package render

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"

	"github.com/kubectl-apf/kubectl-apf/pkg/history"
)

// Options are the printing options.
type Options struct {
	// Width is the terminal width (100 when zero).
	Width int
	// Styles colours the output; nil prints plain text.
	Styles *Styles
}

// Styles colour the timelines.
type Styles struct {
	Title, Dim, Alert lipgloss.Style
}

// ColorStyles are the styles of a colour terminal.
func ColorStyles() *Styles {
	return &Styles{
		Title: lipgloss.NewStyle().Bold(true),
		Dim:   lipgloss.NewStyle().Foreground(lipgloss.Color("#8a8a8a")),
		Alert: lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("#ff5f5f")),
	}
}

func (o Options) paint(st func(*Styles) lipgloss.Style, s string) string {
	if o.Styles == nil {
		return s
	}
	return st(o.Styles).Render(s)
}

// Sanitize makes a store-supplied string safe on one terminal line.
func Sanitize(s string) string { return sanitize.Line(s) }

var sparks = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws points on width columns between from and to, each column
// the largest value that falls in it, scaled to hi (the series' maximum
// when hi is NaN). A column without points is blank; a zero is "▁" only
// when showZero.
func Sparkline(pts []history.Point, from, to time.Time, width int, hi float64, showZero bool) string {
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

func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v == math.Trunc(v) && math.Abs(v) < 1e12:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// WriteReport prints the incidents of a report with their timelines.
func WriteReport(w io.Writer, o Options, rep *history.Report) error {
	width := o.Width
	if width <= 0 {
		width = 100
	}
	var b strings.Builder
	total := 0.0
	for _, v := range rep.Rejected {
		total += v
	}
	fmt.Fprintf(&b, "%s\n", o.paint(func(s *Styles) lipgloss.Style { return s.Title },
		fmt.Sprintf("429s from %s to %s (step %s)", stamp(rep.Start), stamp(rep.End), rep.Step)))
	fmt.Fprintf(&b, "APF rejected %s requests in %d incident(s); %s HTTP 429s in all, %s not from APF\n",
		num(total), len(rep.Incidents)+rep.Undetailed, num(rep.All429), num(rep.Other429))
	if len(rep.Incidents) == 0 {
		b.WriteString("No priority level rejected a request in the window.\n")
	}
	for i, inc := range rep.Incidents {
		b.WriteByte('\n')
		writeIncident(&b, o, width, i+1, inc)
	}
	if rep.Undetailed > 0 {
		fmt.Fprintf(&b, "\n%d smaller incident(s) not detailed (raise --max-incidents).\n", rep.Undetailed)
	}
	if rep.Other429 > 0 {
		b.WriteString("\n")
		b.WriteString(o.paint(func(s *Styles) lipgloss.Style { return s.Title }, "429s not from APF"))
		fmt.Fprintf(&b, " (apiserver_request_total{code=\"429\"} minus APF's rejections): %s\n", num(rep.Other429))
		fmt.Fprintf(&b, "  %s\n", strings.TrimRight(Sparkline(rep.Other429Series.Points, rep.Start, rep.End, width-4, math.NaN(), false), " "))
		for _, bu := range rep.Other429Bursts {
			fmt.Fprintf(&b, "  %s → %s  %s\n", stamp(bu.Start), stamp(bu.End), num(bu.Count))
		}
		b.WriteString("  Evictions blocked by a PodDisruptionBudget, a watch cache (re)initialising or another filter answer these.\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeIncident(b *strings.Builder, o Options, width, n int, inc history.Incident) {
	head := fmt.Sprintf("#%d  %s  %s → %s (%s)  %s rejected", n, Sanitize(inc.Level), stamp(inc.Start), stamp(inc.End),
		inc.End.Sub(inc.Start).Round(time.Second), num(inc.Rejected))
	b.WriteString(o.paint(func(s *Styles) lipgloss.Style { return s.Alert }, head) + "\n")
	reasons := make([]string, 0, len(inc.Reasons))
	for r := range inc.Reasons {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if inc.Reasons[reasons[i]] != inc.Reasons[reasons[j]] {
			return inc.Reasons[reasons[i]] > inc.Reasons[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	var parts []string
	for _, r := range reasons {
		parts = append(parts, fmt.Sprintf("%s %s", Sanitize(r), num(inc.Reasons[r])))
	}
	fmt.Fprintf(b, "  reasons:      %s\n", strings.Join(parts, ", "))
	parts = parts[:0]
	for i, fs := range inc.FlowSchemas {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(inc.FlowSchemas)-5))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s) %s", Sanitize(fs.FlowSchema), Sanitize(fs.Reason), num(fs.Count)))
	}
	fmt.Fprintf(b, "  FlowSchemas:  %s\n", strings.Join(parts, ", "))
	parts = parts[:0]
	for i, in := range inc.Instances {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(inc.Instances)-5))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s", Sanitize(in.Instance), num(in.Count)))
	}
	fmt.Fprintf(b, "  instances:    %s\n", strings.Join(parts, ", "))

	st := inc.State
	rows := []struct{ label, name string }{
		{"rejected", history.StateRejected},
		{"dispatched", history.StateDispatched},
		{"seats in use", history.StateSeats},
		{"current limit", history.StateCurrent},
		{"demand (hw)", history.StateDemand},
		{"waiting", history.StateWaiting},
		{"wait p99 (s)", history.StateWaitP99},
		{"queue len p99", history.StateQueueP99},
	}
	const labelW, peakW = 16, 9
	chartW := max(20, width-labelW-peakW-4)
	fmt.Fprintf(b, "  %s\n", o.paint(func(s *Styles) lipgloss.Style { return s.Dim },
		fmt.Sprintf("%s … %s, %s a point", st.From.UTC().Format("15:04:05"), st.To.UTC().Format("15:04:05"), st.Step)))
	// Seats and limits share one scale, so that "in use" reads against
	// "limit".
	seatHi := math.NaN()
	for _, n := range []string{history.StateSeats, history.StateCurrent, history.StateDemand, history.StateUpper} {
		for _, p := range st.Series[n].Points {
			if !math.IsNaN(p.V) && (math.IsNaN(seatHi) || p.V > seatHi) {
				seatHi = p.V
			}
		}
	}
	var lines []string
	for _, r := range rows {
		s, ok := st.Series[r.name]
		if !ok {
			continue
		}
		hi := math.NaN()
		switch r.name {
		case history.StateSeats, history.StateCurrent, history.StateDemand:
			hi = seatHi
		}
		peak := math.NaN()
		for _, p := range s.Points {
			if !math.IsNaN(p.V) && (math.IsNaN(peak) || p.V > peak) {
				peak = p.V
			}
		}
		line := lipgloss.JoinHorizontal(lipgloss.Top,
			lipgloss.NewStyle().Width(labelW).Render(r.label),
			Sparkline(s.Points, st.From, st.To, chartW, hi, r.name != history.StateRejected),
			lipgloss.NewStyle().Width(peakW).Align(lipgloss.Right).Render(num(peak)))
		lines = append(lines, "  "+line)
	}
	// A marker row under the start and the end of the burst.
	marks := []rune(strings.Repeat(" ", chartW))
	for _, t := range []time.Time{inc.Start, inc.End} {
		if span := st.To.Sub(st.From); span > 0 && !t.Before(st.From) && !t.After(st.To) {
			marks[int(float64(t.Sub(st.From))/float64(span)*float64(chartW-1))] = '^'
		}
	}
	lines = append(lines, "  "+strings.Repeat(" ", labelW)+strings.TrimRight(string(marks), " "))
	if len(lines) > 1 {
		fmt.Fprintf(b, "  %-*s%s%*s\n", labelW, "", strings.Repeat(" ", chartW), peakW, "peak")
		b.WriteString(strings.Join(lines, "\n") + "\n")
	}
	if lim := limits(st); lim != "" {
		fmt.Fprintf(b, "  limits:       %s\n", lim)
	}
	d := inc.Diagnosis
	fmt.Fprintf(b, "  diagnosis:    %s\n", o.paint(func(s *Styles) lipgloss.Style { return s.Title }, d.Kind+": "+Sanitize(d.Summary)))
	for _, e := range d.Evidence {
		fmt.Fprintf(b, "                - %s\n", Sanitize(e))
	}
}

func limits(st history.LevelState) string {
	var parts []string
	for _, x := range []struct{ label, name string }{{"lower", history.StateLower}, {"nominal", history.StateNominal},
		{"current (peak)", history.StateCurrent}, {"upper", history.StateUpper}} {
		if v, ok := st.Peaks[x.name]; ok {
			p := x.label + " " + num(v)
			if x.name == history.StateUpper {
				// upper_limit_seats assumes the whole server can be
				// borrowed (kubernetes/kubernetes#129086).
				p += " (overstated: a level borrows only what the others lend, kubernetes/kubernetes#129086)"
			}
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ", ")
}

// WriteLevelWindows prints the table of "top levels --since".
func WriteLevelWindows(w io.Writer, rows []history.LevelWindow, noHeaders bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	perInstance := false
	for _, r := range rows {
		perInstance = perInstance || r.Instance != history.MergedInstance
	}
	if !noHeaders {
		h := "LEVEL\tNOMINAL\tCURRENT\tSEATS-AVG\tSEATS-MAX\tWAITING-MAX\tDISPATCHED\tREJECTED\tWAIT-P99"
		if perInstance {
			h = "INSTANCE\t" + h
		}
		fmt.Fprintln(tw, h)
	}
	for _, r := range rows {
		cur := num(float64(r.CurrentLimitMin))
		if r.CurrentLimitMax != r.CurrentLimitMin && !math.IsNaN(float64(r.CurrentLimitMax)) {
			cur += "-" + num(float64(r.CurrentLimitMax))
		}
		rej := "0"
		if r.RejectedTotal > 0 {
			keys := make([]string, 0, len(r.Rejected))
			for k := range r.Rejected {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, Sanitize(k)+"="+num(r.Rejected[k]))
			}
			rej = num(r.RejectedTotal) + " (" + strings.Join(parts, ",") + ")"
		}
		wait := "-"
		if v := float64(r.WaitP99Seconds); !math.IsNaN(v) {
			wait = time.Duration(v * float64(time.Second)).Round(time.Millisecond).String()
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", Sanitize(r.Name), num(float64(r.NominalLimit)), cur,
			num(float64(r.SeatsInUseAvg)), num(float64(r.SeatsInUseMax)), num(float64(r.WaitingMax)), num(float64(r.Dispatched)), rej, wait)
		if perInstance {
			line = Sanitize(r.Instance) + "\t" + line
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}
