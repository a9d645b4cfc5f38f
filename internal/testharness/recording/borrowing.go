package recording

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
)

// The load's start aligned to kube-apiserver's borrowing adjustments.

// apfRebalancing is the line kube-apiserver logs (apf_controller.go, Run)
// right before it starts its borrowing adjustments: the first runs at once,
// then every 10 s (wait.Until, the period counted from the end of one run).
const apfRebalancing = "Running API Priority and Fairness periodic rebalancing process"

// alignToBorrowing returns when to start the plan so that its first
// request reaches the server 20 ms after one of its borrowing adjustments,
// at least a second from now. The server adjusts the levels' limits every
// 10 s from its own start, and a replay of the recording every 10 s from the
// first request's arrival: the two agree only when the load starts in that
// phase, and two runs of one plan see the same limits at the same offsets
// only then. The phase is read from the time kube-apiserver logged when it
// started adjusting; the adjustments drift later by the time each takes
// (microseconds, more when the server is throttled), which the recordings
// accept.
func (s *Session) alignToBorrowing(plan loadgen.PlanOptions) (time.Time, int, error) {
	a := s.Cluster.APIServers[0]
	since, err := rebalancingStart(a.LogFile)
	if err != nil {
		return time.Time{}, 0, err
	}
	var first time.Duration
	if shots := plan.Shots(); len(shots) > 0 {
		first = shots[0].At
	}
	start, k := alignedStart(since, time.Now(), first)
	return start.Add(s.PhaseOffset), k, nil
}

// alignedStart returns the start of a plan whose first request leaves at
// offset first, so that it reaches the server 20 ms after the k-th
// borrowing adjustment since the adjustments began at since, and at least
// a second after now.
func alignedStart(since, now time.Time, first time.Duration) (time.Time, int) {
	const period = 10 * time.Second
	want := now.Add(time.Second + first) // the first request's arrival, at the earliest
	k := (want.Sub(since) + period - 1) / period
	return since.Add(k*period + 20*time.Millisecond - first), int(k)
}

// rebalancingStart reads when kube-apiserver started its borrowing
// adjustments from its log (klog's header: Lmmdd hh:mm:ss.uuuuuu, local
// time, no year).
func rebalancingStart(logFile string) (time.Time, error) {
	data, err := os.ReadFile(logFile)
	if err != nil {
		return time.Time{}, err
	}
	var last string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, apfRebalancing) {
			last = line
		}
	}
	if len(last) < 21 {
		return time.Time{}, fmt.Errorf("%s has no line %q: cannot tell when the server adjusts borrowing", logFile, apfRebalancing)
	}
	t, err := time.ParseInLocation("0102 15:04:05.000000", last[1:21], time.Local)
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the time of %q in %s: %w", apfRebalancing, logFile, err)
	}
	now := time.Now()
	t = t.AddDate(now.Year(), 0, 0)
	if t.After(now.Add(time.Hour)) { // logged on the 31st of December
		t = t.AddDate(-1, 0, 0)
	}
	return t, nil
}
