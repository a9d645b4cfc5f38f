package tui

import (
	"fmt"
	"math"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
)

// shortReason abbreviates the reasons of rejected_requests_total
// (queueset.go: StartRequest, (*request).wait).
func shortReason(r string) string {
	switch r {
	case "queue-full":
		return "full"
	case "concurrency-limit":
		return "limit"
	case "time-out":
		return "timeout"
	}
	return r
}

func rejectedCell(l levels.Row, byReason bool) string {
	if !l.HasRates {
		return "-"
	}
	if !byReason || len(l.RejectedPerSec) == 0 {
		return rate(l.RejectedTotal, true)
	}
	var parts []string
	for _, r := range l.Reasons() {
		if r.PerSec > 0 {
			parts = append(parts, shortReason(r.Reason)+"="+rate(r.PerSec, true))
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " ")
}

// levelColumns chooses the columns for width w: the narrow set fits 80
// columns; wider terminals get the rejection reasons and the sparkline.
// The columns are pkg/levels' (levels.Column), with their short titles,
// but for the mark, the lent or borrowed seats (Row.Lending) and the
// sparkline, which only the live view has.
func levelColumns(w int) (cols []column, wide bool) {
	wide = w >= 120
	name := 18
	bar := 8
	if wide {
		name, bar = 28, 16
	}
	short := func(c levels.Column) column { return column{c.Short, c.Width, true} }
	cols = []column{
		{"", 2, false},
		{levels.ColLevel.Short, name, false},
		{levels.ColUtilisation.Short, bar, false},
		short(levels.ColSeatsInUse),
		short(levels.ColNominalLimit),
		{"±", 4, true},
		short(levels.ColWaiting),
		short(levels.ColDispatched),
	}
	if wide {
		rej := levels.ColRejected.Title
		cols = append(cols, column{rej, 22, false}, column{rej + " (history)", 24, false})
	} else {
		cols = append(cols, short(levels.ColRejected))
	}
	cols = append(cols, short(levels.ColWaitP99))
	return cols, wide
}

func (t *levelTable) cells(f frame, l levels.Row, wide bool, cols []column) []string {
	mark := " "
	if l.Name == t.cursor {
		mark = ">"
	}
	if l.Rejecting() {
		mark += "!"
	} else {
		mark += " "
	}
	use := num(l.SeatsInUse) + "/" + num(l.CurrentLimit)
	// The bar is the seats' mean use over the interval where the scrapes
	// give it (seat_utilization): a level that dispatches in bursts shows
	// its load, where the moment of a scrape often falls between bursts
	// (make demo's apf-load rejected 17/s beside an empty bar). USE/LIM
	// stays the moment's.
	barUse := l.SeatsInUse
	if !math.IsNaN(l.MeanUtilisation) && !math.IsNaN(l.CurrentLimit) {
		barUse = l.MeanUtilisation * l.CurrentLimit
	}
	bar := f.st.bar(barUse, l.CurrentLimit, cols[2].width)
	lend := "0"
	borrowed, lent := l.Lending()
	switch {
	case l.Exempt:
		// No limit applies: exempt's current limit only sets metric
		// denominators (levels.Row.Exempt).
		use, lend, bar = num(l.SeatsInUse)+"/-", "-", padRight("exempt", cols[2].width)
	case borrowed > 0:
		lend = "+" + num(borrowed)
	case lent > 0:
		lend = "-" + num(lent)
	case math.IsNaN(l.CurrentLimit):
		lend = "-"
	}
	wait := num(l.Waiting)
	if !math.IsNaN(l.WaitingSeats) && l.WaitingSeats != l.Waiting {
		wait += "/" + num(l.WaitingSeats)
	}
	cells := []string{mark, clean(l.Name), bar, use, num(l.NominalLimit), lend, wait,
		rate(l.DispatchedPerSec, l.HasRates)}
	if wide {
		cells = append(cells, rejectedCell(l, true), sparkline(f.spark(l.Name), cols[9].width))
	} else {
		cells = append(cells, rejectedCell(l, false))
	}
	return append(cells, secs(l.WaitP99))
}

// frame is what a component's View draws on: its width and the lines of
// the body, the styles and the instance shown.
type frame struct {
	w, body int
	st      Styles
	iv      *InstanceView
	// spark is the rejection sparkline of a level of the instance.
	spark func(level string) []float64
	// past: the store's past is shown, which holds no queue dump.
	past bool
}

// View draws the table as Update left it (refresh): the totals, the rows
// that fit from the first one visible, and the queue map of the selected
// level.
//
// Its one write is the selection it shows: a selected level that is gone
// (or none yet) becomes the first row drawn, as the frame shows it, so
// that enter drills into the level the user sees. Every other figure was
// computed by refresh.
func (t *levelTable) View(f frame) []string {
	st, w, body := f.st, f.w, f.body
	rows, sel, tot := t.shown, t.sel, t.totals
	t.cursor = t.shownCursor()
	// Totals line: what the e2e test and a glance look for.
	sum := fmt.Sprintf("levels %d · seats %s/%s · waiting %s · rejected %s/s · sort %s",
		tot.levels, num(tot.seats), num(tot.limit), num(tot.waiting), rate(tot.rejected, tot.rejKnown), sortKeys[t.sortIdx])
	if t.filter != "" {
		sum += " · filter /" + clean(t.filter) + "/"
	}
	lines := []string{sum}
	cols, wide := levelColumns(w)
	lines = append(lines, st.paint(st.Header, padRight(titles(cols), w)))
	queueLines, space := t.queueLines(f, len(lines))
	for i := t.offset; i < len(rows) && i < t.offset+space; i++ {
		line := padRight(joinCells(cols, t.cells(f, rows[i], wide, cols)), w)
		switch {
		case i == sel:
			line = st.paint(st.Selected, line)
		case rows[i].Rejecting():
			line = st.paint(st.Rejecting, line)
		}
		lines = append(lines, line)
	}
	if len(rows) == 0 {
		lines = append(lines, "  no priority level matches the filter")
	}
	for len(lines) < body-len(queueLines) {
		lines = append(lines, "")
	}
	return append(lines, queueLines...)
}

// queueLines are the queue map's lines under a table whose first above
// lines are drawn, and the space left for the rows: the rows get what the
// map leaves, at least three, else the map is not drawn.
func (t *levelTable) queueLines(f frame, above int) (lines []string, space int) {
	if t.sel < len(t.shown) {
		lines = t.queues.View(f, t.shown[t.sel])
	}
	space = f.body - above - len(lines)
	if space < 3 {
		return nil, f.body - above
	}
	return lines, space
}
