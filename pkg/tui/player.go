package tui

import (
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
	"github.com/kubectl-apf/kubectl-apf/pkg/tui/record"
)

// historyLen is how many refreshes the rejection sparkline remembers (four
// minutes at the default interval).
const historyLen = 120

// frameData is what a mode puts on screen: the instances of one refresh (live)
// or one frame (a replay, the store's past), and the sparklines up to it.
type frameData struct {
	// last is the refresh or frame shown; nil before the first.
	last   *Refresh
	views  []InstanceView
	failed []dump.InstanceError
	// history is the rejection sparkline of each instance and level
	// (histKey).
	history map[string][]float64
	// err is why the last refresh or the frame shown failed; the data of
	// the one before stays.
	err error
}

// view returns the view of an instance, nil when it is not shown.
func (s *frameData) view(instance string) *InstanceView {
	for i := range s.views {
		if s.views[i].Instance == instance {
			return &s.views[i]
		}
	}
	return nil
}

func histKey(instance, level string) string { return instance + "\x00" + level }

// addPoints appends each level's rejection rate to its sparkline in h,
// keeping the last historyLen points (in place, so a long-running view's
// memory stays flat).
func addPoints(h map[string][]float64, instance string, levels []levels.Row) {
	for _, l := range levels {
		k := histKey(instance, l.Name)
		p := append(h[k], l.RejectedTotal)
		if len(p) > historyLen {
			p = append(p[:0], p[len(p)-historyLen:]...)
		}
		h[k] = p
	}
}

// computeViews computes the view of each instance of c; prev holds the
// previous snapshot of each instance for rates, and is updated when not nil.
func computeViews(c *dump.Capture, prev map[string]*dump.Snapshot) []InstanceView {
	views := make([]InstanceView, 0, len(c.Snapshots))
	for _, s := range c.Snapshots {
		views = append(views, ComputeInstance(prev[s.Instance], s))
		if prev != nil {
			// Rates need only the newest scrape: keep that, not the whole
			// snapshot and its bodies (ComputeInstance reads nothing else).
			if _, last := s.LatestMetrics(); last != nil {
				prev[s.Instance] = &dump.Snapshot{Instance: s.Instance, Metrics: []*metrics.Scrape{last}}
			}
		}
	}
	return views
}

// player steps through the frames of a recording (a replay, or the store's
// past): each frame is computed against the one before it, and its
// sparklines are rebuilt from the frames before it.
type player struct {
	rec      *record.Recording
	frame    int
	captures map[int]*dump.Capture
	errs     map[int]error
	cur      frameData
}

func newPlayer(rec *record.Recording) player {
	return player{rec: rec, captures: map[int]*dump.Capture{}, errs: map[int]error{}}
}

// capture parses frame i once.
func (p *player) capture(i int) (*dump.Capture, error) {
	if c, ok := p.captures[i]; ok {
		return c, p.errs[i]
	}
	c, err := p.rec.Frames[i].Capture()
	p.captures[i], p.errs[i] = c, err
	return c, err
}

// len is the number of frames.
func (p *player) len() int { return len(p.rec.Frames) }

// show computes frame i (clamped to the recording) against frame i-1 and
// rebuilds the sparklines from the frames before it. A frame that does not
// parse keeps the data shown and says why.
func (p *player) show(i int) {
	frames := p.rec.Frames
	if len(frames) == 0 {
		return
	}
	i = max(0, min(i, len(frames)-1))
	p.frame = i
	p.cur.history = map[string][]float64{}
	for j := max(0, i-historyLen+1); j <= i; j++ {
		prev := map[string]*dump.Snapshot{}
		if j > 0 {
			if pc, err := p.capture(j - 1); err == nil {
				for _, s := range pc.Snapshots {
					prev[s.Instance] = s
				}
			}
		}
		c, err := p.capture(j)
		if j == i {
			p.cur.err = err
		}
		if err != nil {
			continue
		}
		f := frames[j]
		if j == i {
			p.cur.last = &Refresh{At: f.At, Capture: c, Requests: f.Requests}
			p.cur.views, p.cur.failed = computeViews(c, prev), c.Failures
			for _, iv := range p.cur.views {
				addPoints(p.cur.history, iv.Instance, iv.Levels)
			}
			continue
		}
		for _, s := range c.Snapshots {
			addPoints(p.cur.history, s.Instance, ComputeInstance(prev[s.Instance], s).Levels)
		}
	}
}
