package input

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// checkStream reads everything and checks the invariants every reader
// promises for the records it returns: a path, a method, arrival order and
// non-negative durations. Errors are fine; panics are not.
func checkStream(t *testing.T, r workload.Reader) {
	rs, _ := readAll(t, r)
	for i, q := range rs {
		if q.URI == "" || q.URI[0] != '/' {
			t.Fatalf("record %d: URI %q", i, q.URI)
		}
		if q.Method == "" {
			t.Fatalf("record %d: no method", i)
		}
		if q.ServiceTime < 0 || q.Latency < 0 || q.AdditionalLatency < 0 {
			t.Fatalf("record %d: negative duration %+v", i, q)
		}
		if i > 0 && q.Arrival.Before(rs[i-1].Arrival) {
			t.Fatalf("record %d arrives at %v, before record %d at %v", i, q.Arrival, i-1, rs[i-1].Arrival)
		}
	}
}

func addFileLines(f *testing.F, name string) {
	b, err := os.ReadFile(filepath.Join(testdata, name))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	for _, l := range bytes.Split(b, []byte("\n")) {
		f.Add(l)
	}
}

func FuzzHTTPLogReader(f *testing.F) {
	addFileLines(f, "httplog-v1.37.log")
	f.Add([]byte(`{"ts":1700000000123.5,"msg":"HTTP","verb":"GET","URI":"/x","latency":"3ms","apf_iseats":1}`))
	f.Add([]byte(`I0101 00:00:00.000000 1 httplog.go:1] "HTTP" verb="GET" URI="/x" statusStack=["a b",{"c":"]"}] resp=200`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkStream(t, NewHTTPLogReader(bytes.NewReader(b), "fuzz", Options{}, nil))
	})
}

func FuzzAuditReader(f *testing.F) {
	addFileLines(f, "audit.jsonl")
	f.Fuzz(func(t *testing.T, b []byte) {
		checkStream(t, NewAuditReader(bytes.NewReader(b), "fuzz", Options{}, nil))
	})
}

