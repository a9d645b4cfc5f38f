package fairqueue

import (
	"math"
	"math/bits"
	"time"
)

// histogram is a log-linear histogram of durations in nanoseconds with 64
// sub-buckets per power of two (relative error below 1.6%), so quantiles
// cost constant memory however long the workload is.
type histogram struct {
	counts []uint32
	n      uint64
	max    int64
}

const subBits = 6
const subCount = 1 << subBits

func bucketOf(v int64) int {
	if v < subCount {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - subBits - 1
	return subCount + e*subCount + int(uint64(v)>>uint(e)) - subCount
}

// bucketMid returns a representative value (the middle) of bucket i.
func bucketMid(i int) int64 {
	if i < subCount {
		return int64(i)
	}
	e := (i - subCount) / subCount
	m := int64((i-subCount)%subCount + subCount)
	lo := m << uint(e)
	return lo + (int64(1)<<uint(e))/2
}

func (h *histogram) add(v int64) {
	if v < 0 {
		v = 0
	}
	b := bucketOf(v)
	if b >= len(h.counts) {
		n := max(b+1, 2*len(h.counts))
		c := make([]uint32, n)
		copy(c, h.counts)
		h.counts = c
	}
	h.counts[b]++
	h.n++
	h.max = max(h.max, v)
}

// quantile returns the q-quantile (nearest rank), exact up to the bucket
// width and never above the maximum.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += uint64(c)
		if seen >= rank {
			return time.Duration(min(bucketMid(i), h.max))
		}
	}
	return time.Duration(h.max)
}

type levelStats struct {
	dispatched    int64
	rejected      [numReasons]int64
	wait          histogram
	peakWaiting   int
	peakSeats     int
	peakExecuting int
}

func (ls *levelStats) noteWaiting(n int) { ls.peakWaiting = max(ls.peakWaiting, n) }

type flowStats struct {
	level       int
	dispatched  int64
	rejected    [numReasons]int64
	wait        histogram
	waiting     int
	peakWaiting int
	seats       int
	peakSeats   int
}

// LevelResult summarises one priority level (or one flow) of a simulation.
// Its JSON shape is what `kubectl apf simulate -o json` prints.
type LevelResult struct {
	Name       string `json:"name"`
	Dispatched int64  `json:"dispatched"`
	// Rejected counts rejections by reason (queue-full, concurrency-limit,
	// time-out); reasons that did not occur are absent.
	Rejected map[string]int64 `json:"rejected"`
	// WaitP50Seconds, WaitP99Seconds and WaitMaxSeconds describe the time
	// dispatched requests waited in a queue; the quantiles are exact to
	// within 1.6% (log-linear histogram), the maximum exactly.
	WaitP50Seconds float64 `json:"waitP50Seconds"`
	WaitP99Seconds float64 `json:"waitP99Seconds"`
	WaitMaxSeconds float64 `json:"waitMaxSeconds"`
	// PeakQueueLength is the most requests waiting at once (in all the
	// level's queues; for a flow, in its queues).
	PeakQueueLength int `json:"peakQueueLength"`
	// PeakSeatsInUse is the most seats occupied at once.
	PeakSeatsInUse int `json:"peakSeatsInUse"`
	// PeakExecuting is the most requests executing at once (a LIST of 10
	// seats is one), for a level; absent for a flow.
	PeakExecuting int `json:"peakExecuting,omitempty"`
	// Flows breaks a level down by flow, busiest first; absent for a flow.
	Flows []LevelResult `json:"flows,omitempty"`
}

// Result is the summary of a simulation.
type Result struct {
	Levels []LevelResult `json:"levels"`
	// Requests is the number of requests replayed.
	Requests int64 `json:"requests"`
	// SimulatedSeconds is the simulated time from the first arrival to the
	// last event.
	SimulatedSeconds float64 `json:"simulatedSeconds"`
	// PeakInFlight is the most requests the simulator held at once.
	PeakInFlight int `json:"peakInFlight"`
}

func fill(lr *LevelResult, dispatched int64, rejected *[numReasons]int64, w *histogram, peakWaiting, peakSeats int) {
	lr.Dispatched = dispatched
	lr.Rejected = map[string]int64{}
	for r := RejectedQueueFull; r < numReasons; r++ {
		if rejected[r] != 0 {
			lr.Rejected[r.String()] = rejected[r]
		}
	}
	lr.WaitP50Seconds = w.quantile(0.5).Seconds()
	lr.WaitP99Seconds = w.quantile(0.99).Seconds()
	lr.WaitMaxSeconds = time.Duration(w.max).Seconds()
	lr.PeakQueueLength = peakWaiting
	lr.PeakSeatsInUse = peakSeats
}

// Result summarises everything replayed so far.
func (s *Simulator) Result() *Result {
	res := &Result{Requests: s.requests, SimulatedSeconds: time.Duration(s.now).Seconds(), PeakInFlight: s.peakFlight}
	res.Levels = make([]LevelResult, len(s.levels))
	for i, qs := range s.levels {
		lr := &res.Levels[i]
		lr.Name = qs.name
		fill(lr, qs.stats.dispatched, &qs.stats.rejected, &qs.stats.wait, qs.stats.peakWaiting, qs.stats.peakSeats)
		lr.PeakExecuting = qs.stats.peakExecuting
	}
	for i := range s.flows {
		f := &s.flows[i]
		if f.level < 0 {
			continue
		}
		fr := LevelResult{Name: flowName(s.opts.FlowNames, i)}
		fill(&fr, f.dispatched, &f.rejected, &f.wait, f.peakWaiting, f.peakSeats)
		res.Levels[f.level].Flows = append(res.Levels[f.level].Flows, fr)
	}
	for i := range res.Levels {
		sortFlows(res.Levels[i].Flows)
	}
	return res
}
