package tui

import tea "charm.land/bubbletea/v2"

// inputMode is what the line being typed is for.
type inputMode int

const (
	inputNone inputMode = iota
	inputFilter
	inputJump
)

// lineInput is the footer's line input, a component: "/" types a filter,
// ":" a level to jump to. Its Update edits the line and, on enter, hands
// back what was typed; its View is the footer while it is open.
type lineInput struct {
	mode inputMode
	buf  string
}

// open starts typing for mode, from text.
func (in *lineInput) open(mode inputMode, text string) { in.mode, in.buf = mode, text }

// active says whether a line is being typed.
func (in *lineInput) active() bool { return in.mode != inputNone }

// Update edits the line. On enter it closes and returns the mode and the
// text typed, with done true; esc closes it with nothing typed.
func (in *lineInput) Update(msg tea.KeyPressMsg) (mode inputMode, text string, done bool) {
	switch msg.String() {
	case "esc":
		in.mode, in.buf = inputNone, ""
		return inputNone, "", false
	case "enter":
		mode, text = in.mode, in.buf
		in.mode, in.buf = inputNone, ""
		return mode, text, true
	case "backspace":
		if r := []rune(in.buf); len(r) > 0 {
			in.buf = string(r[:len(r)-1])
		}
		return inputNone, "", false
	}
	if msg.Text != "" {
		in.buf += msg.Text
	}
	return inputNone, "", false
}

// View is the footer line while typing, w columns wide.
func (in *lineInput) View(w int) string {
	switch in.mode {
	case inputFilter:
		return padRight("filter (regex, ! inverts, enter applies, esc cancels): /"+in.buf+"█", w)
	case inputJump:
		return padRight("jump to level (enter, esc cancels): :"+in.buf+"█", w)
	}
	return ""
}
