package tui

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
	"github.com/kubectl-apf/kubectl-apf/pkg/tui/record"
)

// Intervals are the refresh intervals "+" and "-" step through. The dumps
// take the apiserver's flow-control locks (apf_controller_debug.go), so the
// view never polls faster than twice a second.
var Intervals = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second,
	10 * time.Second, 30 * time.Second, time.Minute}

// DefaultInterval is the refresh interval at start.
const DefaultInterval = 2 * time.Second

// historyLen is how many refreshes the rejection sparkline remembers (four
// minutes at the default interval).
const historyLen = 120

// FrameWriter records refreshes (record.Writer).
type FrameWriter interface {
	Write(f *record.Frame) error
}

// Options configures the view.
type Options struct {
	// Source is read at every refresh (a cluster or a bundle). Nil with
	// Replay set.
	Source dump.Source
	// Replay plays a recording back instead of reading Source.
	Replay *record.Recording
	// Recorder, when set, receives every refresh.
	Recorder FrameWriter
	// Context bounds every capture; cancelled when the program ends.
	Context context.Context
	// Clock is the view's clock (time.Now when nil).
	Clock func() time.Time
	// Interval is the refresh interval at start (DefaultInterval when zero).
	Interval time.Duration
	// Parts says what each refresh reads (everything the view shows when
	// zero: levels, queues, requests with details, metrics, version).
	Parts dump.Parts
	// Requests returns how many requests the source has sent so far, to show
	// the view's own load on the apiserver; nil when not counted.
	Requests func() int64
	// Cluster names the cluster in the header (the kubeconfig context).
	Cluster string
	// Styles colours the view (PlainStyles when zero).
	Styles *Styles
	// MaxBackoff caps the delay between reconnection attempts (30 s when
	// zero).
	MaxBackoff time.Duration
	// Past, with Source, reads the recent past from a store: at start, so
	// that the sparklines hold history from the first frame, every minute
	// after (every 10 s until a read succeeds), and when left steps back
	// from the live view and the past it holds is older than a step. Left
	// and right step through its frames (the level table as the store saw
	// it); right from the last returns to live.
	Past func(ctx context.Context) (*Past, error)
}

// Past is a store's recent past for the live view.
type Past struct {
	// Recording holds the frames, one per step (Header.Interval), oldest
	// first.
	Recording *record.Recording
	// Incident is one line about the last burst of rejections in it, ""
	// when there was none.
	Incident string
}

// sortKeys are the orders "s" cycles through.
var sortKeys = []string{"name", "seats", "waiting", "rejected", "dispatched", "p99"}

type inputMode int

const (
	inputNone inputMode = iota
	inputFilter
	inputJump
)

// Model is the bubbletea model of "kubectl apf top".
type Model struct {
	opts   Options
	keys   KeyMap
	help   help.Model
	styles Styles
	clock  func() time.Time

	width, height int

	interval time.Duration
	paused   bool
	gen      int
	fetching bool

	// The latest refresh that succeeded, and the state of the connection.
	last        *Refresh
	lastAttempt time.Time
	lastErr     error
	failures    int
	retryAt     time.Time
	recordErr   error

	prevSnaps map[string]*dump.Snapshot
	views     []InstanceView
	failed    []dump.InstanceError
	instance  string

	history map[string][]float64

	cursor   string // selected level
	offset   int    // first visible row
	sortIdx  int
	filter   string
	filterRe *regexp.Regexp
	invert   bool
	input    inputMode
	inputBuf string
	status   string

	drill    bool
	showHelp bool

	// Replay state (also of the past's frames).
	frame    int
	captures map[int]*dump.Capture
	errs     map[int]error

	// The live state, kept while the past is shown, and the past.
	liveLast    *Refresh
	liveViews   []InstanceView
	liveFailed  []dump.InstanceError
	liveHistory map[string][]float64
	firstLive   time.Time
	past        *Past
	pastLoaded  time.Time
	pastErr     error
	loadingPast bool
	pastGen     int
	wantPast    bool
	inPast      bool
	// seed is the rejection sparkline of each store instance and level
	// before the first live refresh; seedInstances the store's instances.
	seed          map[string][]float64
	seedInstances []string
}

