package input

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/kubectl-apf/kubectl-apf/internal/jsonstr"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// escapedSeeds are audit events as a wrapper carries them: escaped as a
// JSON string's contents.
func escapedSeeds() [][]byte {
	events := [][]byte{
		[]byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","stage":"ResponseComplete","requestURI":"/x","verb":"get","user":{"username":"u","groups":["g","h"],"extra":{"k":["v\"\u00e9\\"]}},"impersonatedUser":{"username":"i"},"sourceIPs":["1.2.3.4","5.6.7.8"],"responseStatus":{"metadata":{},"code":429,"message":"x"},"requestReceivedTimestamp":"2026-11-23T15:24:45.343674Z","stageTimestamp":"2026-11-23T15:24:45.380561+01:00","annotations":{"apiserver.latency.k8s.io/total":"1.5s","apiserver.latency.k8s.io/apf-queue-wait":"600ms","x":"a\/b\n\u0026"}}`),
		[]byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","stage":"ResponseComplete","verb":"watch","user":{"username":"u"},"objectRef":{"resource":"pods","namespace":"n","name":"p","apiGroup":"apps","apiVersion":"v1","subresource":"status","uid":"x"},"responseStatus":{"code":-0},"requestReceivedTimestamp":"2026-11-23T15:24:45Z","stageTimestamp":null}`),
		[]byte("{\n  \"kind\": \"Event\",\n\t\"sourceIPs\": [ \"1\" , \"2\" ],\r\n  \"x\": [1, -2.5e+3, true, false, null, {\"a\": []}]\n}\n"),
		[]byte(`{"kind":"Event","requestURI":"/api?a=1\u0026b=2"}`),
		[]byte(`{"kind":"Event","kind":"Event"}`),
		[]byte(`{}`),
	}
	var out [][]byte
	for _, ev := range events {
		q, _ := json.Marshal(string(ev))
		out = append(out, q[1:len(q)-1], ev)
	}
	return append(out, []byte(`{\"kind\":\"Event\",\"x\":\"a\/b\"}\n`), []byte(`{\"kind\":\u0022Event\"}`),
		[]byte(`{\"kind\":\"Ev\\u0065nt\"}`), []byte(`\n {\"kind\":\"Event\"} \t`))
}

// FuzzEscapedEventScan checks the decoding of an event where a wrapper's
// string holds it (scanEscapedEvent) against the path it saves: the
// string unescaped (jsonstr.Append) then decoded (scanAuditEvent, after
// wrapReader.decode's trimming), and against encoding/json decoding the
// string and then the event. Whenever it accepts, the others accept with
// the same fields and the same end of the string; where it gives up, the
// caller takes that path itself, so a refusal is the same refusal. The
// input is tried both as the string's contents and escaped as one.
func FuzzEscapedEventScan(f *testing.F) {
	for _, s := range escapedSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		q, _ := json.Marshal(string(b))
		for _, contents := range [][]byte{b, q[1 : len(q)-1]} {
			checkEscapedEvent(t, contents)
		}
	})
}

func checkEscapedEvent(t *testing.T, contents []byte) {
	str := append(append([]byte(nil), contents...), '"', ',')
	var fast auditEvent
	end, ok := scanEscapedEvent(str, 0, &fast, newInterner())
	if !ok {
		return
	}
	uend, msg, uok := jsonstr.Append(nil, str, 0)
	if !uok || uend != end {
		t.Fatalf("%q: the scan ends at %d, the unescaping at %d (%v)", contents, end, uend, uok)
	}
	msg = bytes.TrimSpace(msg)
	var slow auditEvent
	if len(msg) == 0 || msg[0] != '{' || !scanAuditEvent(msg, &slow, newInterner()) {
		t.Fatalf("%q: the scan accepted it escaped, not unescaped (%q)", contents, msg)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q:\nescaped   %+v\nunescaped %+v", contents, fast, slow)
	}
	if !utf8.Valid(str) {
		return // encoding/json replaces invalid UTF-8 in the string
	}
	var s string
	if err := json.Unmarshal(append([]byte{'"'}, str[:end]...), &s); err != nil {
		t.Fatalf("%q: the scan accepted a string encoding/json refuses: %v", contents, err)
	}
	var ref auditEvent
	if err := json.Unmarshal([]byte(s), &ref); err != nil {
		t.Fatalf("%q: the scan accepted an event encoding/json refuses: %v", contents, err)
	}
	fast.Annotations, ref.Annotations = latencyOnly(fast.Annotations), latencyOnly(ref.Annotations)
	if !reflect.DeepEqual(fast, ref) {
		t.Fatalf("%q:\nescaped %+v\njson    %+v", contents, fast, ref)
	}
}

