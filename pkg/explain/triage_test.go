package explain

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// rejectedText is rejected_requests_total for a level and reasons, and
// apiserver_request_total{code="429"} with extra non-APF 429s.
func rejectedText(level string, byReason map[string]int, other429 int) string {
	var b strings.Builder
	b.WriteString("# TYPE apiserver_flowcontrol_rejected_requests_total counter\n")
	total := other429
	for r, n := range byReason {
		fmt.Fprintf(&b, "apiserver_flowcontrol_rejected_requests_total{flow_schema=\"x\",priority_level=%q,reason=%q} %d\n", level, r, n)
		total += n
	}
	b.WriteString("# TYPE apiserver_request_total counter\n")
	fmt.Fprintf(&b, "apiserver_request_total{code=\"429\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"pods\",scope=\"cluster\",subresource=\"\",verb=\"LIST\",version=\"v1\"} %d\n", total)
	fmt.Fprintf(&b, "apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"pods\",scope=\"cluster\",subresource=\"\",verb=\"LIST\",version=\"v1\"} %d\n", 1000)
	return b.String()
}

func twoScrapes(t testing.TB, level string, limit, inUse float64, prev, cur map[string]int, otherPrev, otherCur int) *dump.Snapshot {
	p := scrape(t, t0, levelMetricsText(level, limit, inUse, 10, time.Second)+rejectedText(level, prev, otherPrev))
	c := scrape(t, t0.Add(10*time.Second), levelMetricsText(level, limit, inUse, 20, time.Second)+rejectedText(level, cur, otherCur))
	return &dump.Snapshot{Instance: "https://apiserver-1", Metrics: []*metrics.Scrape{p, c}, PriorityLevelDump: []dump.PriorityLevelRow{}}
}

