package explain

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

func defaultsConfig(t testing.TB) *engine.Config {
	t.Helper()
	fss, pls := config.UpstreamDefaults()
	return engine.NewConfig(fss, pls)
}

func mustRequest(t testing.TB, verb, path string, id engine.Identity) engine.Request {
	t.Helper()
	r, err := engine.ParseRequest(verb, path, id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestExplainDefaults checks the classification, implied groups and
// verdict kinds on the upstream defaults, without live state.
func TestExplainDefaults(t *testing.T) {
	cfg := defaultsConfig(t)
	tests := []struct {
		name          string
		verb, path    string
		id            engine.Identity
		given         []string
		wantFS        string
		wantPL        string
		wantVerdict   string
		wantImplied   []string
		wantDisting   string
		wantTraceLen  int
		wantNoteMatch string
	}{
		{name: "service account in kube-system", verb: "list", path: "/api/v1/endpoints", id: engine.NewServiceAccountIdentity("kube-system", "coredns"),
			wantFS: "kube-system-service-accounts", wantPL: "workload-high", wantVerdict: VerdictUnknown,
			wantImplied: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}, wantTraceLen: 8}, // ByNamespace, and a cluster-wide LIST has no namespace
		{name: "node reading a configmap", verb: "GET", path: "/api/v1/namespaces/default/configmaps/app", id: engine.NewUserIdentity("system:node:n1", "system:nodes"), given: []string{"system:nodes"},
			wantFS: "system-nodes", wantPL: "system", wantVerdict: VerdictUnknown, wantImplied: []string{"system:authenticated"}, wantDisting: "system:node:n1", wantTraceLen: 5},
		{name: "health check is exempt", verb: "get", path: "/healthz", id: engine.NewUserIdentity("alice"),
			wantFS: "probes", wantPL: "exempt", wantVerdict: VerdictExempt, wantImplied: []string{"system:authenticated"}, wantTraceLen: 2},
		{name: "masters are exempt", verb: "list", path: "/api/v1/pods", id: engine.NewUserIdentity("root", "system:masters"), given: []string{"system:masters"},
			wantFS: "exempt", wantPL: "exempt", wantVerdict: VerdictExempt, wantImplied: []string{"system:authenticated"}, wantTraceLen: 1},
		{name: "kube-proxy falls to global-default", verb: "watch", path: "/api/v1/services", id: engine.NewUserIdentity("system:kube-proxy"),
			wantFS: "global-default", wantPL: "global-default", wantVerdict: VerdictUnknown, wantImplied: []string{"system:authenticated"}, wantDisting: "system:kube-proxy", wantTraceLen: 10},
		{name: "scheduler leader election", verb: "update", path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler", id: engine.NewUserIdentity("system:kube-scheduler"),
			wantFS: "system-leader-election", wantPL: "leader-election", wantVerdict: VerdictUnknown, wantImplied: []string{"system:authenticated"}, wantDisting: "system:kube-scheduler", wantTraceLen: 3},
		{name: "exec bypasses APF", verb: "create", path: "/api/v1/namespaces/default/pods/web/exec", id: engine.NewUserIdentity("alice"),
			wantVerdict: VerdictBypass, wantImplied: []string{"system:authenticated"}},
		{name: "no authenticated group falls back to catch-all", verb: "get", path: "/api/v1/namespaces/default/pods/web", id: engine.Identity{User: "odd", Groups: []string{"weird"}}, given: []string{"weird"},
			wantFS: "catch-all", wantPL: "catch-all", wantVerdict: VerdictUnknown, wantTraceLen: 11, wantNoteMatch: "no FlowSchema matched"},
		{name: "eviction note", verb: "create", path: "/api/v1/namespaces/default/pods/web/eviction", id: engine.NewServiceAccountIdentity("kube-system", "drainer"),
			wantFS: "kube-system-service-accounts", wantPL: "workload-high", wantVerdict: VerdictUnknown,
			wantImplied: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}, wantDisting: "default", wantTraceLen: 8, wantNoteMatch: "PodDisruptionBudget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := Explain(Input{Config: cfg}, mustRequest(t, tt.verb, tt.path, tt.id), tt.given)
			if ex.Verdict.Kind != tt.wantVerdict {
				t.Errorf("verdict %s (%s), want %s", ex.Verdict.Kind, ex.Verdict.Reason, tt.wantVerdict)
			}
			if fmt.Sprint(ex.Request.ImpliedGroups) != fmt.Sprint(tt.wantImplied) {
				t.Errorf("implied groups %v, want %v", ex.Request.ImpliedGroups, tt.wantImplied)
			}
			if tt.wantFS == "" {
				if ex.FlowSchema != nil || ex.PriorityLevel != nil || len(ex.Trace) != 0 {
					t.Errorf("a bypassing request must have no FlowSchema, level or trace: %+v %+v %+v", ex.FlowSchema, ex.PriorityLevel, ex.Trace)
				}
				return
			}
			if ex.FlowSchema == nil || ex.FlowSchema.Name != tt.wantFS || ex.PriorityLevel.Name != tt.wantPL {
				t.Fatalf("got %+v / %+v, want %s / %s", ex.FlowSchema, ex.PriorityLevel, tt.wantFS, tt.wantPL)
			}
			if ex.FlowDistinguisher != tt.wantDisting {
				t.Errorf("distinguisher %q, want %q", ex.FlowDistinguisher, tt.wantDisting)
			}
			if len(ex.Trace) != tt.wantTraceLen {
				t.Errorf("trace of %d schemas, want %d: %+v", len(ex.Trace), tt.wantTraceLen, ex.Trace)
			}
			last := ex.Trace[len(ex.Trace)-1]
			switch {
			case ex.FlowSchema.Fallback:
				// Nothing matched: catch-all is last, unmatched, and used anyway.
				if last.Matched || last.FlowSchema != tt.wantFS || !strings.Contains(last.Reason, "falls back") {
					t.Errorf("a fallback trace must end with an unmatched catch-all that says so, ends with %+v", last)
				}
			case !last.Matched || last.FlowSchema != tt.wantFS:
				t.Errorf("the trace must end with the winner, ends with %+v", last)
			}
			for _, s := range ex.Trace[:len(ex.Trace)-1] {
				if s.Matched || s.Reason == "" {
					t.Errorf("schema before the winner must say why not: %+v", s)
				}
			}
			if tt.wantNoteMatch != "" && !strings.Contains(strings.Join(ex.Notes, "\n"), tt.wantNoteMatch) {
				t.Errorf("notes %q lack %q", ex.Notes, tt.wantNoteMatch)
			}
		})
	}
}