// TestEscapedEventSeeds: the seeds that are events escaped as they are
// written (encoding/json's string of the event) are decoded where they
// stand, not left to the unescaping; those with an escape the scan does
// not take (a \u or \/ of the string, an escape in a kept field) are not.
func TestEscapedEventSeeds(t *testing.T) {
	for _, c := range []struct {
		contents string
		ok       bool
	}{
		{`{\"kind\":\"Event\",\"auditID\":\"a\",\"user\":{\"username\":\"u\",\"groups\":[\"g\"]},\"annotations\":{\"x\":\"\\\"\\\\\\u0026\\n\"}}\n`, true},
		{`\n {\"kind\":\"Event\",\"stageTimestamp\":\"2026-11-23T15:24:45Z\"} \t`, true},
		{`{\"kind\":\"Event\",\"x\":\"a\/b\"}`, true},
		{`{\"kind\":\u0022Event\"}`, false},
		{`{\"kind\":\"Ev\\u0065nt\"}`, false},
		{`{\"kind\":\"Event\"`, false},
		{`{\"kind\":\"Event\"}x`, false},
		{`{"kind":"Event"}`, false},
	} {
		var ev auditEvent
		_, ok := scanEscapedEvent([]byte(c.contents+`"`), 0, &ev, newInterner())
		if ok != c.ok {
			t.Errorf("%s: decoded escaped %v, want %v", c.contents, ok, c.ok)
		}
		if ok && ev.Kind != "Event" {
			t.Errorf("%s: kind %q", c.contents, ev.Kind)
		}
		checkEscapedEvent(t, []byte(c.contents))
	}
}

// TestRecordDecodedInPlace: a docker log line and a CloudWatch event carry
// their events decoded where they stand (record.ev), the message left
// escaped; a docker line's piece (no \n: the runtime split it) and any
// record read while a split line is pending are unescaped, to be joined.
func TestRecordDecodedInPlace(t *testing.T) {
	ev := `{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/v1\",\"auditID\":\"a\",\"stage\":\"ResponseComplete\"}`
	for _, c := range []struct {
		name, line string
		lazy       bool
		decoded    bool
		msg        string
	}{
		{"docker", `{"log":"` + ev + `\n","stream":"stdout","time":"2026-11-23T15:24:45Z"}`, true, true, ev},
		{"docker piece", `{"log":"` + ev + `","stream":"stdout","time":"2026-11-23T15:24:45Z"}`, true, false, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","stage":"ResponseComplete"}`},
		{"docker, a split line pending", `{"log":"` + ev + `\n","stream":"stdout","time":"2026-11-23T15:24:45Z"}`, false, false, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","stage":"ResponseComplete"}`},
		{"cloudwatch", `{"logStreamName":"kube-apiserver-1","timestamp":1,"message":"` + ev + `","eventId":"1"}`, true, true, ev},
		{"cloudwatch, not an event", `{"logStreamName":"kube-apiserver-1","timestamp":1,"message":"I1123 hello","eventId":"1"}`, true, false, `I1123 hello`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dec := &escEvent{in: newInterner(), lazy: c.lazy}
			var rec record
			if _, err := recordOf([]byte(c.line), &rec, nil, dec); err != nil {
				t.Fatal(err)
			}
			if (rec.ev != nil) != c.decoded || string(rec.msg) != c.msg || rec.partial != (c.name == "docker piece") {
				t.Fatalf("decoded %v, message %s, partial %v; want %v, %s", rec.ev != nil, rec.msg, rec.partial, c.decoded, c.msg)
			}
			if rec.ev != nil && (rec.ev.AuditID != "a" || rec.ev.Stage != "ResponseComplete") {
				t.Fatalf("event %+v", *rec.ev)
			}
		})
	}
}

// FuzzEscapedReaderPath: a wrapped input gives the same requests, the
// same error and the same counts with the events decoded where they stand
// as with them unescaped first (tuning.unescapedFirst), leniently or not.
func FuzzEscapedReaderPath(f *testing.F) {
	addWrappedSeeds(f)
	ev := `{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/v1\",\"auditID\":\"a\",\"stage\":\"ResponseComplete\",\"requestURI\":\"/api/v1/pods\",\"verb\":\"list\",\"user\":{\"username\":\"u\"},\"requestReceivedTimestamp\":\"2026-11-23T15:24:45Z\",\"stageTimestamp\":\"2026-11-23T15:24:46Z\"}`
	f.Add([]byte(`{"log":"` + ev + `\n","stream":"stdout","time":"2026-11-23T15:24:46Z"}` + "\n" +
		`{"log":"` + ev[:40] + `","stream":"stdout","time":"2026-11-23T15:24:46Z"}` + "\n" +
		`{"log":"` + ev[40:] + `\n","stream":"stdout","time":"2026-11-23T15:24:46Z"}` + "\n"))
	f.Add([]byte(`{"events":[{"logStreamName":"s","timestamp":1,"message":"` + ev + `","eventId":"1"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, lenient := range []bool{true, false} {
			type outcome struct {
				reqs  []workload.Request
				err   string
				stats workload.Stats
			}
			var got [2]outcome
			for i, on := range []bool{true, false} {
				st := &workload.Stats{}
				r, _, err := NewReader(bytes.NewReader(b), "fuzz", Options{Lenient: lenient, tuning: tuning{unescapedFirst: !on}}, st)
				if err != nil {
					got[i].err = err.Error()
					continue
				}
				got[i].reqs, err = readAll(t, r)
				if err != nil {
					got[i].err = err.Error()
				}
				got[i].stats = *st
			}
			if !reflect.DeepEqual(got[0], got[1]) {
				t.Fatalf("lenient %v:\nin place  %+v\nunescaped %+v", lenient, got[0], got[1])
			}
		}
	})
}
