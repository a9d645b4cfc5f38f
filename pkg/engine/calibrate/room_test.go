package calibrate

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestRoomEndsPopInTimeOrder holds the rooms' heap of ends to a sorted
// list: pushes and pops interleaved at random, each pop the earliest end
// held (ties in any order: the rooms add up the seats of every end due).
func TestRoomEndsPopInTimeOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h roomEnds
	var ref []time.Duration
	for step := range 20000 {
		if len(ref) == 0 || rng.IntN(3) > 0 {
			at := time.Duration(rng.IntN(200))
			h.push(roomEnd{at: at, seats: 1})
			ref = append(ref, at)
			continue
		}
		slices.Sort(ref)
		got := h.pop()
		if got.at != ref[0] {
			t.Fatalf("step %d: popped the end at %v, want %v (the earliest of %d)", step, got.at, ref[0], len(ref))
		}
		ref = ref[1:]
		if len(h) != len(ref) {
			t.Fatalf("step %d: %d ends held, want %d", step, len(h), len(ref))
		}
	}
}

// TestBlocksKeepOrder holds blocks to a slice: the values it gives back
// are those added, in order, across blocks of every size.
func TestBlocksKeepOrder(t *testing.T) {
	for _, n := range []int{0, 1, 64, 65, 5000, 3 * maxBlock, 100*maxBlock + 1} {
		var b blocks[int]
		var want []int
		for i := range n {
			b.add(i * 7)
			want = append(want, i*7)
		}
		if got := b.all(); b.n != n || !slices.Equal(got, want) {
			t.Errorf("%d added: n %d, %d given back (equal: %v)", n, b.n, len(got), slices.Equal(got, want))
		}
	}
}
