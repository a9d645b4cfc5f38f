package reconstruct_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
)

// fanConfig is a 1-seat level "fan" with three queues one request long and
// hands of two, its flows by user, on a server of 6 seats (catch-all
// takes 5).
func fanConfig() *engine.Config {
	pl := oneShareLevel("fan", &flowcontrolv1.QueuingConfiguration{Queues: 3, HandSize: 2, QueueLengthLimit: 1})
	fs := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "fan"},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "fan"}, MatchingPrecedence: 100,
			DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "system:authenticated"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}},
			}}}}
	return engine.NewConfig([]*flowcontrolv1.FlowSchema{fs}, []*flowcontrolv1.PriorityLevelConfiguration{pl})
}

// reconstructFan reconstructs reqs against fanConfig with τ at 1 ms and
// returns the fates by audit ID.
func reconstructFan(t *testing.T, reqs []workload.Request) map[string]reconstruct.Fate {
	t.Helper()
	return reconstructWith(t, fanConfig(), 6, reqs, time.Millisecond, "")
}

// TestServedFullMovesAWaitingRequest: which queue of its hand a request
// goes to is decided, between queues of equal work, by an offset that
// turns with every request reaching the choice, which the log does not
// tell. A served request finding both queues of its hand full shows that
// the reconstruction put a waiting request in the wrong one of its own
// hand: b is moved to its other queue, which is empty, and c takes its
// place. A 429 of b's flow then finds every queue of its hand full, as
// the server did; with c held out of the queues instead, b's empty queue
// had room for it.
func TestServedFullMovesAWaitingRequest(t *testing.T) {
	hands := fanHands(t)
	// x's second queue (where b goes: a took the offset's first turn,
	// and every queue is empty) is in y's hand, x's first is not
	var x, y string
	for i := 0; i < 40 && x == ""; i++ {
		for j := 0; j < 40; j++ {
			hx, hy := hands[fmt.Sprint("u", i)], hands[fmt.Sprint("u", j)]
			if len(hx) == 2 && len(hy) == 2 && slices.Contains(hy, hx[1]) && !slices.Contains(hy, hx[0]) {
				x, y = fmt.Sprint("u", i), fmt.Sprint("u", j)
				break
			}
		}
	}
	if x == "" {
		t.Fatalf("no two users with the hands the test needs among %v", hands)
	}
	reqs := []workload.Request{
		logged("a", x, 0, 100, 100, 200), // holds the seat to 100 ms
		logged("b", x, 1, 109, 10, 200),  // waits to 100 ms in x's second queue
		logged("d", y, 2, 118, 10, 200),  // waits to 110 ms in y's other queue
		logged("c", y, 3, 130, 10, 200),  // served: y's hand full in the reconstruction
		logged("e", x, 4, 0.1, 0, 429),   // queue-full: b and c in x's hand
	}
	fates := reconstructFan(t, reqs)
	if b := fates["b"]; b.Queue != hands[x][0] {
		t.Errorf("b waited in queue %d, want %d: moved to the other queue of its hand to make room for c", b.Queue, hands[x][0])
	}
	if c := fates["c"]; c.Queue != hands[x][1] {
		t.Errorf("c waited in queue %d, want %d, the one b left", c.Queue, hands[x][1])
	}
	if e := fates["e"]; !e.Rejected || !e.Agrees || e.Reason != "queue-full" {
		t.Errorf("e: rejected %v agrees %v reason %q class %q, want queue-full: both queues of its hand held a request", e.Rejected, e.Agrees, e.Reason, e.Class)
	}
}

// TestRoomFor429MovesAWaitingRequest: a 429 of a hand shows every queue of
// the hand full (between queues of equal work the chosen one is full only
// if all are). Where the reconstruction has room in one, a request waiting
// in a full queue outside the hand, whose own hand holds that queue, went
// there on the server: b is moved, and the next 429 of the hand finds it
// full, as the server did.
func TestRoomFor429MovesAWaitingRequest(t *testing.T) {
	hands := fanHands(t)
	byQueues := map[[2]int]string{}
	for u, h := range hands {
		k := [2]int{min(h[0], h[1]), max(h[0], h[1])}
		if byQueues[k] == "" || u < byQueues[k] {
			byQueues[k] = u
		}
	}
	pair := func(a, b int) string { return byQueues[[2]int{min(a, b), max(a, b)}] }
	y := pair(0, 1)
	hy := hands[y]
	third := 3 - hy[0] - hy[1]
	w1, w2 := pair(hy[1], third), pair(hy[0], third)
	if y == "" || w1 == "" || w2 == "" {
		t.Fatalf("not every pair of queues is a hand among %v", hands)
	}
	reqs := []workload.Request{
		logged("a", y, 0, 100, 100, 200), // holds the seat to 100 ms
		logged("b", y, 1, 109, 10, 200),  // waits in y's second queue (a took the first turn)
		logged("c", w1, 2, 118, 10, 200), // waits in the third queue (b's has work)
		logged("d", w2, 3, 0.1, 0, 429),  // y's first queue empty in the reconstruction
		logged("e", w2, 4, 0.1, 0, 429),  // queue-full: b moved to y's first queue
	}
	fates := reconstructFan(t, reqs)
	if b := fates["b"]; b.Queue != hy[0] {
		t.Errorf("b waited in queue %d, want %d: moved to the other queue of its hand, in d's hand", b.Queue, hy[0])
	}
	if e := fates["e"]; !e.Rejected || !e.Agrees || e.Reason != "queue-full" {
		t.Errorf("e: rejected %v agrees %v reason %q class %q, want queue-full: both queues of its hand held a request", e.Rejected, e.Agrees, e.Reason, e.Class)
	}
}

// fanHands are the hands of users u0..u39 in fanConfig, from one request
// each.
func fanHands(t *testing.T) map[string][]int {
	t.Helper()
	var probe []workload.Request
	for i := range 40 {
		probe = append(probe, logged(fmt.Sprint("p", i), fmt.Sprint("u", i), float64(1000*i), 1, 1, 200))
	}
	hands := map[string][]int{}
	for id, f := range reconstructFan(t, probe) {
		hands["u"+id[1:]] = f.Hand
	}
	return hands
}
