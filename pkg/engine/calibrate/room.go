package calibrate

import (
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
		l.inUse -= l.ends.pop().seats
	}
	seats := int(min(x.seats, uint64(l.lower)+1))
	room := l.inUse+seats <= l.lower
	l.inUse += seats
	l.ends.push(roomEnd{at: x.arrival + max(x.latency, 0), seats: seats})
	return room
}

// roomEnds is a binary min-heap of the ends of the records in a level, by
// their time: container/heap's, without boxing each end in an interface
// (an allocation per record, twice).
type roomEnds []roomEnd

func (h *roomEnds) push(e roomEnd) {
	*h = append(*h, e)
	q := *h
	for j := len(q) - 1; j > 0; {
		i := (j - 1) / 2
		if q[j].at >= q[i].at {
			break
		}
		q[i], q[j] = q[j], q[i]
		j = i
	}
}

func (h *roomEnds) pop() roomEnd {
	q := *h
	n := len(q) - 1
	e := q[0]
	q[0] = q[n]
	q = q[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && q[r].at < q[l].at {
			j = r
		}
		if q[j].at >= q[i].at {
			break
		}
		q[i], q[j] = q[j], q[i]
		i = j
	}
	*h = q
	return e
}
