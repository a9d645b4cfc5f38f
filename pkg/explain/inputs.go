package explain

import (
	"fmt"
	"strings"
)

// RequestInputs says which inputs of "explain request" were given: each
// names the request, its identity or both, and two that name the same thing
// cannot both be used.
type RequestInputs struct {
	// Args: VERB_OR_METHOD PATH.
	Args bool
	// FromLog and FromAudit: a recorded request (the audit log also gives
	// the identity).
	FromLog, FromAudit bool
	// FromMessage: a pasted message, which may name the request.
	FromMessage bool
	// IdentityFlags: --user-name, --service-account, --anonymous or --group.
	IdentityFlags bool
	// LogStdin and AuditStdin: --from-log - and --from-audit -.
	LogStdin, AuditStdin bool
}

// CheckRequestInputs refuses combinations of inputs where one would be
// silently dropped: every input given is used, or the command says why not.
func CheckRequestInputs(in RequestInputs) error {
	var recorded []string
	if in.FromLog {
		recorded = append(recorded, "--from-log")
	}
	if in.FromAudit {
		recorded = append(recorded, "--from-audit")
	}
	rec := strings.Join(recorded, " and ")
	switch {
	case in.Args && rec != "":
		return fmt.Errorf("VERB_OR_METHOD PATH and %s both give the request: give one of them", rec)
	case in.FromMessage && rec != "":
		return fmt.Errorf("--from-message and %s both give the request: give one of them", rec)
	case in.FromAudit && in.IdentityFlags:
		return fmt.Errorf("--from-audit gives the request's identity: drop --user-name, --service-account, --anonymous and --group, or drop --from-audit")
	case in.LogStdin && in.AuditStdin:
		return fmt.Errorf("--from-log - and --from-audit - both read standard input; give one of them a file")
	}
	return nil
}
