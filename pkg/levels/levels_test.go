package levels

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func read(t *testing.T, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"..", "..", "testdata", "dump"}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// load137 is the real 1.37.1 capture under load: dump_priority_levels
// says apf-load has 11 waiting and 1 executing.
func load137(t *testing.T) *dump.Snapshot {
	t.Helper()
	s := &dump.Snapshot{Instance: "a"}
	var err error
	if s.PriorityLevelDump, err = dump.ParsePriorityLevels(read(t, "v1.37.1-load", dump.FilePriorityLevels)); err != nil {
		t.Fatal(err)
	}
	if s.QueueDump, err = dump.ParseQueues(read(t, "v1.37.1-load", dump.FileQueues)); err != nil {
		t.Fatal(err)
	}
	if s.RequestDump, err = dump.ParseRequests(read(t, "v1.37.1-load", dump.FileRequests)); err != nil {
		t.Fatal(err)
	}
	return s
}

func scrape(t *testing.T, text string) *metrics.Scrape {
	t.Helper()
	s, err := metrics.ParseText([]byte(text), t0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const gauges = `# TYPE apiserver_flowcontrol_current_inqueue_requests gauge
apiserver_flowcontrol_current_inqueue_requests{flow_schema="x",priority_level="apf-load"} 99
# TYPE apiserver_flowcontrol_current_executing_requests gauge
apiserver_flowcontrol_current_executing_requests{flow_schema="x",priority_level="apf-load"} 77
# TYPE apiserver_flowcontrol_nominal_limit_seats gauge
apiserver_flowcontrol_nominal_limit_seats{priority_level="apf-load"} 1
`

func byName(rows []Row) map[string]Row {
	m := map[string]Row{}
	for _, r := range rows {
		m[r.Name] = r
	}
	return m
}

// TestOrder drops the inputs one by one, best first, and checks that each
// figure then comes from the next.
func TestOrder(t *testing.T) {
	full := load137(t)
	full.Metrics = []*metrics.Scrape{scrape(t, gauges)}
	var reqWaiting, reqSeats float64
	for _, r := range full.RequestDump {
		if r.PriorityLevel == "apf-load" && !r.Executing() {
			reqWaiting++
			reqSeats += float64(r.Seats())
		}
	}
	var qWaiting, qExec float64
	for _, q := range full.QueueDump {
		if q.PriorityLevel == "apf-load" {
			qWaiting += float64(q.PendingRequests)
			qExec += float64(q.ExecutingRequests)
		}
	}
	limits := []engine.LevelLimits{{Name: "apf-load", NominalCL: 5}}
	tests := []struct {
		name                 string
		drop                 func(*dump.Snapshot)
		waiting, executing   float64
		waitingFrom, execFrm string
	}{
		// the request dump's waiting rows, which give the waiting seats
		// too: the pair from one reading (the level dump, read moments
		// apart, says 11)
		{"every input", func(*dump.Snapshot) {}, reqWaiting, 1, FromRequestDump, FromPriorityLevelDump},
		{"no request dump", func(s *dump.Snapshot) { s.RequestDump = nil }, 11, 1, FromPriorityLevelDump, FromPriorityLevelDump},
		{"no level dump", func(s *dump.Snapshot) { s.PriorityLevelDump = nil }, reqWaiting, qExec, FromRequestDump, FromQueueDump},
		{"no level or request dump", func(s *dump.Snapshot) { s.PriorityLevelDump, s.RequestDump = nil, nil }, qWaiting, qExec, FromQueueDump, FromQueueDump},
		{"metrics alone", func(s *dump.Snapshot) { s.PriorityLevelDump, s.RequestDump, s.QueueDump = nil, nil, nil }, 99, 77, FromMetrics, FromMetrics},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := *full
			tt.drop(&s)
			r := byName(Compute(Input{Snapshot: &s, Limits: limits}))["apf-load"]
			if r.Waiting != tt.waiting || r.From[FigureWaiting] != tt.waitingFrom {
				t.Errorf("waiting %v from %s, want %v from %s", r.Waiting, r.From[FigureWaiting], tt.waiting, tt.waitingFrom)
			}
			if r.Executing != tt.executing || r.From[FigureExecuting] != tt.execFrm {
				t.Errorf("executing %v from %s, want %v from %s", r.Executing, r.From[FigureExecuting], tt.executing, tt.execFrm)
			}
			// The metrics give the nominal limit before the configuration;
			// the configuration the current limit, which they lack.
			if r.NominalLimit != 1 || r.CurrentLimit != 1 || r.From[FigureCurrentLimit] != FromMetrics {
				t.Errorf("limits %v/%v (%v)", r.NominalLimit, r.CurrentLimit, r.From)
			}
		})
	}
	if reqWaiting == 11 || qWaiting == 11 {
		t.Fatalf("the fixture no longer tells the inputs apart: %v %v", reqWaiting, qWaiting)
	}
}

