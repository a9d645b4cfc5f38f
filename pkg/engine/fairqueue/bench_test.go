package fairqueue_test

import (
	"flag"
	"io"
	"math/rand"
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
)

var (
	benchN         = flag.Int("replay.n", 1_000_000, "requests replayed by the simulator in BenchmarkReplay")
	benchUpstreamN = flag.Int("replay.upstream-n", 1_000_000, "requests replayed by upstream's queueset in BenchmarkReplay")
)

// benchLevel is global-default at its idle current limit.
var benchLevel = fairqueue.LevelConfig{Name: "global-default", Queues: 128, HandSize: 6, QueueLengthLimit: 50, ConcurrencyLimit: 56}

// genSource generates a heavy workload on the fly: 500 flows with skewed
// rates, exponential service times around 12 ms, 5% wider requests and 5%
// with final seats, bursts, short wait limits for 10%, at about 110% of the
// level's capacity, so that queues fill, time-outs and rejections happen.
type genSource struct {
	r      *rand.Rand
	n, i   int
	t      time.Duration
	hashes []uint64
	burst  int
}

func newGenSource(n int) *genSource {
	g := &genSource{r: rand.New(rand.NewSource(42)), n: n, hashes: make([]uint64, 500)}
	for i := range g.hashes {
		g.hashes[i] = engine.HashFlowID("global-default", "user-"+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	return g
}

func (g *genSource) Next(q *fairqueue.Request) error {
	if g.i >= g.n {
		return io.EOF
	}
	r := g.r
	if g.burst == 0 {
		// 56 seats / 12 ms ≈ 4700 requests/s of capacity; aim at ~5000/s
		g.t += time.Duration(r.ExpFloat64() * float64(260*time.Microsecond))
		if r.Intn(50) == 0 {
			g.burst = 1 + r.Intn(40)
		}
	} else {
		g.burst--
	}
	f := int(float64(len(g.hashes)) * r.Float64() * r.Float64()) // skewed towards low flows
	*q = fairqueue.Request{ID: int64(g.i), Arrival: g.t, Flow: int32(f), Hash: g.hashes[f], InitialSeats: 1,
		ServiceTime: time.Duration(r.ExpFloat64()*float64(11*time.Millisecond)) + time.Millisecond}
	if r.Intn(20) == 0 {
		q.InitialSeats = uint64(2 + r.Intn(8))
	}
	if r.Intn(20) == 0 {
		q.FinalSeats = uint64(1 + r.Intn(10))
		q.AdditionalLatency = time.Duration(1+r.Intn(10)) * time.Millisecond
	}
	if r.Intn(10) == 0 {
		q.WaitLimit = time.Duration(50+r.Intn(500)) * time.Millisecond
	}
	g.i++
	return nil
}

func materialize(n int) []fairqueue.Request {
	g := newGenSource(n)
	out := make([]fairqueue.Request, 0, n)
	var q fairqueue.Request
	for g.Next(&q) == nil {
		out = append(out, q)
	}
	return out
}

// peakHeap samples the live heap every millisecond while f runs and returns
// the largest value seen, in bytes.
func peakHeap(f func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	if peak < base {
		return 0
	}
	return peak - base
}

// BenchmarkReplay replays -replay.n generated requests (default 1,000,000)
// through the simulator and -replay.upstream-n (default the same) through
// upstream's queueset on its fake clock, in the same run, and reports the
// cost per request of each, the speed-up and the peak heap growth of each.
// Before timing, the first 20,000 requests are replayed by both and must
// agree request by request.
//
//	go test ./pkg/engine/fairqueue -run XXX -bench BenchmarkReplay -benchtime 1x
func BenchmarkReplay(b *testing.B) {
	prefix := materialize(20_000)
	if diff := compare(runUpstream(benchLevel, prefix, 15*time.Second), runSim(b, benchLevel, prefix, 15*time.Second)); diff != "" {
		b.Fatalf("simulator and upstream disagree on the benchmark workload: %s", diff)
	}
	var simDur, upDur, simCPU, upCPU time.Duration
	var simPeak, upPeak uint64
	var dispatched int64
	for b.Loop() {
		simPeak = max(simPeak, peakHeap(func() {
			start, cpu0 := time.Now(), cpuTime()
			sim, err := fairqueue.NewSimulator([]fairqueue.LevelConfig{benchLevel}, fairqueue.Options{})
			if err != nil {
				b.Fatal(err)
			}
			res, err := sim.Run(newGenSource(*benchN))
			if err != nil {
				b.Fatal(err)
			}
			dispatched = res.Levels[0].Dispatched
			simDur += time.Since(start)
			simCPU += cpuTime() - cpu0
		}))
		reqs := materialize(*benchUpstreamN)
		upPeak = max(upPeak, peakHeap(func() {
			start, cpu0 := time.Now(), cpuTime()
			runUpstream(benchLevel, reqs, 15*time.Second)
			upDur += time.Since(start)
			upCPU += cpuTime() - cpu0
		}))
	}
	simPer := float64(simDur.Nanoseconds()) / float64(b.N) / float64(*benchN)
	upPer := float64(upDur.Nanoseconds()) / float64(b.N) / float64(*benchUpstreamN)
	simCPUPer := float64(simCPU.Nanoseconds()) / float64(b.N) / float64(*benchN)
	upCPUPer := float64(upCPU.Nanoseconds()) / float64(b.N) / float64(*benchUpstreamN)
	b.ReportMetric(simPer, "sim-ns/req")
	b.ReportMetric(upPer, "upstream-ns/req")
	b.ReportMetric(upPer/simPer, "speedup")
	// CPU time (all threads, GC included) is steadier than wall time on a
	// busy machine
	b.ReportMetric(simCPUPer, "sim-cpu-ns/req")
	b.ReportMetric(upCPUPer, "upstream-cpu-ns/req")
	b.ReportMetric(upCPUPer/simCPUPer, "cpu-speedup")
	b.ReportMetric(float64(simPeak)/(1<<20), "sim-peak-MiB")
	b.ReportMetric(float64(upPeak)/(1<<20), "upstream-peak-MiB")
	b.ReportMetric(float64(dispatched)/float64(*benchN), "dispatched-frac")
}

// cpuTime is the CPU time this process has used (user plus system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSimulator replays 100,000 generated requests per iteration
// through the simulator alone (ns/op is per request).
func BenchmarkSimulator(b *testing.B) {
	const n = 100_000
	b.ReportAllocs()
	for b.Loop() {
		sim, err := fairqueue.NewSimulator([]fairqueue.LevelConfig{benchLevel}, fairqueue.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sim.Run(newGenSource(n)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/req")
}
