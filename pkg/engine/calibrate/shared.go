package calibrate

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// SharedCPU is the replay's model of the server's CPU shared by every
// request it executes, whatever its level: once more requests execute at
// once than the server has cores for, each runs slower. A request that
// needs d of execution alone runs d × Stretch(n) when n requests execute
// with it, itself included:
//
//	Stretch(n) = 1 − Share + Share × max(1, n / Capacity)
//
// Share of an execution is CPU shared with the requests in flight on
// Capacity cores (processor sharing); the rest does not stretch with them
// (writing a response to a client that reads it slowly, waiting on etcd, a
// part the server runs on a core the others leave). Share and Capacity are
// fitted to the recording: for every execution the recording holds (its
// start and end, from its latency and execution time), the requests in
// flight while it ran are counted server-wide (their mean over the
// execution), and the fit is the pair under which the executions of each
// kind of request (verb, resource, query: kindOf) vary least once each is
// divided by its stretch (the mean absolute difference of their logarithms
// from their kind's median, which is the kind's demand alone). The fit is
// kept only where the executions did stretch: when a share MinStretched or
// more of them ran with more than Capacity in flight and the stretch
// explains MinImprovement of their spread; otherwise the recorded
// execution times are replayed as recorded.
//
// The model explains a crowded server (one whose cores other processes,
// or its own requests, keep busy) and a CPU quota alike, as a capacity:
// the cores the crowd leaves; under a quota, the cores the executions
// shared within a CFS period (a server held to one CPU with two Ps runs on
// two cores at once until the period's quota is spent). What it cannot explain
// is time-correlated: a garbage collection exhausting a CFS quota stalls
// whatever runs, however few (CPUModel), so the two compose: an execution
// is stretched by the requests in flight first, and then stalled where a
// collection falls.
//
// The process's CPU and the scheduler's latencies (CPUUse) say how busy
// the server's CPU was; they are its evidence in the calibration table,
// and the capacity is checked against them: the fitted capacity is not
// more than the cores the server runs on at once, GOMAXPROCS. A CPU limit
// bounds the CPU time per period, not the cores at once (the CFS model
// holds it), so it stands for the cores only where the metrics do not
// give GOMAXPROCS.
type SharedCPU struct {
	// From is what the model rests on: "saturated", the metrics show
	// the server's CPU saturated over the workload's window
	// (saturatedShared); "executions", share and capacity fitted to how
	// the recorded executions stretched (fitShared); "assumed saturated",
	// no evidence, one end of a range (assumeSaturated); "cpu evidence",
	// the executions did not stretch, and the metrics' CPU evidence gives
	// the CPU each needs and the cores they share, for a change that runs
	// more at once than the recording did (cpuEvidenceShared).
	From SharedFrom `json:"from"`
	// Capacity is the CPU the requests shared, in cores, and Share the
	// part of an execution that stretches with them.
	Capacity float64 `json:"capacity"`
	Share    float64 `json:"share"`
	// Cores is what the server could run on at once: GOMAXPROCS, or the
	// CPU limit when the metrics do not give GOMAXPROCS (CoresFrom says
	// which); 0 when unknown.
	Cores     float64     `json:"cores,omitempty"`
	CoresFrom CoresSource `json:"coresFrom,omitempty"`
	// Used is the CPU the server's process used over MetricsSpan, in
	// cores, and RunnableWait the mean time its goroutines waited for a
	// P (at least: the histogram's lower bounds); absent when the
	// metrics do not tell.
	Used         *float64  `json:"used,omitempty"`
	RunnableWait *Duration `json:"runnableWait,omitempty"`
	MetricsSpan  Duration  `json:"metricsSpan,omitempty"`
	// Executions and Kinds are what the fit read; MaxInFlight and
	// MeanInFlight the requests executing during those executions (the
	// mean over each).
	Executions   int     `json:"executions"`
	Kinds        int     `json:"kinds"`
	MaxInFlight  int     `json:"maxInFlight"`
	MeanInFlight float64 `json:"meanInFlight"`
	// Stretched is the share of the executions that started with more
	// than Capacity in flight, and MeanStretch their mean stretch.
	Stretched   float64 `json:"stretched"`
	MeanStretch float64 `json:"meanStretch"`
	// Spread is the executions' mean absolute log-difference from their
	// kind's demand under the model; SpreadRecorded the same without it.
	Spread         float64 `json:"spread"`
	SpreadRecorded float64 `json:"spreadRecorded"`

	// Saturated, From "saturated", is how the capacity was read.
	Saturated *Saturated `json:"saturated,omitempty"`
	// CPUEvidence, From "cpu evidence", is how the capacity was read.
	CPUEvidence *CPUEvidence `json:"cpuEvidence,omitempty"`

	// RequestsCPU is the CPU time the model says the executions needed
	// (each one's share of its execution alone), to set beside the
	// process's (Used over MetricsSpan), which also holds everything the
	// server does outside APF's executions.
	RequestsCPU Duration `json:"requestsCPU"`
	// Demands are the execution times alone of the kinds of request
	// fitted (the medians once each is divided by its stretch), the
	// commonest first, at most maxDemands.
	Demands []KindDemand `json:"demands,omitempty"`

	// stretch is, by record index, the stretch the recorded execution
	// ran under, which Apply divides it by
	stretch []float32
}

// Stretch is the factor an execution starting with n requests executing
// (itself included) runs longer than alone.
func (m *SharedCPU) Stretch(n int) float64 { return m.stretchOf(float64(n)) }

func (m *SharedCPU) stretchOf(n float64) float64 { return stretch(n, m.Capacity, m.Share) }

func stretch(n, capacity, share float64) float64 { return 1 - share + share*max(1, n/capacity) }

// KindDemand is the execution time alone of one kind of request (its
// verb, resource and query), with the executions it was read from.
type KindDemand struct {
	Kind       string   `json:"kind"`
	Executions int      `json:"executions"`
	Demand     Duration `json:"demand"`
	kind       int32
}

