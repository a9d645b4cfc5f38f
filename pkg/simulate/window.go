package simulate

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// ReplayWindow is the part of the log the replay read: the window of
// --since/--until, or the one the metrics' evidence covers (Evidence.Cut).
type ReplayWindow struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Requests are those of the log inside the window, Of all the log's.
	Requests int64 `json:"requests"`
	Of       int64 `json:"of"`
	// Given says the window is --since/--until's, not the evidence's.
	Given bool `json:"given"`
}

// EvidenceCoverage says which window the metrics' CPU evidence covers and
// which part of the workload that is.
type EvidenceCoverage struct {
	// Metrics is the window between the two scrapes read, of Scrapes the
	// instance holds.
	Metrics calibrate.TimeRange `json:"metrics"`
	Scrapes int                 `json:"scrapes"`
	// Store names the metrics store the scrapes are the samples of
	// (--prometheus; absent: the scrapes of the state, a bundle or the
	// cluster), and Interval how often it scraped (0 when unknown).
	Store    string             `json:"store,omitempty"`
	Interval calibrate.Duration `json:"interval,omitempty"`
	// Requests of the workload (within --since/--until) arrived between
	// the scrapes (widened by the calibration's clock slack), Before and
	// After it, of Total; RejectedOutside are the recorded 429s outside.
	Requests        int64 `json:"requests"`
	Before          int64 `json:"before"`
	After           int64 `json:"after"`
	Total           int64 `json:"total"`
	RejectedOutside int64 `json:"rejectedOutside"`
	// Cut says the replay reads only the requests between the scrapes:
	// the others arrived before or after the load the evidence saw (the
	// server's start-up, quiet hours, the capture's own reads), and none
	// of them was answered 429.
	Cut bool `json:"cut,omitempty"`
}

// Share is the part of the workload between the scrapes (0 for none).
func (e *EvidenceCoverage) Share() float64 {
	if e == nil || e.Total == 0 {
		return 0
	}
	return float64(e.Requests) / float64(e.Total)
}

// arrivals are the workload's arrival times as read (UnixNano, 0 when a
// request carries none) and those of its recorded 429s.
type arrivals struct {
	span     logs.Span
	all      []int64
	rejected []int64
	// ran are, beside all, the latency of each request APF executed (not
	// answered 429, its latency recorded, neither a watch, whose latency
	// is the watch's and not its execution's, nor a long-running request
	// APF does not see), to the millisecond rounded up; 0 for the others.
	// settled reads them.
	ran    []uint32
	parsed engine.RequestCache
}

func (a *arrivals) add(r *workload.Request) {
	a.span.Add(r)
	var t int64
	if !r.TimeUnknown && !r.Arrival.IsZero() {
		t = r.Arrival.UnixNano()
	}
	a.all = append(a.all, t)
	if r.Status == 429 && t != 0 {
		a.rejected = append(a.rejected, t)
	}
	var ran uint32
	if t != 0 && r.Status != 429 && r.Latency > 0 {
		if er, err := a.parsed.Parse(r.Method, r.URI, engine.Identity{}); err == nil && er.Bypass == "" && er.Info.Verb != "watch" {
			ran = uint32(min((r.Latency+time.Millisecond-1)/time.Millisecond, math.MaxUint32))
		}
	}
	a.ran = append(a.ran, ran)
}

// settled is the earliest time from which every execution that ends is
// one of a request that arrived at from or later: the latest end of the
// executions of the requests that arrived before from, else from. A
// window cut from a longer log lacks those requests, and APF's counters
// between two scrapes before settled count their executions.
func (a *arrivals) settled(from time.Time) time.Time {
	f := from.UnixNano()
	s := f
	for i, t := range a.all {
		if t != 0 && t < f && a.ran[i] > 0 {
			s = max(s, t+int64(a.ran[i])*int64(time.Millisecond))
		}
	}
	return time.Unix(0, s).In(from.Location())
}

// count counts the arrivals from from to to (both included; zero bounds
// are open).
func count(ts []int64, from, to time.Time) int64 {
	var n int64
	for _, t := range ts {
		if t != 0 && (from.IsZero() || t >= from.UnixNano()) && (to.IsZero() || t <= to.UnixNano()) {
			n++
		}
	}
	return n
}

