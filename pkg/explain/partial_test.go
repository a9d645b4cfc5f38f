package explain

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
	rejrender "github.com/kubectl-apf/kubectl-apf/pkg/rejections/render"
)

// TestExplain429WithoutObjects: metrics pasted from a vendor guide show
// workload-low rejecting; the input holds no PriorityLevelConfiguration, so
// the level is unknown, not "deleted, or being drained" (issue 26, D3).
func TestExplain429WithoutObjects(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "field", "eks-rejected-inqueue.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var in dump.RawInput
	if err := dump.DetectRaw("eks", b, &in); err != nil {
		t.Fatal(err)
	}
	live, err := in.Snapshot("eks", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	tr := Explain429(engine.NewConfig(nil, nil), 0, time.Minute, []*dump.Snapshot{live})
	if len(tr.Incidents) != 1 {
		t.Fatalf("incidents %+v", tr.Incidents)
	}
	inc := tr.Incidents[0]
	if inc.Level != "workload-low" || len(inc.Causes) != 1 {
		t.Fatalf("incident %+v", inc)
	}
	// All 100 rejections are time-outs (the reason label), with 145 of the
	// 245 seats in use: the cause is the time-outs, as it is with the
	// objects read, not a level short of concurrency (issue 47, R4).
	if k := inc.Causes[0].Kind; k != rejections.CauseTimeOuts {
		t.Errorf("cause %s, want %s", k, rejections.CauseTimeOuts)
	}
	if ev := inc.Causes[0].Evidence; strings.Contains(ev, "deleted") || !strings.Contains(ev, "145 of 245 seats in use (59%)") {
		t.Errorf("evidence %q", ev)
	}
	// explain 429 has no -f: the note does not suggest it (issue 47).
	if n := strings.Join(tr.Instances[0].Notes, "\n"); !strings.Contains(n, "the input holds no PriorityLevelConfiguration objects (none for workload-low)") || strings.Contains(n, "-f") {
		t.Errorf("notes %q do not say the configuration is unknown", n)
	}
	// With the objects read, a level missing from them is still called
	// deleted or draining.
	live.PriorityLevels = []flowcontrolv1.PriorityLevelConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "global-default"}}}
	tr = Explain429(engine.NewConfig(nil, nil), 0, time.Minute, []*dump.Snapshot{live})
	if ev := tr.Incidents[0].Causes[0].Evidence; !strings.Contains(ev, "deleted, or being drained") {
		t.Errorf("evidence with objects %q", ev)
	}
}

