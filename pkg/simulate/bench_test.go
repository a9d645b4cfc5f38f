package simulate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
)

// writeSyntheticWorkload writes n JSONL requests: Poisson arrivals at 2000/s
// from 150 users, 40 service accounts and 10 nodes, exponential service
// times of mean 30 ms, 1% of them 10-seat LISTs.
func writeSyntheticWorkload(tb testing.TB, n int) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "synthetic.jsonl")
	f, err := os.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriter(f)
	rng := rand.New(rand.NewPCG(1, 2))
	t := 0.0
	verbs := []string{"get", "list", "create"}
	for range n {
		t += rng.ExpFloat64() / 2000
		u := rng.IntN(200)
		var user, groups string
		switch {
		case u < 150:
			user, groups = fmt.Sprintf("user-%d", u), `"dev","system:authenticated"`
		case u < 190:
			user, groups = fmt.Sprintf("system:serviceaccount:ns%d:sa%d", u%10, u), fmt.Sprintf(`"system:serviceaccounts","system:serviceaccounts:ns%d","system:authenticated"`, u%10)
		default:
			user, groups = fmt.Sprintf("system:node:n%d", u), `"system:nodes","system:authenticated"`
		}
		seats := ""
		if rng.IntN(100) == 0 {
			seats = `,"initialSeats":10,"finalSeats":0`
		}
		fmt.Fprintf(w, `{"offset":%.6f,"user":%q,"groups":[%s],"verb":%q,"path":"/api/v1/namespaces/ns%d/configmaps","serviceTime":%.6f%s}`+"\n",
			t, user, groups, verbs[rng.IntN(3)], u%10, rng.ExpFloat64()*0.03, seats)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return p
}

