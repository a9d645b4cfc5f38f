// Package levels computes the one priority-level row that "top", "top
// levels", the live view, "explain 429" and "capacity" show: each figure
// from the best input present, in one documented order, so that no two
// commands disagree on the same input.
//
// The order, best first, is: the debug dumps, then the metrics, then the
// configuration. Each dump is one reading of every level, but the three are
// read moments apart, and under bursts they differ (a real v1.37.1 capture:
// 11 waiting by dump_priority_levels, 10 rows in dump_requests): the
// waiting requests and their seats come from one of them. For each figure:
//
//   - Waiting: the waiting rows of dump_requests (which give WaitingSeats
//     too), dump_priority_levels' WaitingRequests, the pending requests of
//     dump_queues, apiserver_flowcontrol_current_inqueue_requests.
//   - Executing: dump_priority_levels' ExecutingRequests, the executing
//     requests of dump_queues (queuing levels),
//     apiserver_flowcontrol_current_executing_requests.
//   - WaitingSeats: the seats of the waiting rows of dump_requests,
//     apiserver_flowcontrol_current_inqueue_seats (1.29+).
//   - SeatsInUse: the seats in use of dump_queues (1.26+, queuing levels),
//     apiserver_flowcontrol_current_executing_seats (or its older names).
//   - NominalLimit: apiserver_flowcontrol_nominal_limit_seats (or
//     request_concurrency_limit), the configuration's nominal limit.
//   - CurrentLimit: apiserver_flowcontrol_current_limit_seats, the metrics'
//     nominal limit (before 1.26, no borrowing), the configuration's.
//   - Rates and the wait p99: two scrapes of the metrics.
//
// A figure no input gives is NaN (printed "-"), never 0. A dump that was
// read but does not list a level gives nothing for it (the next input is
// used), except dump_requests and dump_queues for the requests they count:
// when read, a level without rows has none waiting there.
package levels

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// The inputs a figure can come from (Row.From).
const (
	FromPriorityLevelDump = "dump_priority_levels"
	FromRequestDump       = "dump_requests"
	FromQueueDump         = "dump_queues"
	FromMetrics           = "metrics"
	FromConfiguration     = "configuration"
)

// The figures of a Row, as named in Row.From.
const (
	FigureWaiting      = "waiting"
	FigureExecuting    = "executing"
	FigureWaitingSeats = "waitingSeats"
	FigureSeatsInUse   = "seatsInUse"
	FigureNominalLimit = "nominalLimit"
	FigureCurrentLimit = "currentLimit"
)

