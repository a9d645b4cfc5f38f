package reconstruct

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestEventHeapOrder: events pushed and popped in any interleaving come
// out in (t, kind, seq) order, each once: the order of the events
// pending at each pop is that of a sort.
func TestEventHeapOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h eventHeap
	var pending []event
	seq := int64(0)
	for step := range 20000 {
		if len(pending) == 0 || rng.IntN(3) > 0 {
			seq++
			e := event{t: int64(rng.IntN(50)), kind: uint8(rng.IntN(6)), seq: seq}
			h.push(e)
			pending = append(pending, e)
			continue
		}
		slices.SortFunc(pending, func(a, b event) int {
			return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.kind, b.kind), cmp.Compare(a.seq, b.seq))
		})
		got := h.pop()
		if got != pending[0] {
			t.Fatalf("step %d: popped %+v, want %+v", step, got, pending[0])
		}
		pending = pending[1:]
		if len(h) != len(pending) {
			t.Fatalf("step %d: %d events in the heap, want %d", step, len(h), len(pending))
		}
	}
}
