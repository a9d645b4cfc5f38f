package calibrate

import (
	"container/heap"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// rooms tells, as the records arrive (in arrival order), which found their
// level with room: fewer seats in the server (executing or waiting, each
// record from its arrival to its end by its recorded latency) than the
// level's lower limit (its nominal seats less those it may lend) less the
// record's own seats. Such a request was dispatched on its arrival, which
// the recording itself says, not the replay: an audit event's latency is
// then its execution, with the filters around it (which a burst of
// arrivals can lengthen, as they do the execution: the shared-CPU fits
// read these latencies, the calibration of the queue waits does not).
type rooms struct {
	levels map[string]*levelRoom
}

type levelRoom struct {
	lower int // -1: exempt, always room
	inUse int
	ends  roomEnds
}

type roomEnd struct {
	at    time.Duration
	seats int
}

func newRooms() *rooms { return &rooms{levels: map[string]*levelRoom{}} }

// arrive notes x, of a level limited by lim (known: whether the level is
// known), and returns whether it found room.
func (r *rooms) arrive(x *obs, lim engine.LevelLimits, known bool) bool {
	l := r.levels[x.level]
	if l == nil {
		l = &levelRoom{lower: lim.LowerCL}
		switch {
		case x.exempt || lim.Exempt:
			l.lower = -1
		case !known:
			l.lower = 0
		}
		r.levels[x.level] = l
	}
	if l.lower < 0 {
		return true
	}
	for len(l.ends) > 0 && l.ends[0].at <= x.arrival {
		l.inUse -= heap.Pop(&l.ends).(roomEnd).seats
	}
	seats := int(min(x.seats, uint64(l.lower)+1))
	room := l.inUse+seats <= l.lower
	l.inUse += seats
	heap.Push(&l.ends, roomEnd{at: x.arrival + max(x.latency, 0), seats: seats})
	return room
}

// roomEnds is a heap of the ends of the records in a level.
type roomEnds []roomEnd

func (h roomEnds) Len() int           { return len(h) }
func (h roomEnds) Less(i, j int) bool { return h[i].at < h[j].at }
func (h roomEnds) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *roomEnds) Push(x any)        { *h = append(*h, x.(roomEnd)) }
func (h *roomEnds) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
