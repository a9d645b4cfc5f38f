package fairqueue

import (
	"math/rand"
	"testing"
)

// TestFinishTreeMatchesScan compares the tree's answer with upstream's scan
// (findDispatchQueueToBoundLocked: every queue from robinIndex+1 round the
// ring, first strict minimum) on random values with many ties.
func TestFinishTreeMatchesScan(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for round := 0; round < 2000; round++ {
		n := 1 + r.Intn(70)
		vals := make([]SeatSeconds, n)
		tree := newFinishTree(n)
		for i := range vals {
			vals[i] = MaxSeatSeconds
		}
		for step := 0; step < 20; step++ {
			i := r.Intn(n)
			v := SeatSeconds(r.Intn(5))
			if r.Intn(4) == 0 {
				v = MaxSeatSeconds
			}
			vals[i] = v
			tree.set(i, v)
			robin := r.Intn(n)
			// upstream's scan
			want, best := MaxSeatSeconds, -1
			for k, idx := 0, robin; k < n; k++ {
				idx = (idx + 1) % n
				if vals[idx] < want {
					want, best = vals[idx], idx
				}
			}
			start := (robin + 1) % n
			v1, i1 := tree.leftmostMin(start, n)
			v2, i2 := tree.leftmostMin(0, start)
			got := i1
			if v2 < v1 {
				got = i2
			}
			if got != best {
				t.Fatalf("values %v, robin %d: tree picks %d, scan picks %d", vals, robin, got, best)
			}
		}
	}
}