// Saturated is the evidence of a saturated server's capacity
// (SharedFromSaturated): over Busy, the time the recorded executions were
// in flight (at most the metrics' span), the process used ProcessCPU; its
// Requests requests (rejected or not) cost RequestCost each before APF,
// the median latency of its Rejected 429s (a rejection is that work and
// its answer); the executions shared the rest, Capacity = (ProcessCPU −
// Requests × RequestCost) / Busy cores.
type Saturated struct {
	RunnableWait Duration `json:"runnableWait"`
	Busy         Duration `json:"busy"`
	ProcessCPU   Duration `json:"processCPU"`
	Requests     int      `json:"requests"`
	Rejected     int      `json:"rejected"`
	RequestCost  Duration `json:"requestCost"`
}

// maxDemands bounds the kinds whose demands are kept.
const maxDemands = 10

// maxFit bounds the executions the capacity is fitted on (evenly
// sampled beyond it).
const maxFit = 20000

// execution is one recorded execution the fit reads.
type execution struct {
	start, end time.Duration
	kind       int32
	idx        int32
	// level indexes the caps inFlight is given
	level int32
	// estimated: counted in flight, not fitted on (an audit record
	// that found its level with room is not: its latency is taken for
	// its execution)
	estimated bool
	// unrecorded: an audit log's execution, estimated in any way (its
	// level's measured ratio takes it to APF's time: measuredRatios)
	unrecorded bool
	// arrival: when the request arrived (oneSeatExecutions)
	arrival time.Duration
}

// DeriveShared fits the shared-CPU model (SharedCPU) to the workload src,
// which must yield the records Derive read, and sets r.Shared, or
// r.SharedWhy to why there is none.
func (r *Result) DeriveShared(src workload.Reader) error {
	r.Shared, r.SharedWhy, r.Headroom, r.saturatedEnd = nil, "", nil, nil
	if !r.Enabled {
		return nil
	}
	if r.prep.opts.NoCPUModel {
		r.SharedWhy = "the CPU model was turned off"
		return nil
	}
	kinds := map[kind]int32{}
	var execs []execution
	replayed := 0
	// the executions' work as the replay takes it, and the time from the
	// first arrival to the last end, for the CFS model
	var work, from, to time.Duration
	seen := false
	// the levels, numbered, with their caps
	levelID := map[string]int32{}
	var caps []int
	// recorded: the level has an execution time of its own (httplog's)
	var recorded []bool
	// every request of the workload, and the latencies of its 429s, for a
	// saturated server's cost of a request before APF
	requests := 0
	var rejections []time.Duration
	// the executions an audit log does not record, by level
	unrecorded := map[string]time.Duration{}
	err := r.readApplied(src, "the CPU model", func(a *applied, w *workload.Request) {
		x := &a.x
		if a.ok && a.er.Info.Verb != "watch" {
			requests++
			if x.rejected && x.latency > 0 {
				rejections = append(rejections, x.latency)
			}
			if !seen || x.arrival < from {
				from, seen = x.arrival, true
			}
			to = max(to, x.arrival+max(x.latency, 0))
			if !x.rejected && w.HasServiceTime && w.ServiceTime > 0 {
				work += w.ServiceTime
				if x.execFrom != fromRecord {
					unrecorded[x.level] += w.ServiceTime
				}
			}
		}
		if !a.ok || x.rejected || !w.HasServiceTime || w.ServiceTime <= 0 || x.latency <= 0 || a.er.Info.Verb == "watch" || a.idx-1 > math.MaxInt32 {
			return
		}
		// an audit record faster than 500 ms: its execution is its
		// latency less the wait the replay gave it, which counts in
		// flight, but would fit the model to the replay's own errors;
		// one that found its level with room (rooms) was dispatched on
		// arrival and executed for its whole latency, with the filters
		// around it, which stretch with the requests in flight as the
		// execution does: both fits read it
		estimated := x.execFrom == fromReplay
		end := x.arrival + x.latency
		start := max(end-w.ServiceTime, x.arrival)
		if estimated && x.room {
			start, estimated = x.arrival, false
		}
		if estimated {
			replayed++
		}
		k := kindOf("", &a.er, w.URI)
		id, ok := kinds[k]
		if !ok {
			if len(kinds) >= maxKinds {
				return
			}
			id = int32(len(kinds))
			kinds[k] = id
		}
		level, ok := levelID[x.level]
		if !ok {
			level = int32(len(caps))
			levelID[x.level] = level
			lim := r.prep.limits[x.level]
			caps, recorded = append(caps, 0), append(recorded, false)
			if !x.exempt && !lim.Exempt {
				caps[level] = seatLimit(lim)
			}
		}
		recorded[level] = recorded[level] || x.execFrom == fromRecord
		execs = append(execs, execution{start: start, end: end, kind: id, idx: int32(a.idx - 1), level: level, estimated: estimated, unrecorded: x.execFrom != fromRecord, arrival: x.arrival})
	})
	if err != nil {
		return err
	}
	rej := rejectedOf(rejections)
	if r.CPU != nil {
		cost := rej.latency
		if !r.params.runs(RuleArrivals) {
			cost = 0
		}
		r.CPU.setCPUSpent(r.prep.opts.CPUUse, work, to-from, requests, cost)
	}
	replayed -= oneSeatExecutions(execs, caps, recorded)
	smp := sampleOf(execs, inFlight(execs, caps))
	r.saturatedEnd = assumeSaturated(execs, smp)
	// a server whose CPU the metrics show saturated: the executions
	// shared what it had, whatever the stretch fits would read. Its levels
	// hold requests in their queues all through, and APF dispatches a
	// waiting request the moment a seat frees: a level without execution
	// times of its own (an audit log alone) executes as many as it holds,
	// up to its seats, which its requests' arrivals and ends tell where
	// the estimated starts do not
	present := make([]bool, len(caps))
	for l := range caps {
		present[l] = caps[l] > 0 && !recorded[l]
	}
	if m, ok := saturatedShared(r.params, execs, func() sample { return sampleOf(execs, inFlightPresent(execs, caps, present)) }, requests, rej, r.prep.opts); ok {
		r.Shared = m
		return nil
	}
	m, why := fitShared(r.params, execs, smp, len(kinds))
	if !r.params.runs(RuleFitted) {
		m, why = nil, "the model runs without the fitted stretch"
	}
	if m == nil {
		// the audit log's executions of the levels whose time APF
		// measured are that time: the evidence reads the measure, not
		// the estimates, and they are estimates no longer
		ratio, levels := r.measuredRatios(levelID)
		mwork := work
		for name, id := range levelID {
			if f := ratio[id]; f > 0 {
				mwork -= time.Duration(float64(unrecorded[name]) * (1 - 1/f))
			}
		}
		r.Headroom = headroomOf(r.prep.opts, mwork, to-from)
		if r.Headroom != nil {
			var held float64
			if len(smp.n) > 0 {
				held = smp.sumN / float64(len(smp.n))
			}
			if mwork < work && work > 0 {
				held *= float64(mwork) / float64(work)
			}
			// the estimates the evidence would read: those of levels
			// APF did not measure
			unmeasured := replayed
			for _, e := range execs {
				if e.estimated && ratio[e.level] > 0 {
					unmeasured--
				}
			}
			r.Headroom.Shared = cpuEvidenceShared(r.prep.opts, r.CPU, mwork, to-from, requests, rej, held)
			r.Headroom.refuseEstimated(unmeasured, len(execs), r.params.MaxEstimatedShare)
			if m := r.Headroom.Shared; m != nil {
				// an execution that ran with more in flight than the
				// model's capacity ran stretched by it already: the
				// change's replay takes it back to its time alone, so
				// that at its recorded concurrency it runs as recorded
				m.keepStretches(execs, smp.fl)
				// and an audit log's estimate of a measured level to
				// APF's time
				for _, e := range execs {
					if f := ratio[e.level]; f > 0 && e.unrecorded {
						m.stretch[e.idx] *= float32(f)
					}
				}
				if len(levels) > 0 {
					m.CPUEvidence.Measured, m.CPUEvidence.EstimatedWork = levels, Duration(work)
				}
			}
		}
		if replayed > 0 {
			why += fmt.Sprintf(" (%d executions are only estimated, from audit events faster than 500 ms, which carry no timing of their own, and found their level without room; httplog's apf_execution_time records them all)", replayed)
		}
		r.SharedWhy = why
		return nil
	}
	names := make([]string, len(kinds))
	for k, id := range kinds {
		names[id] = k.String()
	}
	for i := range m.Demands {
		m.Demands[i].Kind = names[m.Demands[i].kind]
	}
	m.evidence(r.prep.opts)
	if m.Cores > 0 && m.Capacity*m.Share > m.Cores*r.params.CoresSlack {
		r.SharedWhy = fmt.Sprintf("the executions stretched as if %.0f%% of each shared %.2f cores, more than the %g the server had (%s): they wait for something other than the CPU", 100*m.Share, m.Capacity, m.Cores, m.CoresFrom.words())
		return nil
	}
	m.From = SharedFromExecutions
	r.Shared = m
	return nil
}