// TestExplainWaitLimitFromTimeout: a ?timeout= shortens the wait limit to a
// quarter of it (server/filters/priority-and-fairness.go:getRequestWaitContext).
func TestExplainWaitLimitFromTimeout(t *testing.T) {
	cfg := defaultsConfig(t)
	for _, tt := range []struct {
		path string
		want time.Duration
	}{
		{"/api/v1/namespaces/default/pods", 15 * time.Second},
		{"/api/v1/namespaces/default/pods?timeout=8s", 2 * time.Second},
		{"/api/v1/namespaces/default/pods?timeout=10m", 15 * time.Second},
	} {
		ex := Explain(Input{Config: cfg}, mustRequest(t, "list", tt.path, engine.NewUserIdentity("alice")), nil)
		if got := time.Duration(ex.PriorityLevel.WaitLimit); got != tt.want {
			t.Errorf("%s: wait limit %v, want %v", tt.path, got, tt.want)
		}
	}
}

// scrape builds a metrics scrape from Prometheus text.
func scrape(t testing.TB, at time.Time, text string) *metrics.Scrape {
	t.Helper()
	s, err := metrics.ParseText([]byte(text), at)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// levelMetricsText gives a level its current limit, seats in use and an
// execution-time histogram with the given mean.
func levelMetricsText(level string, limit, inUse float64, count int, meanExec time.Duration) string {
	return fmt.Sprintf(`# TYPE apiserver_flowcontrol_nominal_limit_seats gauge
apiserver_flowcontrol_nominal_limit_seats{priority_level=%[1]q} %[2]v
# TYPE apiserver_flowcontrol_current_limit_seats gauge
apiserver_flowcontrol_current_limit_seats{priority_level=%[1]q} %[2]v
# TYPE apiserver_flowcontrol_current_executing_seats gauge
apiserver_flowcontrol_current_executing_seats{flow_schema="x",priority_level=%[1]q} %[3]v
# TYPE apiserver_flowcontrol_request_execution_seconds histogram
apiserver_flowcontrol_request_execution_seconds_bucket{flow_schema="x",priority_level=%[1]q,type="regular",le="+Inf"} %[4]d
apiserver_flowcontrol_request_execution_seconds_sum{flow_schema="x",priority_level=%[1]q,type="regular"} %[5]v
apiserver_flowcontrol_request_execution_seconds_count{flow_schema="x",priority_level=%[1]q,type="regular"} %[4]d
`, level, limit, inUse, count, float64(count)*meanExec.Seconds())
}

// smallConfig is a queuing level "q" (4 queues, hand 2, queue length
// limit 2) for user "u" (ByUser) and a Reject level "r" for user "v".
func smallConfig() *engine.Config {
	shares := int32(10)
	pl := func(name string, queuing bool) *flowcontrolv1.PriorityLevelConfiguration {
		p := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-pl-" + name)},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
				Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: &shares,
					LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}}}
		if queuing {
			p.Spec.Limited.LimitResponse = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
				Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 4, HandSize: 2, QueueLengthLimit: 2}}
		}
		return p
	}
	fs := func(name, user, level string, prec int32) *flowcontrolv1.FlowSchema {
		return &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-fs-" + name)},
			Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: prec, PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
				DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
				Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
					Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: user}}},
					ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}},
				}}}}
	}
	return engine.NewConfig([]*flowcontrolv1.FlowSchema{fs("fs-q", "u", "q", 100), fs("fs-r", "v", "r", 100)},
		[]*flowcontrolv1.PriorityLevelConfiguration{pl("q", true), pl("r", false)})
}

