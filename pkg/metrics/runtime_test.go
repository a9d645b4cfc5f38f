package metrics

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// runtimeBody is the part of a kube-apiserver /metrics body the GC
// activity is read from, with the foreign families around it that the
// filter drops.
func runtimeBody(cycles, assist, dedicated, idle, dispatched float64, procs int) string {
	return fmt.Sprintf(`# HELP go_cpu_classes_gc_mark_assist_cpu_seconds_total Estimated total CPU time goroutines spent performing GC tasks to assist the GC and prevent it from falling behind the application.
# TYPE go_cpu_classes_gc_mark_assist_cpu_seconds_total counter
go_cpu_classes_gc_mark_assist_cpu_seconds_total %g
# HELP go_cpu_classes_gc_mark_dedicated_cpu_seconds_total Estimated total CPU time spent performing GC tasks on processors (as defined by GOMAXPROCS) dedicated to those tasks.
# TYPE go_cpu_classes_gc_mark_dedicated_cpu_seconds_total counter
go_cpu_classes_gc_mark_dedicated_cpu_seconds_total %g
# HELP go_cpu_classes_gc_mark_idle_cpu_seconds_total Estimated total CPU time spent performing GC tasks on spare CPU resources that the Go scheduler could not otherwise find a use for.
# TYPE go_cpu_classes_gc_mark_idle_cpu_seconds_total counter
go_cpu_classes_gc_mark_idle_cpu_seconds_total %g
# HELP go_cpu_classes_gc_pause_cpu_seconds_total Estimated total CPU time spent with the application paused by the GC.
# TYPE go_cpu_classes_gc_pause_cpu_seconds_total counter
go_cpu_classes_gc_pause_cpu_seconds_total 0.5
# HELP go_gc_cycles_total_gc_cycles_total Count of all completed GC cycles.
# TYPE go_gc_cycles_total_gc_cycles_total counter
go_gc_cycles_total_gc_cycles_total %g
# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 812
# HELP go_sched_gomaxprocs_threads The current runtime.GOMAXPROCS setting, or the number of operating system threads that can execute user-level Go code simultaneously.
# TYPE go_sched_gomaxprocs_threads gauge
go_sched_gomaxprocs_threads %d
# HELP apiserver_flowcontrol_dispatched_requests_total [BETA] Number of requests executed by API Priority and Fairness subsystem
# TYPE apiserver_flowcontrol_dispatched_requests_total counter
apiserver_flowcontrol_dispatched_requests_total{flow_schema="apf-load",priority_level="apf-load"} %g
apiserver_flowcontrol_dispatched_requests_total{flow_schema="exempt",priority_level="exempt"} 40
`, assist, dedicated, idle, cycles, procs, dispatched)
}

func TestGCActivityBetween(t *testing.T) {
	parse := func(body string, at time.Time) *Scrape { return parseBody(t, body, at) }
	prev := parse(runtimeBody(20, 0.25, 1.5, 3, 100, 2), t0)
	cur := parse(runtimeBody(28, 0.5, 2.5, 8.25, 1300, 2), t0.Add(time.Minute))
	if cur.Has("go_goroutines") || cur.Has("go_cpu_classes_gc_pause_cpu_seconds_total") {
		t.Error("the filter kept Go runtime families the GC activity does not read")
	}
	a, ok := GCActivityBetween(prev, cur)
	want := GCActivity{Span: time.Minute, Cycles: 8, MarkCPU: 6500 * time.Millisecond, Dispatched: 1200, GOMAXPROCS: 2}
	if !ok || a != want {
		t.Errorf("GCActivityBetween = %+v, %v; want %+v", a, ok, want)
	}
	for _, tt := range []struct {
		name      string
		prev, cur *Scrape
	}{
		{"restarted in between", cur, parse(runtimeBody(3, 0, 0.1, 0.2, 50, 2), t0.Add(2*time.Minute))},
		{"same time", prev, prev},
		{"no runtime metrics", prev, mustScrape(t, "modern-a.txt", t0.Add(time.Minute))},
		{"no earlier scrape", nil, cur},
	} {
		if a, ok := GCActivityBetween(tt.prev, tt.cur); ok {
			t.Errorf("%s: GC activity %+v", tt.name, a)
		}
	}
}

