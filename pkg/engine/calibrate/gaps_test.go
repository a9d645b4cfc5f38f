package calibrate

import (
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// TestStalledGapsComeOffTheOverhead: a level of one seat whose 100
// recorded executions of 2 ms each ran back to back, the next one waiting
// for the one before and starting 0.2 ms after it ended, but for five that
// started 80.2 ms after (the quota ran out as they were woken). Its
// saturated time gave an overhead of the gaps' mean, 4.24 ms; the stalled
// gaps' 400 ms beyond the median come off it, leaving the median gap, in
// the level's figure and in the window that held them. Where the
// saturated time gave less than the stalled gaps' excess (1 ms for their
// 4.04 ms a dispatch), the overhead is the median gap all the same, not 0:
// every dispatch from a queue waited that long for its execution. A level
// of two seats, one whose overhead is the server's, and one without
// recorded executions keep theirs.
func TestStalledGapsComeOffTheOverhead(t *testing.T) {
	la := &levelAcc{name: "slow", params: &params}
	at := time.Duration(0)
	var total time.Duration
	for i := range 100 {
		gap := 200 * time.Microsecond
		if i%20 == 10 {
			gap = 80*ms + 200*time.Microsecond
		}
		if i > 0 {
			total += gap
		}
		start := at + gap
		if i == 0 {
			start = at
		}
		// it arrived while the one before ran
		la.recorded.add(serialExec{arrival: start - gap - ms, start: start, end: start + 2*ms})
		at = start + 2*ms
	}
	over := total / 99
	if over < 4*ms || over > 5*ms {
		t.Fatalf("the gaps' mean is %v, want about 4.24 ms", over)
	}
	newResult := func(source LevelSource, seats int, over time.Duration) (*Result, map[string]engine.LevelLimits) {
		r := &Result{params: &params, working: working{overhead: map[string]time.Duration{"slow": over}, windows: map[string]map[int64]time.Duration{"slow": {0: over}}}}
		r.Levels = []Level{{Level: "slow", Source: source, Seats: 99, Overhead: Duration(over), MeanExecution: Duration(2 * ms),
			Windows: []WindowOverhead{{Start: 0, Overhead: Duration(over), Seats: 99}}}}
		return r, map[string]engine.LevelLimits{"slow": {Name: "slow", Queuing: true, NominalCL: seats}}
	}

	for _, saturated := range []time.Duration{over, ms} {
		r, limits := newResult("saturated", 1, saturated)
		r.stalledGaps(la, limits)
		lv := r.Levels[0]
		want := 200 * time.Microsecond
		if d := time.Duration(lv.Overhead) - want; d < -time.Microsecond || d > time.Microsecond || r.overhead["slow"] != time.Duration(lv.Overhead) {
			t.Errorf("saturated overhead %v: overhead %v (the replay's %v), want the median gap %v", saturated, time.Duration(lv.Overhead), r.overhead["slow"], want)
		}
		if lv.StalledGaps != 5 || time.Duration(lv.StalledGapTime) != 400*ms {
			t.Errorf("%d stalled gaps, %v beyond the median, want 5 and 400ms", lv.StalledGaps, time.Duration(lv.StalledGapTime))
		}
		if w := r.windows["slow"][0]; w != time.Duration(lv.Windows[0].Overhead) || w-want < -time.Microsecond || w-want > time.Microsecond {
			t.Errorf("saturated overhead %v: window 0's overhead %v (the level's entry %v), want %v", saturated, w, time.Duration(lv.Windows[0].Overhead), want)
		}
		if lv.HoldTime != lv.MeanExecution+lv.Overhead {
			t.Errorf("hold %v, want the execution and the overhead, %v", time.Duration(lv.HoldTime), time.Duration(lv.MeanExecution+lv.Overhead))
		}
	}

	for _, c := range []struct {
		name   string
		source LevelSource
		seats  int
		la     *levelAcc
	}{
		{"two seats", "saturated", 2, la},
		{"a level without saturated time of its own", SourceUnmeasured, 1, la},
		{"no recorded executions (an audit log alone)", "saturated", 1, &levelAcc{name: "slow", params: &params}},
	} {
		r, limits := newResult(c.source, c.seats, over)
		r.stalledGaps(c.la, limits)
		if lv := r.Levels[0]; time.Duration(lv.Overhead) != over || lv.StalledGaps != 0 || r.windows["slow"][0] != over {
			t.Errorf("%s: overhead %v, %d stalled gaps, want %v kept", c.name, time.Duration(lv.Overhead), lv.StalledGaps, over)
		}
	}
}
