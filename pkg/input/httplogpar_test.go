package input

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkParallelHTTPLog is checkParallel of the httplog reader, strict and
// lenient, with and without headerless lines, with lines within and over
// the length limit.
func checkParallelHTTPLog(t *testing.T, b []byte) {
	t.Helper()
	var opts []Options
	for _, lenient := range []bool{false, true} {
		for _, headerless := range []bool{false, true} {
			for _, maxLine := range []int{0, 400} {
				opts = append(opts, Options{Lenient: lenient, Headerless: headerless, MaxLineBytes: maxLine})
			}
		}
	}
	checkParallel(t, NewHTTPLogReader, b, opts)
}

// mixedHTTPLog is a kube-apiserver log with lines of every outcome:
// requests, other components' lines, multi-line values (closed, and one
// not closed at the end), lines cut short, unknown verbs, unreadable
// headers (one of them opening a multi-line value, which is then not
// skipped), headerless lines, klog JSON lines, escaped values and CRLF
// line ends.
func mixedHTTPLog(t *testing.T, n int) []byte {
	t.Helper()
	recorded, err := os.ReadFile(filepath.Join(testdata, "httplog-v1.37.log"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for i := range n {
		req := `I1121 14:%02d:%02d.%06d       1 httplog.go:134] "HTTP" verb=%q URI="/api/v1/namespaces/a/pods?limit=%d" latency="%dus" userAgent="u\"%d" audit-ID="id-%d" srcIP="127.0.0.1:1" apf_pl="p" apf_fs="f" apf_iseats=1 apf_fseats=0 apf_additionalLatency="0s" apf_execution_time="1ms" resp=200`
		m, s := i/60%60, i%60
		switch i % 13 {
		case 0:
			b.WriteString("I1121 14:15:17.990000       1 trace.go:236] Trace[1]: \"List\"\n")
		case 1:
			fmt.Fprintf(&b, req+" addedInfo=<\n\tline one\n\tline two\n >\n", m, s, i, "GET", i, i, i, i)
		case 2:
			fmt.Fprintf(&b, req[:len(req)-9]+"\n", m, s, i, "GET", i, i, i, i)
		case 3:
			fmt.Fprintf(&b, req+"\r\n", m, s, i, "FROB", i, i, i, i)
		case 4:
			b.WriteString("I1321 99:15:17.9 1 httplog.go:134] \"HTTP\" verb=\"GET\" URI=\"/x\" resp=200 addedInfo=<\n >\n")
		case 5:
			fmt.Fprintf(&b, "HTTP\" verb=\"GET\" URI=\"/h%d\" latency=\"1ms\" resp=200\n", i)
		case 6:
			fmt.Fprintf(&b, `{"ts":1700000000123.5,"msg":"HTTP","verb":"GET","URI":"/j%d","latency":"3ms","resp":200}`+"\n", i)
		case 7:
			b.WriteString("\n")
		case 8:
			fmt.Fprintf(&b, req+" x=\"é\"\n", m, s, i, "LIST", i, i, i, i)
		default:
			fmt.Fprintf(&b, req+"\n", m, s, i, "LIST", i, i, i, i)
		}
	}
	b.Write(recorded)
	b.WriteString(strings.Repeat("x", 500) + "\n")
	b.WriteString(`I1121 14:15:17.980328       1 httplog.go:134] "HTTP" verb="LIST" URI="/z" latency="2.5ms" resp=200 addedInfo=<` + "\n\tnot closed\n")
	return b.Bytes()
}

// TestParallelHTTPLogEqualsSerial reads a log of a few thousand lines of
// every outcome both ways.
func TestParallelHTTPLogEqualsSerial(t *testing.T) {
	b := mixedHTTPLog(t, 3000)
	checkParallelHTTPLog(t, b)
	got := readWay(NewHTTPLogReader, b, Options{Lenient: true}, true, 256)
	if len(got.reqs) < 1500 || got.stats.Malformed < 500 || got.stats.Skipped < 200 {
		t.Fatalf("%d requests, %d malformed, %d skipped: the log does not hold what it should", len(got.reqs), got.stats.Malformed, got.stats.Skipped)
	}
	// a multi-line value cut by a line over the limit: the error comes
	// after the lines before it are counted
	cut := []byte(`I1121 14:15:17.980328       1 httplog.go:134] "HTTP" verb="LIST" URI="/z" latency="2.5ms" resp=200 addedInfo=<` + "\n\tone\n" + strings.Repeat("y", 500) + "\n >\n")
	checkParallelHTTPLog(t, cut)
	// a multi-line value not closed at the end: its error says where the
	// input ended
	unclosed := []byte("I1121 14:15:17.980328       1 httplog.go:134] \"HTTP\" verb=\"LIST\" URI=\"/z\" latency=\"2.5ms\" resp=200 addedInfo=<\n\tone\n\ttwo\n")
	checkParallelHTTPLog(t, unclosed)
}

func FuzzParallelHTTPLog(f *testing.F) {
	addFileLines(f, "httplog-v1.37.log")
	f.Add([]byte("I0101 00:00:00.000000 1 httplog.go:1] \"HTTP\" verb=\"GET\" URI=\"/x\" resp=200 a=<\n\tb\n >\n{\"ts\":1,\"msg\":\"HTTP\"}\nHTTP\" verb=\"GET\" URI=\"/x\" resp=200 a=<\n\t"))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkParallelHTTPLog(t, b)
	})
}
