package vlogs

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
)

const recordings = "../../testdata/simulate/recordings"

// readGz reads a gzipped file whole.
func readGz(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// flatten is what VictoriaLogs stores of a JSON line ingested with
// _time_field=stageTimestamp, by the rules of its
// docs/victorialogs/keyConcepts.md ("Data model"): nested objects joined
// with dots, arrays and numbers as their JSON text, empty values dropped;
// the time field becomes _time. prefix wraps the event as a pipeline that
// puts it under a key would.
func flatten(t testing.TB, line []byte, prefix string) []byte {
	t.Helper()
	var ev map[string]any
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	if err := d.Decode(&ev); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(key+"."+k, x)
			}
		case string:
			if v != "" {
				out[key] = v
			}
		case nil:
		default:
			b, _ := json.Marshal(v)
			out[key] = string(b)
		}
	}
	for k, v := range ev {
		walk(prefix+k, v)
	}
	out["_time"] = out[prefix+"stageTimestamp"]
	delete(out, prefix+"stageTimestamp")
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readAll reads every request of an audit log.
func readAll(t testing.TB, r io.Reader) []workload.Request {
	t.Helper()
	rd := input.NewAuditReader(r, "x", input.Options{}, nil)
	var out []workload.Request
	for {
		var req workload.Request
		err := rd.Next(&req)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		req.Source = workload.Where{}
		out = append(out, req)
	}
}

// TestEventRoundTrip stores every audit event of the recordings as
// VictoriaLogs flattens it (with and without a pipeline's prefix) and
// checks that the rebuilt event reads as the same request as the line of
// the file.
func TestEventRoundTrip(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(recordings, "*", "audit.log.gz"))
	if len(dirs) == 0 {
		t.Fatal("no recording")
	}
	for i, path := range dirs {
		raw := readGz(t, path)
		want := readAll(t, bytes.NewReader(raw))
		prefixes := []string{""}
		if i == 0 {
			prefixes = append(prefixes, "log.") // one recording is enough for the prefix
		}
		for _, prefix := range prefixes {
			m := Mapping{Prefix: prefix}
			var rebuilt []byte
			sc := bufio.NewScanner(bytes.NewReader(raw))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				ev, _, err := m.Event(flatten(t, sc.Bytes(), prefix), nil)
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				rebuilt = append(rebuilt, ev...)
			}
			got := readAll(t, bytes.NewReader(rebuilt))
			if len(got) != len(want) || len(want) == 0 {
				t.Fatalf("%s prefix %q: %d requests rebuilt, the file has %d", path, prefix, len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("%s prefix %q: request %d rebuilt as\n%+v\nthe file's\n%+v", path, prefix, i, got[i], want[i])
				}
			}
		}
	}
}

// TestEventFields checks the rebuilt event of a row with every field the
// reader uses, an instance, an impersonated user and arrays as
// VictoriaLogs prints them (with spaces).
func TestEventFields(t *testing.T) {
	row := `{"_time":"2026-11-23T21:17:51.170051Z","auditID":"a1","stage":"ResponseComplete","verb":"list",` +
		`"requestURI":"/api/v1/pods?limit=500","user.username":"alice","user.groups":"[\"dev\", \"system:authenticated\"]",` +
		`"impersonatedUser.username":"bob","impersonatedUser.groups":"[\"ops\"]","userAgent":"kubectl/v1.37.1","sourceIPs":"[\"10.0.0.1\"]",` +
		`"responseStatus.code":"429","requestReceivedTimestamp":"2026-11-23T21:17:51.126862Z",` +
		`"annotations.apiserver.latency.k8s.io/total":"1.5s","annotations.apiserver.latency.k8s.io/apf-queue-wait":"1s",` +
		`"kubernetes.pod_name":"kube-apiserver-2"}`
	ev, inst, err := Mapping{Instance: "kubernetes.pod_name"}.Event([]byte(row), nil)
	if err != nil {
		t.Fatal(err)
	}
	if inst != "kube-apiserver-2" {
		t.Errorf("instance %q, want kube-apiserver-2", inst)
	}
	got := readAll(t, bytes.NewReader(ev))
	if len(got) != 1 {
		t.Fatalf("%d requests from %s", len(got), ev)
	}
	r := got[0]
	arrival := time.Date(2026, 11, 23, 21, 17, 51, 126862000, time.UTC)
	want := workload.Request{Arrival: arrival, AuditID: "a1", User: "bob", Groups: []string{"ops"}, UserKnown: true, Method: "GET", Verb: "list",
		URI: "/api/v1/pods?limit=500", UserAgent: "kubectl/v1.37.1", SourceIP: "10.0.0.1", Latency: 43189 * time.Microsecond, Status: 429,
		QueueWait: time.Second, HasQueueWait: true, TotalLatency: 1500 * time.Millisecond, HasLatencyAnnotations: true}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got\n%+v\nwant\n%+v", r, want)
	}
}

// TestEventRefusals: a row that is not an object of strings, and a status
// code that is not a number, are errors that say so.
func TestEventRefusals(t *testing.T) {
	for row, want := range map[string]string{
		`["a"]`: "not a JSON object of strings",
		`{"auditID":"x","responseStatus.code":"4x9"}`: "not a number",
		`{"auditID":3}`: "not a JSON object of strings",
	} {
		if _, _, err := (Mapping{}).Event([]byte(row), nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %q", row, err, want)
		}
	}
}

// FuzzEvent: any row either is refused or gives one JSON line.
func FuzzEvent(f *testing.F) {
	f.Add([]byte(`{"_time":"2026-11-23T21:17:51.170051Z","auditID":"a1","stage":"ResponseComplete","verb":"get","requestURI":"/api","responseStatus.code":"200","requestReceivedTimestamp":"2026-11-23T21:17:51.126862Z"}`))
	f.Add([]byte(`{"user.groups":"[\"a\",","sourceIPs":"x"}`))
	f.Add([]byte(`{"responseStatus.code":"-1"}`))
	f.Add([]byte(`not json`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, row []byte) {
		ev, _, err := (Mapping{Instance: "host"}).Event(row, nil)
		if err != nil {
			return
		}
		if len(ev) == 0 || ev[len(ev)-1] != '\n' || bytes.Count(ev, []byte{'\n'}) != 1 || !json.Valid(ev) {
			t.Fatalf("event %q of row %q is not one JSON line", ev, row)
		}
	})
}

// TestMergeWindows joins overlapping windows and their instances, and
// keeps apart those that do not touch.
func TestMergeWindows(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0).UTC() }
	got := mergeWindows([]Window{
		{Start: at(50), End: at(60), Instances: []string{"b"}, Rejected: 2},
		{Start: at(0), End: at(10), Instances: []string{"a"}, Rejected: 1},
		{Start: at(10), End: at(20), Instances: []string{"c"}, Rejected: 4},
		{Start: at(5), End: at(8), Instances: []string{"a"}, Rejected: 8},
	})
	want := []Window{
		{Start: at(0), End: at(20), Instances: []string{"a", "c"}, Rejected: 13},
		{Start: at(50), End: at(60), Instances: []string{"b"}, Rejected: 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
