package tune

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/input"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
	"github.com/kubectl-apf/kubectl-apf/pkg/simulate"
)

// benchWorkload writes the team's incident (teamConfig) scaled to about n
// requests: 20 noisy users in bursts and 20 controllers, over n/500 s.
func benchWorkload(t testing.TB, dir string, n int) string {
	var b strings.Builder
	seconds := max(n/500, 1)
	for s := 0; s < seconds; s++ {
		for u := 0; u < 20; u++ {
			for i := 0; i < 15; i++ {
				fmt.Fprintf(&b, `{"offset":"%dms","user":"noisy","groups":["system:authenticated"],"verb":"list","path":"/api/v1/namespaces/team/configmaps","serviceTime":"30ms"}`+"\n", s*1000+u*50)
			}
			for i := 0; i < 10; i++ {
				fmt.Fprintf(&b, `{"offset":"%dms","user":"system:serviceaccount:team:ctrl","groups":["system:authenticated"],"verb":"get","path":"/api/v1/namespaces/team/configmaps/c%d","serviceTime":"5ms"}`+"\n", s*1000+u*50+i*5+1, u)
			}
		}
	}
	p := filepath.Join(dir, "workload.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// BenchmarkSearch runs tune's search (calibrated once, the candidates
// replayed in parallel from the prepared tape, no pruning) against
// replaying candidates one by one from the raw log, each read, parsed and
// calibrated again as simulate -f would; the latter on a sample of
// candidates, its time per candidate scaled to all of them. It reports the
// ratio, in wall-clock and in CPU seconds. KUBECTL_APF_TUNE_BENCH_REQUESTS
// sets the incident's size (default 50,000),
// KUBECTL_APF_TUNE_BENCH_CANDIDATES the candidates (default 200),
// KUBECTL_APF_TUNE_BENCH_SAMPLE the candidates replayed one by one (default
// 4).
func BenchmarkSearch(b *testing.B) {
	n, cands := 50000, 200
	if v, err := strconv.Atoi(os.Getenv("KUBECTL_APF_TUNE_BENCH_REQUESTS")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("KUBECTL_APF_TUNE_BENCH_CANDIDATES")); err == nil && v > 0 {
		cands = v
	}
	sampleSize := 4
	if v, err := strconv.Atoi(os.Getenv("KUBECTL_APF_TUNE_BENCH_SAMPLE")); err == nil && v > 0 {
		sampleSize = v
	}
	dir := b.TempDir()
	wl := benchWorkload(b, dir, n)
	cfgFile := filepath.Join(dir, "team.yaml")
	if err := os.WriteFile(cfgFile, []byte(teamConfig), 0o644); err != nil {
		b.Fatal(err)
	}
	o := load.NewOptions(nil, load.Config)
	o.Defaults, o.Files = true, []string{cfgFile}
	if err := o.Complete(); err != nil {
		b.Fatal(err)
	}
	st, err := o.Load(context.Background(), load.Request{ServerConcurrency: 40})
	if err != nil {
		b.Fatal(err)
	}
	cfg := simulate.Config{Logs: input.Logs{}, Workloads: []string{wl}, RequestTimeout: time.Minute, Calibrate: true}
	in := Input{FlowSchemas: st.FlowSchemas, PriorityLevels: st.PriorityLevels, Release: st.Release, ServerConcurrency: st.ServerConcurrency}
	var tuneTime, naiveTime, prepTime time.Duration
	var tuneCPU, naiveCPU, prepCPU float64
	var replayed, sampled int
	for b.Loop() {
		start, startCPU := time.Now(), cpuSeconds(b)
		p, err := simulate.Prepare(context.Background(), st, cfg)
		if err != nil {
			b.Fatal(err)
		}
		prepTime += time.Since(start)
		prepCPU += cpuSeconds(b) - startCPU
		rep, err := Search(context.Background(), p, in, Options{Goal: protectCtrl, NoPrune: true, MaxCandidates: cands})
		if err != nil {
			b.Fatal(err)
		}
		p.Close()
		tuneTime += time.Since(start)
		tuneCPU += cpuSeconds(b) - startCPU
		replayed = rep.Replayed
		// one by one from the raw log, on a sample
		sample := min(sampleSize, len(rep.Candidates))
		start, startCPU = time.Now(), cpuSeconds(b)
		for _, c := range rep.Candidates[:sample] {
			q, err := simulate.Prepare(context.Background(), st, cfg)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := q.Replay(context.Background(), c.Config(), nil); err != nil {
				b.Fatal(err)
			}
			q.Close()
		}
		naiveTime += time.Since(start)
		naiveCPU += cpuSeconds(b) - startCPU
		sampled = sample
	}
	if sampled == 0 || replayed == 0 {
		b.Fatal("nothing replayed")
	}
	naivePer := naiveTime.Seconds() / float64(sampled)
	naiveCPUPer := naiveCPU / float64(sampled)
	b.ReportMetric(float64(replayed), "candidates")
	b.ReportMetric(float64(n), "requests")
	b.ReportMetric(prepTime.Seconds()/float64(b.N), "prepare-s/op")
	b.ReportMetric(tuneTime.Seconds()/float64(b.N), "tune-s/op")
	b.ReportMetric(naivePer*float64(replayed)/float64(b.N), "one-by-one-s/op")
	b.ReportMetric(naivePer*float64(replayed)/tuneTime.Seconds(), "ratio")
	// the same in CPU seconds (the process's, user and system): on a
	// shared machine the wall-clock figures follow the load, these less
	b.ReportMetric(prepCPU/float64(b.N), "prepare-cpu-s/op")
	b.ReportMetric(tuneCPU/float64(b.N), "tune-cpu-s/op")
	b.ReportMetric(naiveCPUPer*float64(replayed)/float64(b.N), "one-by-one-cpu-s/op")
	b.ReportMetric(naiveCPUPer*float64(replayed)/tuneCPU, "cpu-ratio")
}

// cpuSeconds is the CPU time the process has used so far, user and
// system.
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