// scrapePair picks, of an instance's scrapes (oldest first), the two whose
// window best brackets target: the latest at or before its start and the
// earliest at or after its end, else the scrapes nearest those ends inside
// it. A zero target takes the first and the last. ok is false when no two
// scrapes are left (target lies wholly before or after them).
func scrapePair(ms []*metrics.Scrape, target calibrate.TimeRange) (first, last *metrics.Scrape, ok bool) {
	if len(ms) < 2 {
		return nil, nil, false
	}
	if target.IsZero() {
		return ms[0], ms[len(ms)-1], true
	}
	// the latest at or before the start, else the earliest; the earliest
	// at or after the end, else the latest (the calibration's coverage
	// rule then judges a pair that does not span the target)
	i, j := metrics.Bracket(scrapeTimes(ms), target.From, target.To)
	if j <= i {
		return nil, nil, false
	}
	return ms[i], ms[j], true
}

// executionsPair returns the scrapes APF's executions are read between
// for the window target: the widest pair inside it (metrics.Inside),
// where two scrapes lie inside it (a long bundle's, a store's), else the
// bracketing pair first, last (a bundle's two around the load). A window
// cut from a longer log is measured so: its bracketing scrapes also count
// the executions a second beyond it that the workload replayed does not
// hold (the e2e store's, 703 for the window's 610). The executions that
// ended between an inner pair are the workload's own only where no
// request that arrived before the window still ran at the first:
// settleExecutions moves the pair where one did.
func executionsPair(ms []*metrics.Scrape, target calibrate.TimeRange, first, last *metrics.Scrape) (*metrics.Scrape, *metrics.Scrape) {
	if target.IsZero() {
		return first, last
	}
	if i, j, ok := metrics.Inside(scrapeTimes(ms), target.From, target.To); ok {
		return ms[i], ms[j]
	}
	return first, last
}

// resolveWindow turns cfg.Window into the replay's window over the
// workload read (nil without --since/--until).
func resolveWindow(cfg Config, a *arrivals) (*ReplayWindow, error) {
	if cfg.Window.IsZero() {
		return nil, nil
	}
	if a.span.First.IsZero() {
		return nil, fmt.Errorf("--since/--until: the workload's requests carry no time (a log without its klog headers), so no window can be cut from it")
	}
	from, to, err := cfg.Window.Resolve(a.span.First, a.span.Last)
	if err != nil {
		return nil, err
	}
	w := &ReplayWindow{From: from, To: to, Requests: count(a.all, from, to), Of: int64(len(a.all)), Given: true}
	if w.Requests == 0 {
		return nil, fmt.Errorf("--since/--until: the window %s holds none of the workload's %d requests, which arrived over %s", logs.FormatWindow(from, to), w.Of, logs.FormatWindow(a.span.First, a.span.Last))
	}
	return w, nil
}

// coverEvidence says which part of the workload (within win, if any) the
// metrics' evidence covers and, without --since/--until, cuts the replay
// to the evidence's window when requests arrived outside it and none of
// them was answered 429: they are not the load the evidence is asked
// about. Replayed beside it, they would share the calibration that the
// evidence sets for the load (a server's start-up, 8% of a full log, moved
// a prediction of a crowded load by a quarter), whether or not they are
// few enough (MinCoveredArrivals) for the evidence to be kept for the
// whole log. With 429s outside, the evidence did not see that load: the
// replay is not cut, and the calibration keeps the evidence only when
// MinCoveredArrivals of the arrivals fall between the scrapes
// (Result.Uncovered).
func coverEvidence(p calibrate.Params, m serverMetrics, a *arrivals, win *ReplayWindow) (*EvidenceCoverage, *ReplayWindow) {
	mw := m.evidence.MetricsWindow
	if m.evidence.Runtime == nil && m.evidence.CPUUse == nil || mw.IsZero() {
		return nil, win
	}
	var from, to time.Time
	if win != nil {
		from, to = win.From, win.To
	}
	inFrom, inTo := mw.From.Add(-p.ClockSlack), mw.To.Add(p.ClockSlack)
	if from.After(inFrom) {
		inFrom = from
	}
	if !to.IsZero() && to.Before(inTo) {
		inTo = to
	}
	c := &EvidenceCoverage{Metrics: mw, Scrapes: m.scrapes, Store: m.store, Interval: calibrate.Duration(m.interval), Total: count(a.all, from, to)}
	c.Requests = count(a.all, inFrom, inTo)
	c.Before = count(a.all, from, inFrom.Add(-1))
	c.After = c.Total - c.Requests - c.Before
	c.RejectedOutside = count(a.rejected, from, to) - count(a.rejected, inFrom, inTo)
	if win == nil && c.Requests > 0 && c.Requests < c.Total && c.RejectedOutside == 0 {
		c.Cut = true
		win = &ReplayWindow{From: inFrom, To: inTo, Requests: c.Requests, Of: c.Total}
	}
	return c, win
}