// TestExplain429Causes checks the causes named for hand-built states.
func TestExplain429Causes(t *testing.T) {
	cfg := smallConfig()
	// Flow u of fs-q: its hand, to fill it.
	hand := Explain(Input{Config: cfg}, mustRequest(t, "get", "/api/v1/namespaces/d/pods/p", engine.NewUserIdentity("u")), nil).Queues.Hand
	waiting := func(fs, d string, n, seats int) []dump.RequestRow {
		var out []dump.RequestRow
		for i := 0; i < n; i++ {
			out = append(out, dump.RequestRow{PriorityLevel: "q", FlowSchema: fs, FlowDistinguisher: d, QueueIndex: hand[i%2].Index, IndexInQueue: i / 2, InitialSeats: seats})
		}
		return out
	}
	tests := []struct {
		name       string
		level      string
		prev, cur  map[string]int
		queues     []dump.QueueRow
		requests   []dump.RequestRow
		wantKinds  []string
		wantRate   float64
		wantOther  float64
		wantLevels int
		// wantEvidence is in the first cause's evidence
		wantEvidence string
	}{
		{name: "elephant flow fills its hand", level: "q", prev: map[string]int{"queue-full": 10}, cur: map[string]int{"queue-full": 60},
			queues:    []dump.QueueRow{{PriorityLevel: "q", Index: hand[0].Index, PendingRequests: 2}, {PriorityLevel: "q", Index: hand[1].Index, PendingRequests: 2}},
			requests:  append(waiting("fs-q", "u", 4, 1), dump.RequestRow{PriorityLevel: "q", FlowSchema: "fs-q", FlowDistinguisher: "w", IndexInQueue: -1, InitialSeats: 1}),
			wantKinds: []string{rejections.CauseElephantFlow}, wantRate: 5, wantLevels: 1, wantEvidence: "fills both of its queues"},
		{name: "the heaviest flow with none of its queues full is one of many", level: "q", prev: map[string]int{"queue-full": 10}, cur: map[string]int{"queue-full": 60},
			queues: []dump.QueueRow{{PriorityLevel: "q", Index: hand[0].Index, PendingRequests: 1}, {PriorityLevel: "q", Index: hand[1].Index, PendingRequests: 1}},
			requests: append(waiting("fs-q", "u", 2, 1), dump.RequestRow{PriorityLevel: "q", FlowSchema: "fs-q", FlowDistinguisher: "w", QueueIndex: hand[0].Index, IndexInQueue: 1, InitialSeats: 1},
				dump.RequestRow{PriorityLevel: "q", FlowSchema: "fs-q", FlowDistinguisher: "x", QueueIndex: hand[1].Index, IndexInQueue: 1, InitialSeats: 1}),
			wantKinds: []string{rejections.CauseTooLittleConcurrency}, wantRate: 5, wantLevels: 1, wantEvidence: "across 3 flows"},
		{name: "an elephant without a queue dump", level: "q", prev: map[string]int{"queue-full": 10}, cur: map[string]int{"queue-full": 60},
			requests:  append(waiting("fs-q", "u", 4, 1), dump.RequestRow{PriorityLevel: "q", FlowSchema: "fs-q", FlowDistinguisher: "w", IndexInQueue: -1, InitialSeats: 1}),
			wantKinds: []string{rejections.CauseElephantFlow}, wantRate: 5, wantLevels: 1, wantEvidence: "which of them are full, the input does not tell (no queue dump)"},
		{name: "an elephant filling one of its queues", level: "q", prev: map[string]int{"queue-full": 10}, cur: map[string]int{"queue-full": 60},
			queues:    []dump.QueueRow{{PriorityLevel: "q", Index: hand[0].Index, PendingRequests: 2}, {PriorityLevel: "q", Index: hand[1].Index, PendingRequests: 1}},
			requests:  append(waiting("fs-q", "u", 3, 1), dump.RequestRow{PriorityLevel: "q", FlowSchema: "fs-q", FlowDistinguisher: "w", IndexInQueue: -1, InitialSeats: 1}),
			wantKinds: []string{rejections.CauseElephantFlow}, wantRate: 5, wantLevels: 1, wantEvidence: "fills 1 of its 2 queues"},
		{name: "many small flows: too little concurrency, with wide requests", level: "q", prev: map[string]int{}, cur: map[string]int{"queue-full": 20},
			queues: []dump.QueueRow{{PriorityLevel: "q", Index: 0, PendingRequests: 1}, {PriorityLevel: "q", Index: 1, PendingRequests: 1}, {PriorityLevel: "q", Index: 2, PendingRequests: 1}},
			requests: []dump.RequestRow{
				{PriorityLevel: "q", FlowSchema: "fs-q", FlowDistinguisher: "a", QueueIndex: 0, InitialSeats: 5},
				{PriorityLevel: "q", FlowSchema: "fs-q", FlowDistinguisher: "b", QueueIndex: 1, InitialSeats: 1},
				{PriorityLevel: "q", FlowSchema: "fs-q", FlowDistinguisher: "c", QueueIndex: 2, InitialSeats: 1},
			},
			wantKinds: []string{rejections.CauseTooLittleConcurrency, rejections.CauseWideRequests}, wantRate: 2, wantLevels: 1},
		{name: "time-outs", level: "q", prev: map[string]int{"time-out": 0}, cur: map[string]int{"time-out": 30},
			wantKinds: []string{rejections.CauseTimeOuts}, wantRate: 3, wantLevels: 1},
		{name: "reject level", level: "r", prev: map[string]int{"concurrency-limit": 5}, cur: map[string]int{"concurrency-limit": 15},
			wantKinds: []string{rejections.CauseNoQueues}, wantRate: 1, wantLevels: 1},
		{name: "no APF rejection, evictions blocked", level: "q", prev: map[string]int{"queue-full": 3}, cur: map[string]int{"queue-full": 3}, wantOther: 2,
			wantLevels: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			other := 0
			if tt.wantOther > 0 {
				other = int(tt.wantOther * 10)
			}
			live := twoScrapes(t, tt.level, 4, 4, tt.prev, tt.cur, 7, 7+other)
			live.QueueDump, live.RequestDump = tt.queues, tt.requests
			tr := Explain429(cfg, 100, time.Minute, []*dump.Snapshot{live})
			it := tr.Instances[0]
			if !it.HasRates || it.IntervalSeconds != 10 || tr.Counts != rejections.CountsPerSecond {
				t.Fatalf("rates %v over %vs (%s)", it.HasRates, it.IntervalSeconds, tr.Counts)
			}
			if len(tr.Incidents) != tt.wantLevels {
				t.Fatalf("levels %+v, want %d", tr.Incidents, tt.wantLevels)
			}
			if it.Other429 == nil || *it.Other429 != tt.wantOther {
				t.Errorf("other 429/s %v, want %v (notes %q)", Num(it.Other429), tt.wantOther, it.Notes)
			}
			if tt.wantLevels == 0 {
				if tt.wantOther > 0 && !strings.Contains(strings.Join(it.Notes, " "), "PodDisruptionBudget") {
					t.Errorf("the non-APF 429s are not explained: %q", it.Notes)
				}
				return
			}
			l := tr.Incidents[0]
			sum := 0.0
			for _, v := range l.Reasons {
				sum += v
			}
			if l.Level != tt.level || sum != tt.wantRate || l.Rejected != sum || tr.Rejected[tt.level] != sum {
				t.Errorf("level %s rejected %v/s (%v), want %s %v/s", l.Level, l.Reasons, l.Rejected, tt.level, tt.wantRate)
			}
			var kinds []string
			for _, c := range l.Causes {
				kinds = append(kinds, c.Kind)
				if c.Evidence == "" || c.Fix == "" {
					t.Errorf("cause without evidence or fix: %+v", c)
				}
			}
			if fmt.Sprint(kinds) != fmt.Sprint(tt.wantKinds) {
				t.Errorf("causes %v, want %v: %+v", kinds, tt.wantKinds, l.Causes)
			}
			if len(l.Causes) > 0 && !strings.Contains(l.Causes[0].Evidence, tt.wantEvidence) {
				t.Errorf("evidence %q, want %q in it", l.Causes[0].Evidence, tt.wantEvidence)
			}
		})
	}
}

