package workload

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// IDs lists the audit IDs a reader held: the first MaxListedIDs of them and
// how many there were in all, for an error message that shows the user what
// to pass to --audit-id.
type IDs struct {
	First []string
	Total int
	// Requests counts the requests read, with an audit ID or without
	Requests int
}

// MaxListedIDs is how many audit IDs an IDs keeps.
const MaxListedIDs = 5

func (ids *IDs) add(id string) {
	ids.Requests++
	if id == "" {
		return
	}
	ids.Total++
	if len(ids.First) < MaxListedIDs {
		ids.First = append(ids.First, id)
	}
}

// String renders the IDs for an error message.
func (ids IDs) String() string {
	switch {
	case ids.Requests == 0:
		return "no request at all"
	case ids.Total == 0:
		return "no audit ID at all"
	}
	s := strings.Join(ids.First, ", ")
	if more := ids.Total - len(ids.First); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// ErrNoRecord is returned by Pick when the reader holds no request.
var ErrNoRecord = errors.New("no request")

// Pick reads rd to its end and returns the request with the audit ID, or the
// last one when auditID is empty, with the audit IDs it saw. It returns an
// error wrapping ErrNoRecord when there is no such request.
func Pick(rd Reader, auditID string) (*Request, IDs, error) {
	var found *Request
	var ids IDs
	for {
		var r Request
		err := rd.Next(&r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, ids, err
		}
		ids.add(r.AuditID)
		if auditID == "" || r.AuditID == auditID {
			rc := r
			found = &rc
		}
	}
	if found == nil {
		if auditID != "" {
			return nil, ids, fmt.Errorf("%w with audit ID %q (audit IDs present: %s)", ErrNoRecord, auditID, ids)
		}
		return nil, ids, ErrNoRecord
	}
	return found, ids, nil
}

// PickJoined returns the request of an httplog joined to its audit event:
// the log line (the one with auditID, or the last one) gives the request and
// the server's classification, the audit event with the same audit ID the
// identity. The two are paired only on an equal, non-empty audit ID: a log
// line without one, or whose ID the audit log does not hold, is an error
// that lists the IDs present, never a pairing with some other event.
func PickJoined(httplog, audit Reader, auditID string) (*Request, error) {
	rec, logIDs, err := Pick(httplog, auditID)
	if err != nil {
		if errors.Is(err, ErrNoRecord) && auditID != "" {
			return nil, fmt.Errorf("the httplog holds no request with audit ID %q (audit IDs present: %s)", auditID, logIDs)
		}
		return nil, fmt.Errorf("the httplog: %w", err)
	}
	if rec.AuditID == "" {
		return nil, fmt.Errorf("the httplog line %s carries no audit-ID, so no audit event can be joined to it: give its identity with --user-name instead", rec.Source)
	}
	ev, auditIDs, err := Pick(audit, rec.AuditID)
	if err != nil {
		if errors.Is(err, ErrNoRecord) {
			return nil, fmt.Errorf("the audit log holds no event with the httplog line's audit ID %q (%s); audit IDs present: %s — pass --audit-id to choose a request found in both", rec.AuditID, rec.Source, auditIDs)
		}
		return nil, fmt.Errorf("the audit log: %w", err)
	}
	rec.User, rec.Groups, rec.UserKnown = ev.User, ev.Groups, ev.UserKnown
	// the audit event's requestReceivedTimestamp is the time httplog's
	// latency is measured from; the line's time less its latency is later
	// by as long as the line took to be written (the join's rule)
	if ev.Arrival.Before(rec.Arrival) {
		rec.Arrival = ev.Arrival
	}
	return rec, nil
}
