package fairqueue

import (
	"container/heap"
	"math"
)

// SharedCPU is a CPU whose executions share the server: when Options.CPU
// implements it, every execution in progress advances at 1/Stretch(n) of
// its own pace, n being the executions in progress at that moment across
// all levels, so that each start and end of an execution slows or speeds
// every other (processor sharing). End is then not called.
type SharedCPU interface {
	CPU
	Stretch(n int) float64
}

// sharing is the simulator's processor-sharing state. All executions in
// progress advance at the same pace, so one virtual clock, the work any
// of them has done since the simulation started, tells when each ends:
// an execution of hold started at virtual time v ends when the clock
// reaches v + hold; only the earliest such end is an event.
type sharing struct {
	cpu SharedCPU
	// v is the virtual clock at last (simulated time)
	v    float64
	last int64
	ends psHeap
	// gen numbers the scheduled end event; an older one is stale
	gen uint32
}

type psEnd struct {
	at float64 // virtual time of the end
	r  *request
}

type psHeap []psEnd

func (h psHeap) Len() int           { return len(h) }
func (h psHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h psHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *psHeap) Push(x any)        { *h = append(*h, x.(psEnd)) }
func (h *psHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// advance moves the virtual clock to now at the pace of the executions in
// progress since last.
func (p *sharing) advance(now int64) {
	if n := len(p.ends); n > 0 && now > p.last {
		p.v += float64(now-p.last) / p.cpu.Stretch(n)
	}
	p.last = now
}

// start begins an execution of hold at now.
func (s *Simulator) psStart(r *request, now, hold int64) {
	p := s.ps
	p.advance(now)
	heap.Push(&p.ends, psEnd{at: p.v + float64(hold), r: r})
	s.psSchedule(now)
}

// psSchedule replaces the pending end event by the earliest end at the
// current pace.
func (s *Simulator) psSchedule(now int64) {
	p := s.ps
	p.gen++
	if len(p.ends) == 0 {
		return
	}
	dt := math.Ceil((p.ends[0].at - p.v) * p.cpu.Stretch(len(p.ends)))
	s.push(event{t: now + max(int64(dt), 0), kind: evFinish, gen: p.gen})
}

// psDue ends, at the end event of generation gen, every execution whose
// work is done, and schedules the next end.
func (s *Simulator) psDue(now int64, gen uint32) {
	p := s.ps
	if gen != p.gen {
		return
	}
	p.advance(now)
	for len(p.ends) > 0 && p.ends[0].at <= p.v+1 {
		e := heap.Pop(&p.ends).(psEnd)
		s.changes++
		e.r.level.finish(e.r, now)
		// a dispatch the end made has advanced the clock to now already
	}
	s.psSchedule(now)
}