// New returns the view's model.
func New(opts Options) *Model {
	m := &Model{opts: opts, clock: opts.Clock, interval: opts.Interval, prevSnaps: map[string]*dump.Snapshot{},
		history: map[string][]float64{}, width: 80, height: 24}
	m.liveHistory = m.history
	if m.clock == nil {
		m.clock = time.Now
	}
	if m.interval <= 0 {
		m.interval = DefaultInterval
		if opts.Replay != nil && opts.Replay.Header.Interval > 0 {
			m.interval = opts.Replay.Header.Interval
		}
	}
	if m.opts.Context == nil {
		m.opts.Context = context.Background()
	}
	if m.opts.Parts == 0 {
		m.opts.Parts = dump.PartPriorityLevels | dump.PartQueues | dump.PartRequests | dump.PartMetrics | dump.PartVersion
	}
	if m.opts.MaxBackoff <= 0 {
		m.opts.MaxBackoff = 30 * time.Second
	}
	m.styles = PlainStyles()
	if opts.Styles != nil {
		m.styles = *opts.Styles
	}
	m.keys = DefaultKeyMap(opts.Replay != nil)
	if opts.Replay == nil && opts.Past != nil {
		m.keys = m.keys.withHistory()
	}
	m.help = help.New()
	m.help.Styles = m.styles.Help
	m.help.ShortSeparator = " · "
	if opts.Replay != nil {
		m.captures, m.errs = map[int]*dump.Capture{}, map[int]error{}
	}
	return m
}

// Messages.
type (
	// refreshMsg carries a finished capture.
	refreshMsg struct {
		Refresh
		recordErr error
	}
	// tickMsg asks for the next refresh; stale generations are ignored.
	tickMsg struct{ gen int }
	// clockMsg re-renders the header's ages once a second.
	clockMsg struct{}
	// frameMsg shows replay frame i.
	frameMsg struct{ gen, i int }
	// pastTickMsg reads the past again; stale generations are ignored.
	pastTickMsg struct{ gen int }
	// pastMsg carries the store's recent past, read at time at.
	pastMsg struct {
		past *Past
		err  error
		at   time.Time
	}
)

// Init starts the first refresh (or shows the first replayed frame).
func (m *Model) Init() tea.Cmd {
	if m.opts.Replay != nil {
		return tea.Batch(func() tea.Msg { return frameMsg{gen: m.gen, i: 0} }, clockTick())
	}
	m.fetching = true
	return tea.Batch(m.fetch(), clockTick(), m.loadPast())
}

// loadPast reads the store's recent past, off the update loop; nil when
// there is no store or a read is under way.
func (m *Model) loadPast() tea.Cmd {
	if m.opts.Past == nil || m.loadingPast {
		return nil
	}
	m.loadingPast = true
	past, ctx, clock := m.opts.Past, m.opts.Context, m.clock
	return func() tea.Msg {
		p, err := past(ctx)
		return pastMsg{past: p, err: err, at: clock()}
	}
}

func clockTick() tea.Cmd {
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return clockMsg{} })
}