// TestExplain429DumpCountsBesideAMetricLine: dump_priority_levels pasted
// with one grepped metric line (issue 47, R3). The metric line names no
// rejection, so global-default's 1533 RejectedRequests are the rejections,
// not "no priority level is rejecting requests".
func TestExplain429DumpCountsBesideAMetricLine(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "field", "docs-dump_priority_levels.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// The documentation's dump, with global-default's RejectedRequests
	// (the eighth column) at 1533.
	const docs = "global-default,    0,            true,   false,       0,               0,                 46,                 0,"
	if !strings.Contains(string(b), docs) {
		t.Fatalf("global-default row not found in the documentation's dump")
	}
	paste := strings.Replace(string(b), docs, "global-default,    0,            true,   false,       0,               0,                 46,                 1533,", 1) +
		"apiserver_flowcontrol_request_concurrency_limit{priority_level=\"global-default\"} 49\n"
	var in dump.RawInput
	if err := dump.DetectRaw("paste", []byte(paste), &in); err != nil {
		t.Fatal(err)
	}
	live, err := in.Snapshot("paste", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if _, cur := live.LatestMetrics(); cur == nil {
		t.Fatal("the metric line was not read")
	}
	tr := Explain429(engine.NewConfig(nil, nil), 0, time.Minute, []*dump.Snapshot{live})
	if len(tr.Incidents) != 1 {
		t.Fatalf("incidents %+v, want global-default's", tr.Incidents)
	}
	inc := tr.Incidents[0]
	if inc.Level != "global-default" || inc.Rejected != 1533 || inc.Reasons["any"] != 1533 {
		t.Errorf("incident %s rejected %v reasons %v, want global-default 1533 of reason any", inc.Level, inc.Rejected, inc.Reasons)
	}
	if n := tr.Instances[0].Notes; len(n) == 0 || !strings.Contains(strings.Join(n, "\n"), "dump_priority_levels' RejectedRequests") {
		t.Errorf("notes %q do not say where the count came from", n)
	}
	// built/dump-levels-rejected-plus-grep.txt is the same dump with
	// workload-low's limit line: global-default's limit is in neither, so
	// its evidence names the level without a size, not "the --seat level"
	b, err = os.ReadFile(filepath.Join("..", "..", "testdata", "field", "built", "dump-levels-rejected-plus-grep.txt"))
	if err != nil {
		t.Fatal(err)
	}
	in = dump.RawInput{}
	if err := dump.DetectRaw("built", b, &in); err != nil {
		t.Fatal(err)
	}
	if live, err = in.Snapshot("built", time.Time{}); err != nil {
		t.Fatal(err)
	}
	tr = Explain429(engine.NewConfig(nil, nil), 0, time.Minute, []*dump.Snapshot{live})
	if len(tr.Incidents) != 1 || len(tr.Incidents[0].Causes) == 0 {
		t.Fatalf("incidents %+v", tr.Incidents)
	}
	if ev := tr.Incidents[0].Causes[0].Evidence; strings.Contains(ev, "--seat") || !strings.Contains(ev, "fill the level and its queues") {
		t.Errorf("evidence without global-default's limit: %q", ev)
	}
}

// TestExplain429ReasonsWithoutObjects: without the objects, the reason
// label tells the cause as it does with them (issue 47, R4): concurrency-
// limit is the reason of a level without queues alone, queue-full of a
// level whose queues are full, time-out of waits past the wait limit.
func TestExplain429ReasonsWithoutObjects(t *testing.T) {
	for reason, want := range map[string]string{
		rejections.ReasonConcurrencyLimit: rejections.CauseNoQueues,
		rejections.ReasonQueueFull:        rejections.CauseTooLittleConcurrency,
		rejections.ReasonTimeOut:          rejections.CauseTimeOuts,
	} {
		text := levelMetricsText("lvl", 20, 20, 10, time.Second) + rejectedText("lvl", map[string]int{reason: 7}, 0)
		live := &dump.Snapshot{Instance: "a", Metrics: []*metrics.Scrape{scrape(t, t0, text)}}
		tr := Explain429(engine.NewConfig(nil, nil), 0, time.Minute, []*dump.Snapshot{live})
		if len(tr.Incidents) != 1 || len(tr.Incidents[0].Causes) == 0 {
			t.Fatalf("%s: incidents %+v", reason, tr.Incidents)
		}
		c := tr.Incidents[0].Causes[0]
		if c.Kind != want {
			t.Errorf("%s: cause %s (%s), want %s", reason, c.Kind, c.Evidence, want)
		}
		if strings.Contains(c.Evidence+c.Fix, " of 0") {
			t.Errorf("%s: an unknown queue length limit shows as 0: %s / %s", reason, c.Evidence, c.Fix)
		}
	}
}

// TestExplain429SeatUtilization: where the server exports
// priority_level_seat_utilization, the evidence gives the seat use over
// the interval, not only the moment of the scrape (issue 47).
func TestExplain429SeatUtilization(t *testing.T) {
	util := func(le99, count, sum float64) string {
		return fmt.Sprintf(`# TYPE apiserver_flowcontrol_priority_level_seat_utilization histogram
apiserver_flowcontrol_priority_level_seat_utilization_bucket{phase="executing",priority_level="lvl",le="0.99"} %v
apiserver_flowcontrol_priority_level_seat_utilization_bucket{phase="executing",priority_level="lvl",le="+Inf"} %v
apiserver_flowcontrol_priority_level_seat_utilization_sum{phase="executing",priority_level="lvl"} %v
apiserver_flowcontrol_priority_level_seat_utilization_count{phase="executing",priority_level="lvl"} %v
`, le99, count, sum, count)
	}
	// Between the scrapes: 1e10 ns, 8e9 of them with every seat in use,
	// a mean use of 0.9; at the second scrape, 5 of 20 seats in use.
	p := scrape(t, t0, levelMetricsText("lvl", 20, 5, 10, time.Second)+rejectedText("lvl", map[string]int{"time-out": 0}, 0)+util(1e10, 1e10, 1e9))
	c := scrape(t, t0.Add(10*time.Second), levelMetricsText("lvl", 20, 5, 20, time.Second)+rejectedText("lvl", map[string]int{"time-out": 30}, 0)+util(1.2e10, 2e10, 1e10))
	live := &dump.Snapshot{Instance: "a", Metrics: []*metrics.Scrape{p, c}}
	tr := Explain429(engine.NewConfig(nil, nil), 0, time.Minute, []*dump.Snapshot{live})
	if len(tr.Incidents) != 1 || len(tr.Incidents[0].Causes) == 0 {
		t.Fatalf("incidents %+v", tr.Incidents)
	}
	ev := tr.Incidents[0].Causes[0].Evidence
	if !strings.Contains(ev, "over the interval the seats were 90% in use on average, every seat 80% of the time (apiserver_flowcontrol_priority_level_seat_utilization)") {
		t.Errorf("evidence %q", ev)
	}
	if strings.Contains(ev, "not full now") {
		t.Errorf("the moment's 25%% contradicts the interval's use: %q", ev)
	}
	// a level of one seat (make demo's apf-load): its seat in use, once,
	// where "the seats were 31% in use on average, every seat 31% of the
	// time" said it twice
	if got := utilisationOver(levels.Row{CurrentLimit: 1, MeanUtilisation: 0.31, FullFraction: 0.31, HasRates: true}); got != "; over the interval its seat was in use 31% of the time (apiserver_flowcontrol_priority_level_seat_utilization)" {
		t.Errorf("one seat: %q", got)
	}
	st := tr.Incidents[0].State
	if st.MeanUtilisation == nil || *st.MeanUtilisation != 0.9 || st.FullFraction == nil || *st.FullFraction != 0.8 {
		t.Errorf("state %+v", st)
	}
}

// TestExplain429RejectionsUnknown: an input without any rejection counter
// cannot tell whether a level rejects: the 1.20 dump_priority_levels of the
// documentation (no RejectedRequests column) and the EKS guide's grep of
// the limits alone (no apiserver_flowcontrol_rejected_requests_total) say
// so and name the input that would tell, instead of "no priority level is
// rejecting requests"; a 1.27 dump whose counters are all 0 still says
// nothing is rejected (issue 47's field test, N9 and N10).
func TestExplain429RejectionsUnknown(t *testing.T) {
	for _, tt := range []struct {
		file, want string
		// dispatched adds a dispatched_requests_total line: a whole
		// scrape, whose counters of rejections would be there if any
		dispatched bool
	}{
		{file: "k8s-docs-2020-dump_priority_levels.txt", want: "its dump_priority_levels has no RejectedRequests column"},
		{file: "eks-concurrency-limit.txt", want: "its metrics have no apiserver_flowcontrol_rejected_requests_total"},
		{file: "eks-concurrency-limit.txt", want: "", dispatched: true},
		{file: "docs-dump_priority_levels.txt", want: ""},
	} {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "field", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if tt.dispatched {
				b = append(b, "apiserver_flowcontrol_dispatched_requests_total{flow_schema=\"global-default\",priority_level=\"global-default\"} 46\n"...)
			}
			var in dump.RawInput
			if err := dump.DetectRaw(tt.file, b, &in); err != nil {
				t.Fatal(err)
			}
			live, err := in.Snapshot(tt.file, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			tr := Explain429(engine.NewConfig(nil, nil), 0, time.Minute, []*dump.Snapshot{live})
			if len(tr.Incidents) != 0 {
				t.Fatalf("incidents %+v", tr.Incidents)
			}
			got := tr.Instances[0].RejectionsUnknown
			var text strings.Builder
			if err := rejrender.WriteText(&text, tr, rejrender.Options{}); err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if got != "" || !strings.Contains(text.String(), "no priority level is rejecting requests") {
					t.Errorf("unknown %q, text:\n%s", got, text.String())
				}
				return
			}
			if !strings.Contains(got, tt.want) || !strings.Contains(got, "give the metrics with apiserver_flowcontrol_rejected_requests_total") {
				t.Errorf("unknown %q, want %q", got, tt.want)
			}
			if s := text.String(); strings.Contains(s, "no priority level is rejecting requests") || !strings.Contains(s, "cannot tell whether a priority level is rejecting requests") ||
				strings.Contains(s, "rejections are counted from dump_priority_levels only") {
				t.Errorf("text:\n%s", s)
			}
		})
	}
}