// TestExplainVerdictWithLiveState checks runs / queued / rejected against
// hand-built dumps and metrics, with the queue chosen as upstream's
// shuffleShardLocked does (least TotalWorkSum in the hand).
func TestExplainVerdictWithLiveState(t *testing.T) {
	cfg := smallConfig()
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ru := mustRequest(t, "get", "/api/v1/namespaces/default/pods/a", engine.NewUserIdentity("u"))
	rv := mustRequest(t, "get", "/api/v1/namespaces/default/pods/a", engine.NewUserIdentity("v"))
	hand := Explain(Input{Config: cfg}, ru, nil).Queues.Hand
	if len(hand) != 2 {
		t.Fatalf("hand %+v, want 2 queues", hand)
	}
	h0, h1 := hand[0].Index, hand[1].Index
	other := 0
	for other == h0 || other == h1 {
		other++
	}
	tests := []struct {
		name       string
		r          engine.Request
		live       *dump.Snapshot
		wantKind   string
		wantReason string
		wantQueue  int
		wantWait   time.Duration
	}{
		{name: "idle level runs", r: ru, live: liveQ(t, at, 4, 0, time.Second), wantKind: VerdictRuns},
		{name: "seats busy, queues short: queued in the lighter queue of the hand", r: ru,
			live: liveQ(t, at, 4, 4, time.Second,
				dump.QueueRow{PriorityLevel: "q", Index: h0, PendingRequests: 1, ExecutingRequests: 2, SeatsInUse: 2, MaxSeatsSum: 1, TotalWorkSum: 0.003},
				dump.QueueRow{PriorityLevel: "q", Index: h1, PendingRequests: 0, ExecutingRequests: 2, SeatsInUse: 2}),
			// Ahead 0 in h1; h0 may dispatch min(1, 1) first: 1 request of 1s on 4 seats.
			wantKind: VerdictQueued, wantQueue: h1, wantWait: 250 * time.Millisecond},
		{name: "behind others: expected wait from the fair share", r: ru,
			live: liveQ(t, at, 4, 4, 2*time.Second,
				dump.QueueRow{PriorityLevel: "q", Index: h0, PendingRequests: 1, MaxSeatsSum: 1, TotalWorkSum: 0.003},
				dump.QueueRow{PriorityLevel: "q", Index: h1, PendingRequests: 1, MaxSeatsSum: 1, TotalWorkSum: 0.006},
				dump.QueueRow{PriorityLevel: "q", Index: other, PendingRequests: 2, MaxSeatsSum: 2, TotalWorkSum: 0.006}),
			// Ahead 1 in h0; each other queue dispatches min(pending, 2):
			// 1 + 1 + 2 = 4 requests of 2s on 4 seats = 2s.
			wantKind: VerdictQueued, wantQueue: h0, wantWait: 2 * time.Second},
		{name: "long expected wait risks time-out", r: ru,
			live: liveQ(t, at, 4, 4, 40*time.Second,
				dump.QueueRow{PriorityLevel: "q", Index: h0, PendingRequests: 1, MaxSeatsSum: 1, TotalWorkSum: 0.003},
				dump.QueueRow{PriorityLevel: "q", Index: h1, PendingRequests: 1, MaxSeatsSum: 1, TotalWorkSum: 0.003}),
			wantKind: VerdictQueued, wantReason: ReasonTimeOut, wantQueue: h0, wantWait: 20 * time.Second},
		{name: "seats busy and both queues of the hand full: queue-full", r: ru,
			live: liveQ(t, at, 4, 4, time.Second,
				dump.QueueRow{PriorityLevel: "q", Index: h0, PendingRequests: 2, MaxSeatsSum: 2, TotalWorkSum: 0.006},
				dump.QueueRow{PriorityLevel: "q", Index: h1, PendingRequests: 3, MaxSeatsSum: 3, TotalWorkSum: 0.009}),
			wantKind: VerdictRejected, wantReason: ReasonQueueFull, wantQueue: h0},
		{name: "a free seat: full queues still accept (rejectOrEnqueueToBoundLocked)", r: ru,
			live: liveQ(t, at, 4, 3, time.Second,
				dump.QueueRow{PriorityLevel: "q", Index: h0, PendingRequests: 2, MaxSeatsSum: 2, TotalWorkSum: 0.006},
				dump.QueueRow{PriorityLevel: "q", Index: h1, PendingRequests: 3, MaxSeatsSum: 3, TotalWorkSum: 0.009}),
			// 2 ahead in h0, h1 dispatches min(3, 3): 5 requests of 1s on 4 seats.
			wantKind: VerdictQueued, wantQueue: h0, wantWait: 1250 * time.Millisecond},
		{name: "reject level with room runs", r: rv, live: liveR(t, at, 4, 3), wantKind: VerdictRuns},
		{name: "reject level full: concurrency-limit", r: rv, live: liveR(t, at, 4, 4), wantKind: VerdictRejected, wantReason: ReasonConcurrencyLimit},
		{name: "reject level idle runs even a wide request", r: rv, live: liveR(t, at, 0, 0), wantKind: VerdictRuns},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := Explain(Input{Config: cfg, Live: tt.live}, tt.r, nil)
			v := ex.Verdict
			if v.Kind != tt.wantKind || v.RejectReason != tt.wantReason {
				t.Fatalf("verdict %s/%s (%s), want %s/%s", v.Kind, v.RejectReason, v.Reason, tt.wantKind, tt.wantReason)
			}
			if tt.wantKind == VerdictQueued || tt.wantReason == ReasonQueueFull {
				if v.Queue == nil || *v.Queue != tt.wantQueue {
					t.Errorf("queue %v, want %d", v.Queue, tt.wantQueue)
				}
			}
			if tt.wantKind == VerdictQueued {
				if v.ExpectedWait == nil || time.Duration(*v.ExpectedWait) != tt.wantWait {
					t.Errorf("expected wait %v, want %v", v.ExpectedWait, tt.wantWait)
				}
			}
		})
	}
}

