package input

import (
	"encoding/json"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// threadCPU is the CPU time of the calling thread (locked to it): what a
// loop costs on a machine busy with other work.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchAuditLine is an audit event as BenchmarkReconstruct's overload
// (pkg/reconstruct) writes it: the apiserver's Metadata level.
const benchAuditLine = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"00000000-0000-0000-0000-000000000042","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/apf-load/configmaps?limit=5","verb":"list","user":{"username":"load-3","groups":["apf-load","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"bench/1.0","objectRef":{"resource":"configmaps","namespace":"apf-load","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-23T03:00:01.234567Z","stageTimestamp":"2026-11-23T03:00:01.236667Z"}`

// BenchmarkAuditScan decodes one audit event by the readers' scanner and,
// in the same run, by encoding/json, and reports the CPU time of each (of
// its thread) and the ratio json/scan.
//
//	go test ./pkg/input -run '^$' -bench BenchmarkAuditScan
func BenchmarkAuditScan(b *testing.B) {
	line := []byte(benchAuditLine)
	in := newInterner()
	var ev auditEvent
	var tScan, tJSON time.Duration
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for b.Loop() {
		t0 := threadCPU()
		for range 100 {
			if !scanAuditEvent(line, &ev, in) {
				b.Fatal("the scan gave up")
			}
		}
		t1 := threadCPU()
		for range 100 {
			var slow auditEvent
			if err := json.Unmarshal(line, &slow); err != nil {
				b.Fatal(err)
			}
		}
		tScan, tJSON = tScan+t1-t0, tJSON+threadCPU()-t1
	}
	b.ReportMetric(float64(tScan.Nanoseconds())/float64(100*b.N), "cpu-ns/scan")
	b.ReportMetric(float64(tJSON.Nanoseconds())/float64(100*b.N), "cpu-ns/json")
	b.ReportMetric(float64(tJSON)/float64(tScan), "json/scan")
}
