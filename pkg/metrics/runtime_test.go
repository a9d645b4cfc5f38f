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
	parse := func(body string, at time.Time) *Scrape {
		t.Helper()
		s, _, err := ParseAPF(bytes.NewReader([]byte(body)), at)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
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