// cpuBody is the process collector's CPU counter and the scheduler's
// latency histogram as kube-apiserver writes them (client_golang's Go
// collector: the sum is the buckets' lower bounds times their counts).
func cpuBody(cpu float64, b1, b2, count, sum float64) string {
	return fmt.Sprintf(`# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total %g
# HELP process_open_fds Number of open file descriptors.
# TYPE process_open_fds gauge
process_open_fds 93
# HELP go_sched_latencies_seconds Distribution of the time goroutines have spent in the scheduler in a runnable state before actually running.
# TYPE go_sched_latencies_seconds histogram
go_sched_latencies_seconds_bucket{le="6.399999999999999e-08"} %g
go_sched_latencies_seconds_bucket{le="0.0010485759999999998"} %g
go_sched_latencies_seconds_bucket{le="+Inf"} %g
go_sched_latencies_seconds_sum %g
go_sched_latencies_seconds_count %g
# HELP go_sched_gomaxprocs_threads The current runtime.GOMAXPROCS setting.
# TYPE go_sched_gomaxprocs_threads gauge
go_sched_gomaxprocs_threads 2
`, cpu, b1, b2, count, sum, count)
}

func TestCPUUseBetween(t *testing.T) {
	parse := func(body string, at time.Time) *Scrape { return parseBody(t, body, at) }
	prev := parse(cpuBody(10, 100, 150, 200, 0.5), t0)
	cur := parse(cpuBody(25, 300, 1150, 2200, 4.5), t0.Add(10*time.Second))
	if cur.Has("process_open_fds") {
		t.Error("the filter kept a process family the CPU use does not read")
	}
	u, ok := CPUUseBetween(prev, cur)
	// 15 s of CPU in 10 s; 2000 waits that took 4 s in all
	want := CPUUse{Span: 10 * time.Second, ProcessCPU: 15 * time.Second, RunnableWait: 2 * time.Millisecond, HasRunnableWait: true, GOMAXPROCS: 2}
	if !ok || u != want {
		t.Errorf("CPUUseBetween = %+v, %v; want %+v", u, ok, want)
	}
	if got := u.Cores(); got != 1.5 {
		t.Errorf("Cores = %g, want 1.5", got)
	}
	for _, tt := range []struct {
		name      string
		prev, cur *Scrape
	}{
		{"restarted in between", cur, parse(cpuBody(1, 1, 1, 1, 0), t0.Add(time.Minute))},
		{"same time", prev, prev},
		{"no process metrics", prev, mustScrape(t, "modern-a.txt", t0.Add(time.Minute))},
		{"no earlier scrape", nil, cur},
	} {
		if u, ok := CPUUseBetween(tt.prev, tt.cur); ok {
			t.Errorf("%s: CPU use %+v", tt.name, u)
		}
	}
	// without the scheduler's histogram the CPU is still told
	noSched := func(cpu float64, at time.Time) *Scrape {
		return parse(fmt.Sprintf("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %g\n# TYPE go_sched_gomaxprocs_threads gauge\ngo_sched_gomaxprocs_threads 4\n", cpu), at)
	}
	if u, ok := CPUUseBetween(noSched(1, t0), noSched(3, t0.Add(4*time.Second))); !ok || u.HasRunnableWait || u.Cores() != 0.5 || u.GOMAXPROCS != 4 {
		t.Errorf("without the scheduler's histogram: %+v, %v", u, ok)
	}
}

// parseBody parses a /metrics body through the APF filter.
func parseBody(t *testing.T, body string, at time.Time) *Scrape {
	t.Helper()
	s, _, err := ParseAPF(bytes.NewReader([]byte(body)), at)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
