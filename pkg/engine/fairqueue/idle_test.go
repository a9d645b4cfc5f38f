package fairqueue

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

type reqSlice struct {
	reqs []Request
	i    int
}

func (s *reqSlice) Next(r *Request) error {
	if s.i >= len(s.reqs) {
		return io.EOF
	}
	*r = s.reqs[s.i]
	s.i++
	return nil
}

// TestIdleBorrowingSkip checks that skipping converged idle borrowing passes
// (a 6-hour gap: 2160 passes) changes neither the limits nor any outcome.
func TestIdleBorrowingSkip(t *testing.T) {
	limits := []engine.LevelLimits{
		{Name: "a", Queuing: true, NominalCL: 10, LendableCL: 5, LowerCL: 5, BorrowingCL: 30, UpperCL: 40},
		{Name: "b", Queuing: true, NominalCL: 20, LendableCL: 10, LowerCL: 10, BorrowingCL: 30, UpperCL: 50},
	}
	levels := []LevelConfig{
		{Name: "a", Queues: 4, HandSize: 2, QueueLengthLimit: 5, ConcurrencyLimit: 8},
		{Name: "b", Queues: 4, HandSize: 2, QueueLengthLimit: 5, ConcurrencyLimit: 15},
	}
	var reqs []Request
	burst := func(at time.Duration) {
		for i := range 60 {
			reqs = append(reqs, Request{ID: int64(len(reqs)), Arrival: at + time.Duration(i)*time.Millisecond, Level: i % 2, Hash: uint64(i % 7),
				InitialSeats: 1, FinalSeats: uint64(i % 4), AdditionalLatency: time.Millisecond, ServiceTime: 2 * time.Second})
		}
	}
	burst(0)
	burst(6 * time.Hour)
	run := func() (string, int) {
		var out []string
		passes := 0
		var last []int
		prev := map[string]int{"a": 8, "b": 15}
		sim, err := NewSimulator(levels, Options{
			OnOutcome: func(o *Outcome) { out = append(out, fmt.Sprintf("%d:%s@%v", o.ID, o.Reason, o.Start)) },
			Borrow: func(st []engine.SeatDemandStats) []int {
				passes++
				m := map[string]engine.SeatDemandStats{"a": st[0], "b": st[1]}
				cur := engine.AllocateCurrentLimits(limits, m, prev, 60)
				last = []int{cur.CurrentCL["a"], cur.CurrentCL["b"]}
				prev["a"], prev["b"] = last[0], last[1]
				return last
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sim.Run(&reqSlice{reqs: reqs}); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(out, last), passes
	}
	skipped, fewer := run()
	saved := idleConverged
	idleConverged = 1 << 30
	defer func() { idleConverged = saved }()
	full, all := run()
	if skipped != full {
		t.Errorf("skipping idle passes changed the replay:\nskip: %s\nfull: %s", skipped, full)
	}
	if fewer >= all || all < 2160 {
		t.Errorf("%d passes with the skip, %d without: the skip did not happen", fewer, all)
	}
}