// fetch captures once; all I/O (the capture, the recording) happens here,
// off the update loop.
func (m *Model) fetch() tea.Cmd {
	src, rec, parts, clock, count := m.opts.Source, m.opts.Recorder, m.opts.Parts, m.clock, m.opts.Requests
	ctx := m.opts.Context
	timeout := 10*time.Second + 2*m.interval
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

func (m *Model) scheduleTick(d time.Duration) tea.Cmd {
	gen := m.gen
	return tea.Tick(d, func(time.Time) tea.Msg { return tickMsg{gen: gen} })
}

// backoff is the delay before reconnection attempt n (1, 2, 4 ... times
// the interval, capped), so a restarting apiserver is not hammered.
func (m *Model) backoff() time.Duration {
	d := m.interval
	for i := 1; i < m.failures && d < m.opts.MaxBackoff; i++ {
		d *= 2
	}
	if d > m.opts.MaxBackoff {
		d = m.opts.MaxBackoff
	}
	return d
}

// Update handles a message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
		return m, nil
	case clockMsg:
		return m, clockTick()
	case refreshMsg:
		return m, m.onRefresh(msg)
	case pastMsg:
		return m, m.onPast(msg)
	case pastTickMsg:
		if msg.gen != m.pastGen {
			return m, nil
		}
		return m, m.loadPast()
	case tickMsg:
		if msg.gen != m.gen || m.paused || m.fetching || m.opts.Replay != nil {
			return m, nil
		}
		m.fetching = true
		return m, m.fetch()
	case frameMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		m.showFrame(msg.i)
		if m.paused || msg.i+1 >= len(m.opts.Replay.Frames) {
			return m, nil
		}
		gen, next := m.gen, msg.i+1
		return m, tea.Tick(m.interval, func(time.Time) tea.Msg { return frameMsg{gen: gen, i: next} })
	case tea.KeyPressMsg:
		return m, m.onKey(msg)
	}
	return m, nil
}

func (m *Model) onRefresh(msg refreshMsg) tea.Cmd {
	m.fetching = false
	m.lastAttempt = msg.At
	m.recordErr = msg.recordErr
	if msg.Err != nil {
		m.lastErr = msg.Err
		m.failures++
		d := m.backoff()
		m.retryAt = msg.At.Add(d)
		return m.scheduleTick(d)
	}
	m.lastErr, m.failures = nil, 0
	m.apply(&msg.Refresh, m.prevSnaps, true)
	if m.paused {
		return nil
	}
	return m.scheduleTick(m.interval)
}

// apply computes the views of a refresh; prev holds the previous snapshot
// of each instance for rates, and is updated. A live refresh (not a frame
// of a recording or of the past) adds to the live sparklines, and is kept
// without being shown while the past is.
func (m *Model) apply(r *Refresh, prev map[string]*dump.Snapshot, live bool) {
	views := make([]InstanceView, 0, len(r.Capture.Snapshots))
	for _, s := range r.Capture.Snapshots {
		iv := ComputeInstance(prev[s.Instance], s)
		views = append(views, iv)
		if prev != nil {
			// Rates need only the newest scrape: keep that, not the whole
			// snapshot and its bodies (ComputeInstance reads nothing else).
			if _, last := s.LatestMetrics(); last != nil {
				prev[s.Instance] = &dump.Snapshot{Instance: s.Instance, Metrics: []*metrics.Scrape{last}}
			}
		}
	}
	if live {
		if m.firstLive.IsZero() {
			m.firstLive = r.At
		}
		for _, iv := range views {
			for _, l := range iv.Levels {
				k := iv.Instance + "\x00" + l.Name
				h := append(m.liveHistory[k], l.RejectedTotal)
				if len(h) > historyLen {
					h = append(h[:0], h[len(h)-historyLen:]...)
				}
				m.liveHistory[k] = h
			}
		}
		m.liveLast, m.liveViews, m.liveFailed = r, views, r.Capture.Failures
		if m.inPast {
			return
		}
	}
	m.last, m.views, m.failed = r, views, r.Capture.Failures
	if m.instance == "" || m.view() == nil {
		if len(m.views) > 0 {
			m.instance = m.views[0].Instance
		}
	}
}

// view returns the selected instance's view.
func (m *Model) view() *InstanceView {
	for i := range m.views {
		if m.views[i].Instance == m.instance {
			return &m.views[i]
		}
	}
	return nil
}

