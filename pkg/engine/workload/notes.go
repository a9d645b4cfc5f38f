package workload

import (
	"fmt"
	"strings"
)

// MalformedNote says what reading name skipped as unreadable (s has
// Malformed of them): how many, by reason, the first of them with their
// places, and how much of the input was used (the requests read of what
// it holds, and what was passed over that is no request: audit events of
// other stages, a wrapper's other records). unit names what name holds,
// one a line of the reader: "line" for a file, "event" for the events
// pulled from a store. strictFlag names the flag that refuses them
// instead ("" when there is none).
func (s *Stats) MalformedNote(name, unit, strictFlag string) string {
	units := func(n int64) string {
		if n == 1 {
			return unit
		}
		return unit + "s"
	}
	why := strings.Join(s.MalformedReasons(), ", ")
	if strictFlag != "" {
		why += "; " + strictFlag + " refuses them"
	}
	note := fmt.Sprintf("%s: skipped %d %s that could not be read as a request (%s): %s; of its %d %s, %d gave requests",
		name, s.Malformed, units(s.Malformed), why, strings.Join(s.FirstMalformed, "; "), s.Lines, units(s.Lines), s.Records)
	if other := s.SkippedReasons(); len(other) > 0 {
		note += "; passed over: " + strings.Join(other, ", ")
	}
	return note
}
