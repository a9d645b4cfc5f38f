package tui

import (
	"fmt"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
)

// drillDown is the drill-down of the selected level, a component: enter
// opens it, esc closes it; its View lists the level's flows, then its
// waiting requests, oldest first, as refresh computed them.
type drillDown struct {
	open bool

	// Computed by refresh (in Update) while it is open.
	level   string
	flows   []render.FlowRow
	waiting []WaitingRequest
}

// refresh computes the flows and waiting requests of level in the
// instance shown. Update calls it after every message while the
// drill-down is open.
func (d *drillDown) refresh(iv *InstanceView, level string) {
	d.level = level
	d.flows = render.FlowRows([]*dump.Snapshot{iv.Snapshot}, level, 0)
	d.waiting = Waiting(iv.Snapshot, level)
}

// Update opens the drill-down of the selected level (none: cursor "") or
// closes it, reporting whether msg was one of its keys.
func (d *drillDown) Update(msg tea.KeyPressMsg, k *KeyMap, cursor string) bool {
	switch {
	case key.Matches(msg, k.Back):
		d.open = false
	case key.Matches(msg, k.Enter):
		if cursor != "" {
			d.open = true
		}
	default:
		return false
	}
	return true
}

// View draws the drill-down of the level refresh computed.
func (d *drillDown) View(f frame) []string {
	st, iv, w, body := f.st, f.iv, f.w, f.body
	level, flows, waiting := d.level, d.flows, d.waiting
	// without a request dump (a bundle of metrics alone) the flows and
	// the waiting requests are not known: "-", never 0
	read := iv.Snapshot != nil && levels.RequestDumpRead(iv.Snapshot)
	nFlows, nWaiting := strconv.Itoa(len(flows)), strconv.Itoa(len(waiting))
	if !read {
		nFlows, nWaiting = "-", "-"
	}
	lines := []string{st.paint(st.Header, fmt.Sprintf("%s on %s · %s flows · %s waiting requests · esc back", clean(level), clean(iv.Instance), nFlows, nWaiting))}
	fcols := []column{{"FLOWSCHEMA", 24, false}, {"FLOW", 20, false}, {"WAIT", 5, true}, {"W-SEATS", 7, true},
		{"EXEC", 5, true}, {"E-SEATS", 7, true}, {"QUEUES", max(6, w-24-20-5-7-5-7-7), false}}
	if w < 120 {
		fcols[0].width, fcols[1].width = 18, 14
		fcols[6].width = max(6, w-18-14-5-7-5-7-7)
	}
	lines = append(lines, st.paint(st.Header, titles(fcols)))
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
			strconv.Itoa(f.WaitingSeats), f.ExecutingCell(f.ExecutingRequest), f.ExecutingCell(f.ExecutingSeats), dashed(strings.Join(qs, ","))}))
	}
	switch {
	case !read:
		lines = append(lines, "  the capture holds no request dump")
	case len(flows) == 0:
		lines = append(lines, "  no request of this level in the dump")
	}
	lines = append(lines, "")
	rcols := []column{{"AGE", 7, true}, {"SEATS", 5, true}, {"QUEUE", 5, true}, {"FLOWSCHEMA", 20, false}, {"FLOW", 16, false},
		{"USER", 20, false}, {"VERB", 6, false}, {"PATH", max(4, w-7-5-5-20-16-20-6-7), false}}
	if w < 120 {
		rcols = []column{{"AGE", 6, true}, {"SEATS", 5, true}, {"Q", 3, true}, {"FLOW", 14, false}, {"USER", 14, false},
			{"VERB", 6, false}, {"PATH", max(4, w-6-5-3-14-14-6-6), false}}
	}
	lines = append(lines, st.paint(st.Header, titles(rcols)))
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
	if len(waiting) == 0 && read {
		lines = append(lines, "  no waiting request")
	}
	return lines
}
