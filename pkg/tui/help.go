package tui

import (
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// helpView is the "?" page and the footer's key line, a component over
// bubbles/help: both are generated from the KeyMap, so they cannot
// disagree with Update.
type helpView struct {
	shown bool
	model help.Model
	keys  *KeyMap
	st    *Styles
}

func newHelpView(keys *KeyMap, st *Styles) helpView {
	h := helpView{model: help.New(), keys: keys, st: st}
	h.model.Styles = st.Help
	h.model.ShortSeparator = " · "
	return h
}

// setWidth follows the terminal's width.
func (h *helpView) setWidth(w int) { h.model.SetWidth(w) }

// Update closes the page at any key (quit is the shell's).
func (h *helpView) Update(tea.KeyPressMsg) { h.shown = false }

// View is the "?" page, w columns wide.
func (h *helpView) View(w int) []string {
	groups := h.keys.FullHelp()
	if w < 100 {
		// One column fits 80 columns; bubbles/help would cut the others.
		var all []key.Binding
		for _, g := range groups {
			all = append(all, g...)
		}
		half := (len(all) + 1) / 2
		groups = [][]key.Binding{all[:half], all[half:]}
	}
	text := h.model.FullHelpView(groups)
	lines := []string{h.st.paint(h.st.Header, "keys (any key closes this help)"), ""}
	lines = append(lines, strings.Split(text, "\n")...)
	return append(lines, "", "columns: SEATS mean use of the seats over the last interval (where the metrics",
		"give it); USE/LIM in use now, of the current limit (after borrowing); NOM",
		"nominal limit; ± seats borrowed (+) or lent (-); WAIT waiting requests/seats;",
		"DISP/S dispatched per second; REJ/S rejected per second (full = queue full,",
		"limit = concurrency limit, timeout = waited too long); P99 wait time p99 over",
		"the last interval; ! marks a level rejecting right now.")
}

// Short is the footer's key line, w columns wide.
func (h *helpView) Short(w int) string { return padRight(h.model.ShortHelpView(h.keys.ShortHelp()), w) }