func liveQ(t testing.TB, at time.Time, limit, inUse float64, meanExec time.Duration, queues ...dump.QueueRow) *dump.Snapshot {
	return &dump.Snapshot{Instance: "https://apiserver-1", CapturedAt: at, PriorityLevelDump: []dump.PriorityLevelRow{{Name: "q"}}, QueueDump: queues,
		Metrics: []*metrics.Scrape{scrape(t, at, levelMetricsText("q", limit, inUse, 10, meanExec))}}
}

func liveR(t testing.TB, at time.Time, limit, inUse float64) *dump.Snapshot {
	return &dump.Snapshot{Instance: "https://apiserver-1", CapturedAt: at, PriorityLevelDump: []dump.PriorityLevelRow{{Name: "r"}},
		Metrics: []*metrics.Scrape{scrape(t, at, levelMetricsText("r", limit, inUse, 10, time.Second))}}
}

// TestExplainJSONShape checks the -o json fields scripts rely on, which stay
// stable.
func TestExplainJSONShape(t *testing.T) {
	cfg := smallConfig()
	ex := Explain(Input{Config: cfg}, mustRequest(t, "list", "/api/v1/pods", engine.NewUserIdentity("u")), nil)
	b, err := json.Marshal(ex)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	get := func(path ...string) any {
		var cur any = m
		for _, p := range path {
			mm, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = mm[p]
		}
		return cur
	}
	for _, want := range []struct {
		path []string
		val  any
	}{
		{[]string{"flowSchema", "name"}, "fs-q"},
		{[]string{"flowSchema", "uid"}, "uid-fs-fs-q"},
		{[]string{"priorityLevel", "name"}, "q"},
		{[]string{"priorityLevel", "uid"}, "uid-pl-q"},
		{[]string{"flowDistinguisher"}, "u"},
		{[]string{"verdict", "kind"}, VerdictUnknown},
		{[]string{"request", "verb"}, "list"},
	} {
		if got := get(want.path...); got != want.val {
			t.Errorf("%s = %v, want %v", strings.Join(want.path, "."), got, want.val)
		}
	}
	if r, _ := get("verdict", "reason").(string); r == "" {
		t.Errorf("verdict.reason is empty")
	}
	trace, _ := get("trace").([]any)
	if len(trace) == 0 {
		t.Fatalf("no trace")
	}
	for _, e := range trace {
		em := e.(map[string]any)
		for _, k := range []string{"flowSchema", "matched", "reason"} {
			if _, ok := em[k]; !ok {
				t.Errorf("trace entry without %s: %v", k, em)
			}
		}
	}
	hand, _ := get("queues", "hand").([]any)
	if len(hand) != 2 {
		t.Errorf("queues.hand %v, want 2 queues", hand)
	}

	bypass := Explain(Input{Config: cfg}, mustRequest(t, "get", "/api/v1/namespaces/d/pods/p/log", engine.NewUserIdentity("u")), nil)
	b, _ = json.Marshal(bypass)
	for _, k := range []string{`"flowSchema"`, `"priorityLevel"`} {
		if strings.Contains(string(b), k) {
			t.Errorf("a bypassing request has %s in its JSON: %s", k, b)
		}
	}
}