// medianGap is the median time between consecutive scrapes of ms (oldest
// first), to 10 ms (a recorder's jitter of a few milliseconds is not its
// interval); 0 for fewer than three scrapes, whose one or two gaps are the
// moments a capture was taken, not an interval.
func medianGap(ms []*metrics.Scrape) time.Duration {
	return metrics.MedianGap(scrapeTimes(ms))
}

// scrapeTimes are the times of the scrapes ms.
func scrapeTimes(ms []*metrics.Scrape) []time.Time {
	times := make([]time.Time, len(ms))
	for i, m := range ms {
		times[i] = m.Time
	}
	return times
}

// settleExecutions keeps APF's executions between the scrapes (the
// evidence's ExecutionsWindow) to executions of the workload replayed,
// the window win of a longer log. An inner pair of scrapes (executionsPair)
// taken while requests that arrived before the window still ran counts
// their executions, which the workload does not hold: APF counted 216
// where the workload held 200 on an e2e window cut 64 ms before a scrape
// of a load whose requests waited up to 580 ms. The pair is then the
// widest inside the window from the moment those requests ended
// (arrivals.settled) on, read again from the evidence's source (a store's
// or a long bundle's scrapes inside it); where no two scrapes lie there,
// the executions are not evidence, and a note says why. A bracketing pair
// (taken before the window) is kept: the check finds APF counting more
// than the workload holds, and says which window to replay for it.
func settleExecutions(ctx context.Context, cfg Config, m *serverMetrics, a *arrivals, win *ReplayWindow) error {
	ew := m.evidence.ExecutionsWindow
	if win == nil || m.evidence.Executions == nil || !ew.From.After(win.From) {
		return nil
	}
	settled := a.settled(win.From)
	if !ew.From.Before(settled) {
		return nil
	}
	scrapes := m.source.scrapes
	if settled.Before(win.To) {
		more, err := scrapesInside(ctx, cfg, m.source.instance, m.store != "", settled, win.To)
		if err != nil {
			return err
		}
		scrapes = append(slices.Clone(scrapes), more...)
		slices.SortStableFunc(scrapes, func(a, b *metrics.Scrape) int { return a.Time.Compare(b.Time) })
	}
	if i, j, ok := metrics.Inside(scrapeTimes(scrapes), settled, win.To); ok {
		if m.setExecutions(scrapes[i], scrapes[j]); m.evidence.Executions != nil {
			return nil
		}
	}
	m.setExecutions(nil, nil)
	m.notes = append(m.notes, fmt.Sprintf("note: APF's executions between the scrapes are not set beside the workload's: requests that arrived before the window replayed (%s) ran until %s, and no two scrapes that count executions lie between then and the window's end",
		logs.FormatWindow(win.From, win.To), settled.UTC().Format(time.RFC3339Nano)))
	return nil
}

// scrapesInside reads again, from the store (store) or the long bundle
// the evidence came from, the instance's scrapes inside [from, to]; none
// from the state's own scrapes, all of which are read already.
func scrapesInside(ctx context.Context, cfg Config, instance string, store bool, from, to time.Time) ([]*metrics.Scrape, error) {
	switch {
	case store && cfg.Store != nil:
		got, err := cfg.Store.Scrapes(ctx, from, to)
		if err != nil {
			return nil, fmt.Errorf("--prometheus: %w", err)
		}
		for _, g := range got {
			if g.Instance == instance {
				return g.Scrapes, nil
			}
		}
	case !store && cfg.Recorded != nil:
		got, err := cfg.Recorded(from, to)
		if err != nil {
			return nil, fmt.Errorf("the bundle's scrapes inside the window replayed cannot be read: %w", err)
		}
		for _, g := range got {
			if g.Instance == instance {
				return g.Scrapes, nil
			}
		}
	}
	return nil, nil
}
