package input

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
)

const (
	goodLine = `I0305 22:40:41.976983       1 httplog.go:134] "HTTP" verb="GET" URI="/api" latency="1ms" userAgent="x" audit-ID="a" srcIP="1.2.3.4:5" apf_pl="exempt" apf_fs="exempt" resp=200`
	// cut short by rotation: no resp=
	cutLine = `I0305 22:40:41.977000       1 httplog.go:134] "HTTP" verb="GET" URI="/api/v1/pods" latency="1ms"`
)

func writeLog(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kube-apiserver.log")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func drain(t *testing.T, r workload.Reader) (int, error) {
	t.Helper()
	n := 0
	for {
		var w workload.Request
		err := r.Next(&w)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
	}
}

// TestNotesSayTheSkippedLines: a file with a cut line is read leniently, and
// its note counts the line by reason, names it with its number, says the
// flag that refuses it and how much of the file gave requests; without a
// flag, the note names none.
func TestNotesSayTheSkippedLines(t *testing.T) {
	p := writeLog(t, goodLine, cutLine)
	for _, flag := range []string{"--strict", ""} {
		w, err := Open(context.Background(), logs.Spec{Paths: []string{p}})
		if err != nil {
			t.Fatal(err)
		}
		n, err := drain(t, w.Cancellable())
		w.Close()
		if err != nil || n != 1 {
			t.Fatalf("read %d requests, %v; want the one whole line", n, err)
		}
		notes := logs.MalformedNotes(w.Files, flag)
		if flag == "" && !slices.Equal(notes, w.Notes()) {
			t.Errorf("Notes %q, want MalformedNotes without a flag, %q", w.Notes(), notes)
		}
		if len(notes) != 1 {
			t.Fatalf("notes %q: want one", notes)
		}
		for _, want := range []string{"note: " + p + ": skipped 1 line that could not be read as a request (1 httplog line without resp=", p + ":2:", "of its 2 lines, 1 gave requests"} {
			if !strings.Contains(notes[0], want) {
				t.Errorf("note %q lacks %q", notes[0], want)
			}
		}
		if got := strings.Contains(notes[0], "--strict refuses them"); got != (flag != "") {
			t.Errorf("note %q: with flag %q, says --strict: %v", notes[0], flag, got)
		}
	}
}

// TestStrictRefuses: with Strict, the cut line is the error.
func TestStrictRefuses(t *testing.T) {
	w, err := Open(context.Background(), logs.Spec{Paths: []string{writeLog(t, goodLine, cutLine)}, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := drain(t, w.Cancellable()); err == nil || !strings.Contains(err.Error(), ":2:") {
		t.Errorf("error %v: want the cut line's", err)
	}
}

// TestStdin: a lone "-" reads Spec.Stdin.
func TestStdin(t *testing.T) {
	w, err := Open(context.Background(), logs.Spec{Paths: []string{"-"}, Stdin: strings.NewReader(goodLine + "\n")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if n, err := drain(t, w.Cancellable()); err != nil || n != 1 {
		t.Errorf("read %d, %v from stdin; want 1", n, err)
	}
	if w.Stats["stdin"] == nil {
		t.Errorf("stats %v: want stdin's", w.Stats)
	}
}

// endless yields requests for ever.
type endless struct{}

func (endless) Next(r *workload.Request) error { r.URI = "/api"; return nil }

// TestCancellableStops: once the context is cancelled, reading ends with
// an error that says so, within the records read between two checks.
func TestCancellableStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := logs.Cancellable(ctx, endless{})
	for i := 0; i < 1<<13; i++ {
		var w workload.Request
		if err := r.Next(&w); err != nil {
			if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") {
				t.Fatalf("error %v: want interrupted, context.Canceled", err)
			}
			return
		}
	}
	t.Fatal("a cancelled reader kept reading")
}

// TestFindYear: the year a file tells completes klog's headers, and
// YearKnown says so; without FindYear it is not looked for.
func TestFindYear(t *testing.T) {
	p := writeLog(t, "2025-03-05T22:40:41.977203895Z stderr F "+goodLine)
	for _, find := range []bool{true, false} {
		w, err := Open(context.Background(), logs.Spec{Paths: []string{p}, FindYear: find})
		if err != nil {
			t.Fatal(err)
		}
		var r workload.Request
		if err := w.Next(&r); err != nil {
			t.Fatal(err)
		}
		w.Close()
		if w.YearKnown != find || (find && r.Arrival.Year() != 2025) {
			t.Errorf("FindYear %v: known %v, arrival %v", find, w.YearKnown, r.Arrival)
		}
	}
}
