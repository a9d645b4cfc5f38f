package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
)

// View renders the model: a function of its state and the clock, which
// Update computed (relayout); it writes only the selection the table
// shows.
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
	f := m.frame(len(lines))
	switch {
	case m.help.shown:
		lines = append(lines, m.help.View(w)...)
	case f.iv == nil:
		lines = append(lines, m.emptyLines()...)
	case m.drill.open:
		lines = append(lines, m.drill.View(f)...)
	default:
		lines = append(lines, m.table.View(f)...)
	}
	lines = fitLines(lines, w, h-1)
	lines = append(lines, footer)
	return strings.Join(lines, "\n")
}

// frame is what the body is drawn on, under header lines of header.
func (m *Model) frame(header int) frame {
	return frame{w: m.width, body: m.height - header - 1, st: m.styles, iv: m.view(), spark: m.sparkData, past: m.inPast()}
}

// relayout computes what the body's components draw from the state the
// message left (the data shown, the size, the selection, sort and
// filter), so that View only lays it out. Update calls it last.
//
// Only the component drawn is refreshed, as Render picks it: the table's
// selection and first visible row move only while the table is shown,
// and the drill-down keeps its level while it is open.
func (m *Model) relayout() {
	if m.width < 20 || m.height < 6 {
		return // too small: nothing but a line is drawn
	}
	f := m.frame(len(m.headerLines()))
	switch {
	case m.help.shown, f.iv == nil:
	case m.drill.open:
		m.drill.refresh(f.iv, m.table.cursor)
	default:
		m.table.refresh(f)
	}
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
		lines = append(lines, st.paint(st.Warn, "! "+clean(f.Instance)+": "+clean(textfmt.FirstLine(f.Error()))))
	}
	return lines
}

func (m *Model) emptyLines() []string {
	if err := m.active().data().err; err != nil {
		return []string{"", "no data yet: " + clean(err.Error())}
	}
	return []string{"", "waiting for the first refresh…"}
}

func (m *Model) footer(w int) string {
	if m.input.active() {
		return m.input.View(w)
	}
	if m.status != "" {
		return padRight(m.styles.paint(m.styles.Warn, m.status), w)
	}
	return m.help.Short(w)
}
