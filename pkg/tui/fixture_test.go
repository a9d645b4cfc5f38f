package tui

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// The fixtures are minimal hand-written states, built as the bodies an
// apiserver serves (the three dumps in the current layout through the dump
// package's formatters, /metrics as Prometheus text) and read back through
// dump.CaptureFromFiles: the view under test parses them exactly as it parses
// a live capture.

var fixtureAt = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// flowSpec is one flow's requests in a level.
type flowSpec struct {
	fs, dist, user, verb, path string
	// queues is the flow's hand; waiting requests are spread over it.
	queues  []int
	waiting int
	seats   int
}

// levelSpec is one priority level.
type levelSpec struct {
	name             string
	nominal, current int
	execSeats        int
	queues           int
	flows            []flowSpec
	// dispatched and rejected are counter increases over the 2 s between
	// the two scrapes; rejected by reason.
	dispatched float64
	rejected   map[string]float64
	// waits are the wait observations of the interval, in seconds.
	waits []float64
	// rejectedCount is the level dump's cumulative counter.
	rejectedCount int
}

type fixture struct {
	instance string
	levels   []levelSpec
}

var waitBuckets = []float64{0, .005, .02, .05, .1, .2, .5, 1, 2, 5, 10, 15, 30}

// files renders the fixture as bundle files of one capture.
func (f fixture) files(t testing.TB) map[string][]byte {
	t.Helper()
	s := f.snapshot()
	c := &dump.Capture{Snapshots: []*dump.Snapshot{s}}
	files, err := dump.BundleFiles(c, dump.Manifest{CreatedAt: fixtureAt})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// capture parses the fixture's files back.
func (f fixture) capture(t testing.TB) *dump.Capture {
	t.Helper()
	c, _, err := dump.CaptureFromFiles(f.files(t), dump.CaptureOptions{Parts: dump.PartAll})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f fixture) snapshot() *dump.Snapshot {
	inst := f.instance
	if inst == "" {
		inst = "https://127.0.0.1:6443"
	}
	var pls []dump.PriorityLevelRow
	var queues []dump.QueueRow
	var reqs []dump.RequestRow
	var m0, m1 strings.Builder
	gauge := func(b *strings.Builder, name string) {
		fmt.Fprintf(b, "# TYPE %s%s gauge\n", metrics.FlowcontrolPrefix, name)
	}
	for _, scrape := range []*strings.Builder{&m0, &m1} {
		gauge(scrape, "nominal_limit_seats")
		for _, l := range f.levels {
			fmt.Fprintf(scrape, "%snominal_limit_seats{priority_level=%q} %d\n", metrics.FlowcontrolPrefix, l.name, l.nominal)
		}
		gauge(scrape, "current_limit_seats")
		for _, l := range f.levels {
			fmt.Fprintf(scrape, "%scurrent_limit_seats{priority_level=%q} %d\n", metrics.FlowcontrolPrefix, l.name, l.current)
		}
		gauge(scrape, "current_executing_seats")
		for _, l := range f.levels {
			fmt.Fprintf(scrape, "%scurrent_executing_seats{flow_schema=%q,priority_level=%q} %d\n", metrics.FlowcontrolPrefix, l.name, l.name, l.execSeats)
		}
	}
	fmt.Fprintf(&m0, "# TYPE %sdispatched_requests_total counter\n", metrics.FlowcontrolPrefix)
	fmt.Fprintf(&m1, "# TYPE %sdispatched_requests_total counter\n", metrics.FlowcontrolPrefix)
	for _, l := range f.levels {
		fmt.Fprintf(&m0, "%sdispatched_requests_total{flow_schema=%q,priority_level=%q} %d\n", metrics.FlowcontrolPrefix, l.name, l.name, 1000)
		fmt.Fprintf(&m1, "%sdispatched_requests_total{flow_schema=%q,priority_level=%q} %g\n", metrics.FlowcontrolPrefix, l.name, l.name, 1000+l.dispatched)
	}
	fmt.Fprintf(&m0, "# TYPE %srejected_requests_total counter\n", metrics.FlowcontrolPrefix)
	fmt.Fprintf(&m1, "# TYPE %srejected_requests_total counter\n", metrics.FlowcontrolPrefix)
	for _, l := range f.levels {
		reasons := make([]string, 0, len(l.rejected))
		for r := range l.rejected {
			reasons = append(reasons, r)
		}
		sort.Strings(reasons)
		for _, r := range reasons {
			fmt.Fprintf(&m0, "%srejected_requests_total{flow_schema=%q,priority_level=%q,reason=%q} %d\n", metrics.FlowcontrolPrefix, l.name, l.name, r, 10)
			fmt.Fprintf(&m1, "%srejected_requests_total{flow_schema=%q,priority_level=%q,reason=%q} %g\n", metrics.FlowcontrolPrefix, l.name, l.name, r, 10+l.rejected[r])
		}
	}
	fmt.Fprintf(&m0, "# TYPE %srequest_wait_duration_seconds histogram\n", metrics.FlowcontrolPrefix)
	fmt.Fprintf(&m1, "# TYPE %srequest_wait_duration_seconds histogram\n", metrics.FlowcontrolPrefix)
	for _, l := range f.levels {
		lbl := fmt.Sprintf("execute=\"true\",flow_schema=%q,priority_level=%q", l.name, l.name)
		for _, b := range waitBuckets {
			n := 0
			for _, w := range l.waits {
				if w <= b {
					n++
				}
			}
			fmt.Fprintf(&m0, "%srequest_wait_duration_seconds_bucket{%s,le=\"%g\"} 0\n", metrics.FlowcontrolPrefix, lbl, b)
			fmt.Fprintf(&m1, "%srequest_wait_duration_seconds_bucket{%s,le=\"%g\"} %d\n", metrics.FlowcontrolPrefix, lbl, b, n)
		}
		sum := 0.0
		for _, w := range l.waits {
			sum += w
		}
		fmt.Fprintf(&m0, "%srequest_wait_duration_seconds_bucket{%s,le=\"+Inf\"} 0\n", metrics.FlowcontrolPrefix, lbl)
		fmt.Fprintf(&m0, "%srequest_wait_duration_seconds_sum{%s} 0\n%srequest_wait_duration_seconds_count{%s} 0\n", metrics.FlowcontrolPrefix, lbl, metrics.FlowcontrolPrefix, lbl)
		fmt.Fprintf(&m1, "%srequest_wait_duration_seconds_bucket{%s,le=\"+Inf\"} %d\n", metrics.FlowcontrolPrefix, lbl, len(l.waits))
		fmt.Fprintf(&m1, "%srequest_wait_duration_seconds_sum{%s} %g\n%srequest_wait_duration_seconds_count{%s} %d\n", metrics.FlowcontrolPrefix, lbl, sum, metrics.FlowcontrolPrefix, lbl, len(l.waits))
	}

	for _, l := range f.levels {
		waiting := map[int]int{}
		waitSeats := map[int]int{}
		total := 0
		n := 0
		for _, fl := range l.flows {
			seats := max(fl.seats, 1)
			for i := 0; i < fl.waiting; i++ {
				q := fl.queues[i%len(fl.queues)]
				reqs = append(reqs, dump.RequestRow{PriorityLevel: l.name, FlowSchema: fl.fs, QueueIndex: q, IndexInQueue: waiting[q],
					FlowDistinguisher: fl.dist, ArriveTime: fixtureAt.Add(-time.Duration(100+37*n%900) * time.Millisecond),
					InitialSeats: seats, HasDetails: true, UserName: fl.user, Verb: fl.verb, APIPath: fl.path})
				waiting[q]++
				waitSeats[q] += seats
				total++
				n++
			}
		}
		// Executing requests: one seat each, spread over the queues.
		execPerQueue := map[int]int{}
		for i := 0; i < l.execSeats; i++ {
			q := -1
			if l.queues > 0 {
				q = (i * 7) % l.queues
				execPerQueue[q]++
			}
			fs := l.name
			dist := ""
			if len(l.flows) > 0 {
				fs, dist = l.flows[i%len(l.flows)].fs, l.flows[i%len(l.flows)].dist
			}
			reqs = append(reqs, dump.RequestRow{PriorityLevel: l.name, FlowSchema: fs, QueueIndex: q, IndexInQueue: -1,
				FlowDistinguisher: dist, ArriveTime: fixtureAt.Add(-time.Second), StartTime: fixtureAt.Add(-900 * time.Millisecond),
				InitialSeats: 1, HasDetails: true, UserName: "system:apiserver", Verb: "list", APIPath: "/api/v1/pods"})
		}
		for q := 0; q < l.queues; q++ {
			queues = append(queues, dump.QueueRow{PriorityLevel: l.name, Index: q, PendingRequests: waiting[q], ExecutingRequests: execPerQueue[q],
				SeatsInUse: execPerQueue[q], InitialSeatsSum: waitSeats[q], MaxSeatsSum: waitSeats[q], TotalWorkSum: 0.003 * float64(waitSeats[q]), HasSeats: true})
		}
		active := 0
		for range waiting {
			active++
		}
		pls = append(pls, dump.PriorityLevelRow{Name: l.name, ActiveQueues: active, IsIdle: total == 0 && l.execSeats == 0, WaitingRequests: total,
			ExecutingRequests: l.execSeats, HasCounters: true, DispatchedRequests: 1000 + int(l.dispatched), RejectedRequests: l.rejectedCount})
	}
	s := &dump.Snapshot{Instance: inst, CapturedAt: fixtureAt, Raw: map[string][]byte{
		dump.FilePriorityLevels: dump.FormatPriorityLevels(pls),
		dump.FileQueues:         dump.FormatQueues(queues),
		dump.FileRequests:       dump.FormatRequests(reqs),
		dump.MetricsFile(0):     []byte(m0.String()),
		dump.MetricsFile(1):     []byte(m1.String()),
		"metrics-0.time":        []byte(fixtureAt.Add(-2 * time.Second).Format(time.RFC3339Nano)),
		"metrics-1.time":        []byte(fixtureAt.Format(time.RFC3339Nano)),
		dump.FileVersion:        []byte(`{"major":"1","minor":"37","gitVersion":"v1.37.1"}`),
	}}
	return s
}

// The three states of the golden frames. The levels are the mandatory and
// suggested ones of a server with a concurrency limit of 15 (the local
// control plane's), plus the load generator's.
func idleFixture() fixture {
	return fixture{levels: []levelSpec{
		{name: "catch-all", nominal: 1, current: 1},
		// The exempt level gets a current limit from its demand
		// (updateBorrowingLocked) without borrowing anything.
		{name: "exempt", nominal: 0, current: 2, dispatched: 4},
		{name: "global-default", nominal: 1, current: 1, queues: 128, dispatched: 0.5},
		{name: "leader-election", nominal: 1, current: 1, queues: 16, dispatched: 1},
		{name: "node-high", nominal: 3, current: 3, queues: 64},
		{name: "system", nominal: 3, current: 3, queues: 64, dispatched: 2, execSeats: 1, waits: []float64{0.001, 0.001}},
		{name: "workload-high", nominal: 2, current: 2, queues: 128},
		{name: "workload-low", nominal: 4, current: 4, queues: 128, dispatched: 1},
	}}
}

func busyFixture() fixture {
	f := idleFixture()
	for i := range f.levels {
		l := &f.levels[i]
		switch l.name {
		case "workload-low":
			l.current, l.execSeats, l.dispatched = 6, 6, 24
			l.flows = []flowSpec{
				{fs: "service-accounts", dist: "system:serviceaccount:ci:builder", user: "system:serviceaccount:ci:builder", verb: "list", path: "/api/v1/configmaps", queues: []int{3, 17, 40, 77, 90, 101}, waiting: 18, seats: 3},
				{fs: "service-accounts", dist: "system:serviceaccount:web:app", user: "system:serviceaccount:web:app", verb: "get", path: "/api/v1/namespaces/web/secrets/tls", queues: []int{17, 55, 64, 120, 5, 9}, waiting: 4, seats: 1},
			}
			l.waits = []float64{0.01, 0.3, 0.4, 0.8, 1.5, 1.9}
		case "global-default":
			l.current, l.execSeats, l.dispatched = 1, 1, 3
			l.flows = []flowSpec{{fs: "global-default", dist: "carol", user: "carol", verb: "list", path: "/apis/apps/v1/deployments", queues: []int{12, 99}, waiting: 2, seats: 1}}
			l.waits = []float64{0.05, 0.2}
		case "workload-high", "node-high":
			l.current--
		}
	}
	return f
}

func rejectingFixture() fixture {
	f := busyFixture()
	f.levels = append(f.levels,
		levelSpec{name: "apf-load", nominal: 1, current: 1, execSeats: 1, queues: 8, dispatched: 6, rejected: map[string]float64{"queue-full": 14}, rejectedCount: 130,
			flows: []flowSpec{
				{fs: "apf-load", dist: "load-1", user: "load-1", verb: "list", path: "/api/v1/namespaces/apf-load/configmaps", queues: []int{2, 5}, waiting: 6},
				{fs: "apf-load", dist: "load-2", user: "load-2", verb: "list", path: "/api/v1/namespaces/apf-load/configmaps", queues: []int{5, 7}, waiting: 6},
				{fs: "apf-load", dist: "load-3", user: "load-3", verb: "list", path: "/api/v1/namespaces/apf-load/configmaps", queues: []int{0, 3}, waiting: 5},
			},
			waits: []float64{0.5, 1, 2, 3, 4, 6}},
		levelSpec{name: "apf-load-reject", nominal: 0, current: 0, rejected: map[string]float64{"concurrency-limit": 5}, rejectedCount: 40},
	)
	for i := range f.levels {
		if f.levels[i].name == "workload-low" {
			f.levels[i].rejected = map[string]float64{"queue-full": 1, "time-out": 0.5}
			f.levels[i].rejectedCount = 9
		}
	}
	return f
}