// TestAbsentIsNaN: a figure no input gives is NaN, never 0 (issue 26 D5),
// and the configuration gives the limits last.
func TestAbsentIsNaN(t *testing.T) {
	// A 1.20-shaped scrape: no inqueue gauge, no seats gauges.
	s := &dump.Snapshot{Instance: "a", Metrics: []*metrics.Scrape{scrape(t, `# TYPE apiserver_flowcontrol_current_executing_requests gauge
apiserver_flowcontrol_current_executing_requests{flow_schema="x",priority_level="workload-low"} 3
`)}}
	r := byName(Compute(Input{Snapshot: s, Limits: []engine.LevelLimits{{Name: "workload-low", NominalCL: 24}}}))["workload-low"]
	for name, v := range map[string]float64{"waiting": r.Waiting, "waiting seats": r.WaitingSeats, "dispatched": r.DispatchedPerSec, "wait p99": r.WaitP99} {
		if !math.IsNaN(v) {
			t.Errorf("%s = %v, want NaN (absent)", name, v)
		}
	}
	if r.Executing != 3 || r.SeatsInUse != 3 {
		t.Errorf("executing %v, seats %v; want 3 from current_executing_requests", r.Executing, r.SeatsInUse)
	}
	if r.NominalLimit != 24 || r.From[FigureNominalLimit] != FromConfiguration || math.Abs(r.Utilisation-3.0/24) > 1e-9 {
		t.Errorf("limit %v from %s, utilisation %v", r.NominalLimit, r.From[FigureNominalLimit], r.Utilisation)
	}
	// Nothing at all: every figure absent.
	none := byName(Compute(Input{Snapshot: &dump.Snapshot{Instance: "a"}, Limits: []engine.LevelLimits{{Name: "x", NominalCL: 2}}}))["x"]
	if !math.IsNaN(none.Waiting) || !math.IsNaN(none.Executing) || !math.IsNaN(none.SeatsInUse) || !math.IsNaN(none.Utilisation) {
		t.Errorf("row without live input: %+v", none)
	}
}

// TestMerge: a sum is unknown when one instance lacks the figure.
func TestMerge(t *testing.T) {
	a := load137(t)
	b := &dump.Snapshot{Instance: "b", Metrics: []*metrics.Scrape{scrape(t, `# TYPE apiserver_flowcontrol_current_executing_requests gauge
apiserver_flowcontrol_current_executing_requests{flow_schema="x",priority_level="apf-load"} 2
`)}}
	rows := append(Compute(Input{Snapshot: a}), Compute(Input{Snapshot: b})...)
	m := byName(Merge("(all)", rows))["apf-load"]
	if m.Executing != 1+2 || !math.IsNaN(m.Waiting) || m.Instance != "(all)" {
		t.Errorf("merged executing %v (want 3), waiting %v (want NaN: b has no inqueue gauge)", m.Executing, m.Waiting)
	}
}

