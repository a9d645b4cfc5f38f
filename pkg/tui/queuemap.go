package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
)

// queueMap is the heat map of the selected level's queues, a component:
// one cell per queue on three rows (waiting requests, executing seats,
// distinct flows), so a shuffle-sharding collision (two flows on a queue)
// or an elephant (one flow filling every queue of its hand) is visible at
// a glance. Its data is computed when the table is refreshed (in Update).
type queueMap struct {
	qs []QueueCell
	// flows are the distinct flows waiting on each queue.
	flows map[int]map[string]bool
	// none says why a level shows no queue
	none string
}

// newQueueMap computes the map's data of level in snapshot s.
func newQueueMap(s *dump.Snapshot, level string) queueMap {
	qs := Queues(s, level)
	flows := map[int]map[string]bool{}
	if len(qs) > 0 {
		for _, r := range s.RequestDump {
			if r.PriorityLevel != level || r.QueueIndex < 0 || r.Executing() {
				continue
			}
			f := flows[r.QueueIndex]
			if f == nil {
				f = map[string]bool{}
				flows[r.QueueIndex] = f
			}
			f[r.FlowSchema+"\x00"+r.FlowDistinguisher] = true
		}
	}
	m := queueMap{qs: qs, flows: flows}
	if len(qs) == 0 {
		m.none = noQueuesWhy(s, level)
	}
	return m
}

// noQueuesWhy says why the capture shows no queue of level: it has none
// (exempt, or limitResponse Reject), or the capture holds no queue dump
// (a bundle of metrics alone), or dump_queues has no row of it.
func noQueuesWhy(s *dump.Snapshot, level string) string {
	queuing, known := false, false
	if s != nil {
		for _, pl := range s.PriorityLevels {
			if pl.Name == level {
				known = true
				queuing = pl.Spec.Limited != nil && pl.Spec.Limited.LimitResponse.Queuing != nil
			}
		}
	}
	switch {
	case known && !queuing:
		return "no queues: exempt or Reject level"
	case s == nil || !levels.QueueDumpRead(s):
		return "the capture holds no queue dump"
	case known:
		return "dump_queues holds no row of it"
	}
	return "no queues: exempt or Reject level"
}

// View draws the map of level l of the instance shown.
func (q queueMap) View(f frame, l levels.Row) []string {
	w, qs, flows := f.w, q.qs, q.flows
	title := "── queues of " + clean(l.Name) + " "
	if f.past {
		// The store keeps the metrics, not the queue dump.
		return []string{padRight(title+"(a store holds no queues: → back to live for them) ", w)}
	}
	if len(qs) == 0 {
		why := q.none
		if why == "" {
			why = "no queues"
		}
		return []string{padRight(title+"("+why+") ", w)}
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
