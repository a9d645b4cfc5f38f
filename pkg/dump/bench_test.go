package dump

import (
	"bytes"
	"strings"
	"testing"
)

// naiveSplit is the obvious alternative: split every line on "," and trim,
// with no types, no validation and no defence against commas in values.
func naiveSplit(b []byte) int {
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		for _, c := range strings.Split(line, ",") {
			_ = strings.TrimSpace(c)
			n++
		}
	}
	return n
}

// BenchmarkParseRequests parses a large dump_requests body (the real load
// capture's rows repeated 200 times) and compares with naive splitting.
func BenchmarkParseRequests(b *testing.B) {
	body := readFixture(b, "v1.37.1-load", FileRequests)
	header, rows, _ := bytes.Cut(body, []byte("\n"))
	big := append(append(append([]byte{}, header...), '\n'), bytes.Repeat(rows, 200)...)
	b.Run("ParseRequests", func(b *testing.B) {
		b.SetBytes(int64(len(big)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := ParseRequests(big); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("naive-split", func(b *testing.B) {
		b.SetBytes(int64(len(big)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			naiveSplit(big)
		}
	})
}
