package reconstruct_test

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
)

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

// tinyConfig is a 1-seat level "tiny" with one queue one request long, and
// a 1-seat level "rej" without queues, on a server of 7 seats (catch-all
// takes 5), each with a FlowSchema for its user (a level of one queue
// computes no flow distinguisher: flows are named by FlowSchema).
func tinyConfig() *engine.Config {
	return engine.NewConfig([]*flowcontrolv1.FlowSchema{userSchema("tiny", "tiny", "alice"), userSchema("tiny-bob", "tiny", "bob"), userSchema("rej", "rej", "carol")},
		[]*flowcontrolv1.PriorityLevelConfiguration{oneShareLevel("tiny", &flowcontrolv1.QueuingConfiguration{Queues: 1, HandSize: 1, QueueLengthLimit: 1}), oneShareLevel("rej", nil)})
}

// oneShareLevel is a level of 1 share that lends nothing, queuing as q
// says, or rejecting when q is nil.
func oneShareLevel(name string, q *flowcontrolv1.QueuingConfiguration) *flowcontrolv1.PriorityLevelConfiguration {
	lr := flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}
	if q != nil {
		lr = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: q}
	}
	return &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](1), LendablePercent: ptr.To[int32](0), LimitResponse: lr}}}
}

// userSchema routes user to level, by user.
func userSchema(name, level, user string) *flowcontrolv1.FlowSchema {
	return &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level}, MatchingPrecedence: 100,
			DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: user}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}},
			}}}}
}

var t0 = time.Date(2026, 11, 23, 3, 10, 0, 0, time.UTC)