// TestExplainOnEach: each apiserver has its own queues; the verdict of
// every one is reported.
func TestExplainOnEach(t *testing.T) {
	cfg := smallConfig()
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	rv := mustRequest(t, "get", "/api/v1/namespaces/default/pods/a", engine.NewUserIdentity("v"))
	a, b := liveR(t, at, 4, 0), liveR(t, at, 4, 4)
	a.Instance, b.Instance = "https://a", "https://b"
	ex := ExplainOnEach(Input{Config: cfg}, []*dump.Snapshot{a, b}, rv, nil)
	if len(ex.Instances) != 2 || ex.Instances[0].Instance != "https://a" || ex.Instances[0].Verdict.Kind != VerdictRuns ||
		ex.Instances[1].Verdict.Kind != VerdictRejected || ex.Verdict.Kind != VerdictRuns || ex.Instance != "https://a" {
		t.Errorf("per-instance verdicts %+v, first %+v", ex.Instances, ex.Verdict)
	}
	if one := ExplainOnEach(Input{Config: cfg}, []*dump.Snapshot{b}, rv, nil); len(one.Instances) != 0 || one.Verdict.Kind != VerdictRejected {
		t.Errorf("one apiserver: %+v", one)
	}
}

// TestCompareRecorded: agreement with a log line, disagreement, a
// bypassing request without apf_* fields, and seats outside the range.
func TestCompareRecorded(t *testing.T) {
	cfg := defaultsConfig(t)
	node := mustRequest(t, "get", "/api/v1/namespaces/d/configmaps/c", engine.NewUserIdentity("system:node:n1", "system:nodes"))
	for _, tt := range []struct {
		name           string
		r              engine.Request
		fs, pl         string
		seats          uint64
		wantAgrees     *bool
		wantSeatsNote  bool
		wantDetailPart string
	}{
		{"agrees", node, "system-nodes", "system", 1, ptrTo(true), false, "agrees"},
		{"disagrees", node, "global-default", "global-default", 1, ptrTo(false), false, "disagrees"},
		{"seats outside the range", node, "system-nodes", "system", 7, ptrTo(true), true, "agrees"},
		{"bypass records nothing", mustRequest(t, "get", "/api/v1/namespaces/d/pods/p/log", engine.NewUserIdentity("a")), "", "", 0, ptrTo(true), false, "bypasses APF"},
		{"no apf fields on a classified request", node, "", "", 0, nil, false, "nothing to compare"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ex := Explain(Input{Config: cfg}, tt.r, nil)
			ex.CompareNames("httplog", tt.fs, tt.pl, 200)
			if tt.seats > 0 {
				ex.CompareWork(RecordedWork{HasSeats: true, InitialSeats: tt.seats})
			}
			rec := ex.Recorded
			if (rec.Agrees == nil) != (tt.wantAgrees == nil) || (rec.Agrees != nil && *rec.Agrees != *tt.wantAgrees) || !strings.Contains(rec.Detail, tt.wantDetailPart) {
				t.Errorf("recorded %+v (agrees %v), want agrees %v and %q", rec, rec.Agrees, tt.wantAgrees, tt.wantDetailPart)
			}
			if got := strings.Contains(strings.Join(ex.Notes, "\n"), "outside the replay's range"); got != tt.wantSeatsNote {
				t.Errorf("seats note %v, want %v: %q", got, tt.wantSeatsNote, ex.Notes)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestDanglingNote: a dangling schema is noted only when it sorts before
// the winner (the server skips it there).
func TestDanglingNote(t *testing.T) {
	fss, pls := config.UpstreamDefaults()
	dangling := func(name string, prec int32) *flowcontrolv1.FlowSchema {
		return &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: prec,
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "missing"},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "system:authenticated"}}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}}}}}
	}
	cfg := engine.NewConfig(append(fss, dangling("early", 50), dangling("late", 9950)), pls)
	ex := Explain(Input{Config: cfg}, mustRequest(t, "get", "/version", engine.NewUserIdentity("alice")), nil)
	notes := strings.Join(ex.Notes, "\n")
	if !strings.Contains(notes, "FlowSchema early") || strings.Contains(notes, "FlowSchema late") {
		t.Errorf("notes %q: want early (before global-default) and not late", ex.Notes)
	}
	found := false
	for _, e := range ex.Trace {
		found = found || (e.FlowSchema == "early" && e.Dangling && !e.Matched)
	}
	if !found {
		t.Errorf("the trace does not show the skipped dangling schema: %+v", ex.Trace)
	}
}

