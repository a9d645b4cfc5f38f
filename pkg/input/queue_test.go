package input

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
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
		// half the rounds with times of a monotonic reading, which the
		// queue compares as time.Time's Before does
		base := time.Time{}
		if round%2 == 1 {
			base = time.Now()
		}
		for step := range 2000 {
			if len(held) > 0 && (len(held) > q.maxHeld || rng.IntN(3) == 0) {
				var out workload.Request
				q.pop(&out)
				want := held[0]
				held = held[1:]
				if got := out.Arrival.Sub(base); got != want.at || out.Latency != time.Duration(want.seq) {
					t.Fatalf("round %d step %d: popped %v #%d, want %v #%d", round, step, got, out.Latency, want.at, want.seq)
				}
				continue
			}
			at := time.Duration(rng.IntN(50)) * time.Millisecond
			r := q.next()
			r.Arrival, r.Latency = base.Add(at), time.Duration(seq)
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

// TestInternerRecent: the interner's cache of recent values never gives
// a value for another (slots collide: 5,000 values share 256), with the
// map full or not.
func TestInternerRecent(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	in := newInterner()
	for i := range 200_000 {
		b := []byte(fmt.Sprintf("v%d", rng.IntN(5000)))
		if i%3 == 0 {
			b = b[:1+rng.IntN(len(b))]
		}
		if got := in.get(b); got != string(b) {
			t.Fatalf("get(%q) = %q", b, got)
		}
		raw := []byte(fmt.Sprintf(`["%s"]`, b))
		if l, ok := in.list(raw); ok && (len(l) != 1 || l[0] != string(b)) {
			t.Fatalf("list(%s) = %q", raw, l)
		} else if !ok {
			in.lists[string(raw)] = []string{string(b)}
		}
	}
}
