package levels

import "math"

// Less is the one order of level rows (top levels --sort-by, the live
// view's "s"): by the figure key names, largest
// first, a row without the figure (NaN) after every row with it, then by
// name and instance. "utilisation" and "seats" are the seats in use over
// the current limit; a level without one (exempt, or a zero limit) comes
// after every level with one, ordered by its seats in use. "name" orders
// by name alone.
func Less(key string) func(a, b Row) bool {
	figure := func(r Row) float64 {
		switch key {
		case "utilisation", "seats":
			if !math.IsNaN(r.Utilisation) {
				return r.Utilisation
			}
			return nanLow(r.SeatsInUse) - 1e9
		case "waiting":
			return nanLow(r.Waiting)
		case "rejected":
			return nanLow(r.RejectedTotal)
		case "dispatched":
			return nanLow(r.DispatchedPerSec)
		case "p99":
			return nanLow(r.WaitP99)
		}
		return 0
	}
	return func(a, b Row) bool {
		if fa, fb := figure(a), figure(b); fa != fb {
			return fa > fb
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Instance < b.Instance
	}
}

// nanLow orders NaN below every number, so rows without the figure sort
// last in a descending order.
func nanLow(f float64) float64 {
	if math.IsNaN(f) {
		return math.Inf(-1)
	}
	return f
}
