package input

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"testing"
)

// TestGzipAhead: a gzip stream decompressed ahead, in a goroutine of its
// own, yields the bytes the stream holds (over several chunks), and for a
// stream cut short the bytes before the cut and the error the reader
// without the goroutine gives.
func TestGzipAhead(t *testing.T) {
	var plain bytes.Buffer
	for i := 0; plain.Len() < 3*gzipChunkBytes+12345; i++ {
		fmt.Fprintf(&plain, `{"kind":"Event","auditID":"%08d"}`+"\n", i*7919)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(plain.Bytes())
	zw.Close()
	read := func(b []byte, stop chan struct{}) ([]byte, error) {
		r, err := gunzipped(bytes.NewReader(b), "x.gz", stop)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.(*gzipAhead); ok != (stop != nil) {
			t.Fatalf("gunzipped gave a %T with stop %v", r, stop)
		}
		var out bytes.Buffer
		buf := make([]byte, 1000) // reads smaller than a chunk
		for {
			n, err := r.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				return out.Bytes(), err
			}
		}
	}
	stop := make(chan struct{})
	defer close(stop)
	got, err := read(z.Bytes(), stop)
	if err != nil || !bytes.Equal(got, plain.Bytes()) {
		t.Fatalf("ahead: %d bytes, %v; want the %d bytes written", len(got), err, plain.Len())
	}
	cut := z.Bytes()[:z.Len()*2/3]
	want, wantErr := read(cut, nil)
	got, err = read(cut, stop)
	if wantErr == nil || err == nil || err.Error() != wantErr.Error() || !bytes.Equal(got, want) {
		t.Fatalf("cut short: ahead gave %d bytes and %v; without the goroutine %d bytes and %v", len(got), err, len(want), wantErr)
	}
}