// logged is a request as httplog and audit record it together: received
// at ms, answered latency later, executed exec before its answer (0: not
// executed).
func logged(id, user string, ms, latency, exec float64, status int) workload.Request {
	d := func(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
	r := workload.Request{Arrival: t0.Add(d(ms)), AuditID: id, User: user, Groups: []string{"system:authenticated"}, UserKnown: true,
		Method: "GET", Verb: "LIST", URI: "/api/v1/namespaces/default/configmaps", Latency: d(latency),
		InitialSeats: 1, HasSeats: true, Status: status, Source: workload.At(id)}
	if exec > 0 {
		r.ServiceTime, r.HasServiceTime = d(exec), true
	}
	return r
}

// fatesOf reconstructs reqs with opts and returns the fates by audit ID,
// with their Record dropped and their Hand copied (both are reused after
// OnFate), and the result.
func fatesOf(t *testing.T, reqs []workload.Request, opts reconstruct.Options) (map[string]reconstruct.Fate, *reconstruct.Result) {
	t.Helper()
	fates := map[string]reconstruct.Fate{}
	opts.OnFate = func(f *reconstruct.Fate) {
		g := *f
		g.Record, g.Hand = nil, slices.Clone(f.Hand)
		fates[f.Record.AuditID] = g
	}
	res, err := reconstruct.Run(func() (workload.Reader, error) { return &sliceReader{reqs: reqs}, nil }, opts)
	if err != nil {
		t.Fatal(err)
	}
	return fates, res
}

func TestReconstructDecidesFromTheState(t *testing.T) {
	reqs := []workload.Request{
		logged("a", "alice", 0, 10, 10, 200),        // dispatched at once, holds the seat to 10 ms
		logged("b", "bob", 1, 19, 9, 200),           // waits in the queue from 1 to 10 ms
		logged("c", "alice", 2, 0.1, 0, 429),        // the seat taken, the queue full: queue-full
		logged("e", "alice", 3, 30, 5, 200),         // served though the queue was full
		logged("d", "alice", 40, 5, 5, 200),         // alone again
		logged("f", "carol", 60, 10, 10, 200),       // rej's seat
		logged("g", "carol", 61, 0.1, 0, 429),       // concurrency-limit
		logged("h", "carol", 62, 0.1, 0, 429),       // concurrency-limit
		logged("i", "carol", 80, 0.1, 0, 429),       // the seat free: not APF's doing in the reconstruction
		logged("j", "alice", 100, 0.1, 0, 429),      // the level idle
		logged("k", "alice", 200, 0.05, 0, 200),     // an idle level dispatches at once
		logged("l", "bob", 2000, 20000, 20000, 200), // holds tiny's seat for 20 s
		logged("t", "alice", 300, 15000, 0, 429),    // waits its whole wait limit (15 s): time-out
	}
	fates, res := fatesOf(t, reqs, reconstruct.Options{
		Config: tinyConfig(), ServerConcurrencyLimit: 7, NoBorrowing: true,
		Focus: func(w *workload.Request) bool { return w.AuditID == "c" },
	})
	want := map[string]struct {
		rejected bool
		reason   string
		agrees   bool
		class    string
	}{
		"a": {false, "", true, ""},
		"b": {false, "", true, ""},
		"c": {true, "queue-full", true, ""},
		"e": {true, "queue-full", false, reconstruct.ClassFullButServed},
		"d": {false, "", true, ""},
		"f": {false, "", true, ""},
		"g": {true, "concurrency-limit", true, ""},
		"h": {true, "concurrency-limit", true, ""},
		"i": {false, "concurrency-limit", false, reconstruct.ClassSeatsFree},
		"j": {false, "queue-full", false, reconstruct.ClassSeatsFree},
		"k": {false, "", true, ""},
		"l": {false, "", true, ""},
		"t": {true, "time-out", true, ""},
	}
	for id, w := range want {
		f, ok := fates[id]
		if !ok {
			t.Errorf("%s: no fate", id)
			continue
		}
		if f.Rejected != w.rejected || f.Reason != w.reason || f.Agrees != w.agrees || f.Class != w.class {
			t.Errorf("%s: rejected %v reason %q agrees %v class %q, want %v %q %v %q (seats %d/%d, waiting %d)", id, f.Rejected, f.Reason, f.Agrees, f.Class,
				w.rejected, w.reason, w.agrees, w.class, f.SeatsInUse, f.Limit, f.Waiting)
		}
	}
	if b := fates["b"]; b.Wait < 8*time.Millisecond || b.WaitFrom != "httplog" {
		t.Errorf("b waited %v (%s), want about 9 ms from httplog", b.Wait, b.WaitFrom)
	}
	c := fates["c"]
	if c.Snapshot == nil || len(c.Snapshot.Queues) != 1 || c.Snapshot.Queues[0].Length != 1 || len(c.Snapshot.Queues[0].Flows) != 1 ||
		c.Snapshot.Queues[0].Flows[0].Flow != "tiny-bob" || len(c.Snapshot.Holders) != 1 || c.Snapshot.Holders[0].Flow != "tiny" {
		t.Errorf("c's snapshot: %+v, want bob waiting in the one queue and alice holding the seat", c.Snapshot)
	}
	sum := res.Sum()
	if sum.Total() != int64(len(reqs)) || sum.Agreeing() != int64(len(reqs)-3) {
		t.Errorf("agreement %+v, want %d requests of which %d agree", sum, len(reqs), len(reqs)-3)
	}
	if len(res.Incidents) != 3 {
		t.Fatalf("%d incidents, want tiny's, rej's and tiny's time-out 15 s later: %+v", len(res.Incidents), res.Incidents)
	}
	for i, in := range res.Incidents {
		switch {
		case in.Level == "rej":
			if in.Rejected != 3 || in.Clients == nil || len(in.Clients.Rejected) != 1 || in.Clients.Rejected[0].User != "carol" || in.Clients.Rejected[0].Count != 3 {
				t.Errorf("rej's incident: %+v", in)
			}
			if in.Causes[0].Kind != "no-queues" {
				t.Errorf("rej's cause %q, want no-queues", in.Causes[0].Kind)
			}
		case i == 0:
			if in.Level != "tiny" || in.Rejected != 2 || in.Clients == nil || len(in.Clients.HeldSeats) == 0 || in.Clients.HeldSeats[0].User != "alice" {
				t.Errorf("tiny's incident: %+v", in)
			}
		default:
			if in.Level != "tiny" || in.Rejected != 1 || in.Reasons["time-out"] != 1 || len(in.Clients.HeldSeats) == 0 || in.Clients.HeldSeats[0].User != "bob" {
				t.Errorf("tiny's time-out: %+v", in)
			}
			kinds := []string{}
			for _, c := range in.Causes {
				kinds = append(kinds, c.Kind)
			}
			if !slices.Contains(kinds, "time-outs") {
				t.Errorf("tiny's time-out has causes %v, want time-outs", kinds)
			}
		}
	}
}

// TestUnmeasuredThresholdKeepsNoIdleWait: a log too short to measure τ
// (no lag of requests dispatched at once) leaves τ at its smallest
// candidate, which the filters around APF can exceed on their own. A
// request whose latency less its execution is above it, on a level with a
// seat free and nobody waiting, did not wait: upstream dispatches it in the
// StartRequest that enqueues it. One that found the seat taken still waited.
func TestUnmeasuredThresholdKeepsNoIdleWait(t *testing.T) {
	reqs := []workload.Request{
		logged("p", "alice", 0, 10.6, 10, 200), // 0.6 ms outside its execution, tiny idle
		logged("q", "bob", 1, 19, 9, 200),      // arrives while p holds the one seat: waits to 10 ms
	}
	fates, res := fatesOf(t, reqs, reconstruct.Options{Config: tinyConfig(), ServerConcurrencyLimit: 7, NoBorrowing: true})
	if res.Threshold != 500*time.Microsecond {
		t.Fatalf("τ %v: the test wants the unmeasured τ of 500µs, below p's 0.6 ms", res.Threshold)
	}
	if p := fates["p"]; p.Wait != 0 || p.SeatsInUse != 0 || p.Waiting != 0 {
		t.Errorf("p waited %v with %d seats in use and %d waiting; want no wait on an idle level", p.Wait, p.SeatsInUse, p.Waiting)
	}
	if q := fates["q"]; q.Wait < 8*time.Millisecond {
		t.Errorf("q waited %v, want about 9 ms: the seat was p's", q.Wait)
	}
}

// TestShortWaitOnIdleLevelDispatchedAtOnce: τ measured (twenty requests,
// each alone on tiny, start executing 0.1 ms after they reach APF: τ is
// 500µs), a request that reaches the idle level and starts executing under
// twice τ after it was dispatched at once (upstream dispatches it in the
// StartRequest that enqueues it, and its goroutine woke late); one whose
// recorded wait is longer still waited, for a queue the log does not show.
func TestShortWaitOnIdleLevelDispatchedAtOnce(t *testing.T) {
	var reqs []workload.Request
	for i := range 20 {
		reqs = append(reqs, logged("m"+string(rune('a'+i)), "alice", float64(i)*20, 5.1, 5, 200))
	}
	reqs = append(reqs,
		logged("s", "alice", 500, 5.8, 5, 200), // 0.8 ms between APF and its execution, under 2τ
		logged("w", "bob", 600, 6.5, 5, 200),   // 1.5 ms, above 2τ
	)
	// the premise: τ as reconstructAt calibrates it is measured
	if cal := calibrationAt(t, tinyConfig(), 7, reqs, 0); time.Duration(cal.Threshold) != 500*time.Microsecond || cal.ThresholdFrom == calibrate.ThresholdUnmeasured {
		t.Fatalf("τ %v (%s): the test wants a measured τ of 500µs", time.Duration(cal.Threshold), cal.ThresholdFrom)
	}
	fates := reconstructAt(t, reqs, 0, "")
	if s := fates["s"]; s.Wait != 0 || s.SeatsInUse != 0 || s.Waiting != 0 {
		t.Errorf("s waited %v with %d seats in use and %d waiting; want no wait on an idle level", s.Wait, s.SeatsInUse, s.Waiting)
	}
	if w := fates["w"]; w.Wait < time.Millisecond {
		t.Errorf("w waited %v, want its recorded 1.5 ms: above twice τ", w.Wait)
	}
}

// TestElephantSentMore: a flow behind the crowded rejections is an
// elephant only if it sent more than the others; one that sent its share
// held the queues the others' hands share, and the level is short of
// seats for them all. Both flows of tiny share its one queue: in each
// round bob takes the idle seat, alice queues behind him, bob's next
// request finds the queue full of alice's (crowded out by alice), and
// alice sends one more when the level is idle again; with heavy, alice
// also sends six more into the idle level (79 of the incident's 98
// requests, against bob's 19: the mean is 49).
func TestElephantSentMore(t *testing.T) {
	for _, heavy := range []bool{false, true} {
		var reqs []workload.Request
		for i := range 10 {
			o := float64(i) * 100
			id := func(s string) string { return s + string(rune('0'+i)) }
			reqs = append(reqs,
				logged(id("b"), "bob", o, 10, 10, 200),
				logged(id("a"), "alice", o+1, 14, 5, 200),
				logged(id("r"), "bob", o+2, 0.1, 0, 429),
				logged(id("i"), "alice", o+50, 1, 1, 200))
			if heavy {
				for k, at := range []float64{60, 65, 70, 75, 80, 90} {
					reqs = append(reqs, logged(id("h")+string(rune('a'+k)), "alice", o+at, 1, 1, 200))
				}
			}
		}
		slices.SortStableFunc(reqs, func(a, b workload.Request) int { return a.Arrival.Compare(b.Arrival) })
		res, err := reconstruct.Run(func() (workload.Reader, error) { return &sliceReader{reqs: reqs}, nil }, reconstruct.Options{
			Config: tinyConfig(), ServerConcurrencyLimit: 7, NoBorrowing: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Incidents) != 1 || len(res.Incidents[0].Causes) == 0 {
			t.Fatalf("heavy %v: incidents %+v", heavy, res.Incidents)
		}
		in := res.Incidents[0]
		c := in.Causes[0]
		switch {
		case heavy && c.Kind != "elephant-flow":
			t.Errorf("alice sending four times bob's requests: cause %s (%s), want elephant-flow", c.Kind, c.Evidence)
		case !heavy && (c.Kind != "too-little-concurrency" || !strings.Contains(c.Evidence, "under 1.5 times the mean flow's") || !strings.Contains(in.Summary, "no elephant")):
			t.Errorf("alice sending as many as bob: cause %s (%s), summary %q; want too-little-concurrency, under 1.5 times the mean", c.Kind, c.Evidence, in.Summary)
		}
	}
}
