package tui

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump/render"
)

// View renders the model: a pure function of its state and the clock.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "kubectl apf top"
	return v
}

// Render returns the frame as text, exactly m.width columns by m.height
// lines (the golden frames are this).
func (m *Model) Render() string {
	w, h := m.width, m.height
	if w < 20 || h < 6 {
		return fit([]string{"kubectl apf top: terminal too small"}, w, h)
	}
	var lines []string
	lines = append(lines, m.headerLines(w)...)
	footer := m.footer(w)
	body := h - len(lines) - 1
	switch {
	case m.showHelp:
		lines = append(lines, m.helpLines(w, body)...)
	case m.view() == nil:
		lines = append(lines, m.emptyLines(w)...)
	case m.drill:
		lines = append(lines, m.drillLines(w, body)...)
	default:
		lines = append(lines, m.levelLines(w, body)...)
	}
	lines = fitLines(lines, w, h-1)
	lines = append(lines, footer)
	return strings.Join(lines, "\n")
}

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

func clean(s string) string { return render.Sanitize(s) }

// connState is the header's state word and, when something is wrong, a
// line of detail (retry first, so a narrow terminal cuts the error text, not
// what the view is doing about it).
func (m *Model) connState() (state, detail string, bad bool) {
	now := m.clock()
	switch {
	case m.inPast:
		return fmt.Sprintf("HISTORY %d/%d from the store · → back to live", m.frame+1, len(m.rec().Frames)), "", false
	case m.opts.Replay != nil:
		n := len(m.opts.Replay.Frames)
		st := fmt.Sprintf("REPLAY %d/%d", min(m.frame+1, n), n)
		if m.paused {
			st += " (paused)"
		}
		if m.lastErr != nil {
			return st, "this refresh failed when recorded: " + clean(firstLine(m.lastErr.Error())), true
		}
		return st, "", false
	case m.lastErr != nil:
		var d []string
		if m.fetching {
			d = append(d, fmt.Sprintf("reconnecting (attempt %d)", m.failures+1))
		} else if !m.paused {
			d = append(d, fmt.Sprintf("retry %d in %s", m.failures+1, roundDur(max(m.retryAt.Sub(now), 0))))
		}
		if m.last != nil {
			d = append(d, "showing data from "+roundDur(now.Sub(m.last.At))+" ago")
		}
		d = append(d, clean(firstLine(m.lastErr.Error())))
		return "DISCONNECTED", strings.Join(d, " · "), true
	case m.last == nil:
		return "connecting…", "", false
	case m.paused:
		return "PAUSED", "", false
	case m.isBundle():
		// A bundle does not change: say when it was captured instead.
		if iv := m.view(); iv != nil && iv.Snapshot != nil {
			return "bundle captured " + iv.Snapshot.CapturedAt.UTC().Format("2006-01-02 15:04:05Z"), "", false
		}
		return "bundle", "", false
	case now.Sub(m.last.At) > 3*m.interval+5*time.Second:
		return "STALE", "no refresh for " + roundDur(now.Sub(m.last.At)), true
	}
	return "live", "", false
}

