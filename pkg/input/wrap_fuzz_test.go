package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// addWrappedSeeds adds every sample under testdata/wrapped, whole and
// line by line, and the start of each.
func addWrappedSeeds(f *testing.F) {
	err := filepath.WalkDir(wrappedTestdata, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) == ".md" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
		for _, l := range bytes.Split(b, []byte("\n"))[:min(4, bytes.Count(b, []byte("\n")))] {
			f.Add(l)
		}
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
}

// FuzzWrappedReader: any input, told apart by content and read through
// the reader of its format (wrapped or not), never panics and yields only
// requests that keep every reader's promises (checkStream); detection
// never consumes input.
func FuzzWrappedReader(f *testing.F) {
	addWrappedSeeds(f)
	f.Add([]byte(`{"events":[{"logStreamName":"s","message":"{\"kind\":\"Event\"}"}]}`))
	f.Add([]byte("2026-11-27T10:00:00Z stdout P {\"kind\"\n2026-11-27T10:00:00Z stdout F :\"Event\"}\n"))
	f.Add([]byte("@timestamp,@logStream,@message\n\"2026-11-27 10:00:00.000\",s,\"{}\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, _, err := NewReader(bytes.NewReader(b), "fuzz", Options{Lenient: true}, nil)
		if err != nil {
			return
		}
		checkStream(t, r)
		info, br, err := detectInput(bytes.NewReader(b))
		if err != nil {
			return
		}
		_ = info
		rest, _ := io.ReadAll(br)
		if !bytes.Equal(rest, b) {
			t.Fatalf("detection consumed input: %d bytes left of %d", len(rest), len(b))
		}
	})
}

// FuzzStringEnd: on every string encoding/json accepts, stringEnd finds
// its closing quote (the unescaping itself is internal/jsonstr's, fuzzed
// there against encoding/json).
func FuzzStringEnd(f *testing.F) {
	for _, s := range []string{`"a"`, `"\"{\\\"kind\\\":\\\"Event\\\"}\""`, `"\u00e9\ud83d\ude00\ud800x"`, `"a\/b\n\t\r\b\f"`, `"\\"`, `"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var s string
		if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' || json.Unmarshal(b, &s) != nil || !utf8.Valid(b) {
			return
		}
		if e := stringEnd(b, 0); e != len(b) {
			t.Fatalf("stringEnd(%q) = %d, want %d", b, e, len(b))
		}
	})
}

// FuzzDocStream: on a JSON array of objects that encoding/json accepts,
// the splitter yields each element, bytes for bytes, and the one-pass
// reader (nextWith) the same.
func FuzzDocStream(f *testing.F) {
	f.Add([]byte(`[{"a":1},{"b":"x\"]}"},{}]`))
	f.Add([]byte(`{"events":[{"message":"m"}],"searchedLogStreams":[]}{"events":[{"message":"n"}]}`))
	f.Add([]byte(`{"took":1,"hits":{"total":{"value":1},"hits":[{"_source":{"log":"x"}}]}}`))
	f.Add([]byte(`[ {"k": [1, 2, {"n": null}]} , {"s": "\\"} ]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var elems []json.RawMessage
		wantOK := json.Unmarshal(b, &elems) == nil
		for _, e := range elems {
			if len(e) == 0 || e[0] != '{' {
				wantOK = false
			}
		}
		for _, small := range []int{1 << 20, 7} {
			d := newDocStream(bytes.NewReader(b), "fuzz", 1<<20)
			if small < 1<<20 {
				d.buf = make([]byte, 0, small)
			}
			var got [][]byte
			for {
				rec, err := d.next()
				if errors.Is(err, io.EOF) || err != nil {
					break
				}
				got = append(got, append([]byte(nil), rec...))
			}
			if wantOK {
				if len(got) != len(elems) {
					t.Fatalf("%d records of %q, encoding/json %d", len(got), b, len(elems))
				}
				for i := range got {
					if !bytes.Equal(got[i], elems[i]) {
						t.Fatalf("record %d: %q, encoding/json %q", i, got[i], elems[i])
					}
				}
			}
			d2 := newDocStream(bytes.NewReader(b), "fuzz", 1<<20)
			for i := 0; ; i++ {
				rec, ok, err := d2.nextWith(func(rb []byte) (int, bool) {
					var out [1]field
					return scanFields(rb, []string{"a"}, out[:], 0, nil)
				})
				if err != nil {
					break
				}
				if wantOK && (!ok || i >= len(elems) || !bytes.Equal(rec, elems[i])) && !bytes.Equal(bytes.TrimSpace(rec), elems[min(i, len(elems)-1)]) {
					t.Fatalf("one-pass record %d: %q (read %v)", i, rec, ok)
				}
			}
		}
	})
}
