// Package logs is a recorded workload the one way simulate replays it and
// explain reconstructs it, once opened: what to open (Spec) and the Opener
// that opens it (package input's Logs, which the commands hand to the
// compute packages), the Workload opened with its apiserver instances; a
// reader that stops when the command is interrupted; the notes that say
// which lines could not be read; --since/--until over a log; and the
// object counts of the loaded state, which size the LISTs whose log
// records no seats.
//
// It opens nothing and prints nothing: the notes are returned, and
// progress is a callback.
package logs
