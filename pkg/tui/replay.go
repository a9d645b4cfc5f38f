package tui

import (
	"fmt"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/tui/record"
)

// replayModel is the replay mode: it plays a recording (of the live view,
// or a window of the store) back at the interval, and left and right step
// through it.
type replayModel struct {
	keys *KeyMap
	player
	pace
}

func newReplay(rec *record.Recording, keys *KeyMap, interval time.Duration) *replayModel {
	return &replayModel{keys: keys, player: newPlayer(rec), pace: pace{interval: interval}}
}

// frameMsg shows replay frame i.
type frameMsg struct{ gen, i int }

// Init shows the first frame.
func (r *replayModel) Init() tea.Cmd {
	gen := r.gen
	return func() tea.Msg { return frameMsg{gen: gen, i: 0} }
}

// next schedules frame i after the interval, unless it is past the end.
func (r *replayModel) next(i int) tea.Cmd {
	if i >= r.len() {
		return nil
	}
	gen := r.gen
	return tea.Tick(r.interval, func(time.Time) tea.Msg { return frameMsg{gen: gen, i: i} })
}

// Update plays the frames and handles the keys that drive them (p, +, -,
// left, right).
func (r *replayModel) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case frameMsg:
		if msg.gen != r.gen {
			return nil
		}
		r.show(msg.i)
		if r.paused {
			return nil
		}
		return r.next(msg.i + 1)
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, r.keys.Pause):
			if !r.togglePause() {
				return nil
			}
			next := r.frame + 1
			if next >= r.len() {
				next = 0
			}
			gen := r.gen
			return func() tea.Msg { return frameMsg{gen: gen, i: next} }
		case key.Matches(msg, r.keys.Slower), key.Matches(msg, r.keys.Faster):
			dir := -1
			if key.Matches(msg, r.keys.Slower) {
				dir = +1
			}
			if !r.changeInterval(dir) || r.paused {
				return nil
			}
			return r.next(r.frame + 1)
		case key.Matches(msg, r.keys.Earlier):
			r.step(-1)
		case key.Matches(msg, r.keys.Later):
			r.step(+1)
		}
	}
	return nil
}

// step pauses and moves d frames.
func (r *replayModel) step(d int) {
	r.paused = true
	r.gen++
	r.show(r.frame + d)
}

func (r *replayModel) data() *frameData { return &r.cur }

func (r *replayModel) sparkData(instance, level string) []float64 {
	return r.cur.history[histKey(instance, level)]
}

// View is the replay's status in the header: the recording's step (the
// time between its frames: a watch's scrape interval, the live view's
// refresh), how often a frame is shown when that differs, the time of the
// frame and its place in the recording, and a frame that failed when it
// was recorded.
func (r *replayModel) View(_ time.Time, st Styles, _ *InstanceView) []string {
	var parts []string
	step := r.rec.Header.Interval.Round(time.Second / 10)
	if step > 0 {
		parts = append(parts, "step "+step.String())
	}
	if r.interval != step {
		parts = append(parts, "shown every "+r.interval.String())
	}
	if r.cur.last != nil {
		parts = append(parts, "at "+r.cur.last.At.UTC().Format("15:04:05"))
	}
	n := r.len()
	state := fmt.Sprintf("REPLAY %d/%d", min(r.frame+1, n), n)
	if r.paused {
		state += " (paused)"
	}
	detail := ""
	if r.cur.err != nil {
		detail = "this refresh failed when recorded: " + clean(textfmt.FirstLine(r.cur.err.Error()))
	}
	return statusLines(st, parts, r.cur.last, state, detail, r.cur.err != nil, false)
}
