package fairqueue_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
)

const ms = time.Millisecond

// req builds a request of flow 0 with one seat.
func req(arrival, service time.Duration) fairqueue.Request {
	return fairqueue.Request{Arrival: arrival, ServiceTime: service, InitialSeats: 1}
}

// fates renders outcomes as "executed@start" or the rejection reason.
func fates(out []fairqueue.Outcome) string {
	var parts []string
	for _, o := range out {
		if o.Reason == fairqueue.Executed {
			parts = append(parts, fmt.Sprintf("exec@%v", o.Start))
		} else {
			parts = append(parts, fmt.Sprintf("%s@%v", o.Reason, o.Start))
		}
	}
	return strings.Join(parts, " ")
}

// TestSimulatorSemantics pins the queueset rules on small hand-computed
// cases (the differential test covers the rest against upstream).
func TestSimulatorSemantics(t *testing.T) {
	queue1 := fairqueue.LevelConfig{Name: "q", Queues: 1, HandSize: 1, QueueLengthLimit: 1, ConcurrencyLimit: 1}
	tests := []struct {
		name  string
		level fairqueue.LevelConfig
		reqs  []fairqueue.Request
		want  string
	}{
		{
			name:  "queue length limit applies only when every seat is taken",
			level: queue1,
			reqs:  []fairqueue.Request{req(0, 1000*ms), req(100*ms, 10*ms), req(200*ms, 10*ms)},
			want:  "exec@0s exec@1s queue-full@200ms",
		},
		{
			name:  "a full queue still takes a request while a seat is free",
			level: fairqueue.LevelConfig{Name: "q", Queues: 1, HandSize: 1, QueueLengthLimit: 1, ConcurrencyLimit: 2},
			reqs:  []fairqueue.Request{req(0, 1000*ms), req(0, 1000*ms), req(0, 10*ms), req(0, 10*ms)},
			want:  "exec@0s exec@0s exec@1s queue-full@0s",
		},
		{
			name:  "reject level",
			level: fairqueue.LevelConfig{Name: "r", ConcurrencyLimit: 1},
			reqs:  []fairqueue.Request{req(0, 1000*ms), req(500*ms, 10*ms), req(1000*ms, 10*ms)},
			want:  "exec@0s concurrency-limit@500ms exec@1s",
		},
		{
			name:  "wait limit counts from arrival",
			level: fairqueue.LevelConfig{Name: "q", Queues: 1, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 1},
			reqs: []fairqueue.Request{req(0, 1000*ms),
				{Arrival: 100 * ms, ServiceTime: 10 * ms, InitialSeats: 1, WaitLimit: 500 * ms},
				{Arrival: 200 * ms, ServiceTime: 10 * ms, InitialSeats: 1, WaitLimit: 2000 * ms}},
			want: "exec@0s time-out@600ms exec@1s",
		},
		{
			name:  "exempt never waits",
			level: fairqueue.LevelConfig{Name: "exempt", Exempt: true},
			reqs:  []fairqueue.Request{req(0, 1000*ms), {Arrival: 0, ServiceTime: time.Second, InitialSeats: 50}},
			want:  "exec@0s exec@0s",
		},
		{
			name:  "final seats are held for the additional latency",
			level: fairqueue.LevelConfig{Name: "q", Queues: 1, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 2},
			reqs: []fairqueue.Request{{Arrival: 0, ServiceTime: time.Second, InitialSeats: 1, FinalSeats: 2, AdditionalLatency: time.Second},
				req(500*ms, 10*ms)},
			want: "exec@0s exec@2s",
		},
		{
			name:  "a request wider than the level runs alone",
			level: fairqueue.LevelConfig{Name: "q", Queues: 1, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 2},
			reqs: []fairqueue.Request{req(0, 1000*ms),
				{Arrival: 100 * ms, ServiceTime: time.Second, InitialSeats: 5},
				req(200*ms, 10*ms)},
			want: "exec@0s exec@1s exec@2s",
		},
		{
			name:  "head-of-line blocking across the level",
			level: fairqueue.LevelConfig{Name: "q", Queues: 2, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 3},
			// hash 0 deals queue 0, hash 1 queue 1. The 3-seat request of queue
			// 0 has the earliest virtual finish but does not fit, so the 1-seat
			// request of queue 1 waits from 200ms although a seat is free. At 1s
			// the first finish charges queue 0 for its long service, so the
			// 1-seat request goes first and the wide one waits for it.
			reqs: []fairqueue.Request{req(0, 1000*ms),
				{Arrival: 0, ServiceTime: time.Second, InitialSeats: 1, Hash: 1},
				{Arrival: 100 * ms, ServiceTime: 10 * ms, InitialSeats: 3},
				{Arrival: 200 * ms, ServiceTime: 10 * ms, InitialSeats: 1, Hash: 1}},
			want: "exec@0s exec@0s exec@1.01s exec@1s",
		},
		{
			name:  "a queuing level with limit 0 never dispatches",
			level: fairqueue.LevelConfig{Name: "q", Queues: 1, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 0},
			reqs:  []fairqueue.Request{{Arrival: 0, ServiceTime: 10 * ms, InitialSeats: 1, WaitLimit: time.Second}},
			want:  "time-out@1s",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.reqs {
				tt.reqs[i].ID = int64(i)
			}
			got := fates(runSim(t, tt.level, tt.reqs, 15*time.Second))
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			// the hand-computed expectations must also be upstream's
			if up := fates(runUpstream(tt.level, tt.reqs, 15*time.Second)); up != tt.want {
				t.Errorf("upstream disagrees with the expectation: %s", up)
			}
		})
	}
}

