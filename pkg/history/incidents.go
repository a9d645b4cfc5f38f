package history

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// The reasons of rejected_requests_total (queueset.go: StartRequest,
// (*request).wait; "cancelled" only from 1.26 to 1.28).
const (
	ReasonQueueFull        = rejections.ReasonQueueFull
	ReasonConcurrencyLimit = rejections.ReasonConcurrencyLimit
	ReasonTimeOut          = rejections.ReasonTimeOut
	ReasonCancelled        = rejections.ReasonCancelled
)

// IncidentOptions says where and how to look for incidents.
type IncidentOptions struct {
	Query  Query
	Window Window
	// ScrapeInterval is the store's scrape interval of the apiservers: the
	// start and end of an incident are found to about this precision.
	ScrapeInterval time.Duration
	// MergeGap merges the bursts of one level less than this apart (the
	// larger of two steps and a minute when zero): a level that rejects in
	// waves, as a client retrying with back-off makes it, is one incident.
	MergeGap time.Duration
	// MaxIncidents details at most this many incidents, the largest first
	// (10 when zero); the others are only counted.
	MaxIncidents int
	// WaitLimit is the longest a request waits in a queue (a quarter of the
	// apiserver's --request-timeout, 15 s by default; queueset.go), which
	// the queue waits are held against.
	WaitLimit time.Duration
}

// Report is the answer of "explain 429 --prometheus": the incidents of the
// window and the 429s that did not come from APF.
type Report struct {
	Start time.Time     `json:"start"`
	End   time.Time     `json:"end"`
	Step  time.Duration `json:"stepNanoseconds"`
	// Rejected is APF's rejections in the window, by level.
	Rejected map[string]float64 `json:"rejected"`
	// All429 counts every HTTP 429 answer (apiserver_request_total);
	// Other429 those APF did not give: all 429s minus APF's rejections
	// (evictions blocked by a PodDisruptionBudget, a watch cache
	// initialising, another filter).
	All429   float64 `json:"all429"`
	Other429 float64 `json:"other429"`
	// Other429Series is Other429 per step; Other429Bursts its bursts.
	Other429Series Series     `json:"other429Series"`
	Other429Bursts []Burst    `json:"other429Bursts,omitempty"`
	Incidents      []Incident `json:"incidents"`
	// Undetailed counts the incidents beyond MaxIncidents.
	Undetailed int `json:"undetailed,omitempty"`
}

// Burst is a time range with 429s.
type Burst = rejections.Burst

// Incident is one burst of APF rejections of one priority level.
type Incident struct {
	Level string `json:"level"`
	// Start is the first scrape that saw a rejection of the burst, End the
	// last (to about one scrape interval).
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Rejected counts the rejections of the burst.
	Rejected float64 `json:"rejected"`
	// Reasons counts them by reason, FlowSchemas by FlowSchema and reason,
	// Instances by apiserver instance; largest first.
	Reasons     map[string]float64 `json:"reasons"`
	FlowSchemas []SchemaCount      `json:"flowSchemas"`
	Instances   []InstanceCount    `json:"instances"`
	// State is the level around the burst.
	State     LevelState `json:"state"`
	Diagnosis Diagnosis  `json:"diagnosis"`
}

// SchemaCount is the rejections of one FlowSchema for one reason,
// InstanceCount those one apiserver instance gave.
type (
	SchemaCount   = rejections.SchemaCount
	InstanceCount = rejections.InstanceCount
)

// LevelState is a level's series around an incident, summed over the
// apiservers: rejections and dispatches per step, seats in use against the
// lower, nominal, current and upper limits and the demand (borrowing:
// apf_controller.go updateBorrowingLocked), waiting requests, the queue
// wait p99 and the queue lengths requests found (p50 and p99 of
// request_queue_length_after_enqueue).
type LevelState struct {
	From   time.Time         `json:"from"`
	To     time.Time         `json:"to"`
	Step   time.Duration     `json:"stepNanoseconds"`
	Series map[string]Series `json:"series"`
	// Peaks are the largest values of each series during the incident.
	Peaks map[string]float64 `json:"peaks"`
}

