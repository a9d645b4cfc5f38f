package tui

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/tui/record"
)

// liveModel is the live mode: it reads the source every interval, off the
// update loop, and survives failures by retrying with backoff.
type liveModel struct {
	opts  *Options
	keys  *KeyMap
	clock func() time.Time

	pace
	fetching bool

	cur       frameData
	failures  int
	retryAt   time.Time
	recordErr error
	// prevSnaps holds the newest scrape of each instance, for rates.
	prevSnaps map[string]*dump.Snapshot
	// firstLive is when the first refresh succeeded.
	firstLive time.Time
	// seed, with a store, is the store's rejection sparkline of a level
	// before the first live refresh.
	seed func(instance, level string) []float64
}

func newLive(opts *Options, keys *KeyMap, clock func() time.Time) *liveModel {
	return &liveModel{opts: opts, keys: keys, clock: clock, pace: pace{interval: opts.Interval},
		prevSnaps: map[string]*dump.Snapshot{}, cur: frameData{history: map[string][]float64{}}}
}

// Messages of the live mode.
type (
	// refreshMsg carries a finished capture.
	refreshMsg struct {
		Refresh
		recordErr error
	}
	// tickMsg asks for the next refresh; stale generations are ignored.
	tickMsg struct{ gen int }
)

// Init starts the first refresh.
func (l *liveModel) Init() tea.Cmd {
	l.fetching = true
	return l.fetch()
}

// fetch captures once; all I/O (the capture, the recording) happens here,
// off the update loop.
func (l *liveModel) fetch() tea.Cmd {
	src, rec, parts, clock, count := l.opts.Source, l.opts.Recorder, l.opts.Parts, l.clock, l.opts.Requests
	ctx := l.opts.Context
	timeout := 10*time.Second + 2*l.interval
	return func() tea.Msg {
		var before int64
		if count != nil {
			before = count()
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		c, err := src.Capture(cctx, dump.CaptureOptions{Parts: parts})
		cancel()
		r := Refresh{At: clock(), Capture: c, Err: err, Requests: -1}
		if count != nil {
			r.Requests = count() - before
		}
		msg := refreshMsg{Refresh: r}
		if rec != nil {
			f, ferr := record.NewFrame(r.At, r.Requests, c, err)
			if ferr == nil {
				ferr = rec.Write(f)
			}
			msg.recordErr = ferr
		}
		return msg
	}
}

func (l *liveModel) scheduleTick(d time.Duration) tea.Cmd {
	gen := l.gen
	return tea.Tick(d, func(time.Time) tea.Msg { return tickMsg{gen: gen} })
}

// backoff is the delay before reconnection attempt n (1, 2, 4 ... times
// the interval, capped), so a restarting apiserver is not hammered.
func (l *liveModel) backoff() time.Duration {
	d := l.interval
	for i := 1; i < l.failures && d < l.opts.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, l.opts.MaxBackoff)
}

// Update handles the refreshes and the keys that drive them (p, r, +, -).
func (l *liveModel) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case refreshMsg:
		return l.onRefresh(msg)
	case tickMsg:
		if msg.gen != l.gen || l.paused || l.fetching {
			return nil
		}
		l.fetching = true
		return l.fetch()
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, l.keys.Pause):
			if !l.togglePause() {
				return nil
			}
			return l.refreshNow()
		case key.Matches(msg, l.keys.Refresh):
			if l.fetching {
				return nil
			}
			l.gen++
			return l.refreshNow()
		case key.Matches(msg, l.keys.Slower):
			return l.setInterval(+1)
		case key.Matches(msg, l.keys.Faster):
			return l.setInterval(-1)
		}
	}
	return nil
}

// refreshNow starts a refresh unless one is under way.
func (l *liveModel) refreshNow() tea.Cmd {
	if l.fetching {
		return nil
	}
	l.fetching = true
	return l.fetch()
}

func (l *liveModel) setInterval(dir int) tea.Cmd {
	if !l.changeInterval(dir) || l.paused || l.fetching {
		return nil
	}
	return l.scheduleTick(l.interval)
}

// pace is what p, + and - change, live or in a replay: the interval, the
// pause, and the generation of the scheduled tick or frame (one of an
// older generation, scheduled before a pause, a manual refresh, a step or
// a new interval, is ignored).
type pace struct {
	interval time.Duration
	paused   bool
	gen      int
}

// togglePause pauses or resumes; it says whether it resumed.
func (p *pace) togglePause() bool {
	p.paused = !p.paused
	p.gen++
	return !p.paused
}

// changeInterval moves the interval dir steps through Intervals; false,
// and no change, at either end.
func (p *pace) changeInterval(dir int) bool {
	i := sort.Search(len(Intervals), func(i int) bool { return Intervals[i] >= p.interval }) + dir
	if i < 0 || i >= len(Intervals) {
		return false
	}
	p.interval = Intervals[i]
	p.gen++
	return true
}

