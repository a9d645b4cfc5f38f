package promfetch_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testprom"
	"github.com/kubectl-apf/kubectl-apf/pkg/history"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
	"github.com/kubectl-apf/kubectl-apf/pkg/promfetch"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkExplain429Scale loads a store with the flowcontrol series of
// 200 apiservers over 30 days (one sample an hour, backfilled with
// promtool) into a real Prometheus, and runs what "explain 429 --since
// 30d" runs (history.FindIncidents) against a naive fetch of the raw series
// the same answer needs, in the same run: wall time, bytes transferred,
// queries and memory allocated, with their ratios.
//
// It runs only with KUBECTL_APF_BENCH_HISTORY=1 ("make bench-history"):
// the store takes minutes to build. KUBECTL_APF_BENCH_INSTANCES, _DAYS and
// _INTERVAL shrink it for a quick try.
func BenchmarkExplain429Scale(b *testing.B) {
	if os.Getenv("KUBECTL_APF_BENCH_HISTORY") != "1" {
		b.Skip("set KUBECTL_APF_BENCH_HISTORY=1 (make bench-history): the store takes minutes to build")
	}
	instances := envInt("KUBECTL_APF_BENCH_INSTANCES", 200)
	days := envInt("KUBECTL_APF_BENCH_DAYS", 30)
	iv := envDuration("KUBECTL_APF_BENCH_INTERVAL", time.Hour)
	end := time.Now().Add(-time.Hour).Truncate(time.Hour).UTC()
	start := end.Add(-time.Duration(days) * 24 * time.Hour)
	levels := []string{"exempt", "system", "node-high", "leader-election", "workload-high", "workload-low", "global-default", "catch-all"}
	f := &testprom.Fleet{Instances: instances, Levels: levels, Start: start, End: end, Interval: iv,
		// A fleet in the middle of an upgrade: one apiserver in five is
		// older than 1.28.
		OldNames: func(i int) bool { return i%5 == 4 }}
	// Twelve incidents over the month, each on a tenth of the fleet.
	for k := 0; k < 12; k++ {
		at := start.Add(time.Duration(k*days*2) * time.Hour).Add(13 * time.Hour)
		var on []int
		for i := k; i < instances; i += 10 {
			on = append(on, i)
		}
		reason := []string{"queue-full", "time-out", "concurrency-limit"}[k%3]
		f.Incidents = append(f.Incidents, testprom.Incident{Level: levels[4+k%4], FlowSchema: fmt.Sprintf("tenant-%d", k), Reason: reason,
			Instances: on, Start: at, End: at.Add(time.Duration(3+k%4) * iv), PerSecond: 2})
	}
	f.Other429 = []testprom.Incident{{Instances: []int{0, 1, 2}, Start: start.Add(100 * time.Hour), End: start.Add(104 * time.Hour), PerSecond: 1}}

	dir := b.TempDir()
	ctx := context.Background()
	t0 := time.Now()
	size, err := f.CreateBlocks(ctx, dir, filepath.Join(dir, "data"))
	if err != nil {
		b.Fatal(err)
	}
	samples := (end.Sub(start)/iv + 1) * time.Duration(instances)
	b.Logf("store: %d apiservers x %d days, one sample every %s (%d samples per series); OpenMetrics %.0f MB; generated and backfilled in %s",
		instances, days, iv, int64(samples)/int64(instances), float64(size)/1e6, time.Since(t0).Round(time.Second))
	prom := testprom.StartT(b, testprom.Options{Dir: dir, LookbackDelta: 3 * iv})

	window := history.Window{Start: start, End: end, Step: history.AutoStep(end.Sub(start), iv)}
	q := history.Query{Selector: `job="apiserver"`, Lookback: 3 * iv}
	opts := history.IncidentOptions{Query: q, Window: window, ScrapeInterval: iv, WaitLimit: 15 * time.Second, MaxIncidents: 20}

	type cost struct {
		wall           time.Duration
		bytes, queries int64
		alloc          uint64
	}
	measure := func(run func(c *promfetch.Client) error) cost {
		c, err := promfetch.New(promfetch.Options{URL: prom.URL, Timeout: 10 * time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		t := time.Now()
		if err := run(c); err != nil {
			b.Fatal(err)
		}
		wall := time.Since(t)
		runtime.ReadMemStats(&m1)
		return cost{wall: wall, bytes: c.Stats.Bytes.Load(), queries: c.Stats.Queries.Load(), alloc: m1.TotalAlloc - m0.TotalAlloc}
	}
	truth := f.Rejected("", start, end)
	var pushed, naive cost
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pushed = measure(func(c *promfetch.Client) error {
			rep, err := history.FindIncidents(ctx, c, opts)
			if err != nil {
				return err
			}
			got := 0.0
			for _, v := range rep.Rejected {
				got += v
			}
			if len(rep.Incidents) != len(f.Incidents) || math.Abs(got-truth) > 0.02*truth {
				return fmt.Errorf("pushed down: %d incidents, %v rejections; want %d, %v", len(rep.Incidents), got, len(f.Incidents), truth)
			}
			return nil
		})
		naive = measure(func(c *promfetch.Client) error {
			got, err := naiveExplain(ctx, c, window)
			if err != nil {
				return err
			}
			if math.Abs(got-truth) > 0.02*truth {
				return fmt.Errorf("naive: %v rejections, want %v", got, truth)
			}
			return nil
		})
	}
	b.StopTimer()
	b.ReportMetric(float64(pushed.wall.Milliseconds()), "pushed-ms")
	b.ReportMetric(float64(naive.wall.Milliseconds()), "naive-ms")
	b.ReportMetric(float64(naive.wall)/float64(pushed.wall), "wall-ratio")
	b.ReportMetric(float64(pushed.bytes), "pushed-bytes")
	b.ReportMetric(float64(naive.bytes), "naive-bytes")
	b.ReportMetric(float64(naive.bytes)/float64(pushed.bytes), "bytes-ratio")
	b.ReportMetric(float64(pushed.queries), "pushed-queries")
	b.ReportMetric(float64(naive.queries), "naive-queries")
	b.ReportMetric(float64(pushed.alloc)/1e6, "pushed-alloc-MB")
	b.ReportMetric(float64(naive.alloc)/1e6, "naive-alloc-MB")
	b.ReportMetric(float64(naive.alloc)/float64(pushed.alloc), "alloc-ratio")
}

// naiveExplain is what a tool that fetches raw series does for the same
// report: every sample of the families explain 429 reads, over the whole
// window, one query per family, and the arithmetic on the client. It
// returns the rejections it counted.
func naiveExplain(ctx context.Context, c *promfetch.Client, w history.Window) (float64, error) {
	sel := `{job="apiserver"}`
	families := []string{
		metrics.RejectedRequestsTotal, metrics.FamilyRequestTotal, metrics.DispatchedRequestsTotal,
		metrics.NominalLimitSeats, metrics.RequestConcurrencyLimit, metrics.CurrentLimitSeats, metrics.LowerLimitSeats, metrics.UpperLimitSeats,
		metrics.CurrentExecutingSeats, metrics.RequestConcurrencyInUse, metrics.CurrentInqueueRequests,
		metrics.RequestWaitDurationSecond + "_bucket",
	}
	rejected := 0.0
	for _, fam := range families {
		ss, err := c.RawSamples(ctx, fam+sel, w.Start, w.End)
		if err != nil {
			return 0, err
		}
		if fam != metrics.RejectedRequestsTotal {
			continue
		}
		// Per series: what it counted in the window, a series created in
		// the window from zero.
		for _, s := range ss {
			prev := math.NaN()
			for i, p := range s.Points {
				switch {
				case i == 0 && !p.T.After(w.Start):
				case i == 0:
					rejected += p.V
				case p.V >= prev:
					rejected += p.V - prev
				default:
					rejected += p.V
				}
				prev = p.V
			}
		}
	}
	return rejected, nil
}