// The names of LevelState's series: those of the schema's
// (rejections.Series*).
const (
	StateRejected   = rejections.SeriesRejected
	StateDispatched = rejections.SeriesDispatched
	StateSeats      = rejections.SeriesSeats
	StateNominal    = rejections.SeriesNominal
	StateLower      = rejections.SeriesLower
	StateUpper      = rejections.SeriesUpper
	StateCurrent    = rejections.SeriesCurrent
	StateDemand     = rejections.SeriesDemand
	StateWaiting    = rejections.SeriesWaiting
	StateWaitP99    = rejections.SeriesWaitP99
	StateQueueP50   = rejections.SeriesQueueP50
	StateQueueP99   = rejections.SeriesQueueP99
)

// Diagnosis is what an incident points to.
type Diagnosis struct {
	// Kind is a cause name of package rejections: CauseElephantFlow (one
	// flow fills the queues of its hand while the level's other queues are
	// short), CauseTooLittleConcurrency (every queue of the level is long
	// or waits reach the wait limit), CauseNoQueues (a level without queues
	// turned requests away when its seats were full) or CauseUnclear (the
	// metrics do not tell).
	Kind     string   `json:"kind"`
	Summary  string   `json:"summary"`
	Evidence []string `json:"evidence"`
}

const (
	familyRejected   = metrics.RejectedRequestsTotal
	familyDispatched = metrics.DispatchedRequestsTotal
)

// FindIncidents looks for the bursts of APF rejections in the window, and
// details the largest: counts by FlowSchema, reason and instance, the
// level's state around them and a diagnosis. It asks 2 queries for the
// window and 3 per detailed incident.
func FindIncidents(ctx context.Context, q Querier, o IncidentOptions) (*Report, error) {
	w := o.Window
	if w.Step <= 0 || !w.End.After(w.Start) {
		return nil, fmt.Errorf("the window must have a positive length and step (--since, --step)")
	}
	if o.MergeGap <= 0 {
		o.MergeGap = max(2*w.Step, time.Minute)
	}
	if o.MaxIncidents <= 0 {
		o.MaxIncidents = 10
	}
	if o.ScrapeInterval <= 0 {
		o.ScrapeInterval = w.Step / 2
	}
	total := o.Query
	total.PerInstance = false
	var t Tagged
	t.Add("rejected", total.Count(familyRejected, []string{LabelLevel}, w.Step))
	ans, err := q.QueryRange(ctx, t.String(), w.Start.Add(w.Step), w.End, w.Step)
	if err != nil {
		return nil, fmt.Errorf("querying the rejections: %w", err)
	}
	parts := split(ans)
	rep := &Report{Start: w.Start, End: w.End, Step: w.Step, Rejected: map[string]float64{}}
	var bursts []levelBurst
	for _, s := range parts["rejected"] {
		lvl := s.Labels[LabelLevel]
		for _, b := range Bursts(s, w.Step, o.MergeGap) {
			bursts = append(bursts, levelBurst{lvl, b})
		}
	}
	// The per-step counts draw the timelines; increase() over a range of a
	// few samples extrapolates to the range's ends (up to twice the true
	// count over two samples), so the totals come from one evaluation over
	// the whole window.
	if rep.Other429Series, err = other429Series(ctx, q, o.Query, w); err != nil {
		return nil, err
	}
	rep.Other429Bursts = Bursts(rep.Other429Series, w.Step, o.MergeGap)
	var tt Tagged
	tt.Add("rejected", total.ExactCount(familyRejected, []string{LabelLevel}, w.Duration()))
	tt.Add("all429", total.ExactCount(metrics.FamilyRequestTotal, nil, w.Duration(), `code="429"`))
	if ans, err = q.QueryRange(ctx, tt.String(), w.End, w.End, w.Step); err != nil {
		return nil, fmt.Errorf("querying the rejections: %w", err)
	}
	apfTotal := 0.0
	for _, s := range ans {
		if len(s.Points) == 0 || math.IsNaN(s.Points[0].V) {
			continue
		}
		v := math.Round(s.Points[0].V)
		switch s.Labels[LabelSeries] {
		case "rejected":
			if v > 0 {
				rep.Rejected[s.Labels[LabelLevel]] += v
				apfTotal += v
			}
		case "all429":
			rep.All429 += v
		}
	}
	rep.Other429 = math.Max(0, rep.All429-apfTotal)

	sort.SliceStable(bursts, func(i, j int) bool { return bursts[i].Count > bursts[j].Count })
	if len(bursts) > o.MaxIncidents {
		rep.Undetailed = len(bursts) - o.MaxIncidents
		bursts = bursts[:o.MaxIncidents]
	}
	// The incidents are independent: detail a few at once, as a store
	// answers queries in parallel.
	rep.Incidents = make([]Incident, len(bursts))
	errs := make([]error, len(bursts))
	sem := make(chan struct{}, detailParallel)
	var wg sync.WaitGroup
	for i, b := range bursts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			inc, err := detail(ctx, q, o, b)
			if err != nil {
				errs[i] = err
				return
			}
			rep.Incidents[i] = *inc
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err // the first: the others are likely the same
		}
	}
	sort.SliceStable(rep.Incidents, func(i, j int) bool {
		if !rep.Incidents[i].Start.Equal(rep.Incidents[j].Start) {
			return rep.Incidents[i].Start.Before(rep.Incidents[j].Start)
		}
		return rep.Incidents[i].Level < rep.Incidents[j].Level
	})
	return rep, nil
}