func (m *Model) isBundle() bool {
	_, ok := m.opts.Source.(*dump.BundleSource)
	return ok
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
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

func (m *Model) headerLines(w int) []string {
	st := m.styles
	src := "replay"
	if m.opts.Source != nil {
		src = m.opts.Source.Describe()
	}
	if m.opts.Cluster != "" {
		src = m.opts.Cluster
	}
	l1 := st.paint(st.Title, "kubectl apf top") + " · " + clean(src)
	if iv := m.view(); iv != nil {
		inst := clean(iv.Instance)
		if n := len(m.views) + len(m.failed); n > 1 {
			inst += fmt.Sprintf(" [%d/%d, tab]", m.instanceIndex()+1, n)
		}
		l1 += " · " + inst
		if iv.Version != "" {
			l1 += " " + clean(iv.Version)
		}
	}
	var parts []string
	switch {
	case m.inPast:
		parts = append(parts, "step "+m.rec().Header.Interval.String())
	case m.opts.Replay != nil:
		parts = append(parts, "step "+m.interval.String())
	default:
		parts = append(parts, "every "+m.interval.String())
	}
	if m.last != nil {
		if m.inPast {
			parts = append(parts, "at "+m.last.At.UTC().Format("15:04:05")+" ("+roundDur(max(m.clock().Sub(m.last.At), 0))+" ago)")
		} else if m.opts.Replay != nil {
			parts = append(parts, "at "+m.last.At.UTC().Format("15:04:05"))
		} else {
			parts = append(parts, "updated "+roundDur(m.clock().Sub(m.last.At))+" ago")
		}
		if m.last.Requests >= 0 {
			parts = append(parts, fmt.Sprintf("load %d req/refresh", m.last.Requests))
		}
	}
	state, detail, bad := m.connState()
	switch {
	case bad:
		state = st.paint(st.Error, "! "+state)
	case m.inPast:
		state = st.paint(st.Warn, "◀ "+state)
	default:
		state = "● " + state
	}
	parts = append(parts, state)
	l2 := strings.Join(parts, " · ")
	lines := []string{l1, l2}
	if detail != "" {
		lines = append(lines, st.paint(st.Error, "! "+detail))
	}
	if m.past != nil && m.past.Incident != "" {
		lines = append(lines, "last incident in the store: "+clean(m.past.Incident))
	}
	if m.pastErr != nil {
		lines = append(lines, st.paint(st.Warn, "! history from the store: "+clean(firstLine(m.pastErr.Error()))))
	}
	if m.recordErr != nil {
		lines = append(lines, st.paint(st.Warn, "! recording: "+clean(m.recordErr.Error())))
	}
	for _, f := range m.failed {
		lines = append(lines, st.paint(st.Warn, "! "+clean(f.Instance)+": "+clean(firstLine(f.Error()))))
	}
	return lines
}

func (m *Model) instanceIndex() int {
	for i, iv := range m.views {
		if iv.Instance == m.instance {
			return i
		}
	}
	return 0
}

func (m *Model) emptyLines(w int) []string {
	if m.lastErr != nil {
		return []string{"", "no data yet: " + clean(m.lastErr.Error())}
	}
	return []string{"", "waiting for the first refresh…"}
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

// num formats a seat or request count (NaN is "-").
func num(f float64) string {
	switch {
	case math.IsNaN(f):
		return "-"
	case f == math.Trunc(f) && math.Abs(f) < 1e9:
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'f', 1, 64)
}

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

func nanLow(f float64) float64 {
	if math.IsNaN(f) {
		return math.Inf(-1)
	}
	return f
}

// bar draws used/limit in width cells.
func (m *Model) bar(used, limit float64, width int) string {
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
	st := m.styles
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
	bar := m.bar(l.SeatsInUse, l.CurrentLimit, cols[2].width)
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
	titles := make([]string, len(cols))
	for i, c := range cols {
		titles[i] = c.title
	}
	lines = append(lines, st.paint(st.Header, padRight(joinCells(cols, titles), w)))

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

// heat maps a value to a glyph: "·" for zero, else one of eight heights
// relative to hi.
func heat(v, hi float64) rune {
	if v <= 0 || hi <= 0 {
		return '·'
	}
	i := int(math.Ceil(v/hi*float64(len(sparks)))) - 1
	return sparks[max(0, min(i, len(sparks)-1))]
}

// queueLines is the heat map of the selected level's queues: one cell per
// queue on three rows (waiting requests, executing seats, distinct flows),
// so a shuffle-sharding collision (two flows on a queue) or an elephant
// (one flow filling every queue of its hand) is visible at a glance.
func (m *Model) queueLines(w int, iv *InstanceView, l LevelRow) []string {
	qs := Queues(iv.Snapshot, l.Name)
	title := "── queues of " + clean(l.Name) + " "
	if m.inPast {
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

func (m *Model) drillLines(w, body int) []string {
	st := m.styles
	iv := m.view()
	level := m.cursor
	flows := render.FlowRows([]*dump.Snapshot{iv.Snapshot}, level, 0)
	waiting := Waiting(iv.Snapshot, level)
	lines := []string{st.paint(st.Header, fmt.Sprintf("%s on %s · %d flows · %d waiting requests · esc back", clean(level), clean(iv.Instance), len(flows), len(waiting)))}
	fcols := []column{{"FLOWSCHEMA", 24, false}, {"FLOW", 20, false}, {"WAIT", 5, true}, {"W-SEATS", 7, true},
		{"EXEC", 5, true}, {"E-SEATS", 7, true}, {"QUEUES", max(6, w-24-20-5-7-5-7-7), false}}
	if w < 120 {
		fcols[0].width, fcols[1].width = 18, 14
		fcols[6].width = max(6, w-18-14-5-7-5-7-7)
	}
	titles := make([]string, len(fcols))
	for i, c := range fcols {
		titles[i] = c.title
	}
	lines = append(lines, st.paint(st.Header, joinCells(fcols, titles)))
	half := max(3, (body-4)/2)
	for i, f := range flows {
		if i >= half {
			lines = append(lines, fmt.Sprintf("… %d more flows", len(flows)-i))
			break
		}
		qs := make([]string, len(f.Queues))
		for j, q := range f.Queues {
			qs[j] = strconv.Itoa(q)
		}
		lines = append(lines, joinCells(fcols, []string{clean(f.FlowSchema), clean(dashed(f.Distinguisher)), strconv.Itoa(f.WaitingRequests),
			strconv.Itoa(f.WaitingSeats), strconv.Itoa(f.ExecutingRequest), strconv.Itoa(f.ExecutingSeats), dashed(strings.Join(qs, ","))}))
	}
	if len(flows) == 0 {
		lines = append(lines, "  no request of this level in the dump")
	}
	lines = append(lines, "")
	rcols := []column{{"AGE", 7, true}, {"SEATS", 5, true}, {"QUEUE", 5, true}, {"FLOWSCHEMA", 20, false}, {"FLOW", 16, false},
		{"USER", 20, false}, {"VERB", 6, false}, {"PATH", max(4, w-7-5-5-20-16-20-6-7), false}}
	if w < 120 {
		rcols = []column{{"AGE", 6, true}, {"SEATS", 5, true}, {"Q", 3, true}, {"FLOW", 14, false}, {"USER", 14, false},
			{"VERB", 6, false}, {"PATH", max(4, w-6-5-3-14-14-6-6), false}}
	}
	titles = make([]string, len(rcols))
	for i, c := range rcols {
		titles[i] = c.title
	}
	lines = append(lines, st.paint(st.Header, joinCells(rcols, titles)))
	room := body - len(lines)
	for i, r := range waiting {
		if i >= room-1 && len(waiting) > room {
			lines = append(lines, fmt.Sprintf("… %d more waiting requests", len(waiting)-i))
			break
		}
		age := roundDur(r.Age)
		var cells []string
		if w < 120 {
			cells = []string{age, strconv.Itoa(r.Seats), strconv.Itoa(r.Queue), clean(dashed(r.Distinguisher)), clean(dashed(r.User)), clean(dashed(r.Verb)), clean(dashed(r.Path))}
		} else {
			cells = []string{age, strconv.Itoa(r.Seats), strconv.Itoa(r.Queue), clean(r.FlowSchema), clean(dashed(r.Distinguisher)), clean(dashed(r.User)), clean(dashed(r.Verb)), clean(dashed(r.Path))}
		}
		lines = append(lines, joinCells(rcols, cells))
	}
	if len(waiting) == 0 {
		lines = append(lines, "  no waiting request")
	}
	return lines
}

func dashed(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (m *Model) helpLines(w, body int) []string {
	groups := m.keys.FullHelp()
	if w < 100 {
		// One column fits 80 columns; bubbles/help would cut the others.
		var all []key.Binding
		for _, g := range groups {
			all = append(all, g...)
		}
		half := (len(all) + 1) / 2
		groups = [][]key.Binding{all[:half], all[half:]}
	}
	text := m.help.FullHelpView(groups)
	lines := []string{m.styles.paint(m.styles.Header, "keys (any key closes this help)"), ""}
	lines = append(lines, strings.Split(text, "\n")...)
	lines = append(lines, "", "columns: SEATS in use of the current limit (after borrowing); NOM nominal limit;",
		"± seats borrowed (+) or lent (-); WAIT waiting requests/seats; DISP/S dispatched",
		"per second; REJ/S rejected per second (full = queue full, limit = concurrency",
		"limit, timeout = waited too long); P99 wait time p99 over the last interval;",
		"! marks a level rejecting right now.")
	return lines
}

func (m *Model) footer(w int) string {
	st := m.styles
	switch m.input {
	case inputFilter:
		return padRight("filter (regex, ! inverts, enter applies, esc cancels): /"+m.inputBuf+"█", w)
	case inputJump:
		return padRight("jump to level (enter, esc cancels): :"+m.inputBuf+"█", w)
	}
	if m.status != "" {
		return padRight(st.paint(st.Warn, m.status), w)
	}
	return padRight(m.help.ShortHelpView(m.keys.ShortHelp()), w)
}
