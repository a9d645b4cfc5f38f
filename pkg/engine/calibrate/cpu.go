package calibrate

import (
	"fmt"
	"slices"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// Runtime is what the recorded server's Go runtime and APF counted between
// two /metrics scrapes taken around the recorded time: its garbage
// collections, the CPU time of the collector's mark workers (as the runtime
// accounts it: the time a worker held a P, throttled or not), the requests
// APF dispatched, and GOMAXPROCS.
type Runtime struct {
	Span       time.Duration
	GCCycles   float64
	MarkCPU    time.Duration
	Dispatched float64
	GOMAXPROCS int
}

// RunFromStalls is how far the running per period the CFS model reads
// from the stalls (no CPU limit given) came from the limit's on the
// project's recordings: the starved ones, whose 0.2 cores over GOMAXPROCS
// 2 give 10ms of each 100ms period, from httplog + audit (7.4-13.6ms) and
// from the audit log alone (7.6-12.9ms). simulate says it beside the figure;
// TestCalibrationNeverContradictsTheRecordings, which calibrates every
// recording without its limit, holds it to what they read.
func RunFromStalls() RunRange {
	return RunRange{Low: 7400 * time.Microsecond, High: 13600 * time.Microsecond, Limit: 10 * time.Millisecond}
}

// RunRange is a range of running per period (RunFromStalls): from Low to
// High where the CPU limit gave Limit.
type RunRange struct{ Low, High, Limit time.Duration }

// CPUModel is the replay's model of a server whose CPU limit throttles it
// while Go's garbage collector marks. The collector's idle mark workers
// take every P the server's goroutines leave idle, so while a collection
// marks, the server burns its CFS quota within the first RunPerPeriod of
// each period and then waits for the next: an execution in progress then
// ends only after the period boundary (the stalls the recording shows). A
// collection starts every ExecutionsPerCollection dispatches (the memory
// the requests allocate sets the collector's pace) and marks for Mark.
//
// Where the figures come from:
//   - Period is the CFS period (100 ms unless the node changed it); Phase
//     is where its boundaries fall (since the workload's start), read from
//     the ends of the stalled executions, less the median execution;
//   - RunPerPeriod: an execution stalled where its period's quota ran out,
//     q into the period, resumes at the next boundary and finishes the
//     rest, so it lasts Period − q + its own execution: q = Period +
//     median − the stall. While a collection marks, its workers fill
//     every P and the quota runs out at RunPerPeriod; outside the marks
//     fewer Ps burn it, and it runs out later (up to Quota into the
//     period, later still after idle time). Every stall's q is at least
//     RunPerPeriod, and about half the stalls fall in the marks: it is
//     read from the middle of the longest RunStallShare of the stalls of
//     about a period (FullPeriodStalls, those between half a period and a
//     period and a median long), not from the middle of them all, which
//     mixes in the stalls outside the marks (on the starved recordings,
//     up to 2.9 times the 0.2 CPU limit's 10 ms); of a handful, from the
//     middle of the longest RunStallsAtLeast (a handful's quarter is an
//     execution longer than the median, not the quota). Where the
//     server's CPU limit is known (CPULimit, in cores), it is the time
//     GOMAXPROCS busy Ps take to burn the quota: CPULimit × Period /
//     GOMAXPROCS, exact while the collector's workers fill every P, and
//     the stalls are not needed;
//   - ExecutionsPerCollection and Mark: from the Runtime counters, the
//     requests dispatched per collection, and the mark workers' CPU per
//     collection over GOMAXPROCS (every P the server's goroutines leave
//     marks, and the runtime counts a worker's time on its P, throttled or
//     not), with the recorded stalls' time added to that CPU: a P whose
//     goroutine was throttled mid-execution was not marking.
//
// Outside the marks the quota is the server's all the same: Quota, the CPU
// it may spend per period (RunPerPeriod × GOMAXPROCS, CPULimit × Period
// where the limit is known), is spent by the executions as they run and
// by everything else the server does, and once a period's is spent,
// whatever still runs waits for the next boundary. A burst of executions
// in one period, a few requests at once on a level with more seats, or a
// queue drained back to back, stalls so without any collection (half the
// stalls of a server held to a fifth of a core fall outside every mark).
// What the server spent outside the marks over the metrics' span is the
// process's CPU (process_cpu_seconds_total) less the marks' (Collections
// × Mark at the quota's pace): the executions spend CPUPerWork of their
// work (the service time, not the overhead of a dispatch from a queue,
// which holds the seats without running) as they run, at most all of it
// (a goroutine runs on one core at a time), and the rest, Background, is
// spent at an even pace (authentication, 429s, watches, the scrapes), so
// that the replay of the recorded run spends what the server did. An
// execution recorded longer than the quota lets one goroutine run ran
// under the quota itself: it spends at most what the quota gave it (the
// quota's share of its time, and one period's).
//
// The recorded stalls are taken out of the recorded execution times (each
// becomes its level's median) and the model puts them back where its
// collections fall and its quota runs out; where a collection starts
// relative to the workload is unknown, so the replay runs once per phase
// of CPUPhases and the result is the run nearest their mean.
type CPUModel struct {
	// params are the calibration's thresholds
	params       *Params
	Level        string   `json:"level"`
	Period       Duration `json:"period"`
	Phase        Duration `json:"phase"`
	RunPerPeriod Duration `json:"runPerPeriod"`
	// CPULimit is the CPU limit RunPerPeriod was taken from, in cores; 0
	// when it was read from the stalls.
	CPULimit                float64  `json:"cpuLimit,omitempty"`
	FullPeriodStalls        int      `json:"fullPeriodStalls"`
	ExecutionsPerCollection float64  `json:"executionsPerCollection"`
	Mark                    Duration `json:"mark"`
	Collections             float64  `json:"collections"`
	Dispatched              float64  `json:"dispatched"`
	GOMAXPROCS              int      `json:"gomaxprocs"`
	MetricsSpan             Duration `json:"metricsSpan"`
	// Stalled is the recorded stalls' time beyond their levels' medians,
	// which Mark counts with the mark workers' CPU.
	Stalled Duration `json:"stalled"`
	// Quota is the CPU the server may spend per period.
	Quota Duration `json:"quota"`
	// CPUPerWork is the CPU an execution spends per second of its work (at
	// most 1), and Background the cores the rest of the server spent
	// outside the marks; both 0 where the metrics do not tell (the
	// process's CPU needs two scrapes), and an execution then spends its
	// work. The dispatch check may raise CPUPerWork (fitPerWork).
	CPUPerWork float64 `json:"cpuPerWork,omitempty"`
	Background float64 `json:"background,omitempty"`
	// CPUPerWorkRead, where the dispatch check raised CPUPerWork, is what
	// the process's CPU read (fitPerWork): a floor, as the marks it is
	// read without count the stalls outside them as theirs.
	CPUPerWorkRead float64 `json:"cpuPerWorkRead,omitempty"`
	// PerWorkDispatches are the replay of the recorded configuration's
	// dispatches of Level beyond the server's, as a share of the
	// server's, at CPUPerWorkRead and at 1, where fitPerWork raised it.
	PerWorkDispatches [2]float64 `json:"perWorkDispatches,omitzero"`
	// RequestCost is what a request costs before APF (the median latency
	// of the recorded 429s: authentication and the answer), which the
	// replay spends from the period's quota when the request arrives
	// (fairqueue.ArrivalCPU); Background is the rest of the server
	// without it. 0 without 429s or where the rest is smaller: Background
	// then holds it all. The dispatch check may raise it (fitCost).
	RequestCost Duration `json:"requestCost,omitempty"`
	// RejectedLatency is the median latency of the recorded 429s, the
	// most RequestCost is raised to.
	RejectedLatency Duration `json:"rejectedLatency,omitempty"`
	// RequestCostRead, where the dispatch check raised RequestCost, is
	// what the process's CPU held of it (fitCost), and CostDispatches the
	// replays' dispatches of Level beyond the server's, as a share of the
	// server's, at RequestCostRead and at RejectedLatency.
	RequestCostRead Duration   `json:"requestCostRead,omitempty"`
	CostDispatches  [2]float64 `json:"costDispatches,omitzero"`
}

// maxLong bounds the long executions kept per level for RunPerPeriod.
const maxLong = 1 << 16

// Throttled says whether the stalls of level l tell a CFS quota's
// throttling: MinThrottledStalls of them or more, AtBoundaryThrottled of
// them ending at one phase of the period. The CPU model is built from such
// a level (cpuModel), and simulate takes its server to be held to a CPU
// quota.
func (p *Params) Throttled(l *Level) bool {
	return l.Stalls >= p.MinThrottledStalls && l.StallsAtPeriodStart >= p.AtBoundaryThrottled
}

// cpuModel derives the model from the level whose stalls tell a CFS
// quota's throttling (the one with the most stalls), or says why there is
// none; both are empty when no level was throttled so. The level need not
// be short of CPU: a recorded run with few stalls, on a server throttled
// all the same, is one the collector happened to spare, and a change that
// adds work meets the collector as often as the runtime's pace says.
func cpuModel(params *Params, levels []Level, accs map[string]*levelAcc, rt *Runtime, off bool, limit float64, uncovered *Uncovered) (*CPUModel, string, Need) {
	var lv *Level
	for i := range levels {
		l := &levels[i]
		if params.Throttled(l) && (lv == nil || l.Stalls > lv.Stalls) {
			lv = l
		}
	}
	if lv == nil {
		return nil, "", NeedNothing
	}
	if off {
		return nil, "the CPU model was turned off", NeedNothing
	}
	if rt == nil && uncovered != nil {
		return nil, uncovered.Why(), NeedCoveringScrapes
	}
	if rt == nil {
		return nil, "the metrics do not tell how often the garbage collector ran: it needs two /metrics scrapes around the recorded time (a bundle whose two scrapes span the overload) from a server that exports the Go runtime's metrics", NeedScrapes
	}
	if rt.GCCycles < 2 || rt.Dispatched < 1 || rt.GOMAXPROCS < 1 {
		return nil, fmt.Sprintf("the metrics' two scrapes, %v apart, saw %.0f garbage collections and %.0f dispatches: too few to tell their pace", rt.Span.Round(time.Second), rt.GCCycles, rt.Dispatched), NeedScrapes
	}
	P := params.CFSPeriod
	med := time.Duration(lv.MedianExecution)
	th := stallThreshold(params, med)
	var full []time.Duration
	for _, e := range accs[lv.Level].long {
		if e >= th && e >= P/2 && e <= P+med+params.PeriodSlack {
			full = append(full, e)
		}
	}
	var run time.Duration
	switch {
	case limit > 0:
		run = time.Duration(limit * float64(P) / float64(rt.GOMAXPROCS))
		if run >= P {
			return nil, fmt.Sprintf("a CPU limit of %g cores lets GOMAXPROCS %d busy Ps run all through a CFS period, yet %s's stalls tell a quota's throttling: is the limit the server's?", limit, rt.GOMAXPROCS, lv.Level), NeedNothing
		}
		run = max(run, params.MinRunPerPeriod)
	case len(full) < params.MinFullPeriodStalls:
		return nil, fmt.Sprintf("none of %s's stalls lasted about one CFS period, which would tell how long the server ran in each period (the server's CPU limit, when given, tells it)", lv.Level), NeedCPULimit
	default:
		// the stall at the middle of the longest RunStallShare of them,
		// and of at least RunStallsAtLeast
		slices.Sort(full)
		k := max(int(params.RunStallShare*float64(len(full))), min(len(full), params.RunStallsAtLeast))
		run = min(max(P+med-full[max(len(full)-1-k/2, 0)], params.MinRunPerPeriod), P/2)
	}
	phase := (time.Duration(lv.PeriodPhase) - med) % P
	if phase < 0 {
		phase += P
	}
	// While a collection marks, a P whose request goroutine was throttled
	// mid-execution holds that goroutine, not a mark worker, until the
	// next period: the runtime counts that time as the application's, so
	// the marks' wall time is their workers' CPU plus the stalls'.
	var stalled time.Duration
	for _, l := range levels {
		m := time.Duration(l.MedianExecution)
		th := stallThreshold(params, m)
		if la := accs[l.Level]; la != nil && m > 0 {
			for _, e := range la.long {
				if e >= th {
					stalled += e - m
				}
			}
		}
	}
	mark := time.Duration((float64(rt.MarkCPU) + float64(stalled)) / rt.GCCycles / float64(rt.GOMAXPROCS))
	return &CPUModel{
		params:  params,
		Stalled: Duration(stalled), Quota: Duration(run * time.Duration(rt.GOMAXPROCS)),
		Level: lv.Level, Period: Duration(P), Phase: Duration(phase), RunPerPeriod: Duration(run), CPULimit: max(limit, 0), FullPeriodStalls: len(full),
		ExecutionsPerCollection: rt.Dispatched / rt.GCCycles, Mark: Duration(min(max(mark, P), time.Minute)),
		Collections: rt.GCCycles, Dispatched: rt.Dispatched, GOMAXPROCS: rt.GOMAXPROCS, MetricsSpan: Duration(rt.Span),
	}, "", NeedNothing
}

// setCPUSpent sets CPUPerWork, Background and RequestCost from the
// process's CPU u: its mean over the metrics' span, less the marks' (which
// spend the quota whole, Quota per Period, Collections × Mark in all),
// over the time the workload ran (span, from its first arrival to its last
// end, at most the metrics' span), against the executions' work in it; of
// the rest, the workload's requests cost cost each before APF, at their
// arrivals (RequestCost), as far as the rest holds them.
func (m *CPUModel) setCPUSpent(u *metrics.CPUUse, work, span time.Duration, requests int, cost time.Duration) {
	m.CPUPerWork, m.Background, m.RequestCost, m.RejectedLatency = 0, 0, 0, Duration(max(cost, 0))
	if u == nil || u.Span <= 0 || u.ProcessCPU <= 0 || work <= 0 || span <= 0 || m.MetricsSpan <= 0 || m.Period <= 0 {
		return
	}
	span = min(span, time.Duration(m.MetricsSpan))
	used := u.ProcessCPU.Seconds() / u.Span.Seconds()
	marks := m.Collections * time.Duration(m.Mark).Seconds() * float64(m.Quota) / float64(m.Period) / time.Duration(m.MetricsSpan).Seconds()
	spent := max(used-marks, 0) * span.Seconds()
	if spent <= 0 {
		return
	}
	m.CPUPerWork = min(spent/work.Seconds(), 1)
	m.Background = (spent - m.CPUPerWork*work.Seconds()) / span.Seconds()
	if requests > 0 && cost > 0 && m.Background > 0 {
		arrivals := min(float64(requests)*cost.Seconds()/span.Seconds(), m.Background)
		m.RequestCost = Duration(time.Duration(arrivals * float64(span) / float64(requests)))
		m.Background -= arrivals
	}
}

// Server returns the model's CPU for the i-th of CPUPhases replays.
func (m *CPUModel) Server(i int) fairqueue.CPU {
	phases := DefaultParams().CPUPhases // a model built by hand, without a calibration
	if m.params != nil {
		phases = m.params.CPUPhases
	}
	return &throttled{m: m, next: (float64(i%phases) + 0.5) / float64(phases) * m.ExecutionsPerCollection}
}

// throttled is one replay's server under the model.
type throttled struct {
	m     *CPUModel
	count float64
	next  float64
	// marks are the starts of the collections that may still be marking
	marks []time.Duration
	// spent is the quota the executions spent, by period (its index since
	// Phase), from the period of the latest start on
	spent map[int64]time.Duration
}

// period is the index (since Phase) and the start of the CFS period at.
func (t *throttled) period(at time.Duration) (int64, time.Duration) {
	P, phase := time.Duration(t.m.Period), time.Duration(t.m.Phase)
	ps := at - ((at-phase)%P+P)%P
	return int64((ps - phase) / P), ps
}

// Arrive implements fairqueue.ArrivalCPU: the request's cost before APF
// is spent from the quota of the period it arrives in, and what that
// period has no more of from the next.
func (t *throttled) Arrive(at time.Duration) {
	c := time.Duration(t.m.RequestCost)
	quota := time.Duration(t.m.Quota)
	if c <= 0 || t.m.Period <= 0 || quota <= 0 {
		return
	}
	if t.spent == nil {
		t.spent = map[int64]time.Duration{}
	}
	k, _ := t.period(at)
	for ; c > 0; k++ {
		d := min(c, max(quota-t.spent[k], 0))
		t.spent[k] += d
		c -= d
	}
}

// End implements fairqueue.CPU: dispatches count towards the next
// collection; an execution that runs into a mark runs only in the first
// RunPerPeriod of each period, and outside the marks it spends the
// period's quota as it runs, until it ends or the quota is spent.
func (t *throttled) End(start, hold, work time.Duration) time.Duration {
	t.count++
	if t.count >= t.next {
		t.marks = append(t.marks, start)
		t.next += t.m.ExecutionsPerCollection
	}
	mark := time.Duration(t.m.Mark)
	i := 0
	for i < len(t.marks) && t.marks[i]+mark <= start {
		i++
	}
	t.marks = t.marks[i:]
	P, run, quota := time.Duration(t.m.Period), time.Duration(t.m.RunPerPeriod), time.Duration(t.m.Quota)
	if k, _ := t.period(start); len(t.spent) > 64 {
		for j := range t.spent {
			if j < k {
				delete(t.spent, j)
			}
		}
	} else if t.spent == nil {
		t.spent = map[int64]time.Duration{}
	}
	// the CPU the execution spends per unit of its time
	rate := 0.0
	if hold > 0 {
		perWork := t.m.CPUPerWork
		if perWork <= 0 {
			perWork = 1
		}
		rate = min(perWork*float64(work), float64(quota)+float64(quota)/float64(P)*float64(hold)) / float64(hold)
	}
	now, rem := start, hold
	for rem > 0 {
		// the mark in progress at now, or the next one
		in, next := false, time.Duration(-1)
		for _, s := range t.marks {
			if s <= now && now < s+mark {
				in = true
				break
			}
			if s > now {
				next = s
				break
			}
		}
		k, ps := t.period(now)
		if in {
			// runs until ps+run, throttled until ps+P
			if now < ps+run {
				d := min(rem, ps+run-now)
				rem -= d
				now += d
				if rem == 0 {
					return now
				}
			}
			t.spent[k] = quota
			now = ps + P
			continue
		}
		// runs until it ends, the next mark starts, the period ends or
		// its quota is spent
		stop := ps + P
		if next >= 0 && next < stop {
			stop = next
		}
		d := min(rem, stop-now)
		if rate > 0 && quota > 0 {
			// the rest of the server spends Background from ps on
			bg := t.m.Background
			left := float64(quota-t.spent[k]) - bg*float64(now-ps)
			d = min(d, max(time.Duration(left/(rate+bg)), 0))
			if d == 0 && t.spent[k] == 0 && left > 0 {
				d = min(rem, stop-now, 1) // at least 1 ns of a period's quota
			}
		}
		t.spent[k] += time.Duration(float64(d) * rate)
		rem -= d
		now += d
		if rem > 0 && now < stop {
			now = ps + P // the quota is spent
		}
	}
	return now
}

// cfsExcess is how far beyond the server's dispatches rec of level, as a
// share of them, the replay of the recorded configuration dispatched (rep),
// where level is the CPU model's and the server dispatched MinEvidence or
// more: what fitPerWork and fitCost fit to.
func (r *Result) cfsExcess(level string, rec, rep int64) (float64, bool) {
	if r.CPU == nil || r.CPU.Level != level || rec < int64(r.params.MinEvidence) {
		return 0, false
	}
	return float64(rep-rec) / float64(rec), true
}

// fitStep is how far a fit of the CPU model to the recorded dispatches
// (fitPerWork, fitCost) has gone: the replay at the figure read comes
// first, then, where the fit raised the figure, the one at its ceiling.
type fitStep uint8

const (
	fitRead fitStep = iota
	fitRaised
	fitDone
)

// fitPerWork holds the CPU model's CPU per work to the dispatches of its
// level, from the replays of the recorded configuration (CheckDispatches;
// excess the replay's dispatches beyond the server's, cfsExcess). The
// process's CPU reads it from below: the marks' CPU it is read without
// counts every recorded stall as theirs (Mark), and half of a quota-bound
// server's stalls fall outside them, where the executions spent the quota.
// And a goroutine runs on one core at a time: at most 1. Where the replay
// at the figure read dispatches more than CFSDispatchTolerance beyond the
// server, the executions spent more of the quota than that: the replay is
// run again at 1, and, where that dispatches fewer than the server, at the
// figure between the two where the dispatches meet the server's (linear
// between the two replays). It returns whether it changed the figure.
func (r *Result) fitPerWork(excess float64) bool {
	m := r.CPU
	if m.CPUPerWork <= 0 || !r.params.runs(RulePerWorkFit) || r.perWorkStep == fitDone {
		return false
	}
	if r.perWorkStep == fitRead {
		// the replay at the figure the process's CPU read
		r.perWorkStep = fitDone
		if m.CPUPerWork >= 1 || excess <= r.params.CFSDispatchTolerance {
			return false
		}
		m.CPUPerWorkRead, m.CPUPerWork = m.CPUPerWork, 1
		m.Background, m.RequestCost = 0, 0
		m.PerWorkDispatches[0] = excess
		r.perWorkStep = fitRaised
		return true
	}
	// the replay at 1
	r.perWorkStep = fitDone
	if !fewerAtCeiling(&m.PerWorkDispatches, excess) {
		return false
	}
	m.CPUPerWork = between(m.CPUPerWorkRead, 1, m.PerWorkDispatches)
	return true
}

// fewerAtCeiling keeps the dispatches beyond the server's of a fit's
// replay at its ceiling (excess, as d[1]; d[0] the replay's at the figure
// read) and says whether it dispatched fewer than the server: the figure
// then lies between the two (between).
func fewerAtCeiling(d *[2]float64, excess float64) bool {
	d[1] = excess
	return excess < 0
}

// between is the figure where the line through a fit's two replays meets
// the server's dispatches: d their dispatches beyond the server's, at the
// figure read, lo, and at the ceiling, hi.
func between(lo, hi float64, d [2]float64) float64 {
	return lo + (hi-lo)*d[0]/(d[0]-d[1])
}

// fitCost holds the arrivals' cost to the dispatches of the CPU model's
// level where the process's CPU read that an execution spends all its work
// (CPUPerWork 1 as read, not fitted by fitPerWork: the executions do not
// take all the process's CPU), from the replays of the recorded
// configuration (CheckDispatches; excess the replay's dispatches beyond the
// server's, cfsExcess). setCPUSpent cuts RequestCost to what the process's
// CPU beyond the executions' work, less the marks', holds; the marks are
// counted with every recorded stall, some of which fell outside them
// (fitPerWork), so the cut reads it from below. Where the replay
// dispatches more than CFSDispatchTolerance beyond the server, it is run
// again with each request costing the median latency of the recorded 429s
// (RejectedLatency, what setCPUSpent would give without the cut), and,
// where that dispatches fewer than the server, at the cost between the two
// where the dispatches meet the server's (linear between the two
// replays). It returns whether it changed the cost.
func (r *Result) fitCost(excess float64) bool {
	m := r.CPU
	if m.CPUPerWork < 1 || m.CPUPerWorkRead > 0 || !r.params.runs(RuleCostFit) || !r.params.runs(RuleArrivals) || r.costStep == fitDone {
		return false
	}
	if r.costStep == fitRead {
		// the replay at the cost the process's CPU held
		r.costStep = fitDone
		if m.RequestCost >= m.RejectedLatency || excess <= r.params.CFSDispatchTolerance {
			return false
		}
		m.RequestCostRead, m.RequestCost = m.RequestCost, m.RejectedLatency
		m.Background = 0
		m.CostDispatches[0] = excess
		r.costStep = fitRaised
		return true
	}
	// the replay at the median latency of the 429s
	r.costStep = fitDone
	if !fewerAtCeiling(&m.CostDispatches, excess) {
		return false
	}
	m.RequestCost = Duration(between(float64(m.RequestCostRead), float64(m.RejectedLatency), m.CostDispatches))
	return true
}
