package input

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/same"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

func readTape(t *testing.T, r workload.Reader) []workload.Request {
	t.Helper()
	rs, err := readAll(t, r)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestTapeReplaysTheWorkload records the joined test workload on a tape,
// in memory and spilled to a file (in the tape's Dir), and checks that
// every reading of the tape yields what the files yield, and that Close
// removes the file.
func TestTapeReplaysTheWorkload(t *testing.T) {
	for _, limit := range []int{0, 200} {
		files, err := OpenFiles([]string{filepath.Join(testdata, "httplog-v1.37.log"), filepath.Join(testdata, "audit.jsonl")}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		tape := workload.NewTape()
		tape.MemoryLimit, tape.Dir = limit, t.TempDir()
		want := readTape(t, tape.Record(files.Reader))
		files.Close()
		if len(want) < 3 {
			t.Fatalf("only %d requests in the test workload", len(want))
		}
		if tape.Len() != int64(len(want)) {
			t.Fatalf("tape holds %d requests, want %d", tape.Len(), len(want))
		}
		spill := func() []os.DirEntry {
			es, err := os.ReadDir(tape.Dir)
			if err != nil {
				t.Fatal(err)
			}
			return es
		}
		for range 2 {
			same.Elements(t, "request", want, readTape(t, tape.Reader()))
			same.Elements(t, "request", want, readTape(t, tape.ReaderAhead()))
		}
		if spilled := len(spill()) > 0; spilled != (limit > 0) {
			t.Fatalf("memory limit %d: spilled %v", limit, spilled)
		}
		if err := tape.Close(); err != nil {
			t.Fatal(err)
		}
		if es := spill(); len(es) > 0 {
			t.Fatalf("temporary file %s left behind", es[0].Name())
		}
	}
}

type sliceReader struct{ rs []workload.Request }

func (s *sliceReader) Next(r *workload.Request) error {
	if len(s.rs) == 0 {
		return io.EOF
	}
	*r, s.rs = s.rs[0], s.rs[1:]
	return nil
}
