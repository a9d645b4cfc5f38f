package tui

import (
	"context"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
	"github.com/kubectl-apf/kubectl-apf/pkg/tui/record"
)

// Intervals are the refresh intervals "+" and "-" step through. The dumps
// take the apiserver's flow-control locks (apf_controller_debug.go), so the
// view never polls faster than twice a second.
var Intervals = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second,
	10 * time.Second, 30 * time.Second, time.Minute}

// DefaultInterval is the refresh interval at start.
const DefaultInterval = 2 * time.Second

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

// withDefaults fills in the zero fields.
func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
		if o.Replay != nil && o.Replay.Header.Interval > 0 {
			o.Interval = o.Replay.Header.Interval
		}
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
	if o.Parts == 0 {
		o.Parts = dump.PartPriorityLevels | dump.PartQueues | dump.PartRequests | dump.PartMetrics | dump.PartVersion
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	return o
}

// A mode is one of the view's three models: live (liveModel), a recording
// played back (replayModel) or the store's past behind the live view
// (pastModel). Each has its own Update (its refreshes, timers and keys)
// and View (its status in the header); the shell's components draw the
// data it shows.
type mode interface {
	Update(msg tea.Msg) tea.Cmd
	// View returns the header's status line and, when something is wrong,
	// a line of detail; iv is the instance shown (nil when none).
	View(now time.Time, st Styles, iv *InstanceView) []string
	// data is the refresh or frame shown.
	data() *frameData
	// sparkData is the rejection sparkline of a level of an instance.
	sparkData(instance, level string) []float64
}

// Model is the bubbletea model of "kubectl apf top": a shell over the mode
// shown (live or a replay; the store's past, stepped to from live) and
// the components that draw it (the level table with its queue map, the
// drill-down, the help and the line input). It holds what they share:
// the size, styles and keymap, the instance selected and the status line.
type Model struct {
	opts   Options
	keys   KeyMap
	styles Styles
	clock  func() time.Time

	width, height int

	live   *liveModel   // nil when replaying
	replay *replayModel // nil when live
	past   *pastModel   // nil without a store

	instance string // selected apiserver
	status   string

	table levelTable
	drill drillDown
	help  helpView
	input lineInput
}

// New returns the view's model.
func New(opts Options) *Model {
	m := &Model{opts: opts.withDefaults(), width: 80, height: 24}
	m.clock = m.opts.Clock
	m.styles = PlainStyles()
	if opts.Styles != nil {
		m.styles = *opts.Styles
	}
	m.keys = DefaultKeyMap(m.opts.Replay != nil)
	if m.opts.Replay == nil && m.opts.Past != nil {
		m.keys = m.keys.withHistory()
	}
	if _, ok := m.opts.Source.(*dump.BundleSource); ok && m.opts.Replay == nil {
		m.keys = m.keys.withBundle()
	}
	m.help = newHelpView(&m.keys, &m.styles)
	if m.opts.Replay != nil {
		m.replay = newReplay(m.opts.Replay, &m.keys, m.opts.Interval)
		return m
	}
	m.live = newLive(&m.opts, &m.keys, m.clock)
	if m.opts.Past != nil {
		m.past = newPast(&m.opts, &m.keys, m.clock, func() time.Time { return m.live.firstLive })
		m.live.seed = m.past.seedFor
	}
	return m
}

// clockMsg re-renders the header's ages once a second.
type clockMsg struct{}

func clockTick() tea.Cmd {
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return clockMsg{} })
}

// Init starts the first refresh and the first read of the store's past
// (or shows the first replayed frame).
func (m *Model) Init() tea.Cmd {
	if m.replay != nil {
		return tea.Batch(m.replay.Init(), clockTick())
	}
	cmds := []tea.Cmd{m.live.Init(), clockTick()}
	if m.past != nil {
		cmds = append(cmds, m.past.Init())
	}
	return tea.Batch(cmds...)
}

// active is the mode shown.
func (m *Model) active() mode {
	switch {
	case m.replay != nil:
		return m.replay
	case m.inPast():
		return m.past
	}
	return m.live
}

// inPast says whether the store's past is shown instead of live.
func (m *Model) inPast() bool { return m.past != nil && m.past.shown }

