package tui

import (
	"fmt"
	"math"
	"strings"

	"github.com/charmbracelet/x/ansi"
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

func rejectedCell(l LevelRow, byReason bool) string {
	if !l.HasRates {
		return "-"
	}
	if !byReason || len(l.Rejected) == 0 {
		return rate(l.RejectedTotal, true)
	}
	var parts []string
	for _, r := range l.Rejected {
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
func levelColumns(w int) (cols []column, wide bool) {
	wide = w >= 120
	name := 18
	bar := 8
	if wide {
		name, bar = 28, 16
	}
	cols = []column{
		{"", 2, false},
		{"LEVEL", name, false},
		{"SEATS", bar, false},
		{"USE/LIM", 7, true},
		{"NOM", 4, true},
		{"±", 4, true},
		{"WAIT", 7, true},
		{"DISP/S", 6, true},
	}
	if wide {
		cols = append(cols, column{"REJECTED/S", 22, false}, column{"REJECTED/S (history)", 24, false})
	} else {
		cols = append(cols, column{"REJ/S", 6, true})
	}
	cols = append(cols, column{"P99", 6, true})
	return cols, wide
}

func (m *Model) levelCells(l LevelRow, wide bool, cols []column) []string {
	mark := " "
	if l.Name == m.cursor {
		mark = ">"
	}
	if l.Rejecting {
		mark += "!"
	} else {
		mark += " "
	}
	use := num(l.SeatsInUse) + "/" + num(l.CurrentLimit)
	bar := m.styles.bar(l.SeatsInUse, l.CurrentLimit, cols[2].width)
	lend := "0"
	switch {
	case l.Exempt:
		// No limit applies (LevelRow.Exempt).
		use, lend, bar = num(l.SeatsInUse)+"/-", "-", padRight("exempt", cols[2].width)
	case l.Borrowed > 0:
		lend = "+" + num(l.Borrowed)
	case l.Lent > 0:
		lend = "-" + num(l.Lent)
	case math.IsNaN(l.CurrentLimit):
		lend = "-"
	}
	wait := num(l.WaitingRequests)
	if !math.IsNaN(l.WaitingSeats) && l.WaitingSeats != l.WaitingRequests {
		wait += "/" + num(l.WaitingSeats)
	}
	cells := []string{mark, clean(l.Name), bar, use, num(l.NominalLimit), lend, wait,
		rate(l.DispatchedPS, l.HasRates)}
	if wide {
		cells = append(cells, rejectedCell(l, true), sparkline(m.sparkData(l.Name), cols[9].width))
	} else {
		cells = append(cells, rejectedCell(l, false))
	}
	return append(cells, secs(l.WaitP99))
}

func (m *Model) levelLines(w, body int) []string {
	st := m.styles
	iv := m.view()
	rows := m.rows()
	// Totals line: what the e2e test and a glance look for.
	var seats, limit, waiting, rejected float64
	rejKnown := false
	for _, l := range iv.Levels {
		if !math.IsNaN(l.SeatsInUse) && !l.Exempt {
			seats += l.SeatsInUse
		}
		if !math.IsNaN(l.CurrentLimit) && !l.Exempt {
			limit += l.CurrentLimit
		}
		if !math.IsNaN(l.WaitingRequests) {
			waiting += l.WaitingRequests
		}
		if l.HasRates {
			rejKnown = true
			rejected += l.RejectedTotal
		}
	}
	sum := fmt.Sprintf("levels %d · seats %s/%s · waiting %s · rejected %s/s · sort %s",
		len(iv.Levels), num(seats), num(limit), num(waiting), rate(rejected, rejKnown), sortKeys[m.sortIdx])
	if m.filter != "" {
		sum += " · filter /" + clean(m.filter) + "/"
	}
	lines := []string{sum}
	cols, wide := levelColumns(w)
	lines = append(lines, st.paint(st.Header, padRight(titles(cols), w)))

	sel := m.cursorIndex(rows)
	var queueLines []string
	if sel < len(rows) {
		queueLines = m.queueLines(w, iv, rows[sel])
	}
	// Rows get what the queue map leaves, at least three.
	space := body - len(lines) - len(queueLines)
	if space < 3 {
		queueLines = nil
		space = body - len(lines)
	}
	if sel < m.offset {
		m.offset = sel
	}
	if sel >= m.offset+space {
		m.offset = sel - space + 1
	}
	if m.offset > max(0, len(rows)-space) {
		m.offset = max(0, len(rows)-space)
	}
	for i := m.offset; i < len(rows) && i < m.offset+space; i++ {
		line := padRight(joinCells(cols, m.levelCells(rows[i], wide, cols)), w)
		switch {
		case i == sel:
			line = st.paint(st.Selected, line)
		case rows[i].Rejecting:
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

// queueLines is the heat map of the selected level's queues: one cell per
// queue on three rows (waiting requests, executing seats, distinct flows),
// so a shuffle-sharding collision (two flows on a queue) or an elephant
// (one flow filling every queue of its hand) is visible at a glance.
func (m *Model) queueLines(w int, iv *InstanceView, l LevelRow) []string {
	qs := Queues(iv.Snapshot, l.Name)
	title := "── queues of " + clean(l.Name) + " "
	if m.inPast() {
		// The store keeps the metrics, not the queue dump.
		return []string{padRight(title+"(a store holds no queues: → back to live for them) ", w)}
	}
	if len(qs) == 0 {
		return []string{padRight(title+"(no queues: exempt or Reject level) ", w)}
	}
	flows := map[int]map[string]bool{}
	for _, r := range iv.Snapshot.RequestDump {
		if r.PriorityLevel != l.Name || r.QueueIndex < 0 || r.Executing() {
			continue
		}
		f := flows[r.QueueIndex]
		if f == nil {
			f = map[string]bool{}
			flows[r.QueueIndex] = f
		}
		f[r.FlowSchema+"\x00"+r.FlowDistinguisher] = true
	}
	var hiWait, hiExec float64
	hiWaitQ, collisions := -1, 0
	for _, q := range qs {
		if float64(q.Waiting) > hiWait {
			hiWait, hiWaitQ = float64(q.Waiting), q.Index
		}
		hiExec = max(hiExec, float64(q.ExecSeats))
		if len(flows[q.Index]) > 1 {
			collisions++
		}
	}
	legend := fmt.Sprintf("(%d · max wait %s", len(qs), num(hiWait))
	if hiWaitQ >= 0 {
		legend += fmt.Sprintf(" @q%d", hiWaitQ)
	}
	legend += fmt.Sprintf(" · max exec %s · %d shared) ", num(hiExec), collisions)
	head := title + legend
	lines := []string{head + strings.Repeat("─", max(0, w-ansi.StringWidth(head)))}
	per := w - 6
	rowsOf := func(label string, glyph func(q QueueCell) rune) {
		for start := 0; start < len(qs); start += per {
			var b strings.Builder
			if start == 0 {
				b.WriteString(padRight(label, 5) + " ")
			} else {
				b.WriteString("      ")
			}
			for _, q := range qs[start:min(start+per, len(qs))] {
				b.WriteRune(glyph(q))
			}
			lines = append(lines, b.String())
		}
	}
	rowsOf("wait", func(q QueueCell) rune { return heat(float64(q.Waiting), hiWait) })
	rowsOf("exec", func(q QueueCell) rune { return heat(float64(q.ExecSeats), hiExec) })
	rowsOf("flows", func(q QueueCell) rune {
		n := len(flows[q.Index])
		switch {
		case n == 0:
			return '·'
		case n > 9:
			return '+'
		}
		return rune('0' + n)
	})
	return lines
}
