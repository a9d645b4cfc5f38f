package input

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// rawEvents are the first n events of testdata/wrapped/raw-audit.log,
// decoded (a map each, kept in the file's order of keys by re-encoding
// with the order of rawKeys) and as their lines.
func rawEvents(t *testing.T, n int) ([]map[string]any, [][]byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(wrappedTestdata, "raw-audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))[:n]
	evs := make([]map[string]any, n)
	for i, l := range lines {
		if err := json.Unmarshal(l, &evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return evs, lines
}

// writeInput writes b to a file of its own and returns its path.
func writeInput(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func indent(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// insightsAnswer is `aws logs get-query-results` of a query that keeps
// the events (fields @timestamp, @message, @logStream, and @ptr, which
// the answer always has), as the CLI prints it, for the events lines.
func insightsAnswer(t *testing.T, lines [][]byte) []byte {
	t.Helper()
	var rows [][]map[string]string
	for _, l := range lines {
		rows = append(rows, []map[string]string{
			{"field": "@timestamp", "value": "2026-11-23 21:17:51.170"},
			{"field": "@logStream", "value": "kube-apiserver-audit-0a1b2c3d"},
			{"field": "@message", "value": string(l)},
			{"field": "@ptr", "value": "CmAKJwojMTIzNDU2Nzg5MDEyOi9hd3MvZWtzL2RlbW8vY2x1c3RlchAHEjUaGAIGZTPbSwAAAAA"},
		})
	}
	return indent(t, map[string]any{"results": rows,
		"statistics": map[string]float64{"recordsMatched": float64(len(lines)), "recordsScanned": 12, "bytesScanned": 9876},
		"status":     "Complete"})
}

// flatten lists an event's fields as Logs Insights names them
// (user.groups.0), with their values as strings.
func flatten(prefix string, v any, out *[]map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, y := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flatten(p, y, out)
		}
	case []any:
		for i, y := range x {
			flatten(prefix+"."+itoa(i), y, out)
		}
	case float64:
		*out = append(*out, map[string]string{"field": prefix, "value": itoa(int(x))})
	case string:
		*out = append(*out, map[string]string{"field": prefix, "value": x})
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// TestJSONAsPeopleHoldIt: audit events as docs, jq, consoles and issue
// threads show them (one object over many lines, arrays, objects one after
// the other, Logs Insights answers), gzipped or in a directory, give the
// requests the same events give as JSON lines.
func TestJSONAsPeopleHoldIt(t *testing.T) {
	evs, lines := rawEvents(t, 3)
	want, _, err := readFiles(t, writeInput(t, "raw.log", append(bytes.Join(lines, []byte("\n")), '\n')))
	if err != nil || len(want) != 3 {
		t.Fatalf("the raw events: %d requests, %v", len(want), err)
	}
	// by hand from raw-audit.log: the first event is admin's GET of
	// /metrics, answered 200, received 21:17:51.126862 and complete at
	// 21:17:51.170051, so 43.189ms
	if w := want[0]; w.User != "admin" || w.Verb != "get" || w.URI != "/metrics" || w.Status != 200 || w.Latency.Microseconds() != 43189 {
		t.Fatalf("the first raw event read as %+v", w)
	}
	var pretty, concat, concatPretty [][]byte
	for _, e := range evs {
		pretty = append(pretty, indent(t, e))
	}
	concat = append(concat, bytes.Join(lines, nil))
	concatPretty = append(concatPretty, bytes.Join(pretty, nil))
	var parts [][]map[string]string
	for _, e := range evs {
		row := []map[string]string{{"field": "@timestamp", "value": "2026-11-23 21:17:51.170"}}
		for _, k := range []string{"auditID", "stage", "verb", "requestURI", "user", "sourceIPs", "userAgent", "responseStatus", "requestReceivedTimestamp", "stageTimestamp"} {
			flatten(k, e[k], &row)
		}
		parts = append(parts, row)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(bytes.Join(pretty, []byte("\n")))
	zw.Close()
	for _, tt := range []struct {
		name   string
		input  []byte
		format workload.Format
		n      int
	}{
		{"one event pretty-printed", pretty[0], workload.FormatAudit, 1},
		{"three events pretty-printed, one after the other", bytes.Join(pretty, []byte("\n")), workload.FormatAudit, 3},
		{"three events on one line", concat[0], workload.FormatAudit, 3},
		{"three pretty-printed events without a line between", concatPretty[0], workload.FormatAudit, 3},
		{"an array, pretty-printed", indent(t, evs), workload.FormatAudit, 3},
		{"get-query-results with @message", insightsAnswer(t, lines), workload.FormatCloudWatch, 3},
		{"get-query-results on one line", bytes.Join(bytes.Fields(insightsAnswer(t, lines)), []byte(" ")), workload.FormatCloudWatch, 3},
		{"get-query-results of the event's fields", indent(t, map[string]any{"results": parts, "status": "Complete"}), workload.FormatCloudWatch, 3},
		{"get-query-results' rows alone (--query results)", indent(t, parts), workload.FormatCloudWatch, 3},
		{"gzipped pretty-printed events", gz.Bytes(), workload.FormatAudit, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, fs, err := readFiles(t, writeInput(t, "in.json", tt.input))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fs.Formats {
				if f != tt.format {
					t.Errorf("read as %q, want %q", f, tt.format)
				}
			}
			if len(got) != tt.n {
				t.Fatalf("%d requests, want %d", len(got), tt.n)
			}
			for i := range got {
				g, w := got[i], want[i]
				g.Instance, g.Source, w.Instance, w.Source = "", workload.Where{}, "", workload.Where{}
				if !equalRequests(g, w) {
					t.Errorf("request %d: %+v\nthe raw file's: %+v", i, g, w)
				}
			}
		})
	}
	t.Run("a directory of a pretty-printed event and an array", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "a.json"), pretty[0], 0o644)
		os.WriteFile(filepath.Join(dir, "b.json"), indent(t, evs[1:]), 0o644)
		got, _, err := readFiles(t, dir)
		if err != nil || len(got) != 3 {
			t.Fatalf("%d requests, %v", len(got), err)
		}
	})
	t.Run("the instance is the row's @logStream", func(t *testing.T) {
		got, _, err := readFiles(t, writeInput(t, "in.json", insightsAnswer(t, lines)))
		if err != nil || len(got) == 0 || got[0].Instance != "kube-apiserver-audit-0a1b2c3d" {
			t.Fatalf("%+v, %v", got, err)
		}
	})
}

// TestJSONRefusalsNameWhatWasSeen: JSON that holds no event is refused
// with what it holds, never a wrong kind.
func TestJSONRefusalsNameWhatWasSeen(t *testing.T) {
	_, lines := rawEvents(t, 1)
	for _, tt := range []struct {
		name    string
		input   string
		want    []string
		notWant []string
	}{
		{"an aggregation's answer", `{
    "results": [
        [
            {"field": "userAgent", "value": "kubectl/v1.30.0"},
            {"field": "count(*)", "value": "812"}
        ]
    ],
    "status": "Complete"
}`, []string{"CloudWatch", "1 Logs Insights row without @message or an audit event's fields (its fields: userAgent, count(*)", "fields @timestamp, @message, @logStream"}, nil},
		{"rows of parts without the stage", `{"results": [[{"field": "verb", "value": "get"}, {"field": "requestReceivedTimestamp", "value": "2026-11-23T21:17:51.126862Z"}, {"field": "stageTimestamp", "value": "2026-11-23T21:17:51.170051Z"}]]}`,
			[]string{"without stage, which a replay needs"}, nil},
		{"a pretty-printed object of another kind", "{\n  \"metadata\": {},\n  \"items\": []\n}\n", []string{"JSON whose records are not audit events", "first record's keys: metadata, items"}, []string{"jsonl", "JSONL", "httplog"}},
		{"an event cut short on its line", string(lines[0][:200]) + "\n", []string{"no audit event in it could be read: 1 line that could not be decoded as an audit event", "unexpected end of JSON input"}, []string{"jsonl", "JSONL", "httplog"}},
		{"a pretty-printed event cut short", "{\n  \"kind\": \"Event\",\n  \"apiVersion\": \"audit.k8s.io/v1\",\n  \"user\": {\n", []string{"the JSON document ends inside", "cut short"}, []string{"jsonl", "JSONL", "httplog"}},
		{"an empty array", "[]\n", []string{"a JSON document that holds no record"}, []string{"pipeline"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := readFiles(t, writeInput(t, "in.json", []byte(tt.input)))
			if err == nil {
				t.Fatal("read without error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nlacks %q", err, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(err.Error(), w) {
					t.Errorf("%v\nhas %q", err, w)
				}
			}
		})
	}
}

// FuzzBareDocStream: JSON objects written one after the other (pretty or
// not), none of which holds an array of records, are yielded one by one,
// bytes for bytes as encoding/json's decoder splits them, whatever the
// size of the first buffer.
func FuzzBareDocStream(f *testing.F) {
	f.Add([]byte("{\n  \"kind\": \"Event\",\n  \"a\": [1, {\"b\": \"}\"}]\n}\n{\"kind\":\"Event\"}{}"))
	f.Add([]byte(`{"s":"\"{"} {"t":{"events":[]}}`))
	f.Add([]byte("{\"protoPayload\": {\"x\": 1}}\n\n{\"results\": 3}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		dec := json.NewDecoder(bytes.NewReader(b))
		var want []json.RawMessage
		ok := true
		for {
			var v json.RawMessage
			err := dec.Decode(&v)
			if err != nil {
				ok = err.Error() == "EOF"
				break
			}
			var m map[string]json.RawMessage
			if json.Unmarshal(v, &m) != nil || v[0] != '{' {
				ok = false
				break
			}
			for _, a := range recordArrays {
				if x, has := m[a[0]]; has && len(x) > 0 && (x[0] == '[' || x[0] == '{') {
					ok = false
				}
			}
			want = append(want, v)
		}
		for _, size := range []int{1 << 20, 5} {
			d := newDocStream(bytes.NewReader(b), "fuzz", 1<<20)
			d.buf = make([]byte, 0, size)
			var got [][]byte
			for {
				rec, err := d.next()
				if err != nil {
					break
				}
				got = append(got, append([]byte(nil), rec...))
			}
			if !ok {
				continue
			}
			if len(got) != len(want) {
				t.Fatalf("buffer %d: %d records of %q, encoding/json %d", size, len(got), b, len(want))
			}
			for i := range got {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("buffer %d: record %d %q, encoding/json %q", size, i, got[i], want[i])
				}
			}
		}
	})
}

// FuzzPrettyAuditEvents: audit events as JSON lines, and the same events
// pretty-printed one after the other, in an array, and as the @message of
// a get-query-results answer, give the same requests; no input panics
// the readers (checkStream).
func FuzzPrettyAuditEvents(f *testing.F) {
	b, err := os.ReadFile(filepath.Join(wrappedTestdata, "raw-audit.log"))
	if err != nil {
		f.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	f.Add(bytes.Join(lines[:3], []byte("\n")))
	f.Add(lines[0])
	f.Add([]byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","auditID":"a","requestReceivedTimestamp":"2026-01-01T00:00:00Z","stageTimestamp":"2026-01-01T00:00:01Z","verb":"get","requestURI":"/x","user":{"username":"u"}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		read := func(b []byte) ([]workload.Request, *workload.Stats) {
			st := &workload.Stats{}
			r, _, err := NewReader(bytes.NewReader(b), "fuzz", Options{Lenient: true}, st)
			if err != nil {
				return nil, st
			}
			rs, _ := readAll(t, r)
			return rs, st
		}
		want, st := read(in)
		var evs []json.RawMessage
		for _, l := range bytes.Split(in, []byte("\n")) {
			if l = bytes.TrimSpace(l); len(l) == 0 {
				continue
			}
			var m map[string]json.RawMessage
			if l[0] != '{' || json.Unmarshal(l, &m) != nil {
				return
			}
			// keys spelt as the apiserver writes them: encoding/json, the
			// line reader's fallback, also takes "stAge" for "stage",
			// which the readers of wrapped events do not
			for k := range m {
				if !auditEventKeys[k] {
					return
				}
			}
			evs = append(evs, l)
		}
		if len(evs) == 0 || st.Malformed > 0 || len(want) == 0 {
			return
		}
		var pretty, rows []byte
		for _, e := range evs {
			var buf bytes.Buffer
			json.Indent(&buf, e, "", "  ")
			pretty = append(append(pretty, buf.Bytes()...), '\n')
		}
		arr, _ := json.MarshalIndent(evs, "", " ")
		var res [][]map[string]string
		for _, e := range evs {
			res = append(res, []map[string]string{{"field": "@message", "value": string(e)}})
		}
		rows, _ = json.Marshal(map[string]any{"results": res, "status": "Complete"})
		// the lines' reader falls back to encoding/json where its scanner
		// gives up, and takes more than the readers of JSON documents do
		// (a time without its hour's second digit, a user object of other
		// keys): the documents' shapes are held to each other, and to the
		// lines where the documents read every event
		base, _ := read(pretty)
		if len(base) == len(want) {
			base = want
		}
		want = base
		for name, b := range map[string][]byte{"array": arr, "get-query-results": rows} {
			got, _ := read(b)
			if len(got) != len(want) {
				t.Fatalf("%s: %d requests, the lines %d\n%s", name, len(got), len(want), b)
			}
			for i := range got {
				g, w := got[i], want[i]
				g.Instance, g.Source, w.Instance, w.Source = "", workload.Where{}, "", workload.Where{}
				if !equalRequests(g, w) {
					t.Fatalf("%s: request %d %+v, the lines' %+v", name, i, g, w)
				}
			}
		}
	})
}

// auditEventKeys are the top-level keys of an audit.k8s.io/v1 Event.
var auditEventKeys = map[string]bool{"kind": true, "apiVersion": true, "level": true, "auditID": true, "stage": true, "requestURI": true,
	"verb": true, "user": true, "impersonatedUser": true, "sourceIPs": true, "userAgent": true, "objectRef": true, "responseStatus": true,
	"requestObject": true, "responseObject": true, "requestReceivedTimestamp": true, "stageTimestamp": true, "annotations": true}

// TestJSONLinesKeepTheFastPath: audit events one a line are still read
// by the line reader (the parallel audit reader), not the JSON documents'
// reader, also when a line among them is cut.
func TestJSONLinesKeepTheFastPath(t *testing.T) {
	_, lines := rawEvents(t, 3)
	for _, in := range [][]byte{
		bytes.Join(lines, []byte("\n")),
		append(bytes.Join(lines, []byte("\n")), append([]byte("\n"), lines[0][:100]...)...),
	} {
		r, f, err := NewReader(bytes.NewReader(in), "lines", Options{Lenient: true}, nil)
		if err != nil || f != workload.FormatAudit {
			t.Fatalf("%s, %v", f, err)
		}
		if _, ok := r.(*mustYield).Reader.(*wrapReader); ok {
			t.Errorf("JSON lines read by the documents' reader")
		}
	}
}
