package dump

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fieldFile reads an artifact of testdata/field (origins in its README).
func fieldFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "field", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRequestsPhantomRow: before 1.20, dump_requests had a row of "<none>"
// for each exempt level (kubernetes/kubernetes#93376, pasted there): it is
// no request, and the dump parses, as dump_priority_levels does.
func TestRequestsPhantomRow(t *testing.T) {
	rows, err := ParseRequests(fieldFile(t, "k8s-93376-dump_requests-none.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 0 {
		t.Errorf("%d rows, want none: %+v", len(rows), rows)
	}
}

// TestRequestsSeatColumns: the 1.20 layout has no seat columns; the rows say
// so, and rendering them back keeps the layout.
func TestRequestsSeatColumns(t *testing.T) {
	old, err := ParseRequests(readFixture(t, "v1.20-layout", FileRequests))
	if err != nil {
		t.Fatal(err)
	}
	cur, err := ParseRequests(readFixture(t, "v1.37.1-load", FileRequests))
	if err != nil {
		t.Fatal(err)
	}
	if len(old) == 0 || old[0].HasSeats || len(cur) == 0 || !cur[0].HasSeats {
		t.Fatalf("HasSeats: 1.20 %v, 1.37 %v", len(old) > 0 && old[0].HasSeats, len(cur) > 0 && cur[0].HasSeats)
	}
	if body := string(FormatRequests(old)); strings.Contains(body, "InitialSeats") {
		t.Errorf("the 1.20 layout gained seat columns:\n%s", body)
	}
	back, err := ParseRequests(FormatRequests(old))
	if err != nil || len(back) != len(old) || back[0].HasSeats {
		t.Errorf("round trip: %v, %d rows", err, len(back))
	}
}