// Headroom is the CPU evidence of a recording whose executions did not
// stretch with the requests in flight (no SharedCPU): over the metrics'
// span the process used Used cores while the workload's executions were
// in flight InFlight at a time on average (the executions' time over the
// workload's window), so each execution in flight needed PerExecution =
// Used / InFlight cores (at most 1: the process's CPU also holds
// everything the server does outside the executions, so it is an upper
// bound). Cores is what the server can run for long: the smaller of its
// CPU limit and GOMAXPROCS. A change that runs n executions at once
// needs about n × PerExecution cores; where that is well beyond Cores the
// executions stretch, by how much the recording, which never ran that
// many at once, cannot tell.
type Headroom struct {
	Used, InFlight, PerExecution, Cores float64
	// Shared is the shared-CPU model this evidence gives a change that
	// runs more at once than the recording did (SharedFromCPUEvidence:
	// cpuEvidenceShared); nil where it gives none.
	Shared *SharedCPU
	// Estimated is the share of the executions that were an audit log's
	// estimates (latency less the replay's own wait, averaged per kind of
	// request) where it is above Params.MaxEstimatedShare: the evidence
	// then gives no model (Shared is nil), since its CPU per execution and
	// the concurrency the recording held rest on those estimates. An audit
	// log alone on levels of several seats overstated its executions by
	// 7-15% on average where httplog recorded them, and the model,
	// holding that concurrency, served 10-17% fewer LISTs than httplog's
	// did: 1.4 to 2.7 times the re-runs' 429s (docs/simulate.md). The
	// executions of a level whose time APF measured are not counted
	// (measuredRatios). 0 where the model was not refused for it.
	Estimated float64 `json:"estimated,omitempty"`
}

// CPUEvidence is how the shared-CPU model of the CPU evidence
// (SharedFromCPUEvidence) was read, for a recording whose executions did
// not stretch with the requests in flight: over the metrics' span the
// process used ProcessCPU; its Requests requests cost RequestCost each
// before APF (the median latency of its Rejected 429s, as a saturated
// server's model takes it: a rejection is that work and its answer); the
// rest, over Work (the recorded executions' time summed), is PerExecution
// cores for each execution in flight (at most 1). The executions share
// ExecutionCores: the cores (the smaller of GOMAXPROCS and the CPU limit)
// less the requests' cost over the workload's Span. So Capacity =
// ExecutionCores / PerExecution executions run at once before any
// stretches (at least 1: an execution alone ran as recorded), and beyond
// it each runs n / Capacity times its recorded time: the CPU the cores
// give, shared.
type CPUEvidence struct {
	ProcessCPU     Duration `json:"processCPU"`
	Work           Duration `json:"work"`
	Span           Duration `json:"span"`
	Requests       int      `json:"requests"`
	Rejected       int      `json:"rejected"`
	RequestCost    Duration `json:"requestCost"`
	PerExecution   float64  `json:"perExecution"`
	ExecutionCores float64  `json:"executionCores"`
	// InFlight is how many executions were in flight on average over a
	// recorded execution, itself included: they ran so many at once
	// without stretching, so the model holds at least as many (Capacity).
	InFlight float64 `json:"inFlight,omitempty"`
	// Measured are the levels whose executions, an audit log's
	// estimates, are read at the time APF measured for them
	// (Level.Measured): Work holds that time, EstimatedWork the
	// estimates', and the replay of a change on the model takes each
	// estimate to it (measuredRatios). Empty without.
	Measured      []string `json:"measured,omitempty"`
	EstimatedWork Duration `json:"estimatedWork,omitempty"`
}