// replayCapture parses frame i once.
func (m *Model) replayCapture(i int) (*dump.Capture, error) {
	if c, ok := m.captures[i]; ok {
		return c, m.errs[i]
	}
	c, err := m.rec().Frames[i].Capture()
	m.captures[i], m.errs[i] = c, err
	return c, err
}

// showFrame computes replay frame i against frame i-1 and rebuilds the
// sparklines from the frames before it.
func (m *Model) showFrame(i int) {
	frames := m.rec().Frames
	if len(frames) == 0 {
		return
	}
	if i < 0 {
		i = 0
	}
	if i >= len(frames) {
		i = len(frames) - 1
	}
	m.frame = i
	m.history = map[string][]float64{}
	for j := max(0, i-historyLen+1); j <= i; j++ {
		prev := map[string]*dump.Snapshot{}
		if j > 0 {
			if pc, err := m.replayCapture(j - 1); err == nil {
				for _, s := range pc.Snapshots {
					prev[s.Instance] = s
				}
			}
		}
		c, err := m.replayCapture(j)
		f := frames[j]
		// A recording's failed refreshes show; the store's frames have
		// none, and the live connection state stays the live view's.
		replay := m.opts.Replay != nil
		if err != nil {
			if j == i && replay {
				m.lastErr, m.lastAttempt = err, f.At
			}
			continue
		}
		if j == i {
			if replay {
				m.lastErr = nil
				m.lastAttempt = f.At
			}
			m.apply(&Refresh{At: f.At, Capture: c, Requests: f.Requests}, prev, false)
			for _, iv := range m.views {
				for _, l := range iv.Levels {
					k := iv.Instance + "\x00" + l.Name
					m.history[k] = append(m.history[k], l.RejectedTotal)
				}
			}
			continue
		}
		for _, s := range c.Snapshots {
			iv := ComputeInstance(prev[s.Instance], s)
			for _, l := range iv.Levels {
				k := s.Instance + "\x00" + l.Name
				m.history[k] = append(m.history[k], l.RejectedTotal)
			}
		}
	}
}

func (m *Model) onKey(msg tea.KeyPressMsg) tea.Cmd {
	if key.Matches(msg, m.keys.ForceQuit) {
		return tea.Quit
	}
	if m.input != inputNone {
		return m.onInputKey(msg)
	}
	if m.showHelp {
		if key.Matches(msg, m.keys.Quit) {
			return tea.Quit
		}
		m.showHelp = false
		return nil
	}
	m.status = ""
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Help):
		m.showHelp = true
	case key.Matches(msg, k.Back):
		m.drill = false
	case key.Matches(msg, k.Enter):
		if m.cursor != "" {
			m.drill = true
		}
	case key.Matches(msg, k.Up):
		m.move(-1)
	case key.Matches(msg, k.Down):
		m.move(+1)
	case key.Matches(msg, k.Sort):
		m.sortIdx = (m.sortIdx + 1) % len(sortKeys)
	case key.Matches(msg, k.Filter):
		m.input, m.inputBuf = inputFilter, m.filter
	case key.Matches(msg, k.Jump):
		m.input, m.inputBuf = inputJump, ""
	case key.Matches(msg, k.Instance):
		m.nextInstance()
	case key.Matches(msg, k.Pause):
		return m.togglePause()
	case key.Matches(msg, k.Refresh):
		if m.opts.Replay != nil || m.fetching {
			return nil
		}
		m.gen++
		m.fetching = true
		return m.fetch()
	case key.Matches(msg, k.Slower):
		return m.setInterval(+1)
	case key.Matches(msg, k.Faster):
		return m.setInterval(-1)
	case key.Matches(msg, k.Earlier) && m.opts.Replay == nil:
		return m.stepPast(-1)
	case key.Matches(msg, k.Later) && m.opts.Replay == nil:
		return m.stepPast(+1)
	case key.Matches(msg, k.Earlier):
		m.paused = true
		m.gen++
		m.showFrame(m.frame - 1)
	case key.Matches(msg, k.Later):
		m.paused = true
		m.gen++
		m.showFrame(m.frame + 1)
	}
	return nil
}

