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

// next is the queue findDispatchQueueToBoundLocked picks after the one at
// robinIndex, among n, or -1 when every queue is empty. Upstream visits
// every queue from robinIndex+1 round the ring and keeps the first strict
// minimum of nextDispatchR + head work: that is the leftmost minimum of
// [robinIndex+1, n) unless [0, robinIndex+1) holds a strictly smaller one.
// A full turn leaves robinIndex as it was.
func (t *finishTree) next(robinIndex, n int) int {
	start := (robinIndex + 1) % n
	v1, i1 := t.leftmostMin(start, n)
	v2, i2 := t.leftmostMin(0, start)
	if v2 < v1 {
		return i2
	}
	return i1
}

// DispatchOrder is the order in which a level's queues are dispatched
// from, for a caller that keeps the queues' virtual times itself: per
// queue, the virtual finish time of its head (nextDispatchR + the head's
// work), and the round robin's position.
type DispatchOrder struct {
	tree finishTree
	n    int
	// RobinIndex is the queue dispatched from last (queueSet.robinIndex,
	// 0 at first as upstream's).
	RobinIndex int
}

// NewDispatchOrder is the order of n queues, none of them with a request
// to dispatch.
func NewDispatchOrder(n int) *DispatchOrder {
	return &DispatchOrder{tree: newFinishTree(n), n: n}
}

// Set records queue i's head's virtual finish time, MaxSeatSeconds for a
// queue with none to dispatch.
func (o *DispatchOrder) Set(i int, finish SeatSeconds) { o.tree.set(i, finish) }

// Next is the queue upstream dispatches from next
// (findDispatchQueueToBoundLocked), or -1 when none has a request.
func (o *DispatchOrder) Next() int { return o.tree.next(o.RobinIndex, o.n) }
