package fairqueue

// finishTree is a segment tree over a level's queues holding, per queue, the
// virtual finish time of its head (nextDispatchR + head's totalWork), or
// MaxSeatSeconds for a queue with nothing waiting. It answers
// findDispatchQueueToBoundLocked's question — the first queue, in round-robin
// order from robinIndex+1, with the strictly smallest finish time — in
// O(log queues) instead of upstream's scan of every queue.
type finishTree struct {
	size int // leaves, a power of two >= number of queues
	min  []SeatSeconds
}

func newFinishTree(n int) finishTree {
	size := 1
	for size < n {
		size *= 2
	}
	t := finishTree{size: size, min: make([]SeatSeconds, 2*size)}
	for i := range t.min {
		t.min[i] = MaxSeatSeconds
	}
	return t
}

// set updates leaf i.
func (t *finishTree) set(i int, v SeatSeconds) {
	n := i + t.size
	if t.min[n] == v {
		return
	}
	t.min[n] = v
	for n > 1 {
		n /= 2
		m := min(t.min[2*n], t.min[2*n+1])
		if t.min[n] == m {
			return
		}
		t.min[n] = m
	}
}

// leftmostMin returns the smallest value among leaves [l, r) and the
// leftmost leaf holding it; (MaxSeatSeconds, -1) when the range is empty.
func (t *finishTree) leftmostMin(l, r int) (SeatSeconds, int) {
	return t.query(1, 0, t.size, l, r)
}

func (t *finishTree) query(node, nl, nr, l, r int) (SeatSeconds, int) {
	if r <= nl || nr <= l || t.min[node] == MaxSeatSeconds {
		return MaxSeatSeconds, -1
	}
	if l <= nl && nr <= r {
		// descend to the leftmost leaf holding this node's minimum
		v := t.min[node]
		for node < t.size {
			if t.min[2*node] == v {
				node = 2 * node
			} else {
				node = 2*node + 1
			}
		}
		return v, node - t.size
	}
	mid := (nl + nr) / 2
	lv, li := t.query(2*node, nl, mid, l, r)
	rv, ri := t.query(2*node+1, mid, nr, l, r)
	if rv < lv {
		return rv, ri
	}
	return lv, li
}
