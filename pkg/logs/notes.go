package logs

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// MalformedNotes say, for each input of files that skipped lines, which
// could not be read as requests (MalformedNote), in the order of their
// names.
func MalformedNotes(files *workload.Files, strictFlag string) []string {
	var notes []string
	for _, name := range slices.Sorted(maps.Keys(files.Stats)) {
		if st := files.Stats[name]; st.Malformed > 0 {
			notes = append(notes, "note: "+MalformedNote(name, st, strictFlag))
		}
	}
	return notes
}

// MalformedNote says what reading name skipped as unreadable (st has
// Malformed lines): how many lines, by reason, the first of them with their
// numbers, and how much of the input was used (the requests read of its
// lines, and the lines passed over that are no request: audit events of
// other stages, a wrapper's other records). strictFlag names the flag that
// refuses them instead ("" when there is none).
func MalformedNote(name string, st *workload.Stats, strictFlag string) string {
	why := strings.Join(st.MalformedReasons(), ", ")
	if strictFlag != "" {
		why += "; " + strictFlag + " refuses them"
	}
	s := fmt.Sprintf("%s: skipped %d %s that could not be read as a request (%s): %s; of its %d %s, %d gave requests",
		name, st.Malformed, plural(st.Malformed, "line", "lines"), why, strings.Join(st.FirstMalformed, "; "),
		st.Lines, plural(st.Lines, "line", "lines"), st.Records)
	if other := st.SkippedReasons(); len(other) > 0 {
		s += "; passed over: " + strings.Join(other, ", ")
	}
	return s
}

func plural[N int | int64](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