// pacer is the mode whose pace p, +, - and r set: the replay, or live
// (also while the past is shown: the live view goes on behind it).
func (m *Model) pacer() mode {
	if m.replay != nil {
		return m.replay
	}
	return m.live
}

// view returns the selected instance's view.
func (m *Model) view() *InstanceView { return m.active().data().view(m.instance) }

// Update hands each message to the mode it is for, and the keys the modes
// share to the shell.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.setWidth(msg.Width)
	case clockMsg:
		cmd = clockTick()
	case refreshMsg, tickMsg:
		if m.live != nil {
			cmd = m.live.Update(msg)
		}
	case frameMsg:
		if m.replay != nil {
			cmd = m.replay.Update(msg)
		}
	case pastMsg, pastTickMsg:
		if m.past != nil {
			cmd = m.onPast(msg)
		}
	case tea.KeyPressMsg:
		cmd = m.onKey(msg)
	}
	m.keepInstance()
	m.relayout()
	return m, cmd
}

// keepInstance selects the first instance shown when the one selected is
// not (at the first refresh, and when the past names instances otherwise).
func (m *Model) keepInstance() {
	d := m.active().data()
	if (m.instance == "" || d.view(m.instance) == nil) && len(d.views) > 0 {
		m.instance = d.views[0].Instance
	}
}

// onPast hands a read of the store to the past; when left was waiting for
// it, shows it (a failed read shows the past read before, better than
// none).
func (m *Model) onPast(msg tea.Msg) tea.Cmd {
	waited := m.past.want
	cmd := m.past.Update(msg)
	if waited && !m.past.want {
		m.status = ""
		if m.past.held != nil && !m.past.shown {
			m.past.enter()
		}
	}
	return cmd
}

// onKey hands a key to the component open (the line input, the help),
// else to the shell's keys, the drill-down, the table and last the mode
// that sets the pace.
func (m *Model) onKey(msg tea.KeyPressMsg) tea.Cmd {
	if key.Matches(msg, m.keys.ForceQuit) {
		return tea.Quit
	}
	if m.input.active() {
		m.onInput(msg)
		return nil
	}
	if m.help.shown {
		if key.Matches(msg, m.keys.Quit) {
			return tea.Quit
		}
		m.help.Update(msg)
		return nil
	}
	m.status = ""
	k := &m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Help):
		m.help.shown = true
	case key.Matches(msg, k.Back) && !m.drill.open && m.table.filter != "":
		// esc on the table (no drill-down open) clears its filter, as
		// in k9s
		m.status = m.table.setFilter("")
	case m.drill.Update(msg, k, m.table.cursor):
	case m.table.Update(msg, k, m.view()):
	case key.Matches(msg, k.Filter):
		m.input.open(inputFilter, m.table.filter)
	case key.Matches(msg, k.Jump):
		m.input.open(inputJump, "")
	case key.Matches(msg, k.Instance):
		m.nextInstance()
	case key.Matches(msg, k.Earlier, k.Later) && m.past != nil:
		return m.stepPast(msg)
	default:
		return m.pacer().Update(msg)
	}
	return nil
}

// onInput hands a key to the line input and what it typed to the table.
func (m *Model) onInput(msg tea.KeyPressMsg) {
	switch mode, text, done := m.input.Update(msg); {
	case !done:
	case mode == inputFilter:
		m.status = m.table.setFilter(text)
	default:
		m.status = m.table.jump(m.view(), text)
	}
}

// stepPast switches between live and the store's past: left from live
// shows the past's last frame (once read again, when the past held is
// older than a step, so that it follows the live view), right from its
// last frame returns to live, and in between the past steps.
func (m *Model) stepPast(msg tea.KeyPressMsg) tea.Cmd {
	p := m.past
	later := key.Matches(msg, m.keys.Later)
	switch {
	case p.shown && later && p.atEnd():
		p.shown = false
		return nil
	case p.shown:
		return p.Update(msg)
	case later:
		return nil
	case p.stale(m.clock()):
		p.want = true
		m.status = "reading the recent past from the store…"
		return p.load()
	}
	p.enter()
	return nil
}

// sparkData is the rejection sparkline of a level of the selected
// instance.
func (m *Model) sparkData(level string) []float64 { return m.active().sparkData(m.instance, level) }

// rows are the table's rows of the instance shown.
func (m *Model) rows() []levels.Row { return m.table.rows(m.view()) }

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
