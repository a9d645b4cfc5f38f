package workload

import (
	"container/heap"
	"errors"
	"io"
)

// merged yields the requests of several arrival-ordered readers in arrival
// order.
type merged struct {
	srcs  []Reader
	heads []Request
	h     []int // indices of srcs with a head, heap by arrival
	init  bool
}

// Merge merges arrival-ordered readers into one arrival-ordered reader.
// Ties go to the reader given first.
func Merge(rs ...Reader) Reader {
	if len(rs) == 1 {
		return rs[0]
	}
	return &merged{srcs: rs, heads: make([]Request, len(rs))}
}

func (m *merged) Len() int { return len(m.h) }

func (m *merged) Less(i, j int) bool {
	a, b := m.h[i], m.h[j]
	if !m.heads[a].Arrival.Equal(m.heads[b].Arrival) {
		return m.heads[a].Arrival.Before(m.heads[b].Arrival)
	}
	return a < b
}

func (m *merged) Swap(i, j int) { m.h[i], m.h[j] = m.h[j], m.h[i] }

func (m *merged) Push(x any) { m.h = append(m.h, x.(int)) }

func (m *merged) Pop() any {
	x := m.h[len(m.h)-1]
	m.h = m.h[:len(m.h)-1]
	return x
}

func (m *merged) Next(r *Request) error {
	if !m.init {
		m.init = true
		for i, s := range m.srcs {
			if err := s.Next(&m.heads[i]); err == nil {
				heap.Push(m, i)
			} else if !errors.Is(err, io.EOF) {
				return err
			}
		}
	}
	if len(m.h) == 0 {
		return io.EOF
	}
	i := m.h[0]
	*r = m.heads[i]
	if err := m.srcs[i].Next(&m.heads[i]); err == nil {
		heap.Fix(m, 0)
	} else if errors.Is(err, io.EOF) {
		heap.Pop(m)
	} else {
		return err
	}
	return nil
}

// RefReader is a Reader that can give its next request without copying
// it: valid until the next call (prefetched).
type RefReader interface {
	NextRef() (*Request, error)
}
