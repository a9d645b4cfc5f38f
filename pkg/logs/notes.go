package logs

import (
	"maps"
	"slices"

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

// MalformedNote says what reading the file name skipped as unreadable
// (st has Malformed lines), in lines (workload.Stats.MalformedNote).
// strictFlag names the flag that refuses them instead ("" when there is
// none).
func MalformedNote(name string, st *workload.Stats, strictFlag string) string {
	return st.MalformedNote(name, "line", strictFlag)
}