// TestRequestsOutOfRuns: Compute looks a level up once a run of its
// requests; requests of two levels interleaved, and a level's requests
// split by an executing one, still count to their own level.
func TestRequestsOutOfRuns(t *testing.T) {
	rq := func(level string, seats, index int) dump.RequestRow {
		return dump.RequestRow{PriorityLevel: level, InitialSeats: seats, IndexInQueue: index}
	}
	s := &dump.Snapshot{Instance: "a", RequestDump: []dump.RequestRow{
		rq("a", 1, 0), rq("b", 2, 0), rq("a", 3, 1), rq("a", 5, -1), rq("a", 4, 2), rq("b", 1, 1), rq("c", 7, -1),
	}}
	want := map[string][2]float64{"a": {3, 8}, "b": {2, 3}, "c": {0, 0}}
	rows := Compute(Input{Snapshot: s})
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for _, r := range rows {
		if w := want[r.Name]; r.Waiting != w[0] || r.WaitingSeats != w[1] {
			t.Errorf("%s: waiting %v requests, %v seats; want %v, %v", r.Name, r.Waiting, r.WaitingSeats, w[0], w[1])
		}
	}
}

// TestOneFamily: a grep of one family that gives no figure of the table
// (kubernetes/kubernetes#129086's upper_limit_seats,
// kubernetes/kubernetes#130139's work_estimated_seats histogram, a
// Prometheus UI table of rejected_requests_total) names its levels, each
// with every figure absent, and NoFigure says what the input held, where
// top levels said "gave neither metrics nor debug dumps" after the note
// "metrics (1 APF family)"; a grep that gives some figures is shown, with
// a note of the columns it lacks (S3 of issue 58).
func TestOneFamily(t *testing.T) {
	for _, tt := range []struct {
		name, text string
		levels     []string
		noFigure   string
		missing    string
	}{
		{name: "upper limits", text: `apiserver_flowcontrol_upper_limit_seats{priority_level="catch-all"} 613
apiserver_flowcontrol_upper_limit_seats{priority_level="exempt"} 600
`, levels: []string{"catch-all", "exempt"},
			noFigure: "its metrics hold apiserver_flowcontrol_upper_limit_seats alone (of levels catch-all and exempt), which gives no figure of the table"},
		{name: "a histogram of seats", text: `# TYPE apiserver_flowcontrol_work_estimated_seats histogram
apiserver_flowcontrol_work_estimated_seats_bucket{flow_schema="list-pods",priority_level="list-pods",le="1"} 84
apiserver_flowcontrol_work_estimated_seats_bucket{flow_schema="list-pods",priority_level="list-pods",le="+Inf"} 84
`, levels: []string{"list-pods"},
			noFigure: "its metrics hold apiserver_flowcontrol_work_estimated_seats alone (of level list-pods), which gives no figure of the table"},
		{name: "rejections of one scrape", text: `apiserver_flowcontrol_rejected_requests_total{flow_schema="service-accounts",priority_level="workload-low",reason="time-out"} 100
`, levels: []string{"workload-low"},
			noFigure: "its metrics hold apiserver_flowcontrol_rejected_requests_total alone (of level workload-low), which gives no figure of the table (apiserver_flowcontrol_rejected_requests_total gives REJECTED/S over two scrapes; one scrape's totals since the apiserver started are explain 429's)"},
		{name: "limits", text: `apiserver_flowcontrol_nominal_limit_seats{priority_level="a"} 4
`, levels: []string{"a"},
			missing: "its metrics are part of a scrape (apiserver_flowcontrol_nominal_limit_seats alone), without the families of SEATS-IN-USE, UTIL, WAITING, WAITING-SEATS, EXECUTING and WAIT-P99: they show as -; DISPATCHED/S and REJECTED/S need two timed scrapes (the cluster, or a bundle)"},
		{name: "waits alone", text: `# TYPE apiserver_flowcontrol_request_wait_duration_seconds histogram
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="x",priority_level="a",le="0.1"} 99
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="x",priority_level="a",le="1"} 100
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="x",priority_level="a",le="+Inf"} 100
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="true",flow_schema="x",priority_level="a"} 3
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="x",priority_level="a"} 100
`, levels: []string{"a"},
			missing: "without the families of NOMINAL, CURRENT, SEATS-IN-USE, UTIL, WAITING, WAITING-SEATS and EXECUTING: they show as -"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &dump.Snapshot{Instance: "a", Metrics: []*metrics.Scrape{scrape(t, tt.text)}}
			rows := Compute(Input{Snapshot: s})
			var names []string
			for _, r := range rows {
				names = append(names, r.Name)
				if tt.noFigure != "" && (len(r.From) > 0 || !math.IsNaN(r.SeatsInUse) || !math.IsNaN(r.NominalLimit) || !math.IsNaN(r.WaitP99)) {
					t.Errorf("%s has figures: %+v", r.Name, r)
				}
			}
			if !slices.Equal(names, tt.levels) {
				t.Errorf("levels %v, want %v", names, tt.levels)
			}
			if got := NoFigure(s, rows); got != tt.noFigure {
				t.Errorf("NoFigure %q\nwant %q", got, tt.noFigure)
			}
			if tt.missing != "" {
				if got := Missing(s, rows); !strings.Contains(got, tt.missing) {
					t.Errorf("Missing %q\nwant %q in it", got, tt.missing)
				}
			}
		})
	}
}

