package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// scanLines reads the files line by line and returns how many lines they
// hold: the floor of anything that reads them.
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

// BenchmarkExplain429Workload explains the 429s of an httplog + audit log
// of 500,000 requests (1,000,000 lines, writeRecordedWorkload) against the
// starved recording's configuration, and in the same run reads the same
// files plainly (line by line) and as the workload readers do (parsed and
// joined): it reports the seconds of each, the ratios explain/scan and
// explain/read, and the peak heap of the explanation (the reconstruction
// holds the requests in flight, not the log).
//
//	go test ./cmd/kubectl-apf -run '^$' -bench BenchmarkExplain429Workload -benchtime 1x -count=1
func BenchmarkExplain429Workload(b *testing.B) {
	const n = 500_000
	httplog, audit := writeRecordedWorkload(b, n)
	bundle := filepath.Join(simulateFixture(filepath.Join("recordings", "starved")), recording.BundleFile)
	var tScan, tRead, tExplain time.Duration
	var peak, live uint64
	for b.Loop() {
		runtime.GC()
		t0 := time.Now()
		if got := scanLines(b, httplog, audit); got != 2*n {
			b.Fatalf("%d lines, want %d", got, 2*n)
		}
		t1 := time.Now()
		readAll(b, n, httplog, audit)
		t2 := time.Now()
		runtime.GC()
		stop := peakHeap()
		t3 := time.Now()
		code, out, errOut := runPlugin("explain", "429", "--from", bundle, "--workload", httplog, "--workload", audit, "-o", "json")
		tExplain += time.Since(t3)
		inuse, l, _ := stop()
		peak, live = max(peak, inuse), max(live, l)
		if code != 0 {
			b.Fatalf("exit %d: %s", code, errOut)
		}
		var rep rejections.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Notes) == 0 {
			b.Fatalf("%v: %s", err, out)
		}
		tScan += t1.Sub(t0)
		tRead += t2.Sub(t1)
	}
	k := float64(b.N)
	b.ReportMetric(tScan.Seconds()/k, "s-scan")
	b.ReportMetric(tRead.Seconds()/k, "s-read")
	b.ReportMetric(tExplain.Seconds()/k, "s-explain-429")
	b.ReportMetric(float64(tExplain)/float64(tScan), "explain/scan")
	b.ReportMetric(float64(tExplain)/float64(tRead), "explain/read")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(live)/(1<<20), "peak-live-heap-MiB")
}