// cpuEvidenceShared is the shared-CPU model the metrics' CPU evidence
// gives where the recorded executions did not stretch with the requests
// in flight (SharedFromCPUEvidence, CPUEvidence): every execution on the
// CPU (share 1), PerExecution cores each, sharing the cores the
// requests' cost before APF leaves them. At the recorded concurrency its
// executions fit in those cores, as the recording shows them (they did
// not stretch): it stretches only what runs more at once than they allow,
// by what they allow. nil where the evidence does not tell: no process
// CPU, no cores, no execution, or requests whose cost before APF takes
// all the CPU the process used or all the cores.
func cpuEvidenceShared(opts Options, cfs *CPUModel, work, span time.Duration, requests int, rej rejected, held float64) *SharedCPU {
	u := opts.CPUUse
	if u == nil || u.Span <= 0 || u.ProcessCPU <= 0 || work <= 0 || span <= 0 {
		return nil
	}
	cost := rej.latency
	before := float64(requests) * float64(cost)
	execCPU := float64(u.ProcessCPU) - before
	if execCPU <= 0 {
		return nil
	}
	m := &SharedCPU{From: SharedFromCPUEvidence, Share: 1}
	m.evidence(opts)
	// the cores the server runs on for long: a CPU limit below
	// GOMAXPROCS bounds the CPU time it gets, whatever runs at once;
	// unless the CPU model (cfs) spends that quota period by period and
	// stalls the executions when it is spent: its GOMAXPROCS Ps run side
	// by side until then, and the limit counted as cores as well would
	// hold the executions to it twice (a level of 1 seat on a server held
	// to 0.2 CPU, given 3: its LISTs took 2.2 ms alone and about 3 ms at
	// three at once in the re-runs, where 0.2 cores as the cores stretch
	// them three times; docs/simulate.md)
	// (evidence gave the limit as the cores where the metrics tell no
	// GOMAXPROCS)
	if opts.CPULimit > 0 && opts.CPULimit < m.Cores {
		if cfs != nil {
			m.CoresFrom = CoresWithinPeriod
		} else {
			m.Cores, m.CoresFrom = opts.CPULimit, CoresCPULimit
		}
	}
	if m.Cores <= 0 {
		return nil
	}
	ev := &CPUEvidence{ProcessCPU: Duration(u.ProcessCPU), Work: Duration(work), Span: Duration(span), Requests: requests, Rejected: rej.n, RequestCost: Duration(cost)}
	ev.PerExecution = min(execCPU/float64(work), 1)
	ev.ExecutionCores = m.Cores - before/float64(span)
	if ev.ExecutionCores <= 0 {
		return nil
	}
	// the recorded executions ran held at once on average without
	// stretching: their times are the times at that concurrency, and the
	// model stretches only beyond it (the cores over PerExecution can be
	// fewer, where PerExecution counts CPU the executions did not wait
	// for: six users' LISTs on a level of 2 seats, 1.9 at once, read
	// 0.59 of a core each on 1 core, 1.66 at once; the change to 5 seats
	// then ran every execution at 2 seats 1.2 times as long as recorded,
	// and predicted 184 429s where the re-run got 97)
	ev.InFlight = held
	m.Capacity = max(ev.ExecutionCores/ev.PerExecution, held, 1)
	m.CPUEvidence = ev
	return m
}

// rejected is what the recorded 429s tell of a request's cost before APF
// (authentication and the answer): how many there were, and their median
// latency (the upper of the two middle ones), 0 without any.
type rejected struct {
	n       int
	latency time.Duration
}

// rejectedOf is rejected of the recorded 429s' latencies.
func rejectedOf(latencies []time.Duration) rejected {
	if len(latencies) == 0 {
		return rejected{}
	}
	sorted := slices.Sorted(slices.Values(latencies))
	return rejected{n: len(sorted), latency: sorted[len(sorted)/2]}
}

// refuseEstimated drops the CPU evidence's model where more than
// maxShare of the n executions it read are an audit log's estimates
// (replayed of them), and says so (Estimated).
func (h *Headroom) refuseEstimated(replayed, n int, maxShare float64) {
	if h.Shared == nil || n <= 0 {
		return
	}
	if est := float64(replayed) / float64(n); est > maxShare {
		h.Shared, h.Estimated = nil, est
	}
}

// headroomOf reads the Headroom of the executions' work over the
// workload's window span from the metrics' evidence in opts; nil where
// it does not tell (no process CPU, no cores, no execution).
func headroomOf(opts Options, work, span time.Duration) *Headroom {
	u := opts.CPUUse
	if u == nil || u.Span <= 0 || u.ProcessCPU <= 0 || work <= 0 || span <= 0 {
		return nil
	}
	cores := 0.0
	if u.GOMAXPROCS > 0 {
		cores = float64(u.GOMAXPROCS)
	}
	if opts.CPULimit > 0 && (cores == 0 || opts.CPULimit < cores) {
		cores = opts.CPULimit
	}
	if cores == 0 {
		return nil
	}
	h := &Headroom{Used: u.ProcessCPU.Seconds() / u.Span.Seconds(), InFlight: work.Seconds() / span.Seconds(), Cores: cores}
	h.PerExecution = min(h.Used/h.InFlight, 1)
	return h
}

// evidence fills the metrics' evidence of the server's CPU.
func (m *SharedCPU) evidence(opts Options) {
	if u := opts.CPUUse; u != nil && u.Span > 0 {
		used := u.ProcessCPU.Seconds() / u.Span.Seconds()
		m.Used, m.MetricsSpan = &used, Duration(u.Span)
		if u.HasRunnableWait {
			d := Duration(u.RunnableWait)
			m.RunnableWait = &d
		}
		if u.GOMAXPROCS > 0 {
			m.Cores, m.CoresFrom = float64(u.GOMAXPROCS), CoresGOMAXPROCS
		}
	}
	// a CFS quota is CPU time per period, not cores at once: GOMAXPROCS
	// Ps run side by side until the period's quota is spent
	if opts.CPULimit > 0 && m.Cores == 0 {
		m.Cores, m.CoresFrom = opts.CPULimit, CoresCPULimit
	}
}

