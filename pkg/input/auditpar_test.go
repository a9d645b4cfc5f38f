package input

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// readOutcome is everything a reader tells: the requests, the errors (a
// reader is called again after an error that is not io.EOF, a few times,
// as a caller that skips it would) and the Stats.
type readOutcome struct {
	reqs  []workload.Request
	errs  []string
	stats workload.Stats
}

// newReader is the constructor of a reader of one format
// (NewAuditReader, NewHTTPLogReader).
type newReader func(r io.Reader, name string, opts Options, stats *workload.Stats) workload.Reader

// readWay reads b with a reader of newR, its lines decoded in parallel or
// one by one, in chunks of lines lines.
func readWay(newR newReader, b []byte, opts Options, parallel bool, lines int) readOutcome {
	opts.tuning.decode, opts.tuning.chunkLines = decodeSerial, lines
	if parallel {
		opts.tuning.decode = decodeParallel
	}
	var out readOutcome
	r := newR(bytes.NewReader(b), "in", opts, &out.stats)
	for range 4*bytes.Count(b, []byte("\n")) + 8 {
		var q workload.Request
		err := r.Next(&q)
		if err == nil {
			out.reqs = append(out.reqs, q)
			continue
		}
		out.errs = append(out.errs, err.Error())
		if errors.Is(err, io.EOF) || len(out.errs) > 3 {
			break
		}
	}
	return out
}

// checkParallel checks that a reader of newR, decoding b's lines in
// parallel, gives what it gives decoding them one by one, under each of
// opts (strict and lenient, lines within and over the length limit), in
// chunks of a few lines and of the default size, and with every chunk
// decoded by the reader itself.
func checkParallel(t *testing.T, newR newReader, b []byte, opts []Options) {
	t.Helper()
	for _, o := range opts {
		for _, chunk := range []int{1, 3, 256} {
			want := readWay(newR, b, o, false, chunk)
			got := readWay(newR, b, o, true, chunk)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%+v, chunks of %d lines: parallel\n%+v\none by one\n%+v", o, chunk, got, want)
			}
			got = readWay(newR, b, inlineOnly(o), true, chunk)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%+v, chunks of %d lines: every chunk decoded by the reader\n%+v\none by one\n%+v", o, chunk, got, want)
			}
		}
	}
}

// checkParallelAudit is checkParallel of the audit reader, strict and
// lenient, with lines within and over the length limit.
func checkParallelAudit(t *testing.T, b []byte) {
	t.Helper()
	var opts []Options
	for _, lenient := range []bool{false, true} {
		for _, maxLine := range []int{0, 400} {
			opts = append(opts, Options{Lenient: lenient, MaxLineBytes: maxLine})
		}
	}
	checkParallel(t, NewAuditReader, b, opts)
}

// inlineOnly are opts with no goroutine started for the chunks: the
// reader decodes every chunk itself, as it does one whose goroutine has not
// begun.
func inlineOnly(opts Options) Options {
	opts.tuning.chunksInline = true
	return opts
}

// mixedAudit is an audit log of events of every outcome: kept, of other
// stages, blank, malformed JSON, other kinds, unknown verbs, escaped
// strings (which encoding/json decodes), CRLF line ends, and a last line
// without its newline.
func mixedAudit(t *testing.T, n int) []byte {
	t.Helper()
	recorded, err := os.ReadFile(filepath.Join(testdata, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for i := range n {
		id := fmt.Sprintf("00000000-0000-0000-0000-%012d", i)
		ev := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":%q,"stage":%q,"requestURI":"/api/v1/namespaces/a/pods","verb":%q,"user":{"username":"u%d","groups":["g","system:authenticated"]},"userAgent":"t\u00e9st","requestReceivedTimestamp":"2026-11-23T03:00:%02d.%06dZ","stageTimestamp":"2026-11-23T03:00:%02d.%06dZ"}`
		switch i % 11 {
		case 0:
			b.WriteString("\n")
		case 1:
			b.WriteString("not json at all\n")
		case 2:
			fmt.Fprintf(&b, ev+"\r\n", id, "RequestReceived", "list", i%7, i%60, i, i%60, i+5)
		case 3:
			b.WriteString(`{"kind":"Other","apiVersion":"v1"}` + "\n")
		case 4:
			fmt.Fprintf(&b, ev+"\n", id, "ResponseComplete", "frobnicate", i%7, i%60, i, i%60, i+5)
		case 5:
			b.WriteString(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"x","stage":"ResponseComplete","verb":"get","requestURI":"/x"}` + "\n")
		case 6:
			b.WriteString("  \t \n")
		default:
			fmt.Fprintf(&b, ev+"\n", id, "ResponseComplete", "list", i%7, i%60, i, i%60, i+5)
		}
	}
	b.Write(recorded)
	b.WriteString(strings.Repeat("x", 500) + "\n")
	b.Write(bytes.TrimRight(recorded, "\n"))
	return b.Bytes()
}

// TestParallelAuditEqualsSerial reads a log of a few thousand lines of
// every outcome both ways.
func TestParallelAuditEqualsSerial(t *testing.T) {
	b := mixedAudit(t, 3000)
	checkParallelAudit(t, b)
	// and one with only good events, which the lenient read returns all of
	var good bytes.Buffer
	for _, l := range bytes.Split(b, []byte("\n")) {
		if bytes.Contains(l, []byte(`"ResponseComplete","requestURI":"/api/v1/namespaces/a/pods","verb":"list"`)) {
			good.Write(l)
			good.WriteString("\n")
		}
	}
	got := readWay(NewAuditReader, good.Bytes(), Options{}, true, 256)
	if len(got.reqs) < 1000 || len(got.errs) != 1 || got.errs[0] != io.EOF.Error() {
		t.Fatalf("%d requests, errors %q", len(got.reqs), got.errs)
	}
}

func FuzzParallelAudit(f *testing.F) {
	addFileLines(f, "audit.jsonl")
	f.Add([]byte("\n\nnot json\n{\"kind\":\"Event\"}\r\n" + strings.Repeat("y", 450)))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkParallelAudit(t, b)
	})
}
