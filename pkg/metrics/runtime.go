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