// TestExplain429ReasonOnlyClaimsNoCause: the rejections of one level by
// reason queue-full, and nothing else: its seats in use and its waiting
// requests are unknown, so the input does not tell whether the level is
// short of seats. It was called too-little-concurrency while the same
// line said both were unknown (issue 58, also seen).
func TestExplain429ReasonOnlyClaimsNoCause(t *testing.T) {
	text := `apiserver_flowcontrol_rejected_requests_total{flow_schema="service-accounts",priority_level="workload-low",reason="queue-full"} 12` + "\n"
	var in dump.RawInput
	if err := dump.DetectRaw("grep", []byte(text), &in); err != nil {
		t.Fatal(err)
	}
	live, err := in.Snapshot("grep", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	tr := Explain429(engine.NewConfig(nil, nil), 0, time.Minute, []*dump.Snapshot{live})
	if len(tr.Incidents) != 1 || tr.Incidents[0].Level != "workload-low" {
		t.Fatalf("incidents %+v", tr.Incidents)
	}
	for _, c := range tr.Incidents[0].Causes {
		if c.Kind == rejections.CauseTooLittleConcurrency {
			t.Errorf("cause %s on the reason alone: %s", c.Kind, c.Evidence)
		}
	}
	if c := tr.Incidents[0].Causes; len(c) != 1 || c[0].Kind != rejections.CauseUnclear || !strings.Contains(c[0].Evidence, "seats in use and its waiting requests are unknown") {
		t.Errorf("causes %+v", c)
	}
	// with the waiting requests (47, from current_inqueue_requests) the
	// level is saturated: every seat is held while requests wait
	text += `apiserver_flowcontrol_current_inqueue_requests{flow_schema="service-accounts",priority_level="workload-low"} 47` + "\n"
	in = dump.RawInput{}
	if err := dump.DetectRaw("grep", []byte(text), &in); err != nil {
		t.Fatal(err)
	}
	if live, err = in.Snapshot("grep", time.Time{}); err != nil {
		t.Fatal(err)
	}
	tr = Explain429(engine.NewConfig(nil, nil), 0, time.Minute, []*dump.Snapshot{live})
	if c := tr.Incidents[0].Causes; len(c) != 1 || c[0].Kind != rejections.CauseTooLittleConcurrency || !strings.Contains(c[0].Evidence, "47 requests wait") {
		t.Errorf("causes with the waiting requests %+v", c)
	}
}
