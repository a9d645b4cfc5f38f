package simulate

import (
	"fmt"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
)

// simLevel is the part of a level the hand-computed cases check.
type simLevel struct {
	Name            string
	Dispatched      int64
	Rejected        map[string]int64
	WaitP50Seconds  float64
	WaitP99Seconds  float64
	WaitMaxSeconds  float64
	PeakQueueLength int
	PeakSeatsInUse  int
}

func findLevel(ls []fairqueue.LevelResult, name string) *simLevel {
	for _, l := range ls {
		if l.Name == name {
			return &simLevel{Name: l.Name, Dispatched: l.Dispatched, Rejected: l.Rejected, WaitP50Seconds: l.WaitP50Seconds, WaitP99Seconds: l.WaitP99Seconds,
				WaitMaxSeconds: l.WaitMaxSeconds, PeakQueueLength: l.PeakQueueLength, PeakSeatsInUse: l.PeakSeatsInUse}
		}
	}
	return nil
}

// TestSimulateHandComputed checks outcomes worked out by hand from the
// rules of APF, not from the simulator. Without borrowing, a level's limit
// is ceil(serverConcurrency * shares / sum of shares); the upstream defaults
// hold 245 shares, global-default 20 of them, so 49 seats give it 4. One
// user's flow has a hand of 6 of global-default's 128 queues.
func TestSimulateHandComputed(t *testing.T) {
	const pods = "/api/v1/namespaces/default/pods"
	// a Reject level of 5 shares: with 250 seats and 245+5 shares, 5 seats
	rejectLevel := writeFile(t, "reject.yaml", `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: batch}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 5
    lendablePercent: 0
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: batch}
spec:
  priorityLevelConfiguration: {name: batch}
  matchingPrecedence: 100
  rules:
  - subjects: [{kind: User, user: {name: batch}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"]}]
`)
	tests := []struct {
		name     string
		workload *jsonl
		in       stateInput
		sets     []string
		timeout  time.Duration
		level    string
		after    bool // check the "after" run
		want     simLevel
	}{
		{
			// 4 run at once, 4 after 1s, 2 after 2s: waits 0×4, 1s×4, 2s×2;
			// 6 wait at once after the 10th arrival
			name:     "ten requests on four seats",
			workload: (&jsonl{}).burst("0s", "alice", "list", pods, "1s", 10),
			in:       stateInput{scl: 49},
			level:    "global-default",
			want:     simLevel{Dispatched: 10, Rejected: map[string]int64{}, WaitP50Seconds: 1, WaitP99Seconds: 2, WaitMaxSeconds: 2, PeakQueueLength: 6, PeakSeatsInUse: 4},
		},
		{
			// a queue length limit of 1 on a hand of 6: 4 run, 6 wait (one
			// per queue), 2 are rejected
			name:     "queue length limit 1",
			workload: (&jsonl{}).burst("0s", "alice", "list", pods, "1s", 12),
			in:       stateInput{scl: 49},
			sets:     []string{"global-default.queueLengthLimit=1"},
			level:    "global-default",
			after:    true,
			want:     simLevel{Dispatched: 10, Rejected: map[string]int64{"queue-full": 2}, WaitP50Seconds: 1, WaitP99Seconds: 2, WaitMaxSeconds: 2, PeakQueueLength: 6, PeakSeatsInUse: 4},
		},
		{
			// the same twelve with the default queues: all served, waits
			// 0, 1s and 2s four times each
			name:     "queue length limit 1, before",
			workload: (&jsonl{}).burst("0s", "alice", "list", pods, "1s", 12),
			in:       stateInput{scl: 49},
			sets:     []string{"global-default.queueLengthLimit=1"},
			level:    "global-default",
			want:     simLevel{Dispatched: 12, Rejected: map[string]int64{}, WaitP50Seconds: 1, WaitP99Seconds: 2, WaitMaxSeconds: 2, PeakQueueLength: 8, PeakSeatsInUse: 4},
		},
		{
			// --request-timeout 8s: a 2s wait limit. Rounds of 4 start at
			// 0, 0.9s and 1.8s; the 8 still queued at 2s time out
			name:     "wait limit from the request timeout",
			workload: (&jsonl{}).burst("0s", "alice", "list", pods, "900ms", 20),
			in:       stateInput{scl: 49},
			timeout:  8 * time.Second,
			level:    "global-default",
			want:     simLevel{Dispatched: 12, Rejected: map[string]int64{"time-out": 8}, WaitP50Seconds: 0.9, WaitP99Seconds: 1.8, WaitMaxSeconds: 1.8, PeakQueueLength: 16, PeakSeatsInUse: 4},
		},
		{
			// ?timeout=4s lowers the deadline, so the wait limit is 1s: only
			// the first two rounds are served
			name:     "wait limit from the timeout parameter",
			workload: (&jsonl{}).burst("0s", "alice", "list", pods+"?timeout=4s", "900ms", 20),
			in:       stateInput{scl: 49},
			level:    "global-default",
			want:     simLevel{Dispatched: 8, Rejected: map[string]int64{"time-out": 12}, WaitP50Seconds: 0, WaitP99Seconds: 0.9, WaitMaxSeconds: 0.9, PeakQueueLength: 16, PeakSeatsInUse: 4},
		},
		{
			// a Reject level of 5 seats: 5 run, 3 are refused at once
			name:     "reject level from a file",
			workload: (&jsonl{}).burst("0s", "batch", "list", pods, "1s", 8),
			in:       stateInput{scl: 250, files: []string{rejectLevel}},
			level:    "batch",
			after:    true,
			want:     simLevel{Dispatched: 5, Rejected: map[string]int64{"concurrency-limit": 3}, PeakSeatsInUse: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := commandDefaults()
			cfg.Workloads, cfg.NoBorrowing, cfg.Sets = []string{tt.workload.write(t)}, true, sets(t, tt.sets...)
			if tt.timeout > 0 {
				cfg.RequestTimeout = tt.timeout
			}
			tt.in.defaults = true
			rep := simulateT(t, tt.in, cfg)
			levels := rep.Levels
			if tt.after {
				if rep.After == nil {
					t.Fatal("no after run")
				}
				levels = rep.After.Levels
			}
			got := findLevel(levels, tt.level)
			if got == nil {
				t.Fatalf("no level %s in %+v", tt.level, levels)
			}
			tt.want.Name = tt.level
			// waits come from a histogram exact to 1.6%
			for _, w := range []struct {
				what      string
				got, want float64
			}{{"p50", got.WaitP50Seconds, tt.want.WaitP50Seconds}, {"p99", got.WaitP99Seconds, tt.want.WaitP99Seconds}, {"max", got.WaitMaxSeconds, tt.want.WaitMaxSeconds}} {
				if d := w.got - w.want; d > 0.016*w.want+1e-6 || d < -0.016*w.want-1e-6 {
					t.Errorf("wait %s = %vs, want %vs", w.what, w.got, w.want)
				}
			}
			got.WaitP50Seconds, got.WaitP99Seconds, got.WaitMaxSeconds = tt.want.WaitP50Seconds, tt.want.WaitP99Seconds, tt.want.WaitMaxSeconds
			if fmt.Sprint(*got) != fmt.Sprint(tt.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}
