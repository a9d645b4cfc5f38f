package tui

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
)

// fit pads or cuts lines to exactly w columns and h lines.
func fit(lines []string, w, h int) string { return strings.Join(fitLines(lines, w, h), "\n") }

func fitLines(lines []string, w, h int) []string {
	if len(lines) > h {
		lines = lines[:h]
	}
	out := make([]string, 0, h)
	for _, l := range lines {
		out = append(out, padRight(l, w))
	}
	for len(out) < h {
		out = append(out, strings.Repeat(" ", w))
	}
	return out
}

// padRight cuts s to w columns (with an ellipsis) or pads it with spaces.
func padRight(s string, w int) string {
	sw := ansi.StringWidth(s)
	if sw > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-sw)
}

func padLeft(s string, w int) string {
	sw := ansi.StringWidth(s)
	if sw > w {
		return ansi.Truncate(s, w, "…")
	}
	return strings.Repeat(" ", w-sw) + s
}

func clean(s string) string { return sanitize.Line(s) }

func dashed(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// roundDur formats a duration for the header: 0.4s, 12s, 3m10s.
func roundDur(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	}
	return d.Truncate(time.Second).String()
}

// column is one column of a table.
type column struct {
	title string
	width int
	right bool
}

func (c column) cell(s string) string {
	if c.right {
		return padLeft(s, c.width)
	}
	return padRight(s, c.width)
}

func joinCells(cols []column, cells []string) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.cell(cells[i]))
	}
	return b.String()
}

// titles is the header row of cols.
func titles(cols []column) string {
	t := make([]string, len(cols))
	for i, c := range cols {
		t[i] = c.title
	}
	return joinCells(cols, t)
}

// num formats a seat or request count (NaN is "-"), with one decimal
// (textfmt.Num).
func num(f float64) string { return textfmt.Num(f, 1) }

// rate formats a per-second rate.
func rate(f float64, has bool) string {
	if !has || math.IsNaN(f) {
		return "-"
	}
	if f == 0 {
		return "0"
	}
	if f >= 100 {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'f', 1, 64)
}

// secs formats a latency in seconds.
func secs(f float64) string {
	switch {
	case math.IsNaN(f):
		return "-"
	case f == 0:
		return "0"
	case f < 1:
		return strconv.FormatFloat(f*1000, 'f', 0, 64) + "ms"
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + "s"
}

// bar draws used/limit in width cells.
func (st Styles) bar(used, limit float64, width int) string {
	if width <= 0 {
		return ""
	}
	if math.IsNaN(limit) || limit <= 0 || math.IsNaN(used) {
		return strings.Repeat("·", width)
	}
	fill := int(math.Round(used / limit * float64(width)))
	fill = max(0, min(fill, width))
	if used > 0 && fill == 0 {
		fill = 1
	}
	return st.paint(st.BarFull, strings.Repeat("█", fill)) + st.paint(st.BarEmpty, strings.Repeat("░", width-fill))
}

var sparks = []rune("▁▂▃▄▅▆▇█")

// sparkline draws the last width values of h, scaled to their maximum; a
// zero is a blank, so a level that never rejected shows nothing.
func sparkline(h []float64, width int) string {
	if len(h) > width {
		h = h[len(h)-width:]
	}
	hi := 0.0
	for _, v := range h {
		if v > hi {
			hi = v
		}
	}
	var b strings.Builder
	for i := len(h); i < width; i++ {
		b.WriteByte(' ')
	}
	for _, v := range h {
		if math.IsNaN(v) || v <= 0 || hi <= 0 {
			b.WriteByte(' ')
			continue
		}
		i := int(math.Ceil(v/hi*float64(len(sparks)))) - 1
		b.WriteRune(sparks[max(0, min(i, len(sparks)-1))])
	}
	return b.String()
}

// heat maps a value to a glyph: "·" for zero, else one of eight heights
// relative to hi.
func heat(v, hi float64) rune {
	if v <= 0 || hi <= 0 {
		return '·'
	}
	i := int(math.Ceil(v/hi*float64(len(sparks)))) - 1
	return sparks[max(0, min(i, len(sparks)-1))]
}
