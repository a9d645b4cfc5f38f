package capacity

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
)

// TestWriteNow: the table of the levels now has an instance and
// levels.NowColumns: the level, its limits, seats in use, waiting and
// executing requests in full, an absent figure "-", never 0. The expected
// text is written by hand.
func TestWriteNow(t *testing.T) {
	r := levels.Empty("apiserver-0", "workload-low")
	r.NominalLimit, r.CurrentLimit, r.Waiting = 245, 245.5, 0
	var b bytes.Buffer
	if err := WriteNow(&b, []levels.Row{r}); err != nil {
		t.Fatal(err)
	}
	want := "INSTANCE     LEVEL         NOMINAL  CURRENT  SEATS-IN-USE  WAITING  EXECUTING\n" +
		"apiserver-0  workload-low  245      245.5    -             0        -\n"
	if b.String() != want {
		t.Errorf("got\n%swant\n%s", b.String(), want)
	}
}

// TestNowNotReadBack: the JSON of the levels now is written from
// levels.NowFields and not decoded back into rows (levels.ErrViewOnly),
// which would read its nulls as zeros; a report without them decodes.
func TestNowNotReadBack(t *testing.T) {
	var rep Report
	if err := json.Unmarshal([]byte(`{"release":"1.34","now":[{"level":"exempt","waiting":null}]}`), &rep); !errors.Is(err, levels.ErrViewOnly) {
		t.Errorf("decoding the levels now: %v, want %v", err, levels.ErrViewOnly)
	}
	if err := json.Unmarshal([]byte(`{"release":"1.34"}`), &rep); err != nil || rep.Release != "1.34" {
		t.Errorf("a report without levels now: %v, release %q", err, rep.Release)
	}
}