func (m *Model) togglePause() tea.Cmd {
	m.paused = !m.paused
	m.gen++
	if m.paused {
		return nil
	}
	if m.opts.Replay != nil {
		next := m.frame + 1
		if next >= len(m.opts.Replay.Frames) {
			next = 0
		}
		gen := m.gen
		return func() tea.Msg { return frameMsg{gen: gen, i: next} }
	}
	if m.fetching {
		return nil
	}
	m.fetching = true
	return m.fetch()
}

func (m *Model) setInterval(dir int) tea.Cmd {
	i := sort.Search(len(Intervals), func(i int) bool { return Intervals[i] >= m.interval })
	i += dir
	if i < 0 || i >= len(Intervals) {
		return nil
	}
	m.interval = Intervals[i]
	m.gen++
	if m.paused || m.fetching {
		return nil
	}
	if m.opts.Replay != nil {
		gen, next := m.gen, m.frame+1
		if next >= len(m.opts.Replay.Frames) {
			return nil
		}
		return tea.Tick(m.interval, func(time.Time) tea.Msg { return frameMsg{gen: gen, i: next} })
	}
	return m.scheduleTick(m.interval)
}

func (m *Model) nextInstance() {
	if len(m.views) < 2 {
		return
	}
	for i := range m.views {
		if m.views[i].Instance == m.instance {
			m.instance = m.views[(i+1)%len(m.views)].Instance
			return
		}
	}
	m.instance = m.views[0].Instance
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
	i := m.cursorIndex(rows)
	i += d
	if i < 0 {
		i = 0
	}
	if i >= len(rows) {
		i = len(rows) - 1
	}
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

// rec is the recording whose frames are shown: the replay, or the past.
func (m *Model) rec() *record.Recording {
	if m.opts.Replay != nil {
		return m.opts.Replay
	}
	if m.past != nil {
		return m.past.Recording
	}
	return &record.Recording{}
}

// pastStep is how old the past may be before left reads it again.
func (m *Model) pastStep() time.Duration {
	if m.past != nil && m.past.Recording.Header.Interval > 5*time.Second {
		return m.past.Recording.Header.Interval
	}
	return 5 * time.Second
}

// stepPast moves d frames through the store's past: left from the live
// view shows its last frame (once read again, when the past held is older
// than a step, so that it follows the live view), right from its last
// frame returns to live.
func (m *Model) stepPast(d int) tea.Cmd {
	if !m.inPast {
		if d > 0 {
			return nil
		}
		if m.past == nil || m.clock().Sub(m.pastLoaded) > m.pastStep() {
			m.wantPast = true
			m.status = "reading the recent past from the store…"
			return m.loadPast()
		}
		m.enterPast()
		return nil
	}
	if d > 0 && m.frame+1 >= len(m.past.Recording.Frames) {
		m.leavePast()
		return nil
	}
	m.showFrame(m.frame + d)
	return nil
}

// enterPast shows the past's last frame.
func (m *Model) enterPast() {
	m.inPast = true
	m.showFrame(len(m.past.Recording.Frames) - 1)
}

// leavePast shows the live view again, with what it read meanwhile.
func (m *Model) leavePast() {
	m.inPast = false
	m.history = m.liveHistory
	m.last, m.views, m.failed = m.liveLast, m.liveViews, m.liveFailed
	if m.view() == nil && len(m.views) > 0 {
		m.instance = m.views[0].Instance
	}
}

// The view reads the past again after pastRetry while no read has
// succeeded (a store that has just started scraping), then every
// pastRefresh, so that the last incident stays current.
const (
	pastRetry   = 10 * time.Second
	pastRefresh = time.Minute
)

// onPast takes the store's recent past: it seeds the sparklines, and keeps
// the moment shown when the past was being looked at. It schedules the
// next read.
func (m *Model) onPast(msg pastMsg) tea.Cmd {
	m.loadingPast = false
	m.pastGen++
	gen := m.pastGen
	next := func(d time.Duration) tea.Cmd {
		return tea.Tick(d, func(time.Time) tea.Msg { return pastTickMsg{gen: gen} })
	}
	want := m.wantPast
	m.wantPast = false
	if want {
		m.status = ""
	}
	if msg.err == nil && (msg.past == nil || msg.past.Recording == nil || len(msg.past.Recording.Frames) == 0) {
		msg.err = errors.New("the store holds no frames of the recent past")
	}
	if msg.err != nil {
		m.pastErr = msg.err
		if m.past == nil {
			return next(pastRetry)
		}
		if want && !m.inPast {
			// The past read before is better than none.
			m.enterPast()
		}
		return next(pastRefresh)
	}
	var at time.Time
	if m.inPast {
		at = m.past.Recording.Frames[m.frame].At
	}
	m.past, m.pastLoaded, m.pastErr = msg.past, msg.at, nil
	m.captures, m.errs = map[int]*dump.Capture{}, map[int]error{}
	m.seedFromPast()
	switch {
	case m.inPast:
		i := 0
		for j, f := range m.past.Recording.Frames {
			if !f.At.After(at) {
				i = j
			}
		}
		m.showFrame(i)
	case want:
		m.enterPast()
	}
	return next(pastRefresh)
}

// seedFromPast computes the rejection sparkline of each store instance and
// level from the past's frames before the first live refresh.
func (m *Model) seedFromPast() {
	m.seed, m.seedInstances = map[string][]float64{}, nil
	frames := m.past.Recording.Frames
	seen := map[string]bool{}
	var prev map[string]*dump.Snapshot
	for j := range frames {
		if !m.firstLive.IsZero() && !frames[j].At.Before(m.firstLive) {
			break
		}
		c, err := m.replayCapture(j)
		if err != nil {
			prev = nil
			continue
		}
		cur := map[string]*dump.Snapshot{}
		for _, s := range c.Snapshots {
			iv := ComputeInstance(prev[s.Instance], s)
			for _, l := range iv.Levels {
				k := s.Instance + "\x00" + l.Name
				m.seed[k] = append(m.seed[k], l.RejectedTotal)
			}
			cur[s.Instance] = s
			if !seen[s.Instance] {
				seen[s.Instance] = true
				m.seedInstances = append(m.seedInstances, s.Instance)
			}
		}
		prev = cur
	}
	for k, h := range m.seed {
		if len(h) > historyLen {
			m.seed[k] = h[len(h)-historyLen:]
		}
	}
}

// sparkData is the rejection sparkline of a level of the selected
// instance: in the live view, the store's past before the live refreshes.
func (m *Model) sparkData(level string) []float64 {
	h := m.history[m.instance+"\x00"+level]
	if m.inPast || m.opts.Replay != nil || len(m.seed) == 0 {
		return h
	}
	s, ok := m.seed[m.instance+"\x00"+level]
	if !ok {
		// The store names an instance by host:port (or merges them all);
		// the live view by URL.
		host := m.instance
		if u, err := url.Parse(m.instance); err == nil && u.Host != "" {
			host = u.Host
		}
		if s, ok = m.seed[host+"\x00"+level]; !ok && len(m.seedInstances) == 1 {
			s = m.seed[m.seedInstances[0]+"\x00"+level]
		}
	}
	if len(s) == 0 {
		return h
	}
	out := append(append(make([]float64, 0, len(s)+len(h)), s...), h...)
	if len(out) > historyLen {
		out = out[len(out)-historyLen:]
	}
	return out
}
