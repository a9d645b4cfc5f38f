package workload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/same"
)

func readTape(t *testing.T, r Reader) []Request {
	t.Helper()
	var rs []Request
	for {
		var q Request
		err := r.Next(&q)
		if errors.Is(err, io.EOF) {
			return rs
		}
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, q)
	}
}

// TestTapeReaderAheadStopsAtClose leaves a ReaderAhead after one request
// and checks that closing the tape ends its goroutine.
func TestTapeReaderAheadStopsAtClose(t *testing.T) {
	tape := NewTape()
	rs := make([]Request, 10*prefetchBatch)
	for i := range rs {
		rs[i] = Request{AuditID: fmt.Sprint(i), URI: "/api/v1/pods"}
	}
	readTape(t, tape.Record(&sliceReader{rs: rs}))
	before := runtime.NumGoroutine()
	var r Request
	if err := tape.ReaderAhead().Next(&r); err != nil || r.AuditID != "0" {
		t.Fatalf("first request %q, %v; want audit ID 0", r.AuditID, err)
	}
	if err := tape.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 0; runtime.NumGoroutine() >= before+1; i++ {
		if i == 10000 {
			t.Fatalf("%d goroutines, %d before the reader", runtime.NumGoroutine(), before)
		}
		time.Sleep(time.Millisecond)
	}
}

// sliceReader yields requests from a slice.
type sliceReader struct{ rs []Request }

func (s *sliceReader) Next(r *Request) error {
	if len(s.rs) == 0 {
		return io.EOF
	}
	*r, s.rs = s.rs[0], s.rs[1:]
	return nil
}

// FuzzTape checks that a tape gives back any request it was given, and
// that a corrupt tape is an error, never a panic.
func FuzzTape(f *testing.F) {
	f.Add("0b3e8f8e-1c1a-4a43-9a7d-3f1b0a000001", "alice", "/api/v1/pods", "f.log:12", int64(1700000000), int64(5e6), uint64(3), 200, []byte{1, 2, 3})
	f.Add("0B3E8F8E-1c1a-4a43-9a7d-3f1b0a000001", "", "", "f.log:012", int64(-1e12), int64(-5), uint64(1<<40), -1, []byte{})
	f.Fuzz(func(t *testing.T, id, user, uri, source string, sec, d int64, seats uint64, status int, junk []byte) {
		loc := time.FixedZone("x", 3600)
		rs := []Request{
			{Arrival: time.Unix(sec, 123).In(loc), AuditID: id, User: user, Groups: []string{user, "g"}, UserKnown: true, Method: "GET", Verb: "LIST", URI: uri,
				Source: At(source), Latency: time.Duration(d), ServiceTime: time.Duration(-d), HasServiceTime: true, InitialSeats: seats, FinalSeats: seats / 2,
				HasSeats: true, Status: status, QueueWait: time.Duration(d / 3), HasQueueWait: true, QueuedOverhead: 7, AuditLatency: time.Duration(d / 2), HasAuditLatency: true},
			{Arrival: time.Unix(sec/2, 0).UTC(), AuditID: id[:len(id)/2], Groups: []string{}, URI: uri + "?x", Source: Where{source, int64(seats%1_000_000_007) + 1}, FlowSchema: user, PriorityLevel: id},
		}
		// with full tables too: the strings and lists in the records
		full := NewTape()
		full.maxTable, full.Dir = 1, t.TempDir()
		defer full.Close()
		readTape(t, full.Record(&sliceReader{rs: rs}))
		same.Elements(t, "request", rs, readTape(t, full.Reader()))
		tape := NewTape()
		tape.MemoryLimit, tape.Dir = 40, t.TempDir()
		defer tape.Close()
		readTape(t, tape.Record(&sliceReader{rs: rs}))
		same.Elements(t, "request", rs, readTape(t, tape.Reader()))
		// a corrupt tape: the records' bytes replaced by junk
		tape.Close()
		tape.spill, tape.spilled, tape.mem = nil, 0, [][]byte{junk}
		r := tape.Reader()
		for {
			var q Request
			if err := r.Next(&q); err != nil {
				if !errors.Is(err, io.EOF) && !bytes.Contains([]byte(err.Error()), []byte("temporary copy")) {
					t.Fatalf("corrupt tape: %v", err)
				}
				break
			}
		}
	})
}

// TestTapeBoundsItsTables records requests whose client addresses, users
// and group lists never repeat (client ports, in a long log) on a tape whose
// tables hold 8 entries, and checks that the tables stopped growing there
// and that the tape, in memory and spilled, still gives back every request.
func TestTapeBoundsItsTables(t *testing.T) {
	var rs []Request
	start := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	for i := range 100 {
		u := fmt.Sprintf("user-%d", i%20)
		rs = append(rs, Request{Arrival: start.Add(time.Duration(i) * time.Millisecond), User: u, Groups: []string{u, "system:authenticated"}, UserKnown: true,
			Method: "GET", Verb: "get", URI: "/api/v1/pods", SourceIP: fmt.Sprintf("10.0.0.1:%d", 30000+i), Source: Where{"a.log", int64(i + 1)}})
	}
	rs = append(rs, Request{Arrival: start.Add(time.Second), Groups: []string{}, Source: Where{"a.log", 101}}, Request{Arrival: start.Add(time.Second), Source: Where{"a.log", 102}})
	for _, limit := range []int{0, 200} {
		tape := NewTape()
		tape.maxTable, tape.MemoryLimit, tape.Dir = 8, limit, t.TempDir()
		readTape(t, tape.Record(&sliceReader{rs: slices.Clone(rs)}))
		if len(tape.strTab) != 8 || len(tape.strs) != 8 || len(tape.listTab) != 8 || len(tape.lists) != 8 {
			t.Errorf("tables of %d strings (%d ids) and %d lists (%d ids), want 8 each",
				len(tape.strTab), len(tape.strs), len(tape.listTab), len(tape.lists))
		}
		same.Elements(t, "request", rs, readTape(t, tape.Reader()))
		if err := tape.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzPackUUID holds packUUID to the definition of what it packs: 36
// bytes, dashes at 8, 13, 18 and 23, lowercase hex digits elsewhere; and
// what it packs, the tape gives back as it was.
func FuzzPackUUID(f *testing.F) {
	for _, s := range []string{"0b3e8f8e-1c1a-4a43-9a7d-3f1b0a000001", "0B3E8F8E-1c1a-4a43-9a7d-3f1b0a000001", "0b3e8f8e-1c1a-4a43-9a7d-3f1b0a00000g",
		"0b3e8f8e-1c1a-4a43-9a7d_3f1b0a000001", "0b3e8f8e-1c1a-4a43-9a7d-3f1b0a0000011", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := len(s) == 36
		for i := 0; want && i < 36; i++ {
			switch c := s[i]; i {
			case 8, 13, 18, 23:
				want = c == '-'
			default:
				want = c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
			}
		}
		u, ok := packUUID(s)
		if ok != want {
			t.Fatalf("packUUID(%q) ok %v, want %v", s, ok, want)
		}
		if ok {
			if back := string(appendUUID(nil, u[:])); back != s {
				t.Fatalf("packUUID(%q) gives back %q", s, back)
			}
		}
	})
}