// fitShared fits the capacity to the executions sampled in smp, or says
// why it keeps none.
func fitShared(params *Params, execs []execution, smp sample, nkinds int) (*SharedCPU, string) {
	fitted := smp.fitted
	if len(fitted) < params.MinFitted {
		return nil, fmt.Sprintf("the workload records %d executions with a start and an end (a latency and an execution time), too few to tell how they stretch", len(fitted))
	}
	n, kindOfS, maxN, sumN := smp.n, smp.kinds, smp.maxN, smp.sumN
	sp := newSpreader(smp, nkinds)
	flat, _ := sp.at(1, 0)
	best, bestC, bestShare := flat, math.Inf(1), 0.0
	try := func(c, share float64) {
		if s, _ := sp.at(c, share); s < best {
			best, bestC, bestShare = s, c, share
		}
	}
	// below one core every execution stretches, alone or not, and the
	// executions cannot tell a capacity from a demand: 1 stands for any
	// capacity up to one core (a quota below one core lengthens every
	// execution alike, which the recorded times already hold). A coarse
	// grid first, then a fine one around its best.
	for share := params.CoarseShareStep; share <= 1; share += params.CoarseShareStep {
		for c := 1.0; c < maxN; c *= params.CapacityStep {
			try(c, share)
		}
	}
	if !math.IsInf(bestC, 1) {
		c0, s0 := bestC, bestShare
		for share := max(s0-params.ShareSpan, params.ShareStep); share <= min(s0+params.ShareSpan, 1)+params.ShareStep/2; share += params.ShareStep {
			for c := max(c0/params.FineCapacitySpan, 1); c <= c0*params.FineCapacitySpan; c *= params.FineCapacityStep {
				try(c, min(share, 1))
			}
		}
	}
	m := &SharedCPU{Capacity: bestC, Share: min(math.Round(bestShare*100)/100, 1), Executions: len(fitted), Kinds: nkinds, MaxInFlight: int(math.Ceil(maxN)), MeanInFlight: sumN / float64(len(n)), Spread: best, SpreadRecorded: flat}
	if math.IsInf(bestC, 1) {
		return nil, fmt.Sprintf("the executions did not run longer with more requests in flight (up to %.1f at once on average over an execution)", maxN)
	}
	m.setStretched(smp.fl, fitted)
	if m.Stretched < params.MinStretched || best > (1-params.MinImprovement)*flat {
		return nil, fmt.Sprintf("the executions hardly ran longer with more requests in flight: the best fit, %.0f%% of an execution shared on %.2f cores, stretches %.0f%% of them and explains %.0f%% of their spread within their kind (a model needs %.0f%% and %.0f%%)",
			100*m.Share, bestC, 100*m.Stretched, 100*(1-best/flat), 100*params.MinStretched, 100*params.MinImprovement)
	}
	_, medians := sp.at(m.Capacity, m.Share)
	counts := make([]int, nkinds)
	for _, k := range kindOfS {
		counts[k]++
	}
	for k, med := range medians {
		if !math.IsNaN(med) {
			m.Demands = append(m.Demands, KindDemand{kind: int32(k), Executions: counts[k], Demand: Duration(math.Exp(med))})
		}
	}
	slices.SortStableFunc(m.Demands, func(a, b KindDemand) int { return cmp.Compare(b.Executions, a.Executions) })
	m.Demands = m.Demands[:min(len(m.Demands), maxDemands)]
	m.setStretches(execs, smp.fl)
	return m, ""
}

// oneSeatExecutions places the executions of each level of one seat
// without an execution time of its own (an audit log alone) as the
// level's ends tell them (placeSerial). They are then fitted on, as
// httplog's are. It returns how many of them were estimated before.
func oneSeatExecutions(execs []execution, caps []int, recorded []bool) (unestimated int) {
	byLevel := map[int32][]serialExec{}
	for i, e := range execs {
		if int(e.level) < len(caps) && caps[e.level] == 1 && !recorded[e.level] {
			byLevel[e.level] = append(byLevel[e.level], serialExec{arrival: e.arrival, end: e.end, i: i})
		}
	}
	for _, xs := range byLevel {
		placeSerial(xs)
		for _, x := range xs {
			e := &execs[x.i]
			if x.start >= e.end {
				continue
			}
			if e.estimated {
				unestimated++
			}
			e.start, e.estimated = x.start, false
		}
	}
	return unestimated
}

// setStretched sets Stretched and MeanStretch from the executions at
// indices idx (in flight: fl).
func (m *SharedCPU) setStretched(fl *flights, idx []int) {
	var stretched int
	var sum float64
	for _, i := range idx {
		st := fl.stretchOf(i, m.Capacity, m.Share)
		if st > 1 {
			stretched++
		}
		sum += st
	}
	m.Stretched, m.MeanStretch = float64(stretched)/float64(len(idx)), sum/float64(len(idx))
}

// setStretches keeps, by record index, the stretch each execution ran
// under, and the CPU the model gives the executions.
func (m *SharedCPU) setStretches(execs []execution, fl *flights) {
	m.RequestsCPU = Duration(m.keepStretches(execs, fl))
}

// keepStretches keeps, by record index, the stretch each execution ran
// under, and returns the CPU the model gives the executions.
func (m *SharedCPU) keepStretches(execs []execution, fl *flights) float64 {
	top := 0
	for _, e := range execs {
		top = max(top, int(e.idx))
	}
	m.stretch = make([]float32, top+1)
	var cpu float64
	for i, e := range execs {
		st := fl.stretchOf(i, m.Capacity, m.Share)
		m.stretch[e.idx] = float32(st)
		cpu += float64(e.end-e.start) / st * m.Share
	}
	return cpu
}

