package calibrate

import (
	"slices"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// TestRequestsForNoResourcePoolByPath: from an audit log alone, the
// estimated execution times are pooled per kind of request, and a request
// for no resource is of its path's kind. A client that scrapes /metrics
// (400 ms on a server short of CPU) and reads /openapi/v3 (1 ms) keeps
// each one's time: pooled together, as they were until 2026-12-07, each
// scrape executed for the mean of the twelve, 67.5 ms (on starved-seed18
// the recorder's scrapes and reads, exempt, summed 266 ms of work from the
// audit log alone where httplog records 820 ms, and the CPU model read the
// CPU an execution spends per second of its work from the rest).
func TestRequestsForNoResourcePoolByPath(t *testing.T) {
	reqs, _, rc := auditOnlyBusy(t, 1, 1, 40, 300*time.Microsecond)
	start := reqs[0].Arrival
	monitor := func(at time.Duration, uri string, latency time.Duration) workload.Request {
		return workload.Request{Arrival: start.Add(at), User: "monitor", Groups: []string{"system:authenticated"}, UserKnown: true,
			Method: "GET", Verb: "get", URI: uri, Latency: latency, Status: 200, InitialSeats: 1, HasSeats: true}
	}
	var extra []workload.Request
	extra = append(extra, monitor(time.Second, "/metrics", 400*time.Millisecond), monitor(15*time.Second, "/metrics", 400*time.Millisecond))
	for i := range 10 {
		extra = append(extra, monitor(time.Duration(2+i)*time.Second, "/openapi/v3", time.Millisecond))
	}
	all := slices.Concat(reqs, extra)
	slices.SortStableFunc(all, func(a, b workload.Request) int { return a.Arrival.Compare(b.Arrival) })
	opts := Options{Config: rc.Config, ServerConcurrencyLimit: rc.ServerConcurrencyLimit}
	res, err := DeriveAuditOnly(func() (workload.Reader, error) { return &sliceReader{reqs: all}, nil }, rc, opts, 10)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]time.Duration{}
	if err := res.Executions(&sliceReader{reqs: all}, func(w *workload.Request, exec time.Duration) {
		if w.User == "monitor" {
			got[w.URI] = append(got[w.URI], exec)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if len(got["/metrics"]) != 2 || len(got["/openapi/v3"]) != 10 {
		t.Fatalf("executions of the monitor: %v", got)
	}
	for _, e := range got["/metrics"] {
		if e < 390*time.Millisecond || e > 400*time.Millisecond {
			t.Errorf("a /metrics scrape of 400 ms executes for %v, want its own latency (pooled with /openapi/v3?)", e)
		}
	}
	for _, e := range got["/openapi/v3"] {
		if e > time.Millisecond {
			t.Errorf("an /openapi/v3 GET of 1 ms executes for %v", e)
		}
	}
}
