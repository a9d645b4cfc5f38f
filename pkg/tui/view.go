package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// View renders the model: a pure function of its state and the clock.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "kubectl apf top"
	return v
}

// Render returns the frame as text, exactly m.width columns by m.height
// lines (the golden frames are this): the header (with the mode's
// status), the body (the level table, the drill-down or the help) and the
// footer.
func (m *Model) Render() string {
	w, h := m.width, m.height
	if w < 20 || h < 6 {
		return fit([]string{"kubectl apf top: terminal too small"}, w, h)
	}
	var lines []string
	lines = append(lines, m.headerLines()...)
	footer := m.footer(w)
	body := h - len(lines) - 1
	switch {
	case m.showHelp:
		lines = append(lines, m.helpLines(w)...)
	case m.view() == nil:
		lines = append(lines, m.emptyLines()...)
	case m.drill:
		lines = append(lines, m.drillLines(w, body)...)
	default:
		lines = append(lines, m.levelLines(w, body)...)
	}
	lines = fitLines(lines, w, h-1)
	lines = append(lines, footer)
	return strings.Join(lines, "\n")
}

// headerLines are the title line (the source and the instance shown), the
// mode's status, the notes of the store and of the live view (which go on
// while the past is shown), and the instances that failed.
func (m *Model) headerLines() []string {
	st := m.styles
	d := m.active().data()
	src := "replay"
	if m.opts.Source != nil {
		src = m.opts.Source.Describe()
	}
	if m.opts.Cluster != "" {
		src = m.opts.Cluster
	}
	l1 := st.paint(st.Title, "kubectl apf top") + " · " + clean(src)
	iv := m.view()
	if iv != nil {
		inst := clean(iv.Instance)
		if n := len(d.views) + len(d.failed); n > 1 {
			inst += fmt.Sprintf(" [%d/%d, tab]", m.instanceIndex()+1, n)
		}
		l1 += " · " + inst
		if iv.Version != "" {
			l1 += " " + clean(iv.Version)
		}
	}
	lines := append([]string{l1}, m.active().View(m.clock(), st, iv)...)
	if m.past != nil {
		lines = append(lines, m.past.notes(st)...)
	}
	if m.live != nil {
		lines = append(lines, m.live.notes(st)...)
	}
	for _, f := range d.failed {
		lines = append(lines, st.paint(st.Warn, "! "+clean(f.Instance)+": "+clean(firstLine(f.Error()))))
	}
	return lines
}

func (m *Model) emptyLines() []string {
	if err := m.active().data().err; err != nil {
		return []string{"", "no data yet: " + clean(err.Error())}
	}
	return []string{"", "waiting for the first refresh…"}
}

func (m *Model) helpLines(w int) []string {
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
