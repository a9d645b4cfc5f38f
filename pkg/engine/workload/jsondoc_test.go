package workload

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		format Format
		n      int
	}{
		{"one event pretty-printed", pretty[0], FormatAudit, 1},
		{"three events pretty-printed, one after the other", bytes.Join(pretty, []byte("\n")), FormatAudit, 3},
		{"three events on one line", concat[0], FormatAudit, 3},
		{"three pretty-printed events without a line between", concatPretty[0], FormatAudit, 3},
		{"an array, pretty-printed", indent(t, evs), FormatAudit, 3},
		{"get-query-results with @message", insightsAnswer(t, lines), FormatCloudWatch, 3},
		{"get-query-results on one line", bytes.Join(bytes.Fields(insightsAnswer(t, lines)), []byte(" ")), FormatCloudWatch, 3},
		{"get-query-results of the event's fields", indent(t, map[string]any{"results": parts, "status": "Complete"}), FormatCloudWatch, 3},
		{"get-query-results' rows alone (--query results)", indent(t, parts), FormatCloudWatch, 3},
		{"gzipped pretty-printed events", gz.Bytes(), FormatAudit, 3},
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
				g.Instance, g.Source, w.Instance, w.Source = "", Where{}, "", Where{}
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
		{"an event cut short", string(lines[0][:200]) + "\n", []string{"cut short"}, []string{"jsonl", "JSONL", "httplog"}},
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
