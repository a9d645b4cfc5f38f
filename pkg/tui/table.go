package tui

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
)

// sortKeys are the orders "s" cycles through.
var sortKeys = []string{"name", "seats", "waiting", "rejected", "dispatched", "p99"}

// levelTable is the level table, a component: the levels of the instance
// shown, filtered and sorted, the one selected and the first row visible.
// Every mode's data renders through it. Its Update moves the selection
// and changes the sort; setFilter and jump take what the line input typed;
// its View draws the table and, under it, the queue map of the selected
// level.
type levelTable struct {
	cursor   string // selected level
	offset   int    // first visible row
	sortIdx  int
	filter   string
	filterRe *regexp.Regexp
	invert   bool
	queues   queueMap
}

// Update handles the keys of the table on the levels of iv, reporting
// whether msg was one.
func (t *levelTable) Update(msg tea.KeyPressMsg, k *KeyMap, iv *InstanceView) bool {
	switch {
	case key.Matches(msg, k.Up):
		t.move(iv, -1)
	case key.Matches(msg, k.Down):
		t.move(iv, +1)
	case key.Matches(msg, k.Sort):
		t.sortIdx = (t.sortIdx + 1) % len(sortKeys)
	default:
		return false
	}
	return true
}

// setFilter compiles a filter: a regular expression on level names, "!"
// first inverts it. A bad expression keeps the previous filter and says
// why (the status line).
func (t *levelTable) setFilter(text string) (status string) {
	invert := strings.HasPrefix(text, "!")
	expr := strings.TrimPrefix(text, "!")
	if expr == "" {
		t.filter, t.filterRe, t.invert = "", nil, false
		return ""
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		var perr *syntax.Error
		if errors.As(err, &perr) {
			return fmt.Sprintf("filter %q: %s; filter unchanged", text, perr.Code)
		}
		return fmt.Sprintf("filter %q: %v; filter unchanged", text, err)
	}
	t.filter, t.filterRe, t.invert = text, re, invert
	t.offset = 0
	return ""
}

// jump selects the first level of iv whose name starts with text, else
// the first that contains it (case-insensitive), clearing a filter that
// hides it; the status line says when none matches.
func (t *levelTable) jump(iv *InstanceView, text string) (status string) {
	text = strings.ToLower(strings.TrimSpace(text))
	if text == "" || iv == nil {
		return ""
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
		return fmt.Sprintf("no priority level matches %q", text)
	}
	if !t.visible(pick) {
		t.filter, t.filterRe, t.invert = "", nil, false
	}
	t.cursor = pick
	return ""
}

func (t *levelTable) visible(name string) bool {
	if t.filterRe == nil {
		return true
	}
	return t.filterRe.MatchString(name) != t.invert
}

// rows returns the levels of iv, filtered and sorted.
func (t *levelTable) rows(iv *InstanceView) []levels.Row {
	if iv == nil {
		return nil
	}
	rows := make([]levels.Row, 0, len(iv.Levels))
	for _, l := range iv.Levels {
		if t.visible(l.Name) {
			rows = append(rows, l)
		}
	}
	less := levels.Less(sortKeys[t.sortIdx])
	sort.SliceStable(rows, func(i, j int) bool { return less(rows[i], rows[j]) })
	return rows
}

// move moves the selection by d visible rows.
func (t *levelTable) move(iv *InstanceView, d int) {
	rows := t.rows(iv)
	if len(rows) == 0 {
		return
	}
	i := max(0, min(t.cursorIndex(rows)+d, len(rows)-1))
	t.cursor = rows[i].Name
}

// cursorIndex is the selected row's index in rows, selecting the first row
// when the selected level is gone (filtered out, deleted).
func (t *levelTable) cursorIndex(rows []levels.Row) int {
	for i, r := range rows {
		if r.Name == t.cursor {
			return i
		}
	}
	if len(rows) > 0 {
		t.cursor = rows[0].Name
	}
	return 0
}
