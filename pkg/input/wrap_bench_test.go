package input_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/auditwrap"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
)

// recordedAudit is the audit log of a recorded overload (one JSON event a
// line), gunzipped.
func recordedAudit(tb testing.TB) []byte {
	f, err := os.Open("../../testdata/simulate/recordings/borrowing/audit.log.gz")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// readAll reads every request of b as NewReader detects it; it returns
// how many.
func readAll(tb testing.TB, b []byte) int {
	r, _, err := input.NewReader(bytes.NewReader(b), "bench", input.Options{}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for {
		var q workload.Request
		err := r.Next(&q)
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			tb.Fatal(err)
		}
		n++
	}
}

// BenchmarkWrappedRead reads the same audit events raw and wrapped as
// CloudWatch's filter-log-events answer, a CRI log and a docker json-file
// log (lines cut where the runtimes cut them, at 16 KiB), in the same run, and reports the time of the wrapped read over the
// raw one (wrapped/raw; the goal is at most 1.3). The events are a recorded
// overload's audit log.
func BenchmarkWrappedRead(b *testing.B) {
	raw := recordedAudit(b)
	var events [][]byte
	for _, l := range bytes.Split(raw, []byte("\n")) {
		if len(l) > 0 {
			events = append(events, l)
		}
	}
	rawAll := append(bytes.Join(events, []byte("\n")), '\n')
	for _, name := range []string{"cloudwatch-filter-log-events", "cri", "docker-json-file"} {
		var w []byte
		switch name {
		case "cri":
			w = auditwrap.CRI(events, auditwrap.RuntimeSplit)
		case "docker-json-file":
			w = auditwrap.Docker(events, auditwrap.RuntimeSplit)
		default:
			for _, f := range auditwrap.Formats() {
				if f.Name == name {
					w = f.Wrap(events)
				}
			}
		}
		b.Run(name, func(b *testing.B) {
			want := readAll(b, rawAll)
			if got := readAll(b, w); got != want {
				b.Fatalf("wrapped: %d requests, raw %d", got, want)
			}
			var rawTime, wrappedTime, rawCPU, wrappedCPU time.Duration
			var ratios []float64
			b.SetBytes(int64(len(rawAll)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// alternate the order, so that neither always runs on a
				// warm cache
				first, second := rawAll, w
				if i%2 == 1 {
					first, second = w, rawAll
				}
				t0, c0 := time.Now(), cpuTime()
				readAll(b, first)
				t1, c1 := time.Now(), cpuTime()
				readAll(b, second)
				t2, c2 := time.Now(), cpuTime()
				r, wr, rc, wc := t1.Sub(t0), t2.Sub(t1), c1-c0, c2-c1
				if i%2 == 1 {
					r, wr, rc, wc = wr, r, wc, rc
				}
				rawTime, wrappedTime, rawCPU, wrappedCPU = rawTime+r, wrappedTime+wr, rawCPU+rc, wrappedCPU+wc
				ratios = append(ratios, float64(wr)/float64(r))
			}
			// the median of the pairs' ratios: on a shared machine a pause
			// falls on one read of a pair, and the median leaves it out;
			// the process's CPU time is what other processes move least
			slices.Sort(ratios)
			b.ReportMetric(float64(rawTime.Microseconds())/float64(b.N)/1000, "raw-ms/op")
			b.ReportMetric(float64(wrappedTime.Microseconds())/float64(b.N)/1000, "wrapped-ms/op")
			b.ReportMetric(float64(wrappedTime)/float64(rawTime), "wrapped/raw")
			b.ReportMetric(float64(wrappedCPU)/float64(rawCPU), "cpu-wrapped/raw")
			b.ReportMetric(ratios[len(ratios)/2], "median-wrapped/raw")
		})
	}
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