func TestSimulatorErrors(t *testing.T) {
	tests := []struct {
		name    string
		levels  []fairqueue.LevelConfig
		reqs    []fairqueue.Request
		wantErr string
	}{
		{"bad shuffle sharding", []fairqueue.LevelConfig{{Name: "q", Queues: 4, HandSize: 5, ConcurrencyLimit: 1}}, nil, `priority level "q": invalid shuffle sharding: handSize 5 is greater than deckSize 4`},
		{"negative limit", []fairqueue.LevelConfig{{Name: "q", ConcurrencyLimit: -1}}, nil, `priority level "q": negative concurrency limit -1`},
		{"unknown level", []fairqueue.LevelConfig{{Name: "q", ConcurrencyLimit: 1}}, []fairqueue.Request{{Level: 3}}, "request 0 names priority level index 3, but there are 1 levels"},
		{"service time out of range", []fairqueue.LevelConfig{{Name: "q", ConcurrencyLimit: 1}}, []fairqueue.Request{{ID: 7, ServiceTime: 1 << 62}}, "request 7: service time 1281023h53m38.427387904s is out of range (0 to 320255h58m24.606846976s)"},
		{"out of order", []fairqueue.LevelConfig{{Name: "q", ConcurrencyLimit: 1}}, []fairqueue.Request{{Arrival: time.Second, ID: 1}, {Arrival: 0, ID: 2}}, "request 2 arrives at 0s, before the previous event at 1s: sort the workload by arrival time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim, err := fairqueue.NewSimulator(tt.levels, fairqueue.Options{})
			if err == nil {
				_, err = sim.Run(&sliceSource{reqs: tt.reqs})
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestResultSummaries checks the per-level and per-flow summary against
// counts computed from the outcomes themselves.
func TestResultSummaries(t *testing.T) {
	level := fairqueue.LevelConfig{Name: "q", Queues: 8, HandSize: 2, QueueLengthLimit: 3, ConcurrencyLimit: 3}
	var reqs []fairqueue.Request
	for i := range 400 {
		f := int32(i % 3)
		reqs = append(reqs, fairqueue.Request{ID: int64(i), Arrival: time.Duration(i) * 2 * ms, Flow: f, Hash: uint64(f) * 977, InitialSeats: 1, ServiceTime: time.Duration(3+5*f) * ms})
	}
	var outs []fairqueue.Outcome
	sim, err := fairqueue.NewSimulator([]fairqueue.LevelConfig{level}, fairqueue.Options{OnOutcome: func(o *fairqueue.Outcome) { outs = append(outs, *o) }, FlowNames: []string{"a", "b", "c"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(&sliceSource{reqs: reqs})
	if err != nil {
		t.Fatal(err)
	}
	var disp int64
	rej := map[string]int64{}
	var maxWait time.Duration
	for _, o := range outs {
		if o.Reason == fairqueue.Executed {
			disp++
			maxWait = max(maxWait, o.Start-o.Arrival)
		} else {
			rej[o.Reason.String()]++
		}
	}
	lr := res.Levels[0]
	if lr.Dispatched != disp || fmt.Sprint(lr.Rejected) != fmt.Sprint(rej) || lr.WaitMaxSeconds != maxWait.Seconds() {
		t.Errorf("level summary %+v, outcomes say dispatched %d rejected %v max wait %v", lr, disp, rej, maxWait)
	}
	if disp == 0 || len(rej) == 0 {
		t.Fatalf("workload should both dispatch and reject: %d, %v", disp, rej)
	}
	if len(lr.Flows) != 3 {
		t.Fatalf("flows %+v, want 3", lr.Flows)
	}
	var flowDisp int64
	for i, f := range lr.Flows {
		flowDisp += f.Dispatched
		if i > 0 && f.Dispatched+sum(f.Rejected) > lr.Flows[i-1].Dispatched+sum(lr.Flows[i-1].Rejected) {
			t.Errorf("flows not busiest first: %+v", lr.Flows)
		}
	}
	if flowDisp != disp {
		t.Errorf("flows dispatched %d in all, level %d", flowDisp, disp)
	}
	if lr.WaitP50Seconds > lr.WaitP99Seconds || lr.WaitP99Seconds > lr.WaitMaxSeconds {
		t.Errorf("quantiles out of order: %+v", lr)
	}
	if lr.PeakSeatsInUse != 3 || lr.PeakQueueLength == 0 {
		t.Errorf("peaks %d seats, %d waiting; want 3 and >0", lr.PeakSeatsInUse, lr.PeakQueueLength)
	}
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// TestSeatDemandDriftFromClippedFinalSeats pins an upstream quirk the
// borrowing input inherits: a queued request whose final seats exceed the
// limit is added to totSeatsWaiting with its full width but subtracted with
// the clipped one (queueset.go:dispatchLocked runs after
// findDispatchQueueToBoundLocked clipped FinalSeats), so the level's seat
// demand stays 3 seats too high for ever after.
func TestSeatDemandDriftFromClippedFinalSeats(t *testing.T) {
	level := fairqueue.LevelConfig{Name: "q", Queues: 1, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 2}
	reqs := []fairqueue.Request{
		{ID: 0, Arrival: 0, ServiceTime: 100 * ms, InitialSeats: 1},
		// queued behind request 0, then dispatched with final seats clipped 5 → 2
		{ID: 1, Arrival: 10 * ms, ServiceTime: 100 * ms, InitialSeats: 1, FinalSeats: 5, AdditionalLatency: 10 * ms},
		// long after everything finished
		{ID: 2, Arrival: 100 * time.Second, ServiceTime: ms, InitialSeats: 1},
	}
	_, up := runUpstreamDemand(level, reqs, 15*time.Second)
	_, sim := runSimDemand(t, level, reqs, 15*time.Second)
	if !approx(up.Average, sim.Average) || up.Max != sim.Max {
		t.Fatalf("seat demand: upstream %+v, simulator %+v", up, sim)
	}
	// idle for ~99.8 of the 100 s, at a demand of 3 seats
	if sim.Average < 2.9 || sim.Average > 3.1 {
		t.Errorf("average demand %.3f; the drift of 3 seats should dominate it", sim.Average)
	}
}

// slowCPU ends every execution after its hold, except those dispatched
// within [from, to), which end at to + their hold: a server that could not
// run in between.
type slowCPU struct{ from, to time.Duration }

func (c slowCPU) End(start, hold, _ time.Duration) time.Duration {
	if start >= c.from && start < c.to {
		return c.to + hold
	}
	return start + hold
}

// TestSimulatorAsksTheCPUWhenAnExecutionEnds: with Options.CPU an
// execution holds its seat until the CPU says it ended, so the requests
// queued behind it wait, and overflow, accordingly.
func TestSimulatorAsksTheCPUWhenAnExecutionEnds(t *testing.T) {
	level := fairqueue.LevelConfig{Name: "q", Queues: 1, HandSize: 1, QueueLengthLimit: 1, ConcurrencyLimit: 1}
	reqs := []fairqueue.Request{req(0, 10*ms), req(100*ms, 10*ms), req(112*ms, 10*ms), req(125*ms, 10*ms)}
	for i := range reqs {
		reqs[i].ID = int64(i)
	}
	for _, tt := range []struct {
		name string
		cpu  fairqueue.CPU
		want string
	}{
		{"no CPU model", nil, "exec@0s exec@100ms exec@112ms exec@125ms"},
		// the second request stalls until 200 ms: the third waits for it,
		// the fourth finds the one queue place taken
		{"stalled from 100 ms to 200 ms", slowCPU{100 * ms, 200 * ms}, "exec@0s exec@100ms exec@210ms queue-full@125ms"},
	} {
		out := make([]fairqueue.Outcome, len(reqs))
		sim, err := fairqueue.NewSimulator([]fairqueue.LevelConfig{level}, fairqueue.Options{
			OnOutcome: func(o *fairqueue.Outcome) { out[o.ID] = *o },
			CPU:       tt.cpu,
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sim.Run(&sliceSource{reqs: reqs}); err != nil {
			t.Fatal(err)
		}
		if got := fates(out); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
}

// arrivalCPU records the arrivals and executions it is told of, in order.
type arrivalCPU struct{ events []string }

func (c *arrivalCPU) End(start, hold, _ time.Duration) time.Duration {
	c.events = append(c.events, fmt.Sprintf("exec@%v", start))
	return start + hold
}

func (c *arrivalCPU) Arrive(at time.Duration) {
	c.events = append(c.events, fmt.Sprintf("arrive@%v", at))
}

// TestSimulatorTellsTheCPUOfArrivals: a CPU that spends what a request
// costs before APF (fairqueue.ArrivalCPU) hears of every arrival, the
// rejected ones too, in time order, before the arrival's dispatch and
// after the events before it (the first execution's end frees the seat
// the third takes).
func TestSimulatorTellsTheCPUOfArrivals(t *testing.T) {
	level := fairqueue.LevelConfig{Name: "q", Queues: 1, HandSize: 1, QueueLengthLimit: 1, ConcurrencyLimit: 1}
	reqs := []fairqueue.Request{req(0, 10*ms), req(2*ms, 10*ms), req(4*ms, 10*ms), req(30*ms, 10*ms)}
	for i := range reqs {
		reqs[i].ID = int64(i)
	}
	cpu := &arrivalCPU{}
	sim, err := fairqueue.NewSimulator([]fairqueue.LevelConfig{level}, fairqueue.Options{CPU: cpu})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(&sliceSource{reqs: reqs}); err != nil {
		t.Fatal(err)
	}
	want := "arrive@0s exec@0s arrive@2ms arrive@4ms exec@10ms arrive@30ms exec@30ms"
	if got := strings.Join(cpu.events, " "); got != want {
		t.Errorf("the CPU heard %s, want %s", got, want)
	}
}