func (l *liveModel) onRefresh(msg refreshMsg) tea.Cmd {
	l.fetching = false
	l.recordErr = msg.recordErr
	if msg.Err != nil {
		l.cur.err = msg.Err
		l.failures++
		d := l.backoff()
		l.retryAt = msg.At.Add(d)
		return l.scheduleTick(d)
	}
	l.cur.err, l.failures = nil, 0
	r := &msg.Refresh
	views := computeViews(r.Capture, l.prevSnaps)
	if l.firstLive.IsZero() {
		l.firstLive = r.At
	}
	for _, iv := range views {
		addPoints(l.cur.history, iv.Instance, iv.Levels)
	}
	l.cur.last, l.cur.views, l.cur.failed = r, views, r.Capture.Failures
	if l.paused {
		return nil
	}
	return l.scheduleTick(l.interval)
}

func (l *liveModel) data() *frameData { return &l.cur }

// sparkData is the rejection sparkline of a level: the store's past (when
// there is a store) before the live refreshes.
func (l *liveModel) sparkData(instance, level string) []float64 {
	h := l.cur.history[histKey(instance, level)]
	if l.seed == nil {
		return h
	}
	s := l.seed(instance, level)
	if len(s) == 0 {
		return h
	}
	out := append(append(make([]float64, 0, len(s)+len(h)), s...), h...)
	if len(out) > historyLen {
		out = out[len(out)-historyLen:]
	}
	return out
}

// seedFor looks the seed of a live instance up in a store's sparklines:
// the store names an instance by host:port (or merges them all), the live
// view by URL.
func seedFor(seed map[string][]float64, instances []string, instance, level string) []float64 {
	if s, ok := seed[histKey(instance, level)]; ok {
		return s
	}
	host := instance
	if u, err := url.Parse(instance); err == nil && u.Host != "" {
		host = u.Host
	}
	if s, ok := seed[histKey(host, level)]; ok {
		return s
	}
	if len(instances) == 1 {
		return seed[histKey(instances[0], level)]
	}
	return nil
}

// View is the live mode's status in the header: the interval, the age of
// the data and the state of the connection, with a line of detail when
// something is wrong; iv is the instance shown.
func (l *liveModel) View(now time.Time, st Styles, iv *InstanceView) []string {
	var parts []string
	// a bundle is read once: no interval, and its age is its capture's
	if !l.isBundle() {
		parts = append(parts, "every "+l.interval.String())
		if l.cur.last != nil {
			parts = append(parts, "updated "+roundDur(now.Sub(l.cur.last.At))+" ago")
		}
	}
	state, detail, bad := l.state(now, iv)
	return statusLines(st, parts, l.cur.last, state, detail, bad, false)
}

// state is the header's state word and, when something is wrong, a line
// of detail (retry first, so a narrow terminal cuts the error text, not
// what the view is doing about it).
func (l *liveModel) state(now time.Time, iv *InstanceView) (state, detail string, bad bool) {
	switch {
	case l.cur.err != nil:
		var d []string
		if l.fetching {
			d = append(d, fmt.Sprintf("reconnecting (attempt %d)", l.failures+1))
		} else if !l.paused {
			d = append(d, fmt.Sprintf("retry %d in %s", l.failures+1, roundDur(max(l.retryAt.Sub(now), 0))))
		}
		if l.cur.last != nil {
			d = append(d, "showing data from "+roundDur(now.Sub(l.cur.last.At))+" ago")
		}
		d = append(d, clean(textfmt.FirstLine(l.cur.err.Error())))
		return "DISCONNECTED", strings.Join(d, " · "), true
	case l.cur.last == nil:
		return "connecting…", "", false
	case l.paused:
		return "PAUSED", "", false
	case l.isBundle():
		// A bundle does not change: say when it was captured instead.
		if iv != nil && iv.Snapshot != nil {
			return "bundle captured " + iv.Snapshot.CapturedAt.UTC().Format("2006-01-02 15:04:05Z"), "", false
		}
		return "bundle", "", false
	case now.Sub(l.cur.last.At) > 3*l.interval+5*time.Second:
		return "STALE", "no refresh for " + roundDur(now.Sub(l.cur.last.At)), true
	}
	return "live", "", false
}

func (l *liveModel) isBundle() bool {
	_, ok := l.opts.Source.(*dump.BundleSource)
	return ok
}

// notes are the live mode's warnings, shown in the past's header too
// (the live view goes on behind it).
func (l *liveModel) notes(st Styles) []string {
	if l.recordErr == nil {
		return nil
	}
	return []string{st.paint(st.Warn, "! recording: "+clean(l.recordErr.Error()))}
}

// statusLines is a mode's header line (parts, the load of the refresh
// shown, the state) and its line of detail.
func statusLines(st Styles, parts []string, last *Refresh, state, detail string, bad, past bool) []string {
	if last != nil && last.Requests >= 0 {
		parts = append(parts, fmt.Sprintf("load %d req/refresh", last.Requests))
	}
	switch {
	case bad:
		state = st.paint(st.Error, "! "+state)
	case past:
		state = st.paint(st.Warn, "◀ "+state)
	default:
		state = "● " + state
	}
	lines := []string{strings.Join(append(parts, state), " · ")}
	if detail != "" {
		lines = append(lines, st.paint(st.Error, "! "+detail))
	}
	return lines
}
