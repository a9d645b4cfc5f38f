package vlogs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"runtime"
	"syscall"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// recordingRows are the audit events of the recordings as VictoriaLogs
// flattens them, under prefix: at most max of each recording.
func recordingRows(t testing.TB, prefix string, max int) [][]byte {
	paths, _ := filepath.Glob(filepath.Join(recordings, "*", "audit.log.gz"))
	if len(paths) == 0 {
		t.Fatal("no recording")
	}
	var rows [][]byte
	for _, p := range paths {
		sc := bufio.NewScanner(bytes.NewReader(readGz(t, p)))
		sc.Buffer(nil, 1<<20)
		for n := 0; sc.Scan() && n < max; n++ {
			rows = append(rows, flatten(t, sc.Bytes(), prefix))
		}
	}
	return rows
}

// TestEventRowTaken: the row decoder takes every event of the recordings,
// as VictoriaLogs stores them (with and without a prefix): encoding/json
// is left only the rows it does not take.
func TestEventRowTaken(t *testing.T) {
	for _, prefix := range []string{"", "log."} {
		var d rowDecoder
		for _, row := range recordingRows(t, prefix, 1<<30) {
			if _, ok := d.event(Mapping{Prefix: prefix}, row, nil); !ok {
				t.Fatalf("prefix %q: the row decoder gave up on %s", prefix, row)
			}
		}
	}
}

// FuzzEventRow checks the row decoder against encoding/json
// (eventByJSON): where it takes a row, encoding/json takes it too and
// both give the same event (as JSON values), the same instance and the
// same auditID.
func FuzzEventRow(f *testing.F) {
	for _, row := range recordingRows(f, "", 3) {
		f.Add(row, false)
	}
	for _, row := range recordingRows(f, "log.", 1) {
		f.Add(row, true)
	}
	for _, s := range []string{
		`{"_time":"2026-11-23T21:17:51.170051Z","auditID":"a1","user.groups":"[\"dev\", \"system:authenticated\"]","impersonatedUser.username":"bob","impersonatedUser.groups":"[\"ops\"]","sourceIPs":"[\"10.0.0.1\"]","responseStatus.code":"429","host":"h"}`,
		`{"user.groups":"[\"a\",","sourceIPs":"x","responseStatus.code":"+007"}`,
		`{"auditID":"\u00e9\n\"\\\/","kind":"","apiVersion":"v","objectRef.name":"n","host":"1","host":"2"}`,
		`{"user.groups":"[]","sourceIPs":"[ ]","annotations.apiserver.latency.k8s.io/total":"1s"}`,
		`{"auditID":"\ud800","x":1}`, `{"auditID":null}`, ` { } `, `{"a":"b"} x`, `{"responseStatus.code":"4x9"}`,
	} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, row []byte, prefixed bool) {
		m := Mapping{Instance: "host"}
		if prefixed {
			m.Prefix = "log."
		}
		var d rowDecoder
		fast, ok := d.event(m, row, nil)
		if !ok {
			return
		}
		slow, inst, auditID, err := m.eventByJSON(row, nil)
		if err != nil {
			t.Fatalf("the row decoder took %q, encoding/json refused it: %v", row, err)
		}
		var a, b any
		if err := json.Unmarshal(fast, &a); err != nil || bytes.Count(fast, []byte{'\n'}) != 1 {
			t.Fatalf("the row decoder's event %q of %q is not one JSON line: %v", fast, row, err)
		}
		if err := json.Unmarshal(slow, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("row %q:\nrow decoder %s\nencoding/json %s", row, fast, slow)
		}
		if got := string(d.val(rowInstance)); got != inst {
			t.Fatalf("row %q: instance %q, encoding/json %q", row, got, inst)
		}
		if got := string(d.val(workload.AuditID)); got != auditID {
			t.Fatalf("row %q: auditID %q, encoding/json %q", row, got, auditID)
		}
	})
}

// BenchmarkEventRow rebuilds the events of the recordings' rows by the row
// decoder and, in the same run, by encoding/json (eventByJSON), and
// reports the ratio json/row.
//
//	go test ./pkg/vlogs -run '^$' -bench BenchmarkEventRow
func BenchmarkEventRow(b *testing.B) {
	rows := recordingRows(b, "", 1<<30)
	m := Mapping{Instance: "host"}
	var d rowDecoder
	var buf []byte
	var tRow, tJSON int64
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for b.Loop() {
		t0 := threadNow()
		for _, row := range rows {
			var ok bool
			if buf, ok = d.event(m, row, buf[:0]); !ok {
				b.Fatal("the row decoder gave up")
			}
		}
		t1 := threadNow()
		for _, row := range rows {
			var err error
			if buf, _, _, err = m.eventByJSON(row, buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
		tRow, tJSON = tRow+t1-t0, tJSON+threadNow()-t1
	}
	n := float64(b.N * len(rows))
	b.ReportMetric(float64(tRow)/n, "cpu-ns/row")
	b.ReportMetric(float64(tJSON)/n, "cpu-ns/json")
	b.ReportMetric(float64(tJSON)/float64(tRow), "json/row")
}

// threadNow is the CPU time of the calling thread in nanoseconds (the
// benchmark locks its goroutine to it), which a busy machine moves least.
func threadNow() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
