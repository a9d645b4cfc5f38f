package metrics

import "time"

// GCActivity is what a server's Go runtime and APF counted between two
// scrapes: the garbage collections, the CPU time of the collector's mark
// workers (assist, dedicated and idle, as the runtime accounts it: the
// time a worker held a P, throttled or not), the requests APF dispatched,
// and GOMAXPROCS at the later scrape.
type GCActivity struct {
	Span       time.Duration
	Cycles     float64
	MarkCPU    time.Duration
	Dispatched float64
	GOMAXPROCS int
}

// GCActivityBetween returns the garbage collector's activity between prev
// and cur; ok is false when either scrape lacks a family it needs or a
// counter went down (the server restarted in between).
func GCActivityBetween(prev, cur *Scrape) (a GCActivity, ok bool) {
	if prev == nil || cur == nil || !cur.Time.After(prev.Time) {
		return a, false
	}
	delta := func(family string) (float64, bool) {
		p, c := prev.SumBy(family, ""), cur.SumBy(family, "")
		if p == nil || c == nil || c[""] < p[""] {
			return 0, false
		}
		return c[""] - p[""], true
	}
	var mark float64
	for _, f := range []string{FamilyGCMarkAssistCPU, FamilyGCMarkDedicated, FamilyGCMarkIdleCPU} {
		d, ok := delta(f)
		if !ok {
			return a, false
		}
		mark += d
	}
	cycles, ok1 := delta(FamilyGCCycles)
	dispatched, ok2 := delta(DispatchedRequestsTotal)
	procs := cur.SumBy(FamilyGOMAXPROCS, "")
	if !ok1 || !ok2 || procs == nil || procs[""] < 1 {
		return a, false
	}
	return GCActivity{Span: cur.Time.Sub(prev.Time), Cycles: cycles, MarkCPU: time.Duration(mark * float64(time.Second)),
		Dispatched: dispatched, GOMAXPROCS: int(procs[""])}, true
}

// CPUUse is what a server's process and Go scheduler counted between two
// scrapes: the CPU time the process used (process_cpu_seconds_total), and
// the mean time a goroutine waited runnable before it ran
// (go_sched_latencies_seconds; HasRunnableWait false when the scrape has
// no such histogram), with GOMAXPROCS at the later scrape.
type CPUUse struct {
	Span            time.Duration
	ProcessCPU      time.Duration
	RunnableWait    time.Duration
	HasRunnableWait bool
	GOMAXPROCS      int
}

// Cores is the CPU the process used, in cores: ProcessCPU over Span.
func (u CPUUse) Cores() float64 { return u.ProcessCPU.Seconds() / u.Span.Seconds() }

// CPUUseBetween returns the process's CPU use between prev and cur; ok is
// false when either scrape lacks process_cpu_seconds_total or GOMAXPROCS,
// or the counter went down (the server restarted in between).
func CPUUseBetween(prev, cur *Scrape) (u CPUUse, ok bool) {
	if prev == nil || cur == nil || !cur.Time.After(prev.Time) {
		return u, false
	}
	p, c := prev.SumBy(FamilyProcessCPU, ""), cur.SumBy(FamilyProcessCPU, "")
	procs := cur.SumBy(FamilyGOMAXPROCS, "")
	if p == nil || c == nil || c[""] < p[""] || procs == nil || procs[""] < 1 {
		return u, false
	}
	u = CPUUse{Span: cur.Time.Sub(prev.Time), ProcessCPU: time.Duration((c[""] - p[""]) * float64(time.Second)), GOMAXPROCS: int(procs[""])}
	hp, hc := prev.HistogramsBy(FamilySchedLatencies, "", nil)[""], cur.HistogramsBy(FamilySchedLatencies, "", nil)[""]
	if hp != nil && hc != nil && hc.Count > hp.Count {
		d := hc.Sub(hp)
		u.RunnableWait, u.HasRunnableWait = time.Duration(d.Sum/d.Count*float64(time.Second)), true
	}
	return u, true
}