// sample is what a fit reads of the executions it samples: the indices
// of those fitted on (every one not estimated), and of every one of them
// or an even share beyond maxFit, its index in execs, the logarithm of
// its time, the mean in flight over it and its kind, with the most and
// the sum of those means; and every execution's flights.
type sample struct {
	fitted     []int
	exec       []int32
	logExec, n []float64
	kinds      []int32
	maxN, sumN float64
	fl         *flights
}

// sampleOf returns the sample both fits read of execs.
func sampleOf(execs []execution, fl *flights) sample {
	smp := sample{fl: fl}
	flight := fl.mean
	for i, e := range execs {
		if !e.estimated {
			smp.fitted = append(smp.fitted, i)
		}
	}
	step := max(1, len(smp.fitted)/maxFit)
	for j := 0; j < len(smp.fitted); j += step {
		i := smp.fitted[j]
		smp.exec = append(smp.exec, int32(i))
		smp.logExec = append(smp.logExec, math.Log(float64(execs[i].end-execs[i].start)))
		smp.n = append(smp.n, flight[i])
		smp.kinds = append(smp.kinds, execs[i].kind)
		smp.maxN = max(smp.maxN, flight[i])
		smp.sumN += flight[i]
	}
	return smp
}

// inFlight returns, for each execution, the mean number of executions in
// progress while it ran, itself included: under processor sharing an
// execution that needs d alone takes d × that mean / capacity while the
// server is saturated. A level counts at most its caps[level] executions
// at once (none where the cap is 0): an audit record's execution is
// placed back from its end by an estimate, and estimates of a busy level
// that overlap each other beyond its seats never ran so.
func inFlight(execs []execution, caps []int) *flights { return inFlightPresent(execs, caps, nil) }

// inFlightPresent is inFlight where the levels marked present count their
// requests from arrival, not from the start of their execution (up to
// their caps): the executions of a level that dispatches whenever a seat
// is free, known by their arrivals and ends.
func inFlightPresent(execs []execution, caps []int, present []bool) *flights {
	type edge struct {
		at    time.Duration
		d     int
		level int32
	}
	edges := make([]edge, 0, 2*len(execs))
	levels := 0
	for _, e := range execs {
		from := e.start
		if int(e.level) < len(present) && present[e.level] {
			from = min(e.arrival, e.start)
		}
		edges = append(edges, edge{from, 1, e.level}, edge{e.end, -1, e.level})
		levels = max(levels, int(e.level)+1)
	}
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Compare(a.at, b.at) })
	counted := func(level int32, n int) int {
		if int(level) < len(caps) && caps[level] > 0 {
			return min(n, caps[level])
		}
		return n
	}
	// the executions in progress, by level
	byLevel := make([]int, levels)
	// at[i] and area[i]: the integral of the executions in progress up to
	// at[i]; n[i] in progress from at[i] on
	at := make([]time.Duration, 0, len(edges))
	area := make([]float64, 0, len(edges))
	n := make([]int, 0, len(edges))
	cur, sum := 0, 0.0
	for i, e := range edges {
		if i > 0 {
			sum += float64(cur) * float64(e.at-edges[i-1].at)
		}
		cur -= counted(e.level, byLevel[e.level])
		byLevel[e.level] += e.d
		cur += counted(e.level, byLevel[e.level])
		if len(at) > 0 && at[len(at)-1] == e.at {
			n[len(n)-1] = cur
			continue
		}
		at, area, n = append(at, e.at), append(area, sum), append(n, cur)
	}
	integral := func(t time.Duration) float64 {
		i, _ := slices.BinarySearch(at, t+1)
		if i == 0 {
			return 0
		}
		return area[i-1] + float64(n[i-1])*float64(t-at[i-1])
	}
	fl := &flights{mean: make([]float64, len(execs)), off: make([]int32, 1, len(execs)+1)}
	for i, e := range execs {
		fl.mean[i] = max((integral(e.end)-integral(e.start))/float64(e.end-e.start), 1)
		// the time at each count, from the step in progress at its start
		first := len(fl.n)
		k, _ := slices.BinarySearch(at, e.start+1)
		for k = max(k-1, 0); k < len(at) && at[k] < e.end; k++ {
			from, to := max(at[k], e.start), e.end
			if k+1 < len(at) {
				to = min(to, at[k+1])
			}
			if to <= from {
				continue
			}
			c, share := float32(max(n[k], 1)), float32(float64(to-from)/float64(e.end-e.start))
			j := first
			for j < len(fl.n) && fl.n[j] != c {
				j++
			}
			if j == len(fl.n) {
				fl.n, fl.frac = append(fl.n, c), append(fl.frac, 0)
			}
			fl.frac[j] += share
		}
		if len(fl.n) == first {
			fl.n, fl.frac = append(fl.n, 1), append(fl.frac, 1)
		}
		fl.off = append(fl.off, int32(len(fl.n)))
	}
	return fl
}

// flights is, for every execution, the executions in progress while it
// ran (inFlight): their mean over it, and the share of its time at each
// count. Under processor sharing an execution runs at the pace
// 1 / stretch of the count at each instant, so it takes its time alone
// over the mean of that pace: the stretch it ran under (stretchOf),
// which the mean count alone tells only where the count held over it.
type flights struct {
	mean []float64
	// execution i's counts and the shares of its time at them are
	// n and frac [off[i], off[i+1])
	off     []int32
	n, frac []float32
}

// stretchOf is the stretch execution i ran under, on capacity c with
// share of it shared.
func (fl *flights) stretchOf(i int, c, share float64) float64 {
	var pace float64
	for k := fl.off[i]; k < fl.off[i+1]; k++ {
		pace += float64(fl.frac[k]) / stretch(float64(fl.n[k]), c, share)
	}
	if pace <= 0 {
		return 1
	}
	return max(1, 1/pace)
}

// spreader computes the spread of the fitted executions within their
// kind under a stretch, with the executions grouped by kind once.
type spreader struct {
	logExec []float64 // in kind order
	exec    []int32   // their indices in fl
	fl      *flights
	bounds  []int // kind k is [bounds[k], bounds[k+1])
	y       []float64
}

