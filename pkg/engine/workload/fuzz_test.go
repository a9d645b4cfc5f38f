package workload

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkStream reads everything and checks the invariants every reader
// promises for the records it returns: a path, a method, arrival order and
// non-negative durations. Errors are fine; panics are not.
func checkStream(t *testing.T, r Reader) {
	rs, _ := readAll(t, r)
	for i, q := range rs {
		if q.URI == "" || q.URI[0] != '/' {
			t.Fatalf("record %d: URI %q", i, q.URI)
		}
		if q.Method == "" {
			t.Fatalf("record %d: no method", i)
		}
		if q.ServiceTime < 0 || q.Latency < 0 || q.AdditionalLatency < 0 {
			t.Fatalf("record %d: negative duration %+v", i, q)
		}
		if i > 0 && q.Arrival.Before(rs[i-1].Arrival) {
			t.Fatalf("record %d arrives at %v, before record %d at %v", i, q.Arrival, i-1, rs[i-1].Arrival)
		}
	}
}

func addFileLines(f *testing.F, name string) {
	b, err := os.ReadFile(filepath.Join(testdata, name))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	for _, l := range bytes.Split(b, []byte("\n")) {
		f.Add(l)
	}
}

func FuzzHTTPLogReader(f *testing.F) {
	addFileLines(f, "httplog-v1.37.log")
	f.Add([]byte(`{"ts":1700000000123.5,"msg":"HTTP","verb":"GET","URI":"/x","latency":"3ms","apf_iseats":1}`))
	f.Add([]byte(`I0101 00:00:00.000000 1 httplog.go:1] "HTTP" verb="GET" URI="/x" statusStack=["a b",{"c":"]"}] resp=200`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkStream(t, NewHTTPLogReader(bytes.NewReader(b), "fuzz", Options{}, nil))
	})
}

func FuzzAuditReader(f *testing.F) {
	addFileLines(f, "audit.jsonl")
	f.Fuzz(func(t *testing.T, b []byte) {
		checkStream(t, NewAuditReader(bytes.NewReader(b), "fuzz", Options{}, nil))
	})
}

func FuzzJSONLReader(f *testing.F) {
	addFileLines(f, "workload.jsonl")
	f.Add([]byte(`{"offset":1e300,"verb":"get","path":"/x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkStream(t, NewJSONLReader(bytes.NewReader(b), "fuzz", Options{}, nil))
	})
}

// FuzzDetect checks that detection never loses input.
func FuzzDetect(f *testing.F) {
	f.Add("# x\n{\"offset\":\"0s\"}")
	f.Add(`{"kind":"Event"}`)
	f.Fuzz(func(t *testing.T, s string) {
		_, r, err := Detect(strings.NewReader(s))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if _, err := b.ReadFrom(r); err != nil {
			t.Fatal(err)
		}
		if b.String() != s {
			t.Fatalf("Detect lost input: read %q from %q", b.String(), s)
		}
	})
}