// detailParallel is how many incidents are detailed at once.
const detailParallel = 4

type levelBurst struct {
	level string
	Burst
}

func valueOr0(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// Bursts finds the runs of s's points above zero, each point counting what
// happened in the step before it; runs whose points are at most gap apart
// are one burst. A burst starts a step before its first point.
func Bursts(s Series, step, gap time.Duration) []Burst {
	var out []Burst
	var cur *Burst
	var last time.Time
	for _, p := range s.Points {
		if math.IsNaN(p.V) || p.V <= 0 {
			continue
		}
		if cur != nil && p.T.Sub(last) <= max(gap, step) {
			cur.End, cur.Count = p.T, cur.Count+p.V
		} else {
			out = append(out, Burst{Start: p.T.Add(-step), End: p.T, Count: p.V})
			cur = &out[len(out)-1]
		}
		last = p.T
	}
	return out
}

// fineStep is the resolution the start and end of an incident are looked
// for at.
func fineStep(o IncidentOptions) time.Duration {
	return max(o.ScrapeInterval/2, o.Window.Step/60, 100*time.Millisecond)
}

func detail(ctx context.Context, q Querier, o IncidentOptions, b levelBurst) (*Incident, error) {
	inc := &Incident{Level: b.level, Start: b.Burst.Start, End: b.Burst.End, Reasons: map[string]float64{}}
	lvl := LabelLevel + "=" + strconv.Quote(b.level)
	fine := fineStep(o)
	step := o.Window.Step

	// 1. The first and last scrape with a new rejection: the level's
	// rejection counter summed over everything, evaluated finely around the
	// coarse start and end.
	total := o.Query
	total.PerInstance = false
	zoomFrom, zoomTo := b.Burst.Start.Add(-step), b.Burst.End.Add(step)
	ans, err := q.QueryRange(ctx, "sum("+total.sel(familyRejected, lvl)+")", zoomFrom, zoomTo, fine)
	if err != nil {
		return nil, fmt.Errorf("querying the rejections of %s around %s: %w", b.level, b.Burst.Start.UTC().Format(time.RFC3339), err)
	}
	if len(ans) == 1 {
		if first, last, ok := changes(ans[0], zoomFrom); ok {
			inc.Start, inc.End = first, last
		}
	}

	// 2. The counts by FlowSchema, reason and instance over the burst.
	r := inc.End.Sub(inc.Start) + 2*fine + o.ScrapeInterval
	at := inc.End.Add(fine)
	var t Tagged
	t.Add("schema", total.ExactCount(familyRejected, []string{LabelSchema, LabelReason}, r, lvl))
	per := o.Query
	per.PerInstance = true
	t.Add("instance", per.ExactCount(familyRejected, nil, r, lvl))
	ans, err = q.QueryRange(ctx, t.String(), at, at, step)
	if err != nil {
		return nil, fmt.Errorf("querying the rejections of %s by FlowSchema: %w", b.level, err)
	}
	for name, ss := range split(ans) {
		for _, s := range ss {
			if len(s.Points) == 0 || s.Points[0].V <= 0 {
				continue
			}
			v := math.Round(s.Points[0].V)
			switch name {
			case "schema":
				inc.Rejected += v
				inc.Reasons[s.Labels[LabelReason]] += v
				inc.FlowSchemas = append(inc.FlowSchemas, SchemaCount{FlowSchema: s.Labels[LabelSchema], Reason: s.Labels[LabelReason], Count: v})
			case "instance":
				inc.Instances = append(inc.Instances, InstanceCount{Instance: s.Labels[per.instance()], Count: v})
			}
		}
	}
	sort.Slice(inc.FlowSchemas, func(i, j int) bool {
		a, b := inc.FlowSchemas[i], inc.FlowSchemas[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.FlowSchema+a.Reason < b.FlowSchema+b.Reason
	})
	sort.Slice(inc.Instances, func(i, j int) bool {
		if inc.Instances[i].Count != inc.Instances[j].Count {
			return inc.Instances[i].Count > inc.Instances[j].Count
		}
		return inc.Instances[i].Instance < inc.Instances[j].Instance
	})

	// 3. The level's state around the burst, in one query, at a step of
	// whole seconds (a point every 4.683333333s reads as noise)
	sstep := max(2*o.ScrapeInterval, fine, ceilSecond(inc.End.Sub(inc.Start)/60))
	pad := max(5*sstep, inc.End.Sub(inc.Start)/2)
	from, to := inc.Start.Add(-pad).Truncate(sstep), inc.End.Add(pad).Truncate(sstep).Add(sstep)
	if to.After(o.Window.End) {
		to = o.Window.End
	}
	l := []string{LabelLevel}
	// The gauges that move with the load are read at their peak in each
	// step, sampled every second (or at half a finer scrape interval) so
	// that no scrape is missed, whatever interval --scrape-interval
	// assumes: their value at the step's instant alone (once a minute at
	// the default step) read "seats in use peaked at 0" of a level that
	// dispatched 1,582 requests a minute in bursts.
	peak := func(expr string) string { return MaxOver(expr, sstep, min(fine, time.Second)) }
	var st Tagged
	st.Add(StateRejected, total.Count(familyRejected, l, sstep, lvl))
	st.Add(StateDispatched, total.Count(familyDispatched, l, sstep, lvl))
	st.Add(StateSeats, peak(total.Gauge(metrics.CurrentExecutingSeats, l, lvl)))
	st.Add(StateNominal, total.Gauge(metrics.NominalLimitSeats, l, lvl))
	st.Add(StateLower, total.Gauge(familyLowerLimit, l, lvl))
	st.Add(StateUpper, total.Gauge(familyUpperLimit, l, lvl))
	st.Add(StateCurrent, peak(total.Gauge(metrics.CurrentLimitSeats, l, lvl)))
	st.Add(StateDemand, peak(total.Gauge(familyDemandHW, l, lvl)))
	st.Add(StateWaiting, peak(total.Gauge(metrics.CurrentInqueueRequests, l, lvl)))
	st.Add(StateWaitP99, total.Quantile(0.99, metrics.RequestWaitDurationSecond, l, sstep, lvl))
	st.Add(StateQueueP50, total.Quantile(0.5, familyQueueLength, l, sstep, lvl))
	st.Add(StateQueueP99, total.Quantile(0.99, familyQueueLength, l, sstep, lvl))
	ans, err = q.QueryRange(ctx, st.String(), from, to, sstep)
	if err != nil {
		return nil, fmt.Errorf("querying the state of %s: %w", b.level, err)
	}
	inc.State = LevelState{From: from, To: to, Step: sstep, Series: map[string]Series{}, Peaks: map[string]float64{}}
	for name, ss := range split(ans) {
		if len(ss) == 0 {
			continue
		}
		s := ss[0]
		if len(ss) > 1 {
			s = sum(ss)
		}
		s.Labels = nil
		inc.State.Series[name] = s
		if p := s.maxIn(inc.Start, inc.End.Add(sstep)); !math.IsNaN(p) {
			inc.State.Peaks[name] = p
		}
	}
	inc.Diagnosis = Diagnose(inc, o.WaitLimit)
	return inc, nil
}

// other429Series counts, per step of w, the 429s APF did not give: what
// each instance's 429 responses grew beyond its APF rejections. It reads
// both counters' samples as they are at each step, not increase(): two
// counters of the same scrapes extrapolate differently from the one or two
// samples of a short range, and a scrape that falls between APF counting a
// rejection (in its filter) and the response being counted (when the
// handler returns) reads the 429s behind. On make demo's store at a step
// of 2s, increase() read 70 429s for APF's 44 where both had counted the
// same: 13 of the 429s had come a scrape late, and the steps' ranges had
// left the scrape in which APF counted them between them. So each
// instance's series is its 429s less its rejections, and a step counts what
// that difference rises above its highest value so far: a dip (APF ahead)
// and its recovery count nothing, and a counter reset (a restart) starts
// the instance anew.
func other429Series(ctx context.Context, q Querier, query Query, w Window) (Series, error) {
	query.PerInstance = true
	var t Tagged
	t.Add("all429", query.by()+"("+query.sel(metrics.FamilyRequestTotal, `code="429"`)+")")
	t.Add("rejected", query.by()+"("+query.sel(familyRejected)+")")
	ans, err := q.QueryRange(ctx, t.String(), w.Start, w.End, w.Step)
	if err != nil {
		return Series{}, fmt.Errorf("querying the rejections: %w", err)
	}
	type counters struct{ all429, rejected Series }
	byInstance := map[string]*counters{}
	for _, s := range ans {
		inst := s.Labels[query.instance()]
		if byInstance[inst] == nil {
			byInstance[inst] = &counters{}
		}
		if s.Labels[LabelSeries] == "all429" {
			byInstance[inst].all429 = s
		} else {
			byInstance[inst].rejected = s
		}
	}
	out := map[int64]float64{}
	for _, c := range byInstance {
		var prevAll, prevRej, high float64
		seen := false
		for _, p := range c.all429.Points {
			all, rej := p.V, valueOr0(c.rejected.at(p.T))
			if math.IsNaN(all) {
				continue
			}
			switch {
			case !seen:
				// what the instance counted before the window
				high, seen = all-rej, true
			case all < prevAll || rej < prevRej:
				// a restart: the counters start again from 0
				high = 0
			}
			if d := all - rej; d > high {
				out[p.T.UnixMilli()] += d - high
				high = d
			}
			prevAll, prevRej = all, rej
		}
	}
	series := Series{Labels: map[string]string{}}
	for at := w.Start.Add(w.Step); !at.After(w.End); at = at.Add(w.Step) {
		series.Points = append(series.Points, Point{T: at, V: out[at.UnixMilli()]})
	}
	return series, nil
}

// changes returns the first and last time the (summed) counter s grew. A
// counter with no value at from (no series yet: APF creates the series of a
// FlowSchema and reason at its first rejection) grows from zero.
func changes(s Series, from time.Time) (first, last time.Time, ok bool) {
	prev, seen := 0.0, false
	for _, p := range s.Points {
		if math.IsNaN(p.V) {
			continue
		}
		grew := p.V > prev
		if !seen && p.T.Equal(from) {
			grew = false // the value before the zoom, not a change
		}
		if grew {
			if !ok {
				first = p.T
			}
			last, ok = p.T, true
		}
		prev, seen = p.V, true
	}
	return first, last, ok
}

// ceilSecond is d rounded up to a whole second, when it is longer than one.
func ceilSecond(d time.Duration) time.Duration {
	if d <= time.Second || d%time.Second == 0 {
		return d
	}
	return d.Truncate(time.Second) + time.Second
}