func newSpreader(smp sample, nkinds int) *spreader {
	sp := &spreader{bounds: make([]int, nkinds+1), y: make([]float64, len(smp.logExec)), fl: smp.fl}
	for _, k := range smp.kinds {
		sp.bounds[k+1]++
	}
	for k := range nkinds {
		sp.bounds[k+1] += sp.bounds[k]
	}
	next := slices.Clone(sp.bounds[:nkinds])
	sp.logExec, sp.exec = make([]float64, len(smp.logExec)), make([]int32, len(smp.exec))
	for i, k := range smp.kinds {
		sp.logExec[next[k]], sp.exec[next[k]] = smp.logExec[i], smp.exec[i]
		next[k]++
	}
	return sp
}

// at returns the mean absolute difference of the executions' logarithms,
// each less its stretch under (c, share), from their kind's median, and
// those medians by kind (NaN for a kind without executions).
func (sp *spreader) at(c, share float64) (spread float64, medians []float64) {
	for i := range sp.y {
		sp.y[i] = sp.logExec[i] - math.Log(sp.fl.stretchOf(int(sp.exec[i]), c, share))
	}
	medians = make([]float64, len(sp.bounds)-1)
	var sum float64
	for k := range medians {
		seg := sp.y[sp.bounds[k]:sp.bounds[k+1]]
		if len(seg) == 0 {
			medians[k] = math.NaN()
			continue
		}
		med := selectNth(seg, len(seg)/2)
		medians[k] = med
		for _, v := range seg {
			sum += math.Abs(v - med)
		}
	}
	return sum / float64(len(sp.y)), medians
}

