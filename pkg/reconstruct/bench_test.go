package reconstruct_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
)

// writeOverload writes n requests of an overload as an apiserver leaves it:
// httplog lines (klog text, with the apf_* keys) and audit events of the
// same audit IDs, 2n lines in all. Seven users send bursts of 1 to 10 LISTs
// to the starved recording's level apf-load (1 seat, 4 queues, hand 2,
// length 2) at 50 bursts a second; a request is served at once when the
// seat is free, waits when the queues of its hand have room, and is
// answered 429 (queue-full) at once otherwise, as a server that runs each
// for 2 ms would.
func writeOverload(tb testing.TB, n int) (httplog, audit string) {
	tb.Helper()
	dir := tb.TempDir()
	httplog, audit = filepath.Join(dir, "kube-apiserver.log"), filepath.Join(dir, "audit.log")
	hf, err := os.Create(httplog)
	if err != nil {
		tb.Fatal(err)
	}
	af, err := os.Create(audit)
	if err != nil {
		tb.Fatal(err)
	}
	hw, aw := bufio.NewWriterSize(hf, 1<<20), bufio.NewWriterSize(af, 1<<20)
	rng := rand.New(rand.NewPCG(5, 6))
	start := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	const exec = 2 * time.Millisecond
	var at, free time.Duration // free: when the seat and every request queued before are done
	for i := 0; i < n; {
		at += time.Duration(rng.ExpFloat64() / 50 * float64(time.Second))
		u := 1 + rng.IntN(7)
		for b := 1 + rng.IntN(10); b > 0 && i < n; b-- {
			arrival := at + time.Duration(b)*10*time.Microsecond
			wait := max(free-arrival, 0)
			status, latency, execKV := 200, wait+exec+100*time.Microsecond, fmt.Sprintf(" apf_execution_time=%q", exec.String())
			if wait > 4*exec {
				status, latency, execKV = 429, 100*time.Microsecond, ""
			} else {
				free = arrival + wait + exec
			}
			done := start.Add(arrival + latency)
			id := fmt.Sprintf("00000000-0000-0000-0000-%012d", i)
			uri := "/api/v1/namespaces/apf-load/configmaps?limit=5"
			fmt.Fprintf(hw, "I%s %s       1 httplog.go:135] \"HTTP\" verb=\"LIST\" URI=%q latency=%q userAgent=\"bench/1.0\" contentType=\"\" audit-ID=%q srcIP=\"127.0.0.1:4%04d\" apf_pl=\"apf-load\" apf_fs=\"apf-load\" apf_iseats=1 apf_fseats=0 apf_additionalLatency=\"0s\"%s resp=%d\n",
				done.Format("0102"), done.Format("15:04:05.000000"), uri, latency.String(), id, u, execKV, status)
			fmt.Fprintf(aw, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":%q,"stage":"ResponseComplete","requestURI":%q,"verb":"list","user":{"username":"load-%d","groups":["apf-load","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"bench/1.0","objectRef":{"resource":"configmaps","namespace":"apf-load","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":%d},"requestReceivedTimestamp":%q,"stageTimestamp":%q}`+"\n",
				id, uri, u, status, start.Add(arrival).Format(time.RFC3339Nano), done.Format(time.RFC3339Nano))
			i++
		}
	}
	for _, f := range []func() error{hw.Flush, hf.Close, aw.Flush, af.Close} {
		if err := f(); err != nil {
			tb.Fatal(err)
		}
	}
	return httplog, audit
}

// scanLines reads the files line by line: the floor of anything that reads
// them.
func scanLines(b *testing.B, paths ...string) int {
	n := 0
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
		for sc.Scan() {
			n++
		}
		f.Close()
		if err := sc.Err(); err != nil {
			b.Fatal(err)
		}
	}
	return n
}

// readWorkload reads the files as the workload readers do (parsed, joined
// by audit ID) and returns how many requests they hold.
func readWorkload(b *testing.B, paths ...string) int {
	files, err := input.OpenFiles(paths, input.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer files.Close()
	var w workload.Request
	n := 0
	for {
		err := files.Next(&w)
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
}

// peakLiveHeap samples the live heap (as of the last collection) every
// 5 ms until stop is called, and returns the largest seen.
func peakLiveHeap() (stop func() uint64) {
	done, result := make(chan struct{}), make(chan uint64)
	go func() {
		var peak uint64
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-done:
				result <- peak
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); return <-result }
}

// jsonEvent is what the engine reads of an audit event, for
// encoding/json: the reflection-based decoding the readers do not use.
type jsonEvent struct {
	Kind, APIVersion, AuditID, Stage, RequestURI, Verb, UserAgent string
	User                                                          struct {
		Username string
		Groups   []string
	}
	ImpersonatedUser *struct {
		Username string
		Groups   []string
	}
	SourceIPs []string
	ObjectRef *struct {
		Resource, Namespace, Name, APIGroup, APIVersion, Subresource string
	}
	ResponseStatus                           *struct{ Code int }
	RequestReceivedTimestamp, StageTimestamp time.Time
	Annotations                              map[string]string
}

// decodeJSON decodes every line of an audit log with encoding/json into
// jsonEvent and returns how many.
func decodeJSON(b *testing.B, path string) int {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	n := 0
	for sc.Scan() {
		var ev jsonEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			b.Fatal(err)
		}
		n++
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return n
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAverage is the machine's load average over the last minute (0 where
// it cannot be read): the benchmark is only as quiet as the machine.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	fmt.Sscan(string(b), &l)
	return l
}

// BenchmarkReconstruct reconstructs an overload's httplog + audit log of
// 500,000 requests (1,000,000 lines, writeOverload) under the starved
// recording's configuration and builds its explain 429 report, and in the
// same run scans the same files line by line and reads them as the
// workload readers do (parsed, joined). It reports the seconds of each, the
// ratios reconstruct/scan and reconstruct/read, and the peak live heap of
// the reconstruction (the requests in flight, not the log). It also reads
// the audit log alone, by the readers and by encoding/json (jsonEvent),
// and reports json/read-audit. The readers run in goroutines of their own:
// the figures are wall-clock seconds (s-*) and the process's CPU seconds
// (cpu-*, which other processes of a loaded machine move least); the
// ratios of both are reported, and the load average when the run began.
//
//	go test ./pkg/reconstruct -run '^$' -bench BenchmarkReconstruct -benchtime 1x -count=1
func BenchmarkReconstruct(b *testing.B) {
	const n = 500_000
	httplog, audit := writeOverload(b, n)
	f := loadFixture(b, filepath.Join(recordings, "starved"))
	load := loadAverage()
	var tScan, tRead, tRec, tAudit, tJSON time.Duration
	var cScan, cRead, cRec, cAudit, cJSON time.Duration
	var peak uint64
	for b.Loop() {
		runtime.GC()
		t0, c0 := time.Now(), cpuTime()
		if got := scanLines(b, httplog, audit); got != 2*n {
			b.Fatalf("%d lines, want %d", got, 2*n)
		}
		t1, c1 := time.Now(), cpuTime()
		if got := readWorkload(b, httplog, audit); got != n {
			b.Fatalf("%d requests, want %d", got, n)
		}
		t2, c2 := time.Now(), cpuTime()
		if got := readWorkload(b, audit); got != n {
			b.Fatalf("%d audit requests, want %d", got, n)
		}
		t4, c4 := time.Now(), cpuTime()
		if got := decodeJSON(b, audit); got != n {
			b.Fatalf("%d audit events decoded by encoding/json, want %d", got, n)
		}
		t5, c5 := time.Now(), cpuTime()
		tAudit, cAudit, tJSON, cJSON = tAudit+t4.Sub(t2), cAudit+c4-c2, tJSON+t5.Sub(t4), cJSON+c5-c4
		runtime.GC()
		stop := peakLiveHeap()
		t3, c3 := time.Now(), cpuTime()
		files, err := input.OpenFiles([]string{httplog, audit}, input.Options{})
		if err != nil {
			b.Fatal(err)
		}
		res, err := reconstruct.RunReader(files, reconstruct.Options{Config: f.config, ServerConcurrencyLimit: f.scl}, nil)
		if err != nil {
			b.Fatal(err)
		}
		rep := res.Report("bench")
		files.Close()
		tRec += time.Since(t3)
		cRec += cpuTime() - c3
		peak = max(peak, stop())
		if res.Reconstructed != n || len(rep.Incidents) == 0 {
			b.Fatalf("%d requests reconstructed, %d incidents", res.Reconstructed, len(rep.Incidents))
		}
		tScan, cScan = tScan+t1.Sub(t0), cScan+c1-c0
		tRead, cRead = tRead+t2.Sub(t1), cRead+c2-c1
		if b.N == 1 {
			sum := res.Sum()
			b.Logf("%d incidents, %.0f 429s; fates agree on %.3f", len(rep.Incidents), rep.Rejected["apf-load"], sum.Fraction())
		}
	}
	k := float64(b.N)
	b.ReportMetric(tScan.Seconds()/k, "s-scan")
	b.ReportMetric(tRead.Seconds()/k, "s-read")
	b.ReportMetric(tRec.Seconds()/k, "s-reconstruct")
	b.ReportMetric(float64(tRec)/float64(tScan), "reconstruct/scan")
	b.ReportMetric(float64(tRec)/float64(tRead), "reconstruct/read")
	b.ReportMetric(float64(tRead)/float64(tScan), "read/scan")
	b.ReportMetric(float64(tJSON)/float64(tAudit), "json/read-audit")
	b.ReportMetric(cScan.Seconds()/k, "cpu-scan")
	b.ReportMetric(cRead.Seconds()/k, "cpu-read")
	b.ReportMetric(cRec.Seconds()/k, "cpu-reconstruct")
	b.ReportMetric(float64(cRead)/float64(cScan), "cpu-read/scan")
	b.ReportMetric(float64(cRec)/float64(cScan), "cpu-reconstruct/scan")
	b.ReportMetric(float64(cJSON)/float64(cAudit), "cpu-json/read-audit")
	b.ReportMetric(load, "load1")
	b.ReportMetric(float64(peak)/(1<<20), "peak-live-heap-MiB")
}

// BenchmarkInstances measures what telling instances apart costs a log of
// one instance: the overload of BenchmarkReconstruct (200,000 requests)
// reconstructed by RunInstances (one more pass over the tape, which
// records the workload before the calibration reads it) and, in the same
// run, by RunReader. It reports the ratio instances/reader.
//
//	go test ./pkg/reconstruct -run '^$' -bench BenchmarkInstances -benchtime 1x -count=1
func BenchmarkInstances(b *testing.B) {
	const n = 200_000
	httplog, audit := writeOverload(b, n)
	f := loadFixture(b, filepath.Join(recordings, "starved"))
	var tReader, tInstances time.Duration
	run := func(instances bool) *reconstruct.Result {
		files, err := input.OpenFiles([]string{httplog, audit}, input.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer files.Close()
		opts := reconstruct.Options{Config: f.config, ServerConcurrencyLimit: f.scl}
		var res *reconstruct.Result
		if instances {
			res, err = reconstruct.RunInstances(files, opts, reconstruct.InstanceOptions{Resolve: files.Resolve}, nil)
		} else {
			res, err = reconstruct.RunReader(files, opts, nil)
		}
		if err != nil {
			b.Fatal(err)
		}
		if res.Reconstructed != n {
			b.Fatalf("%d requests reconstructed, want %d", res.Reconstructed, n)
		}
		return res
	}
	for b.Loop() {
		runtime.GC()
		t0 := time.Now()
		r1 := run(false)
		t1 := time.Now()
		runtime.GC()
		t2 := time.Now()
		r2 := run(true)
		tInstances += time.Since(t2)
		tReader += t1.Sub(t0)
		if r1.Sum() != r2.Sum() || len(r2.Instances) != 1 {
			b.Fatalf("RunInstances %+v (%d instances), RunReader %+v", r2.Sum(), len(r2.Instances), r1.Sum())
		}
	}
	k := float64(b.N)
	b.ReportMetric(tReader.Seconds()/k, "s-reader")
	b.ReportMetric(tInstances.Seconds()/k, "s-instances")
	b.ReportMetric(float64(tInstances)/float64(tReader), "instances/reader")
}