// TestVerdictOfAZeroSeatLevel: a level of 0 shares has 0 seats, and a
// request, wider than that, starts when nothing else executes there
// (queueset.go canAccommodateSeatsLocked; kubernetes/kubernetes#134196):
// without live state the verdict says so, for a Reject level and a queuing
// one, instead of "if its seats fit" (they never do).
func TestVerdictOfAZeroSeatLevel(t *testing.T) {
	cfg := smallConfig()
	zero := int32(0)
	for _, name := range []string{"q", "r"} {
		cfg.PriorityLevels[name].Spec.Limited.NominalConcurrencyShares = &zero
	}
	cfg = engine.NewConfig(cfg.FlowSchemas, []*flowcontrolv1.PriorityLevelConfiguration{cfg.PriorityLevels["q"], cfg.PriorityLevels["r"]})
	for _, c := range []struct{ user, want string }{
		{"v", "r has no queues, so the request runs at once only when nothing else executes there (its 1 seat is more than the level's limit of 0"},
		{"u", "the request runs at once if nothing executes in q and nobody waits (its 1 seat is more than the level's limit of 0"},
	} {
		ex := Explain(Input{Config: cfg}, mustRequest(t, "get", "/api/v1/namespaces/default/pods/a", engine.NewUserIdentity(c.user)), nil)
		if ex.Verdict.Kind != VerdictUnknown || !strings.Contains(ex.Verdict.Reason, c.want) || !strings.Contains(ex.Verdict.Reason, "kubernetes/kubernetes#134196") {
			t.Errorf("user %s: verdict %s: %s; want one with %q", c.user, ex.Verdict.Kind, ex.Verdict.Reason, c.want)
		}
	}
}
