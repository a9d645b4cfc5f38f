package fairqueue_test

import (
	"flag"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// portSource yields n httplog-like requests without a user (so the flow
// stands in with user agent and client address) from clients hosts, in
// the recorded FlowSchema service-accounts (ByUser). With newPort, every
// request comes from a new client port, as from a client that opens a
// connection per request.
type portSource struct {
	n, i, clients int
	newPort       bool
}

func (s *portSource) Next(r *workload.Request) error {
	if s.i >= s.n {
		return io.EOF
	}
	c := s.i % s.clients
	port := 40000 + c
	if s.newPort {
		port = 1024 + s.i%60000
	}
	*r = workload.Request{
		Arrival: time.Unix(0, 0).Add(time.Duration(s.i) * time.Millisecond), Method: "GET", Verb: "GET",
		URI: fmt.Sprintf("/api/v1/namespaces/ns%d/configmaps/cm", c), UserAgent: "client", SourceIP: fmt.Sprintf("10.0.%d.%d:%d", c/250, c%250, port),
		FlowSchema: "service-accounts", PriorityLevel: "workload-low", Status: 200, ServiceTime: time.Millisecond, HasServiceTime: true,
		Source: workload.Where{Name: "gen", Line: int64(s.i + 1)},
	}
	s.i++
	return nil
}

func replayPorts(tb testing.TB, n, clients int, newPort bool) *fairqueue.Report {
	tb.Helper()
	rep, err := fairqueue.Replay(&portSource{n: n, clients: clients, newPort: newPort}, fairqueue.ReplayConfig{Config: engine.DefaultConfig()}, nil, fairqueue.ReplayOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return rep
}

// TestFlowsFollowClientsNotPorts: without a user, a client's requests are one
// flow whatever port each came from, so the per-flow state grows with the
// clients, not with the requests.
func TestFlowsFollowClientsNotPorts(t *testing.T) {
	for _, newPort := range []bool{false, true} {
		rep := replayPorts(t, 3000, 7, newPort)
		if got := len(levelByName(&rep.Result, "workload-low").Flows); got != 7 {
			t.Errorf("new port per request %v: %d flows, want one per client (7)", newPort, got)
		}
	}
}

// BenchmarkReplayPortPerRequest replays the same requests of 100 clients
// twice in one run, once with one port per client and once with a new port
// per request, and reports the peak heap of each and their ratio: with flows
// keyed by host the ratio stays near 1 however many requests there are.
//
//	go test ./pkg/engine/fairqueue -run '^$' -bench BenchmarkReplayPortPerRequest -benchtime 1x -replay.ports-n 1000000
func BenchmarkReplayPortPerRequest(b *testing.B) {
	var onePeak, newPeak uint64
	for b.Loop() {
		onePeak = max(onePeak, peakHeap(func() { replayPorts(b, *portsN, 100, false) }))
		newPeak = max(newPeak, peakHeap(func() { replayPorts(b, *portsN, 100, true) }))
	}
	b.ReportMetric(float64(onePeak)/(1<<20), "port-per-client-peak-MiB")
	b.ReportMetric(float64(newPeak)/(1<<20), "port-per-request-peak-MiB")
	b.ReportMetric(float64(newPeak)/float64(onePeak), "peak-ratio")
}

var portsN = flag.Int("replay.ports-n", 200_000, "requests replayed per variant by BenchmarkReplayPortPerRequest")
