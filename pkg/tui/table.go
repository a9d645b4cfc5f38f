package tui

import (
	"errors"
	"fmt"
	"math"
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

	// Computed by refresh (in Update) from the instance shown and the
	// above; View draws them.
	shown  []levels.Row // the levels shown, filtered and sorted
	sel    int          // the selected row's index in shown
	totals totals
}

// totals are the table's summary line: the levels of the instance shown
// (filtered or not), the seats in use and the limits of the non-exempt
// ones, the waiting requests and the rejections per second (known when
// some level has rates).
type totals struct {
	levels                          int
	seats, limit, waiting, rejected float64
	rejKnown                        bool
}

func totalsOf(ls []levels.Row) totals {
	t := totals{levels: len(ls)}
	for _, l := range ls {
		if !math.IsNaN(l.SeatsInUse) && !l.Exempt {
			t.seats += l.SeatsInUse
		}
		if !math.IsNaN(l.CurrentLimit) && !l.Exempt {
			t.limit += l.CurrentLimit
		}
		if !math.IsNaN(l.Waiting) {
			t.waiting += l.Waiting
		}
		if l.HasRates {
			t.rejKnown = true
			t.rejected += l.RejectedTotal
		}
	}
	return t
}

// refresh computes what View draws of the instance f.iv in frame f (its
// width and body): the rows filtered and sorted, the selected row (the
// first when the selected level is gone), the totals, the queue map's data of
// the selected level, and the first row visible, so that the selection
// stays in view. Update calls it after every message.
func (t *levelTable) refresh(f frame) {
	t.shown = t.rows(f.iv)
	t.sel = selIndex(t.shown, t.cursor)
	t.totals = totals{}
	if f.iv != nil {
		t.totals = totalsOf(f.iv.Levels)
	}
	t.queues = queueMap{}
	if t.sel < len(t.shown) {
		t.queues = newQueueMap(f.iv.Snapshot, t.shown[t.sel].Name)
	}
	_, space := t.queueLines(f, 2) // under the totals and the titles
	if t.sel < t.offset {
		t.offset = t.sel
	}
	if t.sel >= t.offset+space {
		t.offset = t.sel - space + 1
	}
	if t.offset > max(0, len(t.shown)-space) {
		t.offset = max(0, len(t.shown)-space)
	}
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
	i := selIndex(rows, t.cursor)
	if i < len(rows) {
		t.cursor = rows[i].Name
	}
	return i
}

// selIndex is the index of level in rows, 0 when it is not there.
func selIndex(rows []levels.Row, level string) int {
	for i, r := range rows {
		if r.Name == level {
			return i
		}
	}
	return 0
}

// shownCursor is the level the table shows selected: the selected one,
// or the first row when it is gone.
func (t *levelTable) shownCursor() string {
	if t.sel < len(t.shown) {
		return t.shown[t.sel].Name
	}
	return t.cursor
}
