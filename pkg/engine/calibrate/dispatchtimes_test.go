package calibrate

import (
	"testing"
	"time"
)

// TestCountWaitSlowUnannotated: a request whose dispatch time the
// calibration estimated from an audit log (the replay's wait, or a
// one-seat level's ends), slower than 500 ms, is one the apiserver should
// have annotated; an annotated one, a fast one and one of httplog are not.
func TestCountWaitSlowUnannotated(t *testing.T) {
	r := &Result{}
	for _, x := range []obs{
		{hasWait: true, waitFrom: waitReplay, latency: 600 * time.Millisecond},
		{hasWait: true, waitFrom: waitEnds, latency: 2 * time.Second},
		{hasWait: true, waitFrom: waitReplay, latency: 500 * time.Millisecond},
		{hasWait: true, waitFrom: waitAnnotated, latency: 900 * time.Millisecond},
		{hasWait: true, waitFrom: waitLatency, latency: 900 * time.Millisecond},
		{hasWait: true, waitFrom: waitReplay, latency: 900 * time.Millisecond, rejected: true},
	} {
		r.countWait(&x)
	}
	d := r.DispatchTimes
	if d == nil || d.SlowUnannotated != 2 || d.FromReplay != 2 || d.FromEnds != 1 || d.Annotated != 1 || d.FromLatency != 1 {
		t.Errorf("dispatch times %+v, want 2 slow unannotated of 2 from the replay and 1 from the ends", d)
	}
}
