// Package logs opens a recorded workload the one way simulate replays it
// and explain reconstructs it: the files (or stdin) read as
// input.OpenFiles reads them, with their apiserver instances and the
// year of klog's headers; a reader that stops when the command is
// interrupted; the notes that say which lines could not be read; and the
// object counts of the loaded state, which size the LISTs whose log
// records no seats.
//
// It prints nothing: the notes are returned, and progress is a callback.
package logs
