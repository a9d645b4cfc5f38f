package recording

import (
	"bytes"
	"compress/gzip"
	"os"
)

// The logs' tails: where the lines a run wrote start, and those lines
// copied or gzipped into the recording.

// Size is a file's size (0 when it cannot be read): where the lines
// written after now start.
func Size(p string) int64 { return size(p) }

// CopyTail copies src from byte offset from to dst, uncompressed.
func CopyTail(src string, from int64, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	from = min(from, int64(len(data)))
	return os.WriteFile(dst, data[from:], 0o644)
}

func size(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

// gzipTail writes src from byte offset from (the start of the next line) to
// dst, gzipped.
func gzipTail(src string, from int64, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if from > int64(len(data)) {
		from = int64(len(data))
	}
	// from is the file's size when the load began: a line boundary
	data = data[from:]
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}
