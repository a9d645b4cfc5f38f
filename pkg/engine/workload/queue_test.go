package workload

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestArrivalQueueOrder: whatever the interleaving of pushes and pops, and
// wherever the ring wraps, the queue pops requests by arrival, in the
// order they were pushed among equal arrivals (a stable sort's order).
func TestArrivalQueueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		q := arrivalQueue{maxHeld: 1 + rng.IntN(80)}
		type item struct {
			at  time.Duration
			seq int
		}
		var held []item // the reference: kept sorted, stable
		seq := 0
		for step := range 2000 {
			if len(held) > 0 && (len(held) > q.maxHeld || rng.IntN(3) == 0) {
				var out Request
				q.pop(&out)
				want := held[0]
				held = held[1:]
				if got := out.Arrival.Sub(time.Time{}); got != want.at || out.Latency != time.Duration(want.seq) {
					t.Fatalf("round %d step %d: popped %v #%d, want %v #%d", round, step, got, out.Latency, want.at, want.seq)
				}
				continue
			}
			at := time.Duration(rng.IntN(50)) * time.Millisecond
			r := q.next()
			r.Arrival, r.Latency = time.Time{}.Add(at), time.Duration(seq)
			q.push()
			held = append(held, item{at, seq})
			slices.SortStableFunc(held, func(a, b item) int { return int(a.at - b.at) })
			seq++
			if q.len() != len(held) {
				t.Fatalf("round %d: %d held, want %d", round, q.len(), len(held))
			}
		}
	}
}
