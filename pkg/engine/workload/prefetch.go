package workload

import "sync"

// Prefetched reads its source in a goroutine of its own, batches of
// requests ahead of the caller: the httplog files and the audit files of
// a workload are then parsed in parallel, on other cores than the one
// that joins them and reconstructs the requests. The source yields the
// same requests, in the same order, with the same error at the end; it
// must not share mutable state with the caller's goroutine while it runs
// (its Stats are read once it has ended). Memory: at most
// prefetchAhead+2 batches of prefetchBatch requests.
type Prefetched struct {
	src     Reader
	ch      chan prefetchBatchOf
	free    chan []Request
	stop    chan struct{}
	once    sync.Once
	started bool
	cur     []Request
	i       int
	err     error
}

type prefetchBatchOf struct {
	rs  []Request
	err error
}

// prefetchBatch: fewer, larger batches cost fewer hand-overs between the
// goroutines (each may wake one); past a thousand requests (a third of a
// megabyte) they cost more than they save (BenchmarkReconstruct).
const (
	prefetchBatch = 1024
	prefetchAhead = 2
)

// Prefetch reads src in a goroutine of its own, batches ahead of the
// caller, from the first call of Next.
func Prefetch(src Reader) *Prefetched {
	// free holds every batch there can be, so that the caller never drops
	// one it returns (and the goroutine makes another): the goroutine
	// makes a batch only when free is empty, the others then being in the
	// channel (at most prefetchAhead) or with the caller (at most 1), so
	// there are never more than prefetchAhead+2
	return &Prefetched{src: src, ch: make(chan prefetchBatchOf, prefetchAhead), free: make(chan []Request, prefetchAhead+2), stop: make(chan struct{})}
}

func (p *Prefetched) Next(r *Request) error {
	x, err := p.NextRef()
	if err != nil {
		return err
	}
	*r = *x
	return nil
}

// NextRef is Next without the copy: the request it returns is valid until
// the next call.
func (p *Prefetched) NextRef() (*Request, error) {
	for {
		if p.i < len(p.cur) {
			p.i++
			return &p.cur[p.i-1], nil
		}
		if p.err != nil {
			return nil, p.err
		}
		if !p.started {
			p.started = true
			go p.run()
		}
		if p.cur != nil {
			select {
			case p.free <- p.cur[:0]:
			default:
			}
		}
		b := <-p.ch
		p.cur, p.i, p.err = b.rs, 0, b.err
	}
}

// Close stops the goroutine at its next batch (it may be blocked reading
// its input until the input is closed).
func (p *Prefetched) Close() { p.once.Do(func() { close(p.stop) }) }

func (p *Prefetched) run() {
	for {
		var rs []Request
		select {
		case rs = <-p.free:
		default:
			rs = make([]Request, 0, prefetchBatch)
		}
		var err error
		for len(rs) < prefetchBatch {
			rs = append(rs, Request{})
			if err = p.src.Next(&rs[len(rs)-1]); err != nil {
				rs = rs[:len(rs)-1]
				break
			}
		}
		select {
		case p.ch <- prefetchBatchOf{rs, err}:
		case <-p.stop:
			return
		}
		if err != nil {
			return
		}
	}
}
