package tui

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// This file is the level table's state, which every mode shares: the
// instance and level selected, the sort, the filter and the jump.

// sortKeys are the orders "s" cycles through.
var sortKeys = []string{"name", "seats", "waiting", "rejected", "dispatched", "p99"}

func (m *Model) nextInstance() {
	views := m.active().data().views
	if len(views) < 2 {
		return
	}
	for i := range views {
		if views[i].Instance == m.instance {
			m.instance = views[(i+1)%len(views)].Instance
			return
		}
	}
	m.instance = views[0].Instance
}

func (m *Model) instanceIndex() int {
	for i, iv := range m.active().data().views {
		if iv.Instance == m.instance {
			return i
		}
	}
	return 0
}

func (m *Model) onInputKey(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "esc":
		m.input, m.inputBuf = inputNone, ""
		return nil
	case "enter":
		mode, text := m.input, m.inputBuf
		m.input, m.inputBuf = inputNone, ""
		if mode == inputFilter {
			m.setFilter(text)
		} else {
			m.jump(text)
		}
		return nil
	case "backspace":
		if r := []rune(m.inputBuf); len(r) > 0 {
			m.inputBuf = string(r[:len(r)-1])
		}
		return nil
	}
	if msg.Text != "" {
		m.inputBuf += msg.Text
	}
	return nil
}

// setFilter compiles a filter: a regular expression on level names, "!"
// first inverts it. A bad expression keeps the previous filter and says why.
func (m *Model) setFilter(text string) {
	invert := strings.HasPrefix(text, "!")
	expr := strings.TrimPrefix(text, "!")
	if expr == "" {
		m.filter, m.filterRe, m.invert = "", nil, false
		return
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		var perr *syntax.Error
		if errors.As(err, &perr) {
			m.status = fmt.Sprintf("filter %q: %s; filter unchanged", text, perr.Code)
		} else {
			m.status = fmt.Sprintf("filter %q: %v; filter unchanged", text, err)
		}
		return
	}
	m.filter, m.filterRe, m.invert = text, re, invert
	m.offset = 0
}

// jump selects the first level whose name starts with text, else the first
// that contains it (case-insensitive), clearing a filter that hides it.
func (m *Model) jump(text string) {
	text = strings.ToLower(strings.TrimSpace(text))
	if text == "" {
		return
	}
	iv := m.view()
	if iv == nil {
		return
	}
	pick := ""
	for _, l := range iv.Levels {
		n := strings.ToLower(l.Name)
		if strings.HasPrefix(n, text) {
			pick = l.Name
			break
		}
		if pick == "" && strings.Contains(n, text) {
			pick = l.Name
		}
	}
	if pick == "" {
		m.status = fmt.Sprintf("no priority level matches %q", text)
		return
	}
	if !m.visible(pick) {
		m.filter, m.filterRe, m.invert = "", nil, false
	}
	m.cursor = pick
}

func (m *Model) visible(name string) bool {
	if m.filterRe == nil {
		return true
	}
	return m.filterRe.MatchString(name) != m.invert
}

// rows returns the selected instance's levels, filtered and sorted.
func (m *Model) rows() []LevelRow {
	iv := m.view()
	if iv == nil {
		return nil
	}
	rows := make([]LevelRow, 0, len(iv.Levels))
	for _, l := range iv.Levels {
		if m.visible(l.Name) {
			rows = append(rows, l)
		}
	}
	by := sortKeys[m.sortIdx]
	keyOf := func(l LevelRow) float64 {
		switch by {
		case "seats":
			if l.CurrentLimit > 0 && !l.Exempt {
				return l.SeatsInUse / l.CurrentLimit
			}
			return nanLow(l.SeatsInUse) - 1e9
		case "waiting":
			return nanLow(l.WaitingRequests)
		case "rejected":
			return nanLow(l.RejectedTotal)
		case "dispatched":
			return nanLow(l.DispatchedPS)
		case "p99":
			return nanLow(l.WaitP99)
		}
		return 0
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if ki, kj := keyOf(rows[i]), keyOf(rows[j]); ki != kj {
			return ki > kj
		}
		return rows[i].Name < rows[j].Name
	})
	return rows
}

// move moves the selection by d visible rows.
func (m *Model) move(d int) {
	rows := m.rows()
	if len(rows) == 0 {
		return
	}
	i := max(0, min(m.cursorIndex(rows)+d, len(rows)-1))
	m.cursor = rows[i].Name
}

// cursorIndex is the selected row's index in rows, selecting the first row
// when the selected level is gone (filtered out, deleted).
func (m *Model) cursorIndex(rows []LevelRow) int {
	for i, r := range rows {
		if r.Name == m.cursor {
			return i
		}
	}
	if len(rows) > 0 {
		m.cursor = rows[0].Name
	}
	return 0
}