// selectNth returns the k-th smallest of xs (0-based), reordering xs
// (Hoare's selection).
func selectNth(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		pivot := xs[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for xs[i] < pivot {
				i++
			}
			for xs[j] > pivot {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}

// recordedStretch is the stretch the record at idx executed under in the
// recording (1 without a model).
func (r *Result) recordedStretch(idx int) float64 {
	if r.Shared == nil || idx >= len(r.Shared.stretch) || r.Shared.stretch[idx] <= 1 {
		return 1
	}
	return float64(r.Shared.stretch[idx])
}

// beyondStretch is the stretch the record at idx executed under in the
// recording by the CPU evidence's model (Headroom.Shared), which the
// replay of a change on that model divides its execution by
// (fairqueue.ReplayConfig.Unstretch); 1 without the model.
func (r *Result) beyondStretch(idx int) float64 {
	if r.Headroom == nil || r.Headroom.Shared == nil {
		return 1
	}
	if s := r.Headroom.Shared.stretch; idx < len(s) && s[idx] > 1 {
		return float64(s[idx])
	}
	return 1
}

// WithoutCPU returns the calibration without its CPU models (the shared
// CPU and the CFS quota's): the replay then keeps the recorded execution
// times, stalls included.
func (r *Result) WithoutCPU() *Result {
	c := *r
	c.Shared, c.SharedWhy, c.Headroom, c.CPU, c.CPUWhy, c.stallAt = nil, "", nil, nil, "", nil
	return &c
}

// Server returns the CPU of one replay under the calibration's models: the
// shared CPU, composed with the i-th phase of the CFS model when there is
// one; nil when there is neither. The shared CPU alone is processor
// sharing (fairqueue.SharedCPU): every start and end of an execution
// changes the pace of the others. Composed with the CFS model, whose
// stalls fall at given times, an execution is stretched by the requests
// in flight when it starts, then stalled.
func (r *Result) Server(i int) fairqueue.CPU { return r.ServerAt(i, 1) }

// ServerAt is Server for a replay whose server executes at speed against
// the recorded one (fairqueue.ReplayConfig.Speed, which divides the
// requests' holds): a collection's mark, CPU work like the requests',
// takes 1/speed of its recorded time too, as does the rest of the
// server's work outside the marks (Background), and a period's run under
// the quota stays. The shared CPU's stretches are ratios and stay. 0 or 1 is
// the recorded server.
func (r *Result) ServerAt(i int, speed float64) fairqueue.CPU { return r.serverOf(r.Shared, i, speed) }

// ServerBeyond is ServerAt for the replay of a change that runs more at
// once than the recording did, where the recorded executions did not
// stretch (no shared-CPU model) and the metrics' CPU evidence gives a
// model of the cores they share (Headroom.Shared, SharedFromCPUEvidence):
// the change's executions share the cores by it, composed with the i-th
// phase of the CFS model if any. ok is false where there is no such
// model.
func (r *Result) ServerBeyond(i int, speed float64) (cpu fairqueue.CPU, ok bool) {
	if r.Shared != nil || r.Headroom == nil || r.Headroom.Shared == nil {
		return nil, false
	}
	return r.serverOf(r.Headroom.Shared, i, speed), true
}

// serverOf is the server of ServerAt under the shared-CPU model m (nil:
// none).
func (r *Result) serverOf(m *SharedCPU, i int, speed float64) fairqueue.CPU {
	cpu := r.CPU
	if cpu != nil && speed > 0 && speed != 1 {
		c := *cpu
		c.Mark = Duration(max(time.Duration(float64(c.Mark)/speed), time.Duration(c.Period)))
		c.Background /= speed
		c.RequestCost = Duration(time.Duration(float64(c.RequestCost) / speed))
		cpu = &c
	}
	switch {
	case m == nil && cpu == nil:
		return nil
	case m == nil:
		return cpu.Server(i)
	case cpu == nil:
		return processorSharing{m}
	}
	return &sharedServer{m: m, next: cpu.Server(i)}
}

// processorSharing is the shared CPU as the simulator runs it.
type processorSharing struct{ m *SharedCPU }

// Stretch implements fairqueue.SharedCPU.
func (p processorSharing) Stretch(n int) float64 { return p.m.Stretch(n) }

// End implements fairqueue.CPU; the simulator does not call it on a
// fairqueue.SharedCPU.
func (p processorSharing) End(start, hold, _ time.Duration) time.Duration {
	return start + time.Duration(float64(hold)*p.m.Stretch(1))
}

// sharedServer is one replay's server under the shared-CPU model.
type sharedServer struct {
	m    *SharedCPU
	ends endHeap
	next fairqueue.CPU
}

// End implements fairqueue.CPU: the execution is stretched by the
// requests in flight at its start, then stalled by the CFS model if any,
// spending its work's CPU over the stretched time.
func (s *sharedServer) End(start, hold, work time.Duration) time.Duration {
	for len(s.ends) > 0 && s.ends[0] <= start {
		heap.Pop(&s.ends)
	}
	hold = time.Duration(float64(hold) * s.m.Stretch(len(s.ends)+1))
	end := start + hold
	if s.next != nil {
		end = max(s.next.End(start, hold, work), end)
	}
	heap.Push(&s.ends, end)
	return end
}

// Arrive implements fairqueue.ArrivalCPU: the CFS model spends the
// request's cost before APF.
func (s *sharedServer) Arrive(at time.Duration) {
	if a, ok := s.next.(fairqueue.ArrivalCPU); ok {
		a.Arrive(at)
	}
}

type endHeap []time.Duration

func (h endHeap) Len() int           { return len(h) }
func (h endHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h endHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)        { *h = append(*h, x.(time.Duration)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// String names a kind of request: its verb, resource (group/resource, with
// the subresource) and query, and "(named)" for a request of one object.
func (k kind) String() string {
	res := k.resource
	if res == "" {
		res = "(non-resource)"
	}
	if k.group != "" {
		res = k.group + "/" + res
	}
	if k.subresource != "" {
		res += "/" + k.subresource
	}
	out := k.verb + " " + res
	if k.named {
		out += " (named)"
	}
	if k.query != "" {
		out += " ?" + k.query
	}
	return out
}

// saturatedShared is the shared-CPU model of a server whose CPU the
// metrics over the workload's window show saturated (its goroutines waited
// runnable for a P SaturatedRunnableWait or more on average): it used all
// the CPU it could get, the cores, its quota, or what other processes left
// it. A request costs CPU before APF (TLS, authentication, and its 429 when
// rejected), the median latency of the recorded 429s; the executions shared
// the rest of the process's CPU over the time they were in flight, every
// one of them on the CPU (a workload without 429s tells no cost, and none
// is taken out). A change runs them on the same capacity: more at
// once each run slower, fewer faster. ok is false where the metrics do not
// show it, or leave the executions no CPU.
func saturatedShared(params *Params, execs []execution, sampled func() sample, requests int, rej rejected, opts Options) (*SharedCPU, bool) {
	u := opts.CPUUse
	if u == nil || !params.runs(RuleSaturated) || !u.HasRunnableWait || u.RunnableWait < params.SaturatedRunnableWait || u.ProcessCPU <= 0 || u.Span <= 0 || len(execs) == 0 {
		return nil, false
	}
	busy := min(busyTime(params, execs), u.Span)
	if busy <= 0 {
		return nil, false
	}
	// without a 429, nothing tells the cost: none is taken out
	cost := rej.latency
	left := float64(u.ProcessCPU) - float64(requests)*float64(cost)
	if left <= 0 {
		return nil, false
	}
	m := &SharedCPU{From: SharedFromSaturated, Share: 1, Capacity: left / float64(busy),
		Saturated: &Saturated{RunnableWait: Duration(u.RunnableWait), Busy: Duration(busy), ProcessCPU: Duration(u.ProcessCPU), Requests: requests, Rejected: rej.n, RequestCost: Duration(cost)}}
	m.evidence(opts)
	m.setAll(execs, sampled())
	return m, true
}

// assumeSaturated is the shared CPU of a server whose CPU is assumed
// saturated through the recorded time (SharedFromAssumedSaturated): every
// execution on the CPU, sharing what the recorded ones had, so that an
// execution runs in proportion to the requests in flight with it, and
// the executions' pace in all stays the recorded one. Any capacity up to
// one execution's gives that; 1 stands for them. nil without executions.
func assumeSaturated(execs []execution, smp sample) *SharedCPU {
	if len(execs) == 0 {
		return nil
	}
	m := &SharedCPU{From: SharedFromAssumedSaturated, Share: 1, Capacity: 1}
	m.setAll(execs, smp)
	return m
}

// setAll sets, from every one of execs (not a sample of them), what the
// model read (Executions, MaxInFlight, MeanInFlight), how far they
// stretched under it and the stretch each ran under.
func (m *SharedCPU) setAll(execs []execution, smp sample) {
	all := make([]int, len(execs))
	var maxN float64
	for i := range execs {
		all[i] = i
		maxN = max(maxN, smp.fl.mean[i])
		m.MeanInFlight += smp.fl.mean[i]
	}
	m.Executions, m.MaxInFlight, m.MeanInFlight = len(execs), int(math.Ceil(maxN)), m.MeanInFlight/float64(len(execs))
	m.setStretched(smp.fl, all)
	m.setStretches(execs, smp.fl)
}

// AssumingSaturated is the calibration with the server's CPU assumed
// saturated through the recorded time instead of its CPU models
// (SharedFromAssumedSaturated): the end of the range a change that adds
// concurrency spans where no evidence tells how much CPU the server had
// left, the other end being WithoutCPU. nil where no recorded execution
// tells the pace.
func (r *Result) AssumingSaturated() *Result {
	if r.saturatedEnd == nil {
		return nil
	}
	c := r.WithoutCPU()
	c.Shared = r.saturatedEnd
	return c
}

// HasProcessCPU reports whether the calibration read the process's CPU
// over the workload's window (metrics whose scrapes cover it).
func (r *Result) HasProcessCPU() bool {
	return r.prep != nil && r.prep.opts.CPUUse != nil && r.prep.opts.CPUUse.ProcessCPU > 0
}

// busyTime is the time at least one of execs was in flight: the union
// of their spans, taken in the order of their starts (span).
func busyTime(params *Params, execs []execution) time.Duration {
	byStart := slices.SortedFunc(slices.Values(execs), func(a, b execution) int { return cmp.Compare(a.start, b.start) })
	busy := span{params: params}
	for _, e := range byStart {
		busy.add(e.start, e.end)
	}
	busy.close()
	return busy.total
}