// TestMetricsOfSeveralInputs: metrics read from two files of one
// directory, one with a level's rejections, waiting requests and limit,
// the other with another level's seats in use. The seats in use of the
// first and the waiting requests of the second are in neither file: they
// are unknown, where the join made them 0 ("ci-restricted ... 0 of 60
// seats in use; 47 requests wait: the level is saturated"; S6 of issue
// 58). Each file alone gives the same figures as the join.
func TestMetricsOfSeveralInputs(t *testing.T) {
	a := `apiserver_flowcontrol_rejected_requests_total{flow_schema="ci",priority_level="ci-restricted",reason="queue-full"} 12
apiserver_flowcontrol_current_inqueue_requests{flow_schema="ci",priority_level="ci-restricted"} 47
apiserver_flowcontrol_nominal_limit_seats{priority_level="ci-restricted"} 60
`
	b := `apiserver_flowcontrol_current_executing_seats{flow_schema="global-default",priority_level="global-default"} 3
apiserver_flowcontrol_nominal_limit_seats{priority_level="global-default"} 49
`
	rows := func(t *testing.T, bodies ...string) map[string]Row {
		t.Helper()
		var raw dump.RawInput
		for i, body := range bodies {
			if err := dump.DetectRaw(fmt.Sprintf("%d.txt", i), []byte(body), &raw); err != nil {
				t.Fatal(err)
			}
		}
		s, err := raw.Snapshot("dir", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]Row{}
		for _, r := range Compute(Input{Snapshot: s}) {
			out[r.Name] = r
		}
		return out
	}
	nan := math.NaN()
	check := func(t *testing.T, got Row, limit, seats, waiting float64) {
		t.Helper()
		same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
		if !same(got.NominalLimit, limit) || !same(got.SeatsInUse, seats) || !same(got.Waiting, waiting) {
			t.Errorf("%s: limit %v, seats in use %v, waiting %v; want %v, %v, %v", got.Name, got.NominalLimit, got.SeatsInUse, got.Waiting, limit, seats, waiting)
		}
	}
	both := rows(t, a, b)
	check(t, both["ci-restricted"], 60, nan, 47)
	check(t, both["global-default"], 49, 3, nan)
	check(t, rows(t, a)["ci-restricted"], 60, nan, 47)
	check(t, rows(t, b)["global-default"], 49, 3, nan)
	// One paste of one scrape: a level without a series of a family it
	// holds has none of it.
	one := rows(t, a+b)
	check(t, one["ci-restricted"], 60, 0, 47)
	check(t, one["global-default"], 49, 3, 0)
}