// Figure is a row's figure v for a JSON field: nil when absent (NaN).
func Figure(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

// Row is one priority level of one apiserver instance.
type Row struct {
	Instance string
	Name     string
	// Exempt is true for the level named exempt: never limited, so it has
	// no utilisation and neither lends nor borrows (only the level named
	// exempt can have type Exempt: ValidatePriorityLevelConfigurationSpec).
	Exempt bool
	// The figures; NaN when no input gives them.
	Waiting, Executing, WaitingSeats, SeatsInUse float64
	NominalLimit, CurrentLimit                   float64
	// Utilisation is SeatsInUse / CurrentLimit; NaN for exempt, a zero
	// limit or a missing figure.
	Utilisation float64
	// HasRates is true when two scrapes gave DispatchedPerSec and
	// RejectedPerSec; RejectedTotal sums the latter (NaN without rates).
	HasRates         bool
	DispatchedPerSec float64
	RejectedPerSec   map[string]float64
	RejectedTotal    float64
	// RejectedCount is dump_priority_levels' cumulative RejectedRequests
	// (1.27+); -1 when the dump does not have it.
	RejectedCount int
	// Queues counts the level's queue rows in dump_queues.
	Queues int
	// WaitP99 is the 99th percentile of the queue wait over the scrapes'
	// interval, in seconds; NaN without observations.
	WaitP99 float64
	// MeanUtilisation and FullFraction are read from
	// apiserver_flowcontrol_priority_level_seat_utilization where the
	// server exports it: the time-weighted mean of seats in use over the
	// current limit, and the fraction of the time every seat was in use,
	// over the scrapes' interval (since the apiserver started with one
	// scrape), where Utilisation is one moment. NaN without the family,
	// for exempt, and in a Merge (a mean of means would not weigh them).
	MeanUtilisation, FullFraction float64
	// From names the input of each figure present (Figure* → From*).
	From map[string]string
}

// Input is what the rows of one instance are computed from.
type Input struct {
	// Snapshot is the instance's capture.
	Snapshot *dump.Snapshot
	// Prev is the previous capture of the same instance, whose newest
	// scrape gives rates when Snapshot holds one (a live view refreshing);
	// nil otherwise.
	Prev *dump.Snapshot
	// Limits are the configuration's levels (engine.Config.Limits), the
	// last input of the limits; nil without a configuration. Their levels
	// get rows even when no dump or metric names them.
	Limits []engine.LevelLimits
}

// newRow is a row with every figure absent.
func newRow(inst, name string) *Row {
	nan := math.NaN()
	return &Row{Instance: inst, Name: name, Exempt: name == flowcontrolv1.PriorityLevelConfigurationNameExempt,
		Waiting: nan, Executing: nan, WaitingSeats: nan, SeatsInUse: nan, NominalLimit: nan, CurrentLimit: nan,
		Utilisation: nan, DispatchedPerSec: nan, RejectedTotal: nan, RejectedCount: -1, WaitP99: nan,
		MeanUtilisation: nan, FullFraction: nan, From: map[string]string{}}
}

// Empty is a row of level name on instance with every figure absent.
func Empty(instance, name string) Row { return *newRow(instance, name) }

// set fills a figure that no better input gave.
func (r *Row) set(figure string, dst *float64, v float64, from string) {
	if _, done := r.From[figure]; done {
		return
	}
	*dst, r.From[figure] = v, from
}

// Compute returns the rows of one instance, sorted by name.
func Compute(in Input) []Row {
	s := in.Snapshot
	byName := map[string]*Row{}
	row := func(name string) *Row {
		r := byName[name]
		if r == nil {
			r = newRow(s.Instance, name)
			byName[name] = r
		}
		return r
	}
	prev, cur := s.LatestMetrics()
	if prev == nil && in.Prev != nil && cur != nil {
		// One scrape per refresh: rates span the refresh interval. An
		// older scrape of the same time (a bundle shown twice) gives none.
		_, prev = in.Prev.LatestMetrics()
	}
	// Every level any input names gets a row, so that a dump read speaks
	// for the levels it does not list.
	for _, pl := range s.PriorityLevelDump {
		if !pl.Placeholder {
			row(pl.Name)
		}
	}
	// A dump lists the requests of a level together: look a level up
	// once a run of its requests, not once a request.
	last := ""
	for i := range s.RequestDump {
		if name := s.RequestDump[i].PriorityLevel; i == 0 || name != last {
			row(name)
			last = name
		}
	}
	for _, q := range s.QueueDump {
		if !q.Placeholder {
			row(q.PriorityLevel).Queues++
		}
	}
	var stats []metrics.LevelStats
	if cur != nil {
		stats = metrics.Levels(prev, cur)
		for _, l := range stats {
			row(l.Name)
		}
	}
	for _, l := range in.Limits {
		row(l.Name)
	}
	fromDumps(s, byName)
	fromMetrics(cur, stats, byName)
	for _, l := range in.Limits {
		r := byName[l.Name]
		r.set(FigureNominalLimit, &r.NominalLimit, float64(l.NominalCL), FromConfiguration)
		r.set(FigureCurrentLimit, &r.CurrentLimit, float64(l.NominalCL), FromConfiguration)
	}
	return sorted(byName)
}

// sorted returns the rows by name, with their utilisation.
func sorted(rows map[string]*Row) []Row {
	out := make([]Row, 0, len(rows))
	for _, r := range rows {
		if r.CurrentLimit > 0 && !r.Exempt && !math.IsNaN(r.SeatsInUse) {
			r.Utilisation = r.SeatsInUse / r.CurrentLimit
		}
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// RequestDumpRead reports whether s holds a request dump (an empty one
// too: no request was in a queue).
func RequestDumpRead(s *dump.Snapshot) bool {
	return s.RequestDump != nil || s.Raw[dump.FileRequests] != nil
}

// QueueDumpRead reports whether s holds a queue dump.
func QueueDumpRead(s *dump.Snapshot) bool {
	return s.QueueDump != nil || s.Raw[dump.FileQueues] != nil
}

// fromDumps fills the figures the dumps give, best first: the request
// dump's waiting requests before the level dump's, so that a row's waiting
// requests and waiting seats are of one reading.
func fromDumps(s *dump.Snapshot, rows map[string]*Row) {
	if RequestDumpRead(s) {
		// It lists every request in a queue: a level without rows has
		// none waiting. (Executing requests are listed only for queuing
		// levels of some releases, so it gives no executing count.)
		type sums struct{ waiting, seats float64 }
		by := map[string]*sums{}
		var cur *sums
		level := ""
		for i := range s.RequestDump {
			rq := &s.RequestDump[i]
			if rq.Executing() {
				continue
			}
			// Requests come in runs of one level (Compute).
			if cur == nil || rq.PriorityLevel != level {
				if cur, level = by[rq.PriorityLevel], rq.PriorityLevel; cur == nil {
					cur = &sums{}
					by[level] = cur
				}
			}
			cur.waiting++
			cur.seats += float64(rq.Seats())
		}
		for name, r := range rows {
			var w sums
			if b := by[name]; b != nil {
				w = *b
			}
			r.set(FigureWaiting, &r.Waiting, w.waiting, FromRequestDump)
			r.set(FigureWaitingSeats, &r.WaitingSeats, w.seats, FromRequestDump)
		}
	}
	for _, pl := range s.PriorityLevelDump {
		if pl.Placeholder {
			continue
		}
		r := rows[pl.Name]
		r.set(FigureWaiting, &r.Waiting, float64(pl.WaitingRequests), FromPriorityLevelDump)
		r.set(FigureExecuting, &r.Executing, float64(pl.ExecutingRequests), FromPriorityLevelDump)
		if pl.HasCounters {
			r.RejectedCount = pl.RejectedRequests
		}
	}
	type queues struct {
		pending, executing, seats float64
		hasSeats                  bool
	}
	by := map[string]*queues{}
	for _, q := range s.QueueDump {
		if q.Placeholder {
			continue
		}
		c := by[q.PriorityLevel]
		if c == nil {
			c = &queues{}
			by[q.PriorityLevel] = c
		}
		c.pending += float64(q.PendingRequests)
		c.executing += float64(q.ExecutingRequests)
		c.seats += float64(q.SeatsInUse)
		c.hasSeats = c.hasSeats || q.HasSeats
	}
	// Only queuing levels have queues: the others are not in it.
	for name, c := range by {
		r := rows[name]
		r.set(FigureWaiting, &r.Waiting, c.pending, FromQueueDump)
		r.set(FigureExecuting, &r.Executing, c.executing, FromQueueDump)
		if c.hasSeats {
			r.set(FigureSeatsInUse, &r.SeatsInUse, c.seats, FromQueueDump)
		}
	}
}

// fromMetrics fills the figures the newest scrape gives, and the rates.
func fromMetrics(cur *metrics.Scrape, stats []metrics.LevelStats, rows map[string]*Row) {
	if cur == nil {
		return
	}
	const pl = "priority_level"
	gauge := func(figure string, dst func(*Row) *float64, families ...string) {
		sums := make([]map[string]float64, len(families))
		for i, f := range families {
			if cur.Has(f) {
				sums[i] = cur.SumBy(f, pl)
			}
		}
		for name, r := range rows {
			// The first family the scrape holds that speaks for the
			// level (a body joined from several inputs may hold a family
			// of one and a level only another names: unknown). A family
			// the server exports has a series for a level once the level
			// was used: none yet is 0.
			for i, f := range families {
				if sums[i] != nil && cur.Speaks(f, name) {
					r.set(figure, dst(r), sums[i][name], FromMetrics)
					break
				}
			}
		}
	}
	gauge(FigureWaiting, func(r *Row) *float64 { return &r.Waiting }, metrics.CurrentInqueueRequests)
	gauge(FigureExecuting, func(r *Row) *float64 { return &r.Executing }, metrics.CurrentExecutingRequests)
	gauge(FigureWaitingSeats, func(r *Row) *float64 { return &r.WaitingSeats }, metrics.CurrentInqueueSeats)
	gauge(FigureSeatsInUse, func(r *Row) *float64 { return &r.SeatsInUse },
		metrics.CurrentExecutingSeats, metrics.RequestConcurrencyInUse, metrics.CurrentExecutingRequests)
	limits := func(figure string, dst func(*Row) *float64, families ...string) {
		// A limit is per level: a level the family does not name has none.
		for _, f := range families {
			if !cur.Has(f) {
				continue
			}
			for name, v := range cur.SumBy(f, pl) {
				if r := rows[name]; r != nil && cur.Speaks(f, name) {
					r.set(figure, dst(r), v, FromMetrics)
				}
			}
			return
		}
	}
	limits(FigureNominalLimit, func(r *Row) *float64 { return &r.NominalLimit }, metrics.NominalLimitSeats, metrics.RequestConcurrencyLimit)
	limits(FigureCurrentLimit, func(r *Row) *float64 { return &r.CurrentLimit },
		metrics.CurrentLimitSeats, metrics.NominalLimitSeats, metrics.RequestConcurrencyLimit)
	for _, l := range stats {
		r := rows[l.Name]
		r.WaitP99 = l.WaitP99
		r.MeanUtilisation, r.FullFraction = l.MeanUtilisation, l.FullFraction
		if l.HasRates {
			r.HasRates, r.DispatchedPerSec, r.RejectedTotal = true, l.DispatchedPerSec, 0
			for k, v := range l.RejectedPerSec {
				if r.RejectedPerSec == nil {
					r.RejectedPerSec = map[string]float64{}
				}
				r.RejectedPerSec[k] = v
				r.RejectedTotal += v
			}
		}
	}
}

// unknown marks, while merging, a figure some instance lacks.
const unknown = "?"

// Merge sums the rows of several instances per level, as instance
// inst: each figure is the sum over the instances (NaN when one of them
// lacks it: a partial sum would pass for the whole), utilisation the ratio of the sums, the wait p99 the worst
// instance's (quantiles do not add), rates only when every instance has
// them. The result is sorted by name.
func Merge(inst string, rows []Row) []Row {
	by := map[string]*Row{}
	for _, r := range rows {
		m := by[r.Name]
		if m == nil {
			m = newRow(inst, r.Name)
			m.HasRates, m.DispatchedPerSec, m.RejectedTotal, m.RejectedCount = true, 0, 0, 0
			by[r.Name] = m
		}
		add := func(figure string, dst *float64, v float64) {
			// A sum is known only when every instance has the figure.
			if _, ok := r.From[figure]; !ok || math.IsNaN(*dst) && m.From[figure] == unknown {
				*dst, m.From[figure] = math.NaN(), unknown
				return
			}
			if math.IsNaN(*dst) {
				*dst = 0
			}
			*dst += v
			if m.From[figure] == "" {
				m.From[figure] = r.From[figure]
			}
		}
		add(FigureWaiting, &m.Waiting, r.Waiting)
		add(FigureExecuting, &m.Executing, r.Executing)
		add(FigureWaitingSeats, &m.WaitingSeats, r.WaitingSeats)
		add(FigureSeatsInUse, &m.SeatsInUse, r.SeatsInUse)
		add(FigureNominalLimit, &m.NominalLimit, r.NominalLimit)
		add(FigureCurrentLimit, &m.CurrentLimit, r.CurrentLimit)
		m.Queues += r.Queues
		m.HasRates = m.HasRates && r.HasRates
		m.DispatchedPerSec += r.DispatchedPerSec
		m.RejectedTotal += r.RejectedTotal
		for k, v := range r.RejectedPerSec {
			if m.RejectedPerSec == nil {
				m.RejectedPerSec = map[string]float64{}
			}
			m.RejectedPerSec[k] += v
		}
		if r.RejectedCount < 0 || m.RejectedCount < 0 {
			m.RejectedCount = -1
		} else {
			m.RejectedCount += r.RejectedCount
		}
		if !math.IsNaN(r.WaitP99) && (math.IsNaN(m.WaitP99) || r.WaitP99 > m.WaitP99) {
			m.WaitP99 = r.WaitP99
		}
	}
	for _, m := range by {
		for f, from := range m.From {
			if from == unknown {
				delete(m.From, f)
			}
		}
		if !m.HasRates {
			m.DispatchedPerSec, m.RejectedTotal, m.RejectedPerSec = math.NaN(), math.NaN(), nil
		}
	}
	return sorted(by)
}

// Missing says which input s lacks for its level table rows (Compute's),
// for a note: "" when it has a whole scrape of the metrics (the dumps only
// refine them). Metrics that are no whole scrape (a grep of some
// families, which holds neither apiserver_flowcontrol_dispatched_requests_total
// nor apiserver_request_total) name the columns no row has a figure of.
func Missing(s *dump.Snapshot, rows []Row) string {
	prev, cur := s.LatestMetrics()
	switch {
	case cur == nil && (s.PriorityLevelDump != nil || RequestDumpRead(s) || QueueDumpRead(s)):
		return "no metrics were read, only the debug dumps: the limits, utilisation, rates and queue wait p99 show as -"
	case cur == nil:
		return "neither metrics nor debug dumps were read"
	case cur.Has(metrics.DispatchedRequestsTotal) || cur.Has(metrics.FamilyRequestTotal):
		return ""
	}
	var absent []string
	for _, c := range TopColumns {
		if c.Figure == nil || c.Kind == Rate || c.Kind == Reasons {
			continue
		}
		if !slices.ContainsFunc(rows, func(r Row) bool { return !math.IsNaN(c.Figure(r)) }) {
			absent = append(absent, c.Title)
		}
	}
	var out []string
	if len(absent) > 0 {
		show := "they show"
		if len(absent) == 1 {
			show = "it shows"
		}
		out = append(out, fmt.Sprintf("its metrics are part of a scrape (%s), without the families of %s: %s as -", familiesOf(cur), textfmt.JoinAnd(absent), show))
	}
	if prev == nil {
		out = append(out, "DISPATCHED/S and REJECTED/S need two timed scrapes (the cluster, or a bundle)")
	}
	return strings.Join(out, "; ")
}

// NoFigure says what the input of s held when none of its rows has a
// figure to show, for an error; "" when one has.
func NoFigure(s *dump.Snapshot, rows []Row) string {
	for _, r := range rows {
		for _, c := range TopColumns {
			if c.Figure != nil && !math.IsNaN(c.Figure(r)) {
				return ""
			}
		}
	}
	prev, cur := s.LatestMetrics()
	if cur == nil {
		if s.PriorityLevelDump != nil || RequestDumpRead(s) || QueueDumpRead(s) {
			return "its debug dumps list no priority level"
		}
		return "neither metrics nor debug dumps were read"
	}
	names := make([]string, 0, len(rows))
	for _, r := range rows {
		names = append(names, r.Name)
	}
	const shown = 5
	what := "levels " + textfmt.JoinAnd(names)
	switch {
	case len(names) == 0:
		what = "no priority level"
	case len(names) == 1:
		what = "level " + names[0]
	case len(names) > shown:
		what = fmt.Sprintf("levels %s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
	}
	give := "give"
	if strings.HasSuffix(familiesOf(cur), " alone") {
		give = "gives"
	}
	out := fmt.Sprintf("its metrics hold %s (of %s), which %s no figure of the table", familiesOf(cur), what, give)
	if cur.Has(metrics.RejectedRequestsTotal) && prev == nil {
		out += fmt.Sprintf(" (%s gives REJECTED/S over two scrapes; one scrape's totals since the apiserver started are explain 429's)", metrics.RejectedRequestsTotal)
	}
	return out
}

// familiesOf names the APF families of a scrape, the first few.
func familiesOf(cur *metrics.Scrape) string {
	var fams []string
	for f := range cur.Families {
		if strings.HasPrefix(f, metrics.FlowcontrolPrefix) {
			fams = append(fams, f)
		}
	}
	sort.Strings(fams)
	const shown = 3
	switch {
	case len(fams) == 0:
		return "no APF family"
	case len(fams) == 1:
		return fams[0] + " alone"
	case len(fams) == shown+1:
		return strings.Join(fams[:shown], ", ") + " and 1 more APF family"
	case len(fams) > shown:
		return strings.Join(fams[:shown], ", ") + fmt.Sprintf(" and %d more APF families", len(fams)-shown)
	}
	return textfmt.JoinAnd(fams)
}