// TestExplain429ElephantHand: the heaviest flow's hand is the one the
// server deals (engine.Dealer over HashFlowID) and its full queues counted.
func TestExplain429ElephantHand(t *testing.T) {
	cfg := smallConfig()
	hand := Explain(Input{Config: cfg}, mustRequest(t, "get", "/api/v1/namespaces/d/pods/p", engine.NewUserIdentity("u")), nil).Queues.Hand
	live := twoScrapes(t, "q", 4, 4, map[string]int{}, map[string]int{"queue-full": 10}, 0, 10)
	live.QueueDump = []dump.QueueRow{{PriorityLevel: "q", Index: hand[0].Index, PendingRequests: 2}, {PriorityLevel: "q", Index: hand[1].Index, PendingRequests: 1}}
	live.RequestDump = []dump.RequestRow{{PriorityLevel: "q", FlowSchema: "fs-q", FlowDistinguisher: "u", QueueIndex: hand[0].Index, IndexInQueue: 0, InitialSeats: 1},
		{PriorityLevel: "q", FlowSchema: "fs-q", FlowDistinguisher: "u", QueueIndex: hand[0].Index, IndexInQueue: 1, InitialSeats: 1},
		{PriorityLevel: "q", FlowSchema: "fs-q", FlowDistinguisher: "u", QueueIndex: hand[1].Index, IndexInQueue: 0, InitialSeats: 1}}
	f := Explain429(cfg, 100, time.Minute, []*dump.Snapshot{live}).Incidents[0].Flows[0]
	if f.Distinguisher != "u" || f.Waiting != 3 || len(f.Hand) != 2 || f.Hand[0] != hand[0].Index || f.Hand[1] != hand[1].Index || f.Full == nil || *f.Full != 1 {
		t.Errorf("flow %+v; want u, 3 waiting, hand [%d %d], 1 full", f, hand[0].Index, hand[1].Index)
	}
}

// TestExplain429WithoutRates: one scrape gives totals since start, and no
// metrics at all falls back to the dump's counters.
func TestExplain429WithoutRates(t *testing.T) {
	cfg := smallConfig()
	live := &dump.Snapshot{Instance: "a", Metrics: []*metrics.Scrape{scrape(t, t0, levelMetricsText("q", 4, 4, 10, time.Second)+rejectedText("q", map[string]int{"queue-full": 42}, 0))}}
	tr := Explain429(cfg, 100, time.Minute, []*dump.Snapshot{live})
	if tr.Instances[0].HasRates || tr.Counts != rejections.CountsSinceStart || len(tr.Incidents) != 1 || tr.Incidents[0].Reasons["queue-full"] != 42 {
		t.Errorf("totals: %+v", tr)
	}
	live = &dump.Snapshot{Instance: "b", PriorityLevelDump: []dump.PriorityLevelRow{{Name: "q", RejectedRequests: 9, HasCounters: true}, {Name: "r"}}}
	tr = Explain429(cfg, 100, time.Minute, []*dump.Snapshot{live})
	if len(tr.Incidents) != 1 || tr.Incidents[0].Reasons[rejections.ReasonAny] != 9 || len(tr.Instances[0].Notes) == 0 || tr.Other429 != nil {
		t.Errorf("dump counters: %+v", tr)
	}
}

