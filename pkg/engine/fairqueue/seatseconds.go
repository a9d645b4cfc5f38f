package fairqueue

import (
	"fmt"
	"math"
	"time"
)

// SeatSeconds is an amount of work in seat-seconds, in the fixed-point
// representation of k8s.io/apiserver/pkg/util/flowcontrol/request.SeatSeconds:
// SeatSeconds(n) is n/1e8 seat-seconds. The virtual clock R(t) and every
// queue's next dispatch reading are SeatSeconds, and the simulator rounds at
// exactly the same points as upstream so that ties break the same way.
type SeatSeconds uint64

// ssScale mirrors request/seat_seconds.go:ssScale.
const ssScale = 1e8

// MaxSeatSeconds is the largest representable SeatSeconds
// (request.MaxSeatSeconds).
const MaxSeatSeconds = SeatSeconds(math.MaxUint64)

// SeatsTimesDuration mirrors request.SeatsTimesDuration: the product, rounded
// half away from zero to the fixed-point unit. A negative product wraps
// around, as upstream's int64 to uint64 conversion does; finishing a request
// that ran longer than the 3 ms estimate relies on that wrap.
func SeatsTimesDuration(seats float64, duration time.Duration) SeatSeconds {
	return SeatSeconds(int64(math.Round(seats * float64(duration/time.Nanosecond) / (1e9 / ssScale))))
}

// DurationPerSeat mirrors request.SeatSeconds.DurationPerSeat.
func (ss SeatSeconds) DurationPerSeat(seats float64) time.Duration {
	return time.Duration(float64(ss) / seats * (float64(time.Second) / ssScale))
}

// String prints the value as upstream does, e.g. "0.00300000ss".
func (ss SeatSeconds) String() string {
	const div = SeatSeconds(ssScale)
	quo := ss / div
	rem := ss - quo*div
	return fmt.Sprintf("%d.%08dss", quo, rem)
}
