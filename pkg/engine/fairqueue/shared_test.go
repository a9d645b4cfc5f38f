package fairqueue

import (
	"testing"
	"time"
)

// sharingCPU shares one core: n executions each run at 1/n of their pace.
type sharingCPU struct{}

func (sharingCPU) Stretch(n int) float64                          { return float64(n) }
func (sharingCPU) End(start, hold, _ time.Duration) time.Duration { return start + hold }

// TestProcessorSharing: on a SharedCPU every start and end of an execution
// changes the others' pace. Two 1-seat levels, 10 ms executions: a1 runs
// alone from 0, b1 joins at 5 ms (a1 has 5 ms left, at half pace: it ends
// at 15 ms), a2 (queued behind a1) starts at 15 ms and shares with b1
// (5 ms left, at half pace: b1 ends at 25 ms), so b2 (queued behind b1)
// starts at 25 ms. Without sharing a2 starts at 10 ms and b2 at 15 ms.
func TestProcessorSharing(t *testing.T) {
	levels := []LevelConfig{
		{Name: "a", Queues: 1, HandSize: 1, QueueLengthLimit: 5, ConcurrencyLimit: 1},
		{Name: "b", Queues: 1, HandSize: 1, QueueLengthLimit: 5, ConcurrencyLimit: 1},
	}
	ms := time.Millisecond
	reqs := []Request{
		{ID: 1, Arrival: 0, Level: 0, InitialSeats: 1, ServiceTime: 10 * ms},
		{ID: 2, Arrival: 5 * ms, Level: 1, InitialSeats: 1, ServiceTime: 10 * ms},
		{ID: 3, Arrival: 6 * ms, Level: 0, InitialSeats: 1, ServiceTime: 10 * ms},
		{ID: 4, Arrival: 7 * ms, Level: 1, InitialSeats: 1, ServiceTime: 10 * ms},
	}
	for _, tc := range []struct {
		name string
		cpu  CPU
		want map[int64]time.Duration
	}{
		{"shared", sharingCPU{}, map[int64]time.Duration{1: 0, 2: 5 * ms, 3: 15 * ms, 4: 25 * ms}},
		{"not shared", nil, map[int64]time.Duration{1: 0, 2: 5 * ms, 3: 10 * ms, 4: 15 * ms}},
	} {
		got := map[int64]time.Duration{}
		sim, err := NewSimulator(levels, Options{CPU: tc.cpu, OnOutcome: func(o *Outcome) {
			if o.Reason != Executed {
				t.Errorf("%s: request %d: %s", tc.name, o.ID, o.Reason)
			}
			got[o.ID] = o.Start
		}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sim.Run(&reqSlice{reqs: reqs}); err != nil {
			t.Fatal(err)
		}
		for id, want := range tc.want {
			if got[id] != want {
				t.Errorf("%s: request %d dispatched at %v, want %v", tc.name, id, got[id], want)
			}
		}
	}
}
