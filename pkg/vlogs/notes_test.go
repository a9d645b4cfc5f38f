package vlogs

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
)

// TestPullNotesMalformed: the events pulled from the store that the audit
// reader cannot read as requests are noted as the lines of a file are
// (workload.Stats.MalformedNote, pkg/logs): how many events, why, the
// first with its place in the pull, and how many of the events pulled gave
// requests.
func TestPullNotesMalformed(t *testing.T) {
	rows := []string{
		`{"auditID":"a1","stage":"ResponseComplete","verb":"get","requestURI":"/api","responseStatus.code":"429","requestReceivedTimestamp":"2026-11-23T21:17:51.126862Z","_time":"2026-11-23T21:17:51.170051Z"}`,
		// No requestReceivedTimestamp nor stageTimestamp: no arrival.
		`{"auditID":"a2","stage":"ResponseComplete","verb":"get","requestURI":"/api","responseStatus.code":"200"}`,
		`{"auditID":"a3","stage":"ResponseComplete","verb":"get","requestURI":"/api","responseStatus.code":"200","requestReceivedTimestamp":"2026-11-23T21:17:52.126862Z","_time":"2026-11-23T21:17:52.170051Z"}`,
	}
	var events []byte
	for _, row := range rows {
		var err error
		if events, _, err = (Mapping{}).Event([]byte(row), events); err != nil {
			t.Fatal(err)
		}
	}
	p := &Pull{Where: "VictoriaLogs at http://127.0.0.1:9428", Totals: Totals{Events: 3, Rejected: 1}}
	rd := input.NewAuditReader(strings.NewReader(string(events)), "VictoriaLogs", input.Options{Lenient: true}, &p.Stats)
	for {
		var r workload.Request
		if err := rd.Next(&r); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	var note string
	for _, n := range p.Notes() {
		if strings.Contains(n, "skipped") {
			note = n
		}
	}
	for _, want := range []string{"note: the pull from VictoriaLogs at http://127.0.0.1:9428: skipped 1 event that could not be read as a request (1 audit event ",
		"): VictoriaLogs:2: ", "; of its 3 events, 2 gave requests"} {
		if !strings.Contains(note, want) {
			t.Errorf("the note of the unreadable events lacks %q: %q (notes %q)", want, note, p.Notes())
		}
	}
}
