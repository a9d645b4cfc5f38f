package tui

import (
	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"
)

// Styles colours the view. Layout never depends on them: every marker that
// carries meaning (the selection, a rejecting level, the stale state) is a
// character too, so a terminal without colour, or a golden frame, shows it.
type Styles struct {
	Title, Dim, Header, Selected, Rejecting, Warn, Error, BarFull, BarEmpty lipgloss.Style
	Help                                                                    help.Styles
	// Plain is true for PlainStyles: no escape sequence at all.
	Plain bool
}

// PlainStyles renders no escape sequence at all (golden frames, NO_COLOR).
func PlainStyles() Styles { return Styles{Plain: true} }

// ColorStyles is the default palette; bubbletea downsamples it to what the
// terminal supports.
func ColorStyles() Styles {
	red := lipgloss.Color("#ff5f5f")
	return Styles{
		Title:     lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("#87d7ff")),
		Dim:       lipgloss.NewStyle().Foreground(lipgloss.Color("#8a8a8a")),
		Header:    lipgloss.NewStyle().Bold(true),
		Selected:  lipgloss.NewStyle().Reverse(true),
		Rejecting: lipgloss.NewStyle().Bold(true).Foreground(red),
		Warn:      lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("#ffaf00")),
		Error:     lipgloss.NewStyle().Bold(true).Foreground(red),
		BarFull:   lipgloss.NewStyle().Foreground(lipgloss.Color("#5fd787")),
		BarEmpty:  lipgloss.NewStyle().Foreground(lipgloss.Color("#444444")),
		Help:      help.DefaultDarkStyles(),
	}
}

// paint applies s to text, or returns text as is for plain styles.
func (st Styles) paint(s lipgloss.Style, text string) string {
	if st.Plain {
		return text
	}
	return s.Render(text)
}