func FuzzJSONLReader(f *testing.F) {
	addFileLines(f, "workload.jsonl")
	f.Add([]byte(`{"offset":1e300,"verb":"get","path":"/x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkStream(t, NewJSONLReader(bytes.NewReader(b), "fuzz", Options{}, nil))
	})
}

// FuzzDetect checks that detection never loses input.
func FuzzDetect(f *testing.F) {
	f.Add("# x\n{\"offset\":\"0s\"}")
	f.Add(`{"kind":"Event"}`)
	f.Fuzz(func(t *testing.T, s string) {
		_, r, err := Detect(strings.NewReader(s))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if _, err := b.ReadFrom(r); err != nil {
			t.Fatal(err)
		}
		if b.String() != s {
			t.Fatalf("Detect lost input: read %q from %q", b.String(), s)
		}
	})
}

// auditUsers reads every audit event of b and returns, by audit ID, the
// users of the events with that ID.
func auditUsers(b []byte) map[string][]string {
	users := map[string][]string{}
	rd := NewAuditReader(bytes.NewReader(b), "audit", Options{Lenient: true}, nil)
	for {
		var r workload.Request
		if rd.Next(&r) != nil {
			return users
		}
		users[r.AuditID] = append(users[r.AuditID], r.User)
	}
}

func addJoinSeeds(f *testing.F) {
	logs, err := os.ReadFile(filepath.Join(testdata, "httplog-v1.37.log"))
	if err != nil {
		f.Fatal(err)
	}
	audits, err := os.ReadFile(filepath.Join(testdata, "audit.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(logs, audits, "")
	f.Add(logs, audits, "0b3e8f8e-1c1a-4a43-9a7d-3f1b0a000001")
	f.Add(logs, audits, "0b3e8f8e-1c1a-4a43-9a7d-3f1b0a000003")
	f.Add(logs, []byte{}, "")
	lines := bytes.Split(logs, []byte("\n"))
	events := bytes.Split(audits, []byte("\n"))
	// a log line and an audit event of different requests
	f.Add(lines[0], events[len(events)-2], "")
}

// FuzzPickJoined: explain's join of one httplog line with its audit event
// pairs a line only with an event of the same, non-empty audit ID, and takes
// that event's user.
func FuzzPickJoined(f *testing.F) {
	addJoinSeeds(f)
	f.Fuzz(func(t *testing.T, logs, audits []byte, auditID string) {
		r, err := workload.PickJoined(NewHTTPLogReader(bytes.NewReader(logs), "log", Options{}, nil), NewAuditReader(bytes.NewReader(audits), "audit", Options{}, nil), auditID)
		if err != nil {
			return
		}
		if r.AuditID == "" || (auditID != "" && r.AuditID != auditID) {
			t.Fatalf("joined a request with audit ID %q (asked %q)", r.AuditID, auditID)
		}
		users, ok := auditUsers(audits)[r.AuditID]
		if !ok || !slices.Contains(users, r.User) || !r.UserKnown {
			t.Fatalf("request %s got user %q, but the audit events of that ID have %q", r.AuditID, r.User, users)
		}
	})
}

// FuzzJoin: simulate's streaming join gives an httplog request the user of
// an audit event with its own audit ID, or none.
func FuzzJoin(f *testing.F) {
	addJoinSeeds(f)
	f.Fuzz(func(t *testing.T, logs, audits []byte, _ string) {
		users := auditUsers(audits)
		j := Join(NewHTTPLogReader(bytes.NewReader(logs), "log", Options{Lenient: true}, nil), NewAuditReader(bytes.NewReader(audits), "audit", Options{Lenient: true}, nil), 0, nil)
		for {
			var r workload.Request
			if j.Next(&r) != nil {
				return
			}
			if !r.UserKnown {
				continue
			}
			if u, ok := users[r.AuditID]; r.AuditID == "" || !ok || !slices.Contains(u, r.User) {
				t.Fatalf("request %q joined to user %q; the audit events of that ID have %q", r.AuditID, r.User, u)
			}
		}
	})
}

// FuzzAuditScan checks the fast audit event scanner against encoding/json:
// whenever the scan accepts a line, encoding/json accepts it too and both
// give the same request (or the same refusal of it).
func FuzzAuditScan(f *testing.F) {
	addFileLines(f, "audit.jsonl")
	for _, s := range []string{
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","stage":"ResponseComplete","requestURI":"/x","verb":"get","user":{"username":"u","groups":["g","h"],"extra":{"k":["v\"\u00e9"]}},"impersonatedUser":{"username":"i"},"sourceIPs":["1.2.3.4","5.6.7.8"],"responseStatus":{"metadata":{},"code":429,"message":"x"},"requestReceivedTimestamp":"2026-11-23T15:24:45.343674Z","stageTimestamp":"2026-11-23T15:24:45.380561+01:00","annotations":{"apiserver.latency.k8s.io/total":"1.5s","apiserver.latency.k8s.io/apf-queue-wait":"600ms","apiserver.latency.k8s.io/authentication":"2ms","x":"y"}}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","stage":"ResponseComplete","verb":"watch","user":{"username":"u"},"objectRef":{"resource":"pods","namespace":"n","name":"p","apiGroup":"apps","apiVersion":"v1","subresource":"status","uid":"x"},"responseStatus":{"code":-0},"requestReceivedTimestamp":"2026-11-23T15:24:45Z","stageTimestamp":null}`,
		`{"Kind":"Event","kind":"Event","AUDITID":"b","responseStatus":{"code":2.5e2},"user":null,"impersonatedUser":null,"objectRef":null,"annotations":null,"sourceIPs":[]}`,
		`{"kind":"Event","x":[1,-2.5e+3,true,false,null,{"a":[]},"\ud800"],"y":{}} `,
		`{"kind":"Event","kind":"Event"}`,
		`{"kind":"Event","user":{"username":"a","username":"b"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast auditEvent
		if !scanAuditEvent(b, &fast, newInterner()) {
			return
		}
		var slow auditEvent
		if err := json.Unmarshal(b, &slow); err != nil {
			t.Fatalf("the scan accepted %q, encoding/json did not: %v", b, err)
		}
		fast.Annotations, slow.Annotations = latencyOnly(fast.Annotations), latencyOnly(slow.Annotations)
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\nscan %+v\njson %+v", b, fast, slow)
		}
		var rf, rs workload.Request
		ef, es := auditToRequest(&fast, &rf), auditToRequest(&slow, &rs)
		if (ef == nil) != (es == nil) || !reflect.DeepEqual(rf, rs) {
			t.Fatalf("%q: scan gives %+v, %v; json %+v, %v", b, rf, ef, rs, es)
		}
		// for a join (pathOnly), the same event but for a path kept as
		// "/", and the same request but for its URI, or the same refusal
		var path auditEvent
		if !scanAuditEventAs(b, &path, newInterner(), true) {
			t.Fatalf("%q: the scan for a join refused what the scan accepted", b)
		}
		path.Annotations = latencyOnly(path.Annotations)
		wantPath := slow
		if strings.HasPrefix(wantPath.RequestURI, "/") {
			wantPath.RequestURI = "/"
		}
		if !reflect.DeepEqual(path, wantPath) {
			t.Fatalf("%q:\nscan for a join %+v\njson %+v", b, path, slow)
		}
		var rp workload.Request
		ep := auditToRequest(&path, &rp)
		if (ep == nil) != (es == nil) {
			t.Fatalf("%q: the scan for a join gives %v; json %v", b, ep, es)
		}
		if es == nil {
			if !strings.HasPrefix(rp.URI, "/") {
				t.Fatalf("%q: the scan for a join gives URI %q", b, rp.URI)
			}
			rp.URI = rs.URI
			if !reflect.DeepEqual(rp, rs) {
				t.Fatalf("%q: the scan for a join gives %+v; json %+v", b, rp, rs)
			}
		}
	})
}

// latencyOnly keeps the annotations the reader uses.
func latencyOnly(m map[string]string) map[string]string {
	var out map[string]string
	for _, k := range []string{annotationQueueWait, annotationAuthentication, annotationImpersonation, annotationTotal} {
		if v, ok := m[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// FuzzHTTPLogFastPaths checks the httplog reader's fast parsers of klog
// headers and durations against the standard library's.
func FuzzHTTPLogFastPaths(f *testing.F) {
	for _, s := range []string{"I1121 14:15:17.977828     727 httplog.go:135", "x W0229 23:59:59 1 a.go:1", "E1301 1:2:3.4 1 a",
		"I0101 00:00:00.1234567890 1 a", "36.994839ms", "0s", "1.s", ".5h", "1m30s", "9223372036.854775807s", "1µs", "-1s", "100000000000000000000ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		opts := Options{}
		opts.defaults()
		if got, ok := parseKlogHeaderFast([]byte(s), opts); ok {
			want, err := parseKlogHeaderSlow([]byte(s), opts)
			if err != nil || !got.Equal(want) {
				t.Fatalf("%q: fast path gave %v, the slow one %v, %v", s, got, want, err)
			}
		}
		got, gerr := parseDuration([]byte(s))
		want, werr := time.ParseDuration(s)
		if got != want || (gerr == nil) != (werr == nil) {
			t.Fatalf("%q: parseDuration gave %v, %v; time.ParseDuration %v, %v", s, got, gerr, want, werr)
		}
	})
}

// FuzzParseKV checks parseKV against a map-building reference: the same
// lines are refused and the same values kept.
func FuzzParseKV(f *testing.F) {
	f.Add(`verb="LIST" URI="/api/v1/x?a=b" latency="3.5ms" userAgent="a\"b" srcIP="[::1]:5" apf_iseats=1 resp=200 statusStack=["a b",{"c":"]"}] x=<`)
	f.Add(`verb="GET" URI="/é" verb="PUT" bad key=1`)
	f.Add(`a="\q" resp=`)
	// a latency in µs (valid UTF-8, as it is), and bytes that are not
	// UTF-8 (which strconv.Unquote replaces)
	f.Add(`verb="LIST" latency="512.3µs" userAgent="kubectl/é" resp=429`)
	f.Add("verb=\"LIST\" latency=\"5\xb5s\" userAgent=\"\xff\xfe\" resp=200")
	f.Fuzz(func(t *testing.T, s string) {
		var kv kvs
		err := parseKV([]byte(s), &kv)
		m := map[string]string{}
		werr := parseKVMap([]byte(s), m)
		if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
			t.Fatalf("%q: parseKV %v, reference %v", s, err, werr)
		}
		if err != nil {
			return
		}
		for k, name := range keyNames {
			v, ok := m[name]
			if ok != kv.has[k] || v != kv.str(k) {
				t.Fatalf("%q: %s is %q (%v), reference %q (%v)", s, name, kv.str(k), kv.has[k], v, ok)
			}
		}
	})
}

// parseKVMap is the map-building parseKV the reader had: the reference of FuzzParseKV. It parses klog's key=value pairs: strconv-quoted strings, bare
// tokens, and JSON arrays or objects.
func parseKVMap(b []byte, kv map[string]string) error {
	clear(kv)
	i := 0
	for {
		for i < len(b) && b[i] == ' ' {
			i++
		}
		if i >= len(b) {
			return nil
		}
		eq := bytes.IndexByte(b[i:], '=')
		if eq <= 0 {
			return fmt.Errorf("malformed key/value list at %q", abbrev(b[i:]))
		}
		key := string(b[i : i+eq])
		if bytes.ContainsAny([]byte(key), " \"") {
			return fmt.Errorf("malformed key %q", abbrev([]byte(key)))
		}
		i += eq + 1
		if i >= len(b) {
			kv[key] = ""
			return nil
		}
		switch b[i] {
		case '"':
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(b) {
				return fmt.Errorf("unterminated quoted value of %s", key)
			}
			v, err := strconv.Unquote(string(b[i : j+1]))
			if err != nil {
				return fmt.Errorf("quoted value of %s: %w", key, err)
			}
			kv[key] = v
			i = j + 1
		case '[', '{':
			j, depth, inStr := i, 0, false
			for ; j < len(b); j++ {
				c := b[j]
				switch {
				case inStr && c == '\\':
					j++
				case c == '"':
					inStr = !inStr
				case !inStr && (c == '[' || c == '{'):
					depth++
				case !inStr && (c == ']' || c == '}'):
					depth--
				}
				if depth == 0 && !inStr {
					break
				}
			}
			if j >= len(b) {
				return fmt.Errorf("unterminated value of %s", key)
			}
			kv[key] = string(b[i : j+1])
			i = j + 1
		case '<':
			kv[key] = "" // multi-line value, skipped by the caller
			i++
		default:
			j := bytes.IndexByte(b[i:], ' ')
			if j < 0 {
				j = len(b) - i
			}
			kv[key] = string(b[i : i+j])
			i += j
		}
	}
}
