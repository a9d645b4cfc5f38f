package calibrate

import (
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// TestRoomsOnArrival: a request found its level with room when the seats
// of the level's requests in the server at its arrival (each from its
// arrival to its end), with its own, fit the level's lower limit; an
// exempt level always has room.
func TestRoomsOnArrival(t *testing.T) {
	ms := time.Millisecond
	one := engine.LevelLimits{NominalCL: 2, LendableCL: 1, LowerCL: 1}
	r := newRooms()
	for _, tc := range []struct {
		at, latency time.Duration
		seats       uint64
		want        bool
	}{
		{0, 10 * ms, 1, true},        // alone
		{5 * ms, 10 * ms, 1, false},  // the first is still in
		{12 * ms, 5 * ms, 1, false},  // the second is still in, until 15 ms
		{20 * ms, 10 * ms, 1, true},  // both gone
		{40 * ms, 10 * ms, 2, false}, // two seats never fit one
	} {
		x := &obs{level: "l", arrival: tc.at, latency: tc.latency, seats: tc.seats}
		if got := r.arrive(x, one, true); got != tc.want {
			t.Errorf("arrival at %v for %v, %d seats: room %v, want %v", tc.at, tc.latency, tc.seats, got, tc.want)
		}
	}
	for range 3 {
		if !r.arrive(&obs{level: "exempt", latency: time.Second, seats: 1, exempt: true}, engine.LevelLimits{Exempt: true}, true) {
			t.Error("an exempt request found no room")
		}
	}
	if r.arrive(&obs{level: "unknown", latency: time.Second, seats: 1}, engine.LevelLimits{}, false) {
		t.Error("a request of an unknown level found room")
	}
}
