package calibrate

import (
	"io"
	"math/rand/v2"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// sliceReader yields recorded requests from memory.
type sliceReader struct {
	reqs []workload.Request
	i    int
}

func (s *sliceReader) Next(r *workload.Request) error {
	if s.i >= len(s.reqs) {
		return io.EOF
	}
	*r = s.reqs[s.i]
	s.i++
	return nil
}

// config is one queuing level "slow" of seats seats (no lending or
// borrowing) for the group "load", plus the mandatory levels.
func config(t *testing.T, shares int32) *engine.Config {
	t.Helper()
	return configQueues(t, shares, 4)
}

// configQueues is config with queues qlen long.
func configQueues(t *testing.T, shares, qlen int32) *engine.Config {
	t.Helper()
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "slow"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To(shares), LendablePercent: ptr.To[int32](0), BorrowingLimitPercent: ptr.To[int32](0),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 8, HandSize: 2, QueueLengthLimit: qlen}},
			},
		},
	}
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "slow"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "slow"},
			MatchingPrecedence:         100,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "load"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}}},
			}},
		},
	}
	return engine.NewConfig([]*flowcontrolv1.FlowSchema{fs}, []*flowcontrolv1.PriorityLevelConfiguration{pl})
}

// record simulates a server whose level holds a seat for execution +
// overhead per dispatch from a queue, and writes what its httplog and
// audit log would say: the arrival, the latency (wait + overhead +
// execution for a queued request), apf_execution_time and the status.
func record(t *testing.T, cfg *engine.Config, scl int, overhead time.Duration, seed uint64) []workload.Request {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var reqs []workload.Request
	at := time.Duration(0)
	for b := 0; b < 150; b++ {
		at += time.Duration(rng.ExpFloat64() * float64(300*time.Millisecond))
		user := []string{"alice", "bob", "carol", "dave"}[rng.IntN(4)]
		for range 1 + rng.IntN(8) {
			exec := time.Duration(5+rng.IntN(30)) * time.Millisecond
			reqs = append(reqs, workload.Request{Arrival: start.Add(at), User: user, Groups: []string{"load", "system:authenticated"}, UserKnown: true,
				Method: "GET", Verb: "list", URI: "/api/v1/namespaces/ns/configmaps", ServiceTime: exec, HasServiceTime: true, InitialSeats: 1, HasSeats: true})
		}
		// a few exempt requests show the time the filters ahead of APF take
		reqs = append(reqs, workload.Request{Arrival: start.Add(at), User: "admin", Groups: []string{"system:masters", "system:authenticated"}, UserKnown: true,
			Method: "GET", Verb: "get", URI: "/api/v1/namespaces/default", ServiceTime: time.Millisecond, HasServiceTime: true, InitialSeats: 1, HasSeats: true})
	}
	for i := range reqs {
		reqs[i].QueuedOverhead = overhead
	}
	byID := map[int64]*fairqueue.Outcome{}
	_, err := fairqueue.Replay(&sliceReader{reqs: reqs}, fairqueue.ReplayConfig{Config: cfg, ServerConcurrencyLimit: scl, NoBorrowing: true}, nil,
		fairqueue.ReplayOptions{KeepReceivedArrival: true, OnOutcome: func(_ *workload.Request, o *fairqueue.Outcome) { c := *o; byID[o.ID] = &c }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range reqs {
		r := &reqs[i]
		r.QueuedOverhead = 0
		o := byID[int64(i+1)]
		if o.Reason != fairqueue.Executed {
			r.Status, r.HasServiceTime, r.ServiceTime = 429, false, 0
			r.Latency = o.Start - o.Arrival
			continue
		}
		r.Status = 200
		wait := o.Start - o.Arrival
		if wait > 0 {
			wait += overhead // the wake-up is in the recorded latency, not in the execution
		}
		r.Latency = wait + r.ServiceTime + 200*time.Microsecond
	}
	return reqs
}

// TestDeriveRecoversTheOverhead records synthetic overloads whose per-dispatch
// overhead is known, on levels of 1 and 3 seats, and checks that Derive reads
// it back from the recording within 15%, and that a replay with it
// reproduces the recorded rejections.
func TestDeriveRecoversTheOverhead(t *testing.T) {
	tests := []struct {
		name     string
		shares   int32
		overhead time.Duration
		seed     uint64
	}{
		{"none, 1 seat", 1, 0, 1},
		{"5ms, 1 seat", 1, 5 * time.Millisecond, 2},
		{"40ms, 1 seat", 1, 40 * time.Millisecond, 3},
		{"20ms, 3 seats", 3, 20 * time.Millisecond, 4},
		{"80ms, 2 seats", 2, 80 * time.Millisecond, 5},
		{"10ms, 5 seats", 25, 10 * time.Millisecond, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config(t, tt.shares)
			// ceil(6 × shares / (shares + catch-all's 5)) seats
			const scl = 6
			reqs := record(t, cfg, scl, tt.overhead, tt.seed)
			res, err := Derive(&sliceReader{reqs: reqs}, Options{Config: cfg, ServerConcurrencyLimit: scl})
			if err != nil {
				t.Fatal(err)
			}
			var lv Level
			for _, l := range res.Levels {
				if l.Level == "slow" {
					lv = l
				}
			}
			t.Logf("%+v", lv)
			if lv.Source != "saturated" {
				t.Fatalf("slow: overhead from %s (%s), want from its saturated time", lv.Source, lv.Why)
			}
			got, want := time.Duration(lv.Overhead), tt.overhead
			if d := got - want; d > want*15/100+time.Millisecond || d < -(want*15/100+time.Millisecond) {
				t.Errorf("derived overhead %v, recorded with %v", got, want)
			}
			var recorded, predicted int64
			_, err = fairqueue.Replay(res.Apply(&sliceReader{reqs: reqs}), fairqueue.ReplayConfig{Config: cfg, ServerConcurrencyLimit: scl, NoBorrowing: true}, nil,
				fairqueue.ReplayOptions{OnOutcome: func(w *workload.Request, o *fairqueue.Outcome) {
					if w.Status == 429 {
						recorded++
					}
					if o.Reason != fairqueue.Executed {
						predicted++
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("recorded %d 429s, predicted %d", recorded, predicted)
			if r := float64(predicted) / float64(max(recorded, 1)); recorded > 20 && (r < 0.9 || r > 1.1) {
				t.Errorf("calibrated replay predicts %d rejections, %d recorded", predicted, recorded)
			}
		})
	}
}
