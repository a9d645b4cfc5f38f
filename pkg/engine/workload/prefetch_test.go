package workload

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"
)

// countingReader yields n requests, then err.
type countingReader struct {
	i, n int
	err  error
}

func (c *countingReader) Next(r *Request) error {
	if c.i == c.n {
		return c.err
	}
	*r = Request{Arrival: time.Unix(int64(c.i), 0), AuditID: fmt.Sprint(c.i)}
	c.i++
	return nil
}

// TestPrefetchSameStream: a prefetched reader yields its source's requests
// in order, across batch boundaries, then the source's error (io.EOF or
// another), again on every later call.
func TestPrefetchSameStream(t *testing.T) {
	bad := errors.New("bad line")
	for _, n := range []int{0, 1, prefetchBatch - 1, prefetchBatch, prefetchBatch + 1, 5*prefetchBatch + 3} {
		for _, end := range []error{io.EOF, bad} {
			p := Prefetch(&countingReader{n: n, err: end})
			var r Request
			for i := range n {
				if err := p.Next(&r); err != nil || r.AuditID != fmt.Sprint(i) || r.Arrival.Unix() != int64(i) {
					t.Fatalf("n=%d: request %d: %+v, %v", n, i, r, err)
				}
			}
			for range 2 {
				if err := p.Next(&r); err != end {
					t.Fatalf("n=%d: after the requests: %v, want %v", n, err, end)
				}
			}
		}
	}
}

// TestPrefetchCloseStops: closing a prefetched reader that was left
// unread ends its goroutine.
func TestPrefetchCloseStops(t *testing.T) {
	before := runtime.NumGoroutine()
	p := Prefetch(&countingReader{n: 100 * prefetchBatch, err: io.EOF})
	var r Request
	if err := p.Next(&r); err != nil {
		t.Fatal(err)
	}
	p.Close()
	p.Close()
	for i := 0; runtime.NumGoroutine() > before; i++ {
		if i == 10000 {
			t.Fatalf("%d goroutines, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(time.Millisecond)
	}
}
