package tui

import (
	"context"
	"errors"
	"fmt"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/tui/record"
)

// Past is a store's recent past for the live view.
type Past struct {
	// Recording holds the frames, one per step (Header.Interval), oldest
	// first.
	Recording *record.Recording
	// Incident is one line about the last burst of rejections in it, ""
	// when there was none.
	Incident string
}

// The view reads the past again after pastRetry while no read has
// succeeded (a store that has just started scraping), then every
// pastRefresh, so that the last incident stays current.
const (
	pastRetry   = 10 * time.Second
	pastRefresh = time.Minute
)

// pastModel is the store's past behind the live view: it reads it (at
// start, then every pastRefresh), gives the live sparklines their start
// (seedFor), and, when the shell shows it, steps through its frames (the
// level table as the store saw it).
type pastModel struct {
	read      func(ctx context.Context) (*Past, error)
	ctx       context.Context
	keys      *KeyMap
	clock     func() time.Time
	firstLive func() time.Time

	// held is the last past read (nil before a read succeeds), at loaded;
	// err is why the last read failed.
	held    *Past
	loaded  time.Time
	err     error
	loading bool
	// gen numbers the reads: a tick of an older one is ignored.
	gen int
	// want is true while a read asked for by left is under way: the shell
	// shows the past once it has come.
	want bool
	// shown is true while the shell shows the past instead of live.
	shown bool
	player
	// seed is the rejection sparkline of each store instance and level
	// before the first live refresh; seedInstances the store's instances.
	seed          map[string][]float64
	seedInstances []string
}

func newPast(opts *Options, keys *KeyMap, clock, firstLive func() time.Time) *pastModel {
	return &pastModel{read: opts.Past, ctx: opts.Context, keys: keys, clock: clock, firstLive: firstLive,
		player: newPlayer(&record.Recording{})}
}

// Messages of the past.
type (
	// pastTickMsg reads the past again; stale generations are ignored.
	pastTickMsg struct{ gen int }
	// pastMsg carries the store's recent past, read at time at.
	pastMsg struct {
		past *Past
		err  error
		at   time.Time
	}
)

// Init reads the past.
func (p *pastModel) Init() tea.Cmd { return p.load() }

// load reads the store's recent past, off the update loop; nil when a read
// is under way.
func (p *pastModel) load() tea.Cmd {
	if p.loading {
		return nil
	}
	p.loading = true
	read, ctx, clock := p.read, p.ctx, p.clock
	return func() tea.Msg {
		past, err := read(ctx)
		return pastMsg{past: past, err: err, at: clock()}
	}
}

// stale says whether the past held is older than a step, so that left
// reads it again to follow the live view.
func (p *pastModel) stale(now time.Time) bool {
	if p.held == nil {
		return true
	}
	step := 5 * time.Second
	if iv := p.held.Recording.Header.Interval; iv > step {
		step = iv
	}
	return now.Sub(p.loaded) > step
}

// enter shows the past's last frame.
func (p *pastModel) enter() {
	p.shown = true
	p.show(p.len() - 1)
}

// atEnd says whether the frame shown is the past's last.
func (p *pastModel) atEnd() bool { return p.frame+1 >= p.len() }

// Update takes the reads of the store and, while the past is shown, the
// keys that step through it.
func (p *pastModel) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case pastTickMsg:
		if msg.gen != p.gen {
			return nil
		}
		return p.load()
	case pastMsg:
		return p.onRead(msg)
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, p.keys.Earlier):
			p.show(p.frame - 1)
		case key.Matches(msg, p.keys.Later):
			p.show(p.frame + 1)
		}
	}
	return nil
}

// onRead takes a read of the store: it seeds the sparklines, and keeps the
// moment shown when the past is being looked at. It schedules the next
// read.
func (p *pastModel) onRead(msg pastMsg) tea.Cmd {
	p.loading, p.want = false, false
	p.gen++
	gen := p.gen
	next := func(d time.Duration) tea.Cmd {
		return tea.Tick(d, func(time.Time) tea.Msg { return pastTickMsg{gen: gen} })
	}
	if msg.err == nil && (msg.past == nil || msg.past.Recording == nil || len(msg.past.Recording.Frames) == 0) {
		msg.err = errors.New("the store holds no frames of the recent past")
	}
	if msg.err != nil {
		p.err = msg.err
		if p.held == nil {
			return next(pastRetry)
		}
		return next(pastRefresh)
	}
	var at time.Time
	if p.shown {
		at = p.rec.Frames[p.frame].At
	}
	p.held, p.loaded, p.err = msg.past, msg.at, nil
	p.player = newPlayer(msg.past.Recording)
	p.seedFromPast()
	if p.shown {
		i := 0
		for j, f := range p.rec.Frames {
			if !f.At.After(at) {
				i = j
			}
		}
		p.show(i)
	}
	return next(pastRefresh)
}

// seedFromPast computes the rejection sparkline of each store instance and
// level from the past's frames before the first live refresh.
func (p *pastModel) seedFromPast() {
	p.seed, p.seedInstances = map[string][]float64{}, nil
	firstLive := p.firstLive()
	seen := map[string]bool{}
	var prev map[string]*dump.Snapshot
	for j, f := range p.rec.Frames {
		if !firstLive.IsZero() && !f.At.Before(firstLive) {
			break
		}
		c, err := p.capture(j)
		if err != nil {
			prev = nil
			continue
		}
		cur := map[string]*dump.Snapshot{}
		for _, s := range c.Snapshots {
			addPoints(p.seed, s.Instance, ComputeInstance(prev[s.Instance], s).Levels)
			cur[s.Instance] = s
			if !seen[s.Instance] {
				seen[s.Instance] = true
				p.seedInstances = append(p.seedInstances, s.Instance)
			}
		}
		prev = cur
	}
}

// seedFor is the store's rejection sparkline of a live instance's level
// before the first live refresh.
func (p *pastModel) seedFor(instance, level string) []float64 {
	if len(p.seed) == 0 {
		return nil
	}
	return seedFor(p.seed, p.seedInstances, instance, level)
}

func (p *pastModel) data() *frameData { return &p.cur }

func (p *pastModel) sparkData(instance, level string) []float64 {
	return p.cur.history[histKey(instance, level)]
}

// View is the past's status in the header: the store's step, the time of
// the frame and how to get back to live.
func (p *pastModel) View(now time.Time, st Styles, _ *InstanceView) []string {
	parts := []string{"step " + p.rec.Header.Interval.String()}
	if p.cur.last != nil {
		parts = append(parts, "at "+p.cur.last.At.UTC().Format("15:04:05")+" ("+roundDur(max(now.Sub(p.cur.last.At), 0))+" ago)")
	}
	state := fmt.Sprintf("HISTORY %d/%d from the store · → back to live", p.frame+1, p.len())
	return statusLines(st, parts, p.cur.last, state, "", false, true)
}

// notes are the header's lines about the store, live or in the past: its
// last incident, and why it could not be read.
func (p *pastModel) notes(st Styles) []string {
	var lines []string
	if p.held != nil && p.held.Incident != "" {
		lines = append(lines, "last incident in the store: "+clean(p.held.Incident))
	}
	var young interface{ Young() bool }
	switch {
	case p.err == nil:
	case errors.As(p.err, &young) && young.Young():
		// A store that just started: its history is to come, not a fault.
		lines = append(lines, st.paint(st.Dim, "history from the store: "+clean(textfmt.FirstLine(p.err.Error()))))
	default:
		lines = append(lines, st.paint(st.Warn, "! history from the store: "+clean(textfmt.FirstLine(p.err.Error()))))
	}
	return lines
}