// TestExplain429NoDustFromRates: when every 429 came from APF, the non-APF
// rate is exactly zero and no note is printed, whatever the counts and the
// interval (a difference of rates left 3.55e-15/s on a live cluster with two
// rejecting levels).
func TestExplain429NoDustFromRates(t *testing.T) {
	cfg := smallConfig()
	text := func(q, r map[string]int) string {
		var b strings.Builder
		b.WriteString("# TYPE apiserver_flowcontrol_rejected_requests_total counter\n")
		total := 0
		for level, byReason := range map[string]map[string]int{"q": q, "r": r} {
			for reason, n := range byReason {
				fmt.Fprintf(&b, "apiserver_flowcontrol_rejected_requests_total{flow_schema=\"x\",priority_level=%q,reason=%q} %d\n", level, reason, n)
				total += n
			}
		}
		b.WriteString("# TYPE apiserver_request_total counter\n")
		fmt.Fprintf(&b, "apiserver_request_total{code=\"429\",component=\"apiserver\",verb=\"LIST\"} %d\n", total)
		return b.String()
	}
	dust := 0
	for i := 1; i <= 200; i++ {
		interval := 5*time.Second + time.Duration(i)*34357631
		prevQ, prevR := map[string]int{"queue-full": 100 * i, "time-out": i}, map[string]int{"concurrency-limit": 7 * i}
		curQ, curR := map[string]int{"queue-full": 100*i + 13*i + 7, "time-out": 2 * i}, map[string]int{"concurrency-limit": 7*i + 3*i + 1}
		p := scrape(t, t0, levelMetricsText("q", 4, 4, 10, time.Second)+text(prevQ, prevR))
		c := scrape(t, t0.Add(interval), levelMetricsText("q", 4, 4, 20, time.Second)+text(curQ, curR))
		live := &dump.Snapshot{Instance: "https://apiserver-1", Metrics: []*metrics.Scrape{p, c}, PriorityLevelDump: []dump.PriorityLevelRow{}}
		it := Explain429(cfg, 100, time.Minute, []*dump.Snapshot{live}).Instances[0]
		if it.Other429 == nil || *it.Other429 != 0 || len(it.Notes) != 0 {
			dust++
			if dust <= 3 {
				t.Errorf("case %d (interval %s): other 429/s = %s, notes %q; want 0 and none", i, interval, Num(it.Other429), it.Notes)
			}
		}
	}
	if dust > 0 {
		t.Errorf("%d of 200 cases reported non-APF 429s that did not exist", dust)
	}
}

// TestExplain429WaitingFromBestInput (issue 26 D2): the waiting requests
// come from dump_priority_levels or the inqueue gauge when dump_queues
// does not have them, as top levels counts them; never a made-up 0.
func TestExplain429WaitingFromBestInput(t *testing.T) {
	cfg := smallConfig()
	evidence := func(tr *rejections.Report) string {
		if len(tr.Incidents) != 1 || len(tr.Incidents[0].Causes) == 0 {
			t.Fatalf("incidents %+v", tr.Incidents)
		}
		return tr.Incidents[0].Causes[0].Evidence
	}
	// A raw dump_priority_levels alone: 57 waiting, 368 executing.
	live := &dump.Snapshot{Instance: "a", PriorityLevelDump: []dump.PriorityLevelRow{{Name: "q", WaitingRequests: 57, ExecutingRequests: 368, RejectedRequests: 12, HasCounters: true}}}
	tr := Explain429(cfg, 100, time.Minute, []*dump.Snapshot{live})
	st := tr.Incidents[0].State
	if Num(st.Waiting) != "57" || Num(st.Executing) != "368" || st.From["waiting"] != "dump_priority_levels" {
		t.Errorf("state %+v; want 57 waiting and 368 executing from dump_priority_levels", st)
	}
	if ev := evidence(tr); !strings.Contains(ev, "57 requests wait") || strings.Contains(ev, "no request waits") {
		t.Errorf("evidence %q; want the 57 waiting of the level dump", ev)
	}
	// Metrics alone: current_inqueue_requests says 10.
	text := levelMetricsText("q", 4, 4, 10, time.Second) + rejectedText("q", map[string]int{"queue-full": 5}, 0) +
		"# TYPE apiserver_flowcontrol_current_inqueue_requests gauge\napiserver_flowcontrol_current_inqueue_requests{flow_schema=\"x\",priority_level=\"q\"} 10\n"
	live = &dump.Snapshot{Instance: "b", Metrics: []*metrics.Scrape{scrape(t, t0, text)}}
	tr = Explain429(cfg, 100, time.Minute, []*dump.Snapshot{live})
	if ev := evidence(tr); Num(tr.Incidents[0].State.Waiting) != "10" || !strings.Contains(ev, "10 requests wait") {
		t.Errorf("waiting %s, evidence %q; want the 10 of the inqueue gauge", Num(tr.Incidents[0].State.Waiting), ev)
	}
	// Neither: unknown, not 0 (issue 26 D5).
	live = &dump.Snapshot{Instance: "c", Metrics: []*metrics.Scrape{scrape(t, t0, levelMetricsText("q", 4, 4, 10, time.Second)+rejectedText("q", map[string]int{"queue-full": 5}, 0))}}
	tr = Explain429(cfg, 100, time.Minute, []*dump.Snapshot{live})
	if ev := evidence(tr); tr.Incidents[0].State.Waiting != nil || !strings.Contains(ev, "unknown") {
		t.Errorf("waiting %s, evidence %q; want it unknown", Num(tr.Incidents[0].State.Waiting), ev)
	}
}

