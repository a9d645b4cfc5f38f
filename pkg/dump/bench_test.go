package dump

import (
	"bytes"
	"strings"
	"testing"
	"time"
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
// capture's rows repeated 200 times) and compares, in the same run, with
// the reference parser (parse_reference_test.go, the algorithm before the
// rows were streamed), with naive splitting and with the same parser
// reading the rows in one pass rather than two parts at once. Each
// iteration times the four one after the other, so the ratios
// (parse/reference, parse/naive, parse/one-pass) hold on a busy machine,
// where ns/op does not; two parts gain only where a second core is idle.
func BenchmarkParseRequests(b *testing.B) {
	body := readFixture(b, "v1.37.1-load", FileRequests)
	header, rows, _ := bytes.Cut(body, []byte("\n"))
	big := append(append(append([]byte{}, header...), '\n'), bytes.Repeat(rows, 200)...)
	b.SetBytes(int64(len(big)))
	b.ReportAllocs()
	if len(big)-len(header) < parallelRows {
		b.Fatalf("%d bytes of rows: ParseRequests reads them in one pass", len(big)-len(header))
	}
	var parse, ref, naive, onePass time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := ParseRequests(big); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := refParseRequests(big); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		naiveSplit(big)
		t3 := time.Now()
		saved := parallelRows
		parallelRows = len(big) + 1
		if _, err := ParseRequests(big); err != nil {
			b.Fatal(err)
		}
		parallelRows = saved
		parse, ref, naive, onePass = parse+t1.Sub(t0), ref+t2.Sub(t1), naive+t3.Sub(t2), onePass+time.Since(t3)
	}
	n := float64(b.N)
	b.ReportMetric(float64(parse.Microseconds())/n, "parse-µs/op")
	b.ReportMetric(float64(ref.Microseconds())/n, "reference-µs/op")
	b.ReportMetric(float64(naive.Microseconds())/n, "naive-µs/op")
	b.ReportMetric(float64(parse)/float64(ref), "parse/reference")
	b.ReportMetric(float64(parse)/float64(naive), "parse/naive")
	b.ReportMetric(float64(parse)/float64(onePass), "parse/one-pass")
}
