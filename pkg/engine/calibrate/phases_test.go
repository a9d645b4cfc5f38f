package calibrate

import (
	"testing"
	"time"
)

// TestPhasesAtAnyCFSPeriod: the phase table is as long as the CFS period
// has milliseconds, whatever the period. It was a [100]int32, which a
// period above 100 ms overran (an index out of range) and one below wrapped
// at 100 ms instead of at the period. Stalls that end at one phase of the
// period read as ending there, at 50 ms, 100 ms and 250 ms.
func TestPhasesAtAnyCFSPeriod(t *testing.T) {
	for _, tt := range []struct {
		period, phase time.Duration
	}{
		{50 * time.Millisecond, 2 * time.Millisecond},  // the window wraps at the period's end
		{50 * time.Millisecond, 30 * time.Millisecond}, // beyond 100 ms would be out of a 50 ms period
		{100 * time.Millisecond, 70 * time.Millisecond},
		{250 * time.Millisecond, 200 * time.Millisecond}, // beyond the old table
	} {
		p := DefaultParams()
		p.CFSPeriod = tt.period
		var ph phases
		for i := range 40 {
			// executions of 30 ms ending at the phase of 40 periods, ±1 ms
			end := time.Duration(i+3)*tt.period + tt.phase + time.Duration(i%3-1)*time.Millisecond
			ph.add(&p, 30*time.Millisecond, end)
		}
		share, at := ph.boundaryShare(&p, 0)
		if share != 1 {
			t.Errorf("CFS period %v: %.2f of the stalls at one phase, want all", tt.period, share)
		}
		if d := time.Duration(at) - tt.phase; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("CFS period %v: phase %v, want about %v", tt.period, time.Duration(at), tt.phase)
		}
		for b, h := range ph {
			if len(h) != int(tt.period/time.Millisecond) {
				t.Errorf("CFS period %v: bucket %d has %d phase bins, want one a millisecond", tt.period, b, len(h))
			}
		}
	}
}