// TestOther429WithinAScrapesSkew: a scrape reads apiserver_request_total
// and rejected_requests_total moments apart, and a burst of rejections
// between the readings makes APF's own 429s read as others (the demo
// cluster's bundle: 9 over 5 s beside APF's 141). A difference of at most
// a quarter of APF's rejections is given with that reading first; a
// larger one, or one beside no APF rejection, as other 429s.
func TestOther429WithinAScrapesSkew(t *testing.T) {
	cfg := smallConfig()
	for _, c := range []struct {
		apf, other int
		want       string
	}{
		{apf: 141, other: 9, want: "moments apart"},
		{apf: 100, other: 25, want: "moments apart"},
		{apf: 100, other: 26, want: "did not come from APF"},
		{apf: 0, other: 9, want: "did not come from APF"},
	} {
		live := twoScrapes(t, "q", 4, 4, map[string]int{"queue-full": 10}, map[string]int{"queue-full": 10 + c.apf}, 0, c.other)
		tr := Explain429(cfg, 100, time.Minute, []*dump.Snapshot{live})
		notes := strings.Join(tr.Instances[0].Notes, "\n")
		if !strings.Contains(notes, c.want) || !strings.Contains(notes, "PodDisruptionBudget") {
			t.Errorf("APF %d, other %d: notes %q; want one with %q", c.apf, c.other, notes, c.want)
		}
		if o := tr.Instances[0].Other429; o == nil || *o != float64(c.other)/10 {
			t.Errorf("APF %d, other %d: other 429/s %s, want the measured %g", c.apf, c.other, Num(o), float64(c.other)/10)
		}
	}
}

// TestSeatsBeyondTheLimit: a level with more seats in use than its limit
// (the demo's 1-seat Reject level running a LIST of 10 seats) says why
// that can be: a request wider than the level starts when nothing else
// executes (queueset.go canAccommodateSeatsLocked).
func TestSeatsBeyondTheLimit(t *testing.T) {
	live := twoScrapes(t, "r", 1, 10, map[string]int{"concurrency-limit": 5}, map[string]int{"concurrency-limit": 15}, 0, 0)
	tr := Explain429(smallConfig(), 100, time.Minute, []*dump.Snapshot{live})
	if len(tr.Incidents) != 1 || len(tr.Incidents[0].Causes) == 0 {
		t.Fatalf("incidents %+v", tr.Incidents)
	}
	if ev := tr.Incidents[0].Causes[0].Evidence; !strings.Contains(ev, "10 of 1 seat in use (beyond the limit: upstream starts a request wider than the level when nothing else executes there, and it runs alone)") {
		t.Errorf("evidence %q", ev)
	}
	live = twoScrapes(t, "r", 4, 4, map[string]int{"concurrency-limit": 5}, map[string]int{"concurrency-limit": 15}, 0, 0)
	tr = Explain429(smallConfig(), 100, time.Minute, []*dump.Snapshot{live})
	if ev := tr.Incidents[0].Causes[0].Evidence; strings.Contains(ev, "beyond the limit") || !strings.Contains(ev, "4 of 4 seats in use") {
		t.Errorf("a full level: evidence %q", ev)
	}
}
