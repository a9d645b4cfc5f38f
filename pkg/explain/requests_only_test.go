package explain

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// apfLoadConfig is the upstream defaults with the load capture's level and
// FlowSchema (hack/kube-old README: apf-load, 1 share, no lending or
// borrowing, 8 queues, hand 2, length 3; the apf-load group routed there
// by user at precedence 500).
func apfLoadConfig() *engine.Config {
	fss, pls := config.UpstreamDefaults()
	pls = append(pls, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "apf-load"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](1), LendablePercent: ptr.To[int32](0), BorrowingLimitPercent: ptr.To[int32](0),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 8, HandSize: 2, QueueLengthLimit: 3}}}}})
	fss = append(fss, &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "apf-load"},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "apf-load"}, MatchingPrecedence: 500,
			DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "apf-load"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}}}}}})
	return engine.NewConfig(fss, pls)
}

// TestRequestsOnlyAgreesWithTheWholeDump: explain request over a
// dump_requests alone (a paste from an issue) reads the level's waiting
// and executing requests, and its verdict agrees with the one the same
// capture's three dumps give (real kube-apiservers v1.37.1 and v1.27.4
// under load, testdata/dump/*-load; the 1.27 layout lists the waiting
// requests alone): queued where the whole dump queues the request, in the
// queue it names when the request's hand has one empty queue; rejected
// (queue-full) where it rejects it, the waiting requests of one seat
// telling that no seat is free. Before, it said "without live state" with
// the requests before it.
func TestRequestsOnlyAgreesWithTheWholeDump(t *testing.T) {
	kinds := map[string]int{}
	for _, capture := range []string{"v1.37.1-load", "v1.27.4-load"} {
		dir := filepath.Join("..", "..", "testdata", "dump", capture)
		read := func(name string) []byte {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		levels, err := dump.ParsePriorityLevels(read("dump_priority_levels.txt"))
		if err != nil {
			t.Fatal(err)
		}
		queues, err := dump.ParseQueues(read("dump_queues.txt"))
		if err != nil {
			t.Fatal(err)
		}
		requests, err := dump.ParseRequests(read("dump_requests.txt"))
		if err != nil {
			t.Fatal(err)
		}
		whole := &dump.Snapshot{Instance: "capture", PriorityLevelDump: levels, QueueDump: queues, RequestDump: requests}
		alone := &dump.Snapshot{Instance: "capture", RequestDump: requests}
		// the captures' server gave apf-load one seat (hack/kube-old)
		in := Input{Config: apfLoadConfig(), ServerConcurrencyLimit: 15}
		for _, user := range []string{"load-1", "load-2", "load-3", "load-4", "load-5", "load-6", "load-7", "load-8", "alice", "bob"} {
			what := capture + " " + user
			r := mustRequest(t, "list", "/api/v1/namespaces/apf-load/configmaps?limit=1", engine.NewUserIdentity(user, "apf-load"))
			in.Live = whole
			w := Explain(in, r, []string{"apf-load"})
			in.Live = alone
			a := Explain(in, r, []string{"apf-load"})
			if !a.RequestsOnly || a.NoDumps || w.RequestsOnly {
				t.Errorf("%s: requestsOnly %v, noDumps %v (whole dump: requestsOnly %v)", what, a.RequestsOnly, a.NoDumps, w.RequestsOnly)
			}
			if strings.Contains(a.Verdict.Reason, "without live state") || !strings.Contains(a.Verdict.Reason, "dump_requests shows") {
				t.Errorf("%s: the verdict does not read the requests: %s", what, a.Verdict.Reason)
			}
			// a 1.27 dump_requests lists no executing request: the
			// levels' dump counts them (it read "0 of 1 seat in use"
			// beside 17 waiting)
			if strings.Contains(w.Verdict.Reason, "0 of 1 seat in use") {
				t.Errorf("%s: the whole dump reads no seat in use beside requests waiting: %s", what, w.Verdict.Reason)
			}
			kinds[w.Verdict.Kind+"/"+a.Verdict.Kind]++
			switch w.Verdict.Kind {
			case VerdictQueued:
				// an empty queue: "behind nobody", not "behind 0 requests (0
				// seats, 0.000 seat-seconds of work)"
				if w.Verdict.Ahead == 0 && (!strings.Contains(w.Verdict.Reason, "behind nobody") || strings.Contains(w.Verdict.Reason, "behind 0")) {
					t.Errorf("%s: the whole dump's queue is empty: %s", what, w.Verdict.Reason)
				}
				if a.Verdict.Kind != VerdictQueued {
					t.Errorf("%s: the whole dump queues it (queue %d), the requests alone say %s: %s", what, *w.Verdict.Queue, a.Verdict.Kind, a.Verdict.Reason)
				} else if a.Verdict.Queue != nil && *a.Verdict.Queue != *w.Verdict.Queue {
					t.Errorf("%s: queue %d from the requests alone, %d from the whole dump", what, *a.Verdict.Queue, *w.Verdict.Queue)
				}
			case VerdictRejected:
				// every waiting request of apf-load asks one seat: the
				// requests alone tell that no seat is free
				if a.Verdict.Kind != VerdictRejected || a.Verdict.RejectReason != w.Verdict.RejectReason {
					t.Errorf("%s: the whole dump rejects it (%s), the requests alone say %s: %s", what, w.Verdict.RejectReason, a.Verdict.Kind, a.Verdict.Reason)
				}
			default:
				t.Errorf("%s: the whole dump says %s (%s); the capture has requests waiting in apf-load", what, w.Verdict.Kind, w.Verdict.Reason)
			}
		}
	}
	t.Logf("whole dump / requests alone: %v", kinds)
	if kinds[VerdictQueued+"/"+VerdictQueued] == 0 || kinds[VerdictRejected+"/"+VerdictRejected] == 0 {
		t.Errorf("both captures should hold users queued and users rejected by both: %v", kinds)
	}
}

// TestRequestsOnlyVerdicts: each verdict a dump_requests alone gives, on
// smallConfig (q: 4 queues, hand 2, length 2; r: Reject), and the layout
// before 1.28 (waiting requests only), which tells no seats in use.
func TestRequestsOnlyVerdicts(t *testing.T) {
	cfg := smallConfig()
	ru := mustRequest(t, "get", "/api/v1/namespaces/default/pods/a", engine.NewUserIdentity("u"))
	rv := mustRequest(t, "get", "/api/v1/namespaces/default/pods/a", engine.NewUserIdentity("v"))
	hand := Explain(Input{Config: cfg}, ru, nil).Queues.Hand
	other := 0
	for other == hand[0].Index || other == hand[1].Index {
		other++
	}
	row := func(level string, queue, index int) dump.RequestRow {
		return dump.RequestRow{PriorityLevel: level, FlowSchema: "fs-" + level, FlowDistinguisher: "w", QueueIndex: queue, IndexInQueue: index, InitialSeats: 1}
	}
	exempt := row("exempt", -1, -1)
	wide := func(r dump.RequestRow) dump.RequestRow { r.InitialSeats = 2; return r }
	tests := []struct {
		name string
		r    engine.Request
		rows []dump.RequestRow
		kind string
		want string
	}{
		{"nothing in q: runs", ru, []dump.RequestRow{exempt}, VerdictRuns, "dump_requests shows nothing waiting or executing in q, so the request is dispatched at once"},
		{"q executes, nobody waits: its limit decides", ru, []dump.RequestRow{exempt, row("q", other, -1)}, VerdictUnknown, "dump_requests shows nobody waiting in q and 1 seat executing: the request is dispatched at once if its 1 seat fits beside them under the level's current limit"},
		{"a queue of its hand empty: queued there", ru, []dump.RequestRow{row("q", other, -1), row("q", hand[0].Index, 0)}, VerdictQueued, fmt.Sprintf("in queue %d, the one empty queue of its hand, behind nobody", hand[1].Index)},
		{"both queues of its hand full, one-seat requests waiting: every seat is busy, 429", ru, []dump.RequestRow{row("q", other, -1), row("q", hand[0].Index, 0), row("q", hand[0].Index, 1), row("q", hand[1].Index, 0), row("q", hand[1].Index, 1)},
			VerdictRejected, "each asking 1 seat, which the server dispatches while a seat is free: every seat of q is in use, and every queue of its hand holds its length limit of 2 or more: 429 (queue-full)"},
		{"both queues of its hand full, a wider request waiting: 429 if every seat is busy", ru, []dump.RequestRow{row("q", other, -1), wide(row("q", hand[0].Index, 0)), row("q", hand[0].Index, 1), row("q", hand[1].Index, 0), row("q", hand[1].Index, 1)},
			VerdictUnknown, "every queue of its hand holds its length limit of 2 or more, so the request gets 429 (queue-full) if every seat of the level is in use"},
		{"waiting with nothing executing: a cut dump", ru, []dump.RequestRow{row("q", hand[0].Index, 0)}, VerdictUnknown, "none executing, which a whole dump never shows"},
		{"Reject level, nothing executes: runs", rv, []dump.RequestRow{row("q", other, -1)}, VerdictRuns, "dump_requests shows nothing executing in r, which has no queues, so the request runs at once"},
		{"Reject level executing: its limit decides", rv, []dump.RequestRow{row("r", -1, -1), row("r", -1, -1)}, VerdictUnknown, "dump_requests shows 2 seats executing in r, which has no queues: the request runs at once if its 1 seat fits beside them under the level's current limit, and gets 429 (concurrency-limit) at once otherwise"},
	}
	for _, tt := range tests {
		ex := Explain(Input{Config: cfg, Live: &dump.Snapshot{Instance: "paste", RequestDump: tt.rows}}, tt.r, nil)
		if ex.Verdict.Kind != tt.kind || !strings.Contains(ex.Verdict.Reason, tt.want) || !ex.RequestsOnly {
			t.Errorf("%s: %s: %s (requestsOnly %v); want %s: %q", tt.name, ex.Verdict.Kind, ex.Verdict.Reason, ex.RequestsOnly, tt.kind, tt.want)
		}
	}
	// before 1.28 a dump_requests lists the waiting requests alone: whether
	// another waits is known, the seats in use are not
	old := func(rows ...dump.RequestRow) *Explanation {
		for i := range rows {
			rows[i].WaitingOnly = true
		}
		return Explain(Input{Config: cfg, Live: &dump.Snapshot{Instance: "paste", RequestDump: rows}}, ru, nil)
	}
	if ex := old(row("q", hand[0].Index, 0)); !ex.RequestsOnly || !ex.RequestsWaitingOnly || ex.Verdict.Kind != VerdictQueued ||
		!strings.Contains(ex.Verdict.Reason, "its executing requests not listed (a layout before 1.28 lists the waiting ones alone): the request is queued") {
		t.Errorf("a 1.27 dump_requests with a request waiting in q: requestsOnly %v, waiting only %v, %s: %s", ex.RequestsOnly, ex.RequestsWaitingOnly, ex.Verdict.Kind, ex.Verdict.Reason)
	}
	if ex := old(row("r", other, 0)); ex.Verdict.Kind != VerdictUnknown || !strings.Contains(ex.Verdict.Reason, "dump_requests shows nobody waiting in q, and, of a layout before 1.28, not the requests executing") {
		t.Errorf("a 1.27 dump_requests with nobody waiting in q: %s: %s", ex.Verdict.Kind, ex.Verdict.Reason)
	}
	if ex := old(row("q", hand[0].Index, 0)); ex.Verdict.Kind == VerdictRuns {
		t.Errorf("runs from a dump that lists no executing request")
	}
	if ex := Explain(Input{Config: cfg, Live: &dump.Snapshot{Instance: "paste", RequestDump: []dump.RequestRow{{PriorityLevel: "q", QueueIndex: hand[0].Index, WaitingOnly: true, InitialSeats: 1}}}}, rv, nil); !strings.Contains(ex.Verdict.Reason, "without live state") {
		t.Errorf("a Reject level from a 1.27 dump_requests, which lists no queueless request: %s", ex.Verdict.Reason)
	}
}
