package logs

import "time"

// Pull is what a store of audit events says of what it pulled for a
// reconstruction (vlogs.Pull; explain/fromlog's Store returns it).
type Pull interface {
	// Notes say what was pulled, and what is missing.
	Notes() []string
	// AroundNotes say what was pulled around one request.
	AroundNotes(margin time.Duration) []string
}