// readAll reads the workload files as the replay does (joined, merged) and
// checks that they hold n requests: the floor any replay pays.
func readAll(b *testing.B, n int, paths ...string) {
	files, err := input.OpenFiles(paths, input.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer files.Close()
	readN(b, files.Reader, n)
}

// readN reads r to its end and checks that it holds n requests.
func readN(b *testing.B, r workload.Reader, n int) {
	var q workload.Request
	got := 0
	for {
		err := r.Next(&q)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		got++
	}
	if got != n {
		b.Fatalf("read %d requests, want %d", got, n)
	}
}

// BenchmarkSimulate compares, in one run, the whole replay (Run) on 100,000
// requests (one configuration, and before/after a change) with only reading
// and parsing the same workload, the floor any replay pays: the difference
// is the classification and the queueing simulation.
//
//	go test ./pkg/simulate -run '^$' -bench BenchmarkSimulate -benchmem -count=1
func BenchmarkSimulate(b *testing.B) {
	const n = 100_000
	wl := writeSyntheticWorkload(b, n)
	b.Run("read-only", func(b *testing.B) {
		for b.Loop() {
			readAll(b, n, wl)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/request")
	})
	for _, bm := range []struct {
		name string
		sets []string
	}{
		{"simulate", nil},
		{"simulate-before-after", []string{"global-default.queueLengthLimit=10"}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			cfg := commandDefaults()
			cfg.Workloads, cfg.Sets = []string{wl}, sets(b, bm.sets...)
			st := loadState(b, stateInput{defaults: true, scl: 100}, cfg)
			for b.Loop() {
				if _, err := Run(context.Background(), st, cfg); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/request")
		})
	}
}

// writeRecordedWorkload writes n requests as the two files a recorded
// overload leaves: kube-apiserver httplog lines (klog text, -v=3, with the
// apf_* keys) and Metadata-level audit events with the same audit IDs, so
// 2n lines in all. Arrivals are Poisson at 2000/s from 200 users; execution
// times exponential of mean 5 ms; a tenth of the requests waited up to
// 50 ms in a queue first. Half the users keep one connection, the others
// open one per request, so that the httplog's client addresses (srcIP,
// with the port) keep coming new, as kubectl's and scripts' do.
func writeRecordedWorkload(tb testing.TB, n int) (httplog, audit string) {
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
	rng := rand.New(rand.NewPCG(3, 4))
	start := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	at := time.Duration(0)
	for i := range n {
		at += time.Duration(rng.ExpFloat64() / 2000 * float64(time.Second))
		u := rng.IntN(200)
		exec := time.Duration(rng.ExpFloat64() * float64(5*time.Millisecond))
		var wait time.Duration
		if rng.IntN(10) == 0 {
			wait = time.Duration(rng.IntN(50)) * time.Millisecond
		}
		latency := wait + exec + 100*time.Microsecond
		arrival, done := start.Add(at), start.Add(at+latency)
		id := fmt.Sprintf("00000000-0000-0000-0000-%012d", i)
		uri := fmt.Sprintf("/api/v1/namespaces/ns%d/configmaps", u%10)
		port := 30000 + u
		if u%2 == 1 {
			port = 32768 + i*7919%28232
		}
		fmt.Fprintf(hw, "I%s %s       1 httplog.go:135] \"HTTP\" verb=\"LIST\" URI=%q latency=%q userAgent=\"bench/1.0\" contentType=\"application/json\" audit-ID=%q srcIP=\"10.0.0.%d:%d\" apf_pl=\"global-default\" apf_fs=\"global-default\" apf_iseats=1 apf_fseats=0 apf_additionalLatency=\"0s\" apf_execution_time=%q resp=200\n",
			done.Format("0102"), done.Format("15:04:05.000000"), uri, latency.String(), id, u, port, exec.String())
		fmt.Fprintf(aw, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":%q,"stage":"ResponseComplete","requestURI":%q,"verb":"list","user":{"username":"user-%d","groups":["dev","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"bench/1.0","objectRef":{"resource":"configmaps","namespace":"ns%d","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":%q,"stageTimestamp":%q}`+"\n",
			id, uri, u, u%10, arrival.Format(time.RFC3339Nano), done.Format(time.RFC3339Nano))
	}
	for _, c := range []io.Closer{closerFunc(hw.Flush), hf, closerFunc(aw.Flush), af} {
		if err := c.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	return httplog, audit
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// peakHeap samples the heap every 5 ms until stop is called and returns
// the largest heap in use (live and unswept objects, and the free space of
// their spans: runtime.MemStats.HeapInuse) and the largest live heap (as
// of the last garbage collection) seen, and the live heap last seen. The
// first depends on when the collector ran, the second is what the replay
// holds. It reads runtime/metrics, which, unlike runtime.ReadMemStats, does
// not stop the world, so the sampling does not slow what it measures.
func peakHeap() (stop func() (inuse, live, last uint64)) {
	done := make(chan struct{})
	type peaks struct{ inuse, live, last uint64 }
	result := make(chan peaks)
	go func() {
		var p peaks
		samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}, {Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(samples)
			p.inuse = max(p.inuse, samples[0].Value.Uint64()+samples[1].Value.Uint64())
			p.last = samples[2].Value.Uint64()
			p.live = max(p.live, p.last)
			select {
			case <-done:
				result <- p
				return
			case <-t.C:
			}
		}
	}()
	return func() (uint64, uint64, uint64) { close(done); p := <-result; return p.inuse, p.live, p.last }
}

// BenchmarkSimulateRecorded replays a recorded workload and compares, in
// one run, a plain read of the same files (joined, as the replay reads
// them), the replay without calibration and the calibrated replay. The
// files are read once either way: the calibrated replay keeps the requests
// on a tape (workload.Tape) for its later passes. It reports the seconds of
// each, the ratios calibrated/read and calibrated/uncalibrated, the peak
// heap in use and the peak live heap of the calibrated replay (whether it
// grows with the input is BenchmarkSimulateHeap's measure), and the seconds
// one reading of the tape takes (the input cost of every pass
// after the first). The calibration alone is also timed as it is and as it
// was before the tape, opening and parsing the files for every pass.
//
// The cases are an httplog + audit log of 100,000 and 500,000 requests
// (200,000 and 1,000,000 lines), and the audit log alone of 100,000
// requests, whose calibration iterates to a fixed point (it reports the
// iterations, and the seconds of one: it replays the tape twice).
//
//	go test ./pkg/simulate -run '^$' -bench BenchmarkSimulateRecorded -benchtime 1x -count=1
func BenchmarkSimulateRecorded(b *testing.B) {
	for _, bc := range []struct {
		n         int
		auditOnly bool
	}{{100_000, false}, {500_000, false}, {100_000, true}} {
		name := fmt.Sprintf("lines=%d", 2*bc.n)
		if bc.auditOnly {
			name = fmt.Sprintf("audit-only/lines=%d", bc.n)
		}
		b.Run(name, func(b *testing.B) {
			httplog, audit := writeRecordedWorkload(b, bc.n)
			files := []string{httplog, audit}
			if bc.auditOnly {
				files = []string{audit}
			}
			var res *Result
			sim := func(calibrate bool) { res = simulateRecorded(b, files, calibrate) }
			var tRead, tPlain, tCal, tTape, tDeriveTape, tDeriveFiles, tIter time.Duration
			var peak, live uint64
			for b.Loop() {
				runtime.GC()
				t0 := time.Now()
				readAll(b, bc.n, files...)
				t1 := time.Now()
				sim(false)
				t2 := time.Now()
				runtime.GC()
				stop := peakHeap()
				t3 := time.Now()
				sim(true)
				tCal += time.Since(t3)
				inuse, l, _ := stop()
				peak, live = max(peak, inuse), max(live, l)
				tRead += t1.Sub(t0)
				tPlain += t2.Sub(t1)
				tTape += tapeRead(b, bc.n, files...)
				total, first := calibrationTimes(b, false, files...)
				tDeriveTape += total
				tIter += total - first
				tDeriveFiles += calibrationTime(b, true, files...)
			}
			k := float64(b.N)
			b.ReportMetric(tRead.Seconds()/k, "s-read")
			b.ReportMetric(tPlain.Seconds()/k, "s-uncalibrated")
			b.ReportMetric(tCal.Seconds()/k, "s-calibrated")
			b.ReportMetric(tTape.Seconds()/k, "s-tape-read")
			b.ReportMetric(float64(tCal)/float64(tRead), "calibrated/read")
			b.ReportMetric(float64(tCal)/float64(tPlain), "calibrated/uncalibrated")
			b.ReportMetric(float64(tTape)/float64(tRead), "tape-read/read")
			b.ReportMetric(tDeriveTape.Seconds()/k, "s-calibration")
			b.ReportMetric(tDeriveFiles.Seconds()/k, "s-calibration-rereading")
			b.ReportMetric(float64(tDeriveTape)/float64(tDeriveFiles), "calibration/rereading")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(live)/(1<<20), "peak-live-heap-MiB")
			if bc.auditOnly {
				iters := res.Calibration.Estimated.FixedPointIterations
				b.ReportMetric(float64(iters), "fixed-point-iterations")
				if iters > 0 {
					b.ReportMetric(tIter.Seconds()/k/float64(iters), "s-per-iteration")
					b.ReportMetric(float64(tIter)/float64(iters)/float64(tRead), "iteration/read")
				}
			}
		})
	}
}

// simulateRecorded replays the workload files against the upstream
// defaults of a 600-seat server, calibrated or not.
func simulateRecorded(b *testing.B, files []string, calibrate bool) *Result {
	cfg := commandDefaults()
	cfg.Workloads, cfg.Calibrate = files, calibrate
	return simulateT(b, stateInput{defaults: true, scl: 600}, cfg)
}

// BenchmarkSimulateHeap checks that the memory of a calibrated replay does
// not grow with the input: it replays recorded httplog + audit logs
// (writeRecordedWorkload) of 200,000, 500,000 and 1,000,000 lines and
// reports, for each, the largest live heap and the live heap at the last
// collection (in the replay, which reads the tape), and the ratio of the
// largest live heaps of 1,000,000 and 500,000 lines, which is 1 when memory
// is flat.
//
// The largest live heap is reached in the first pass, while the httplog
// and the audit reader each hold their MaxHeld (65,536) requests to restore
// arrival order and the tape fills its MemoryLimit (8 MiB, some 80,000
// requests here) before it spills: 100,000 requests (200,000 lines) do not
// fill both at once, 250,000 do, so the step from 200,000 to 500,000 lines
// is the tape's memory and the ratio is taken above it. The collector runs
// at GOGC=25 so that the live heap is sampled often.
//
//	go test ./pkg/simulate -run '^$' -bench BenchmarkSimulateHeap -benchtime 1x -count=1
func BenchmarkSimulateHeap(b *testing.B) {
	requests := []int{100_000, 250_000, 500_000}
	files := make([][]string, len(requests))
	for i, n := range requests {
		httplog, audit := writeRecordedWorkload(b, n)
		files[i] = []string{httplog, audit}
	}
	peak, last := make([]uint64, len(requests)), make([]uint64, len(requests))
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	for b.Loop() {
		for i := range requests {
			runtime.GC()
			stop := peakHeap()
			simulateRecorded(b, files[i], true)
			_, p, l := stop()
			peak[i], last[i] = max(peak[i], p), max(last[i], l)
		}
	}
	for i, n := range requests {
		b.ReportMetric(float64(peak[i])/(1<<20), fmt.Sprintf("live-heap-MiB-%dk-lines", 2*n/1000))
		b.ReportMetric(float64(last[i])/(1<<20), fmt.Sprintf("replay-live-heap-MiB-%dk-lines", 2*n/1000))
	}
	b.ReportMetric(float64(peak[2])/float64(peak[1]), "live-heap-1000k/500k-lines")
}

// calibrationTime returns how long the calibration of the workload files
// against the upstream defaults takes (calibrate.DeriveAuditOnly, which
// for an audit log alone iterates to a fixed point): from a tape recorded
// in its first pass, as simulate calibrates, or, with reread, opening and
// parsing the files again for every pass, as it did before the tape.
func calibrationTime(b *testing.B, reread bool, paths ...string) time.Duration {
	d, _ := calibrationTimes(b, reread, paths...)
	return d
}

// calibrationTimes is calibrationTime, with the time of its first pass,
// which reads the files: the rest is the fixed point's iterations.
func calibrationTimes(b *testing.B, reread bool, paths ...string) (total, first time.Duration) {
	rc := fairqueue.ReplayConfig{Config: engine.DefaultConfig(), ServerConcurrencyLimit: 600, RequestTimeout: time.Minute}
	opts := calibrate.Options{Config: rc.Config, ServerConcurrencyLimit: rc.ServerConcurrencyLimit, RequestTimeout: rc.RequestTimeout}
	tape := workload.NewTape()
	defer tape.Close()
	var opened []*workload.Files
	defer func() {
		for _, f := range opened {
			f.Close()
		}
	}()
	var t0, t1 time.Time
	open := func() (workload.Reader, error) {
		if t1.IsZero() && len(opened) > 0 {
			t1 = time.Now()
		}
		if !reread && len(opened) > 0 {
			return tape.Reader(), nil
		}
		f, err := input.OpenFiles(paths, input.Options{Lenient: true})
		if err != nil {
			return nil, err
		}
		opened = append(opened, f)
		if !reread {
			return tape.Record(f.Reader), nil
		}
		return f.Reader, nil
	}
	t0 = time.Now()
	if _, err := calibrate.DeriveAuditOnly(open, rc, opts, calibrate.DefaultParams().FixedPointIterations); err != nil {
		b.Fatal(err)
	}
	total = time.Since(t0)
	if t1.IsZero() {
		return total, total
	}
	return total, t1.Sub(t0)
}

// tapeRead records the workload files on a tape and returns how long one
// reading of the tape takes.
func tapeRead(b *testing.B, n int, paths ...string) time.Duration {
	files, err := input.OpenFiles(paths, input.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer files.Close()
	tape := workload.NewTape()
	defer tape.Close()
	readN(b, tape.Record(files.Reader), n)
	t0 := time.Now()
	readN(b, tape.Reader(), n)
	return time.Since(t0)
}
