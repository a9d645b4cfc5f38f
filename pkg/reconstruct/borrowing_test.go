package reconstruct_test

import (
	"fmt"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
)

// borrowConfig is a level "hi" that borrows up to 300% of its nominal seats
// and a level "lo" that lends all of its own, each with a FlowSchema for
// its user.
func borrowConfig() *engine.Config {
	level := func(name string, lendable, borrowing int32) *flowcontrolv1.PriorityLevelConfiguration {
		return &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
				Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](5), LendablePercent: ptr.To(lendable), BorrowingLimitPercent: ptr.To(borrowing),
					LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
						Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 8, HandSize: 2, QueueLengthLimit: 50}}}}}
	}
	return engine.NewConfig([]*flowcontrolv1.FlowSchema{userSchema("hi", "hi", "alice"), userSchema("lo", "lo", "bob")},
		[]*flowcontrolv1.PriorityLevelConfiguration{level("hi", 0, 300), level("lo", 100, 0)})
}

// limitsOf is the level's limits among lims.
func limitsOf(t *testing.T, lims []engine.LevelLimits, level string) engine.LevelLimits {
	t.Helper()
	for _, l := range lims {
		if l.Name == level {
			return l
		}
	}
	t.Fatalf("no limits for level %q", level)
	return engine.LevelLimits{}
}

// TestBorrowingKeepsTheSmoothedDemand: a level that borrowed for a burst
// keeps borrowing through the next quiet period, because the borrowing
// pass carries each level's smoothed seat demand from period to period
// (upstream's seatDemandStats, decaying by 2.3% a period): 20 requests
// hold hi's seats from 1 ms to 9.001 s, nothing runs from then to 25 s,
// and a request at 25 s finds the limit of the passes at 10 s and 20 s
// computed with that demand, not the one an idle level would get.
func TestBorrowingKeepsTheSmoothedDemand(t *testing.T) {
	const scl = 30
	var reqs []workload.Request
	for i := range 20 {
		reqs = append(reqs, logged(fmt.Sprint("a", i), "alice", 1, 9000, 9000, 200))
	}
	reqs = append(reqs, logged("probe", "alice", 25000, 10, 10, 200))
	limits := map[string]int{}
	_, err := reconstruct.Run(func() (workload.Reader, error) { return &sliceReader{reqs: reqs}, nil }, reconstruct.Options{
		Config: borrowConfig(), ServerConcurrencyLimit: scl,
		OnFate: func(f *reconstruct.Fate) { limits[f.Record.AuditID] = f.Limit },
	})
	if err != nil {
		t.Fatal(err)
	}
	// the passes, by hand: over 0–10 s hi's demand was 20 seats for 9 of
	// the 10 s (mean 18, deviation 6), over 10–20 s none
	lims := borrowConfig().Limits(scl)
	idle := engine.AllocateCurrentLimitsFor(engine.NewestRelease, lims, nil, nil, scl).CurrentCL
	var hi engine.SeatDemandStats
	hi.Update(engine.IntegratorResults{Duration: 10, Average: 18, Deviation: 6, Max: 20})
	first := engine.AllocateCurrentLimitsFor(engine.NewestRelease, lims, map[string]engine.SeatDemandStats{"hi": hi}, idle, scl).CurrentCL
	hi.Update(engine.IntegratorResults{Duration: 10})
	second := engine.AllocateCurrentLimitsFor(engine.NewestRelease, lims, map[string]engine.SeatDemandStats{"hi": hi}, first, scl).CurrentCL
	if limits["probe"] != second["hi"] || second["hi"] <= idle["hi"] {
		t.Errorf("hi's limit at 25 s is %d, want %d (smoothed demand %.1f; an idle hi gets %d)", limits["probe"], second["hi"], hi.Smoothed, idle["hi"])
	}
}

// TestBorrowingPhaseFromTheFirstLimitedRequest: the server adjusts the
// limits every 10 s in a phase the log does not tell, and a recording's
// load starts just after an adjustment; the passes are counted from the
// first request a limit applies to, not from the log's first record. The
// burst of TestBorrowingKeepsTheSmoothedDemand, 5 s after an exempt
// request (a capture's own read): a probe 7 s into the burst finds the
// limit no pass has changed yet, one 11 s into it the limit of the pass
// 10 s after the burst's first request. Counted from the exempt request,
// a pass fell 5 s into the burst, over half of its demand.
func TestBorrowingPhaseFromTheFirstLimitedRequest(t *testing.T) {
	const scl = 30
	admin := logged("admin", "admin", 0, 1, 1, 200)
	admin.Groups = []string{"system:masters", "system:authenticated"}
	reqs := []workload.Request{admin}
	for i := range 20 {
		reqs = append(reqs, logged(fmt.Sprint("a", i), "alice", 5001, 9000, 9000, 200))
	}
	reqs = append(reqs, logged("early", "alice", 12001, 10, 10, 200), logged("late", "alice", 16001, 10, 10, 200))
	fates, _ := fatesOf(t, reqs, reconstruct.Options{Config: borrowConfig(), ServerConcurrencyLimit: scl})
	if fates["admin"].Level != "exempt" {
		t.Fatalf("admin's request is on level %q, want exempt", fates["admin"].Level)
	}
	// the pass, by hand, 10 s after alice's first request: hi's demand
	// was 20 seats for 9 of the 10 s (mean 18, deviation 6)
	lims := borrowConfig().Limits(scl)
	idle := engine.AllocateCurrentLimitsFor(engine.NewestRelease, lims, nil, nil, scl).CurrentCL
	var hi engine.SeatDemandStats
	hi.Update(engine.IntegratorResults{Duration: 10, Average: 18, Deviation: 6, Max: 20})
	first := engine.AllocateCurrentLimitsFor(engine.NewestRelease, lims, map[string]engine.SeatDemandStats{"hi": hi}, idle, scl).CurrentCL
	if first["hi"] == idle["hi"] {
		t.Fatalf("the pass gives hi %d seats, as idle: the test cannot tell the phase", first["hi"])
	}
	if e := fates["early"]; e.Limit != idle["hi"] || e.LimitFromLog {
		t.Errorf("7 s into the burst hi's limit is %d (from the log: %v), want %d, no pass yet", e.Limit, e.LimitFromLog, idle["hi"])
	}
	if l := fates["late"]; l.Limit != first["hi"] || !l.LimitFromLog {
		t.Errorf("11 s into the burst hi's limit is %d (from the log: %v), want %d, the pass 10 s after its start", l.Limit, l.LimitFromLog, first["hi"])
	}
}

// TestShortWaitBelowTheCeilingQueues: on a server whose filters lag by more
// than a slot takes to open (τ 200 ms), a request whose latency less its
// execution is under τ, arriving when every seat of its level's current
// limit is taken, waited in its queue (upstream dispatches only what the
// seats allow), though the level could borrow more seats at a later pass:
// the limit is fixed between the passes, and a wait split from a latency
// around τ does not correct it (learnLimit). It does not take a seat past
// the limit.
func TestShortWaitBelowTheCeilingQueues(t *testing.T) {
	const scl = 30
	config := borrowConfig()
	idle := engine.AllocateCurrentLimitsFor(engine.NewestRelease, config.Limits(scl), nil, nil, scl).CurrentCL["hi"]
	var reqs []workload.Request
	for i := range idle {
		reqs = append(reqs, logged(fmt.Sprint("a", i), "alice", 1, 100, 100, 200)) // hi's every seat to 101 ms
	}
	reqs = append(reqs, logged("s", "alice", 10, 95.5, 5, 200)) // 90.5 ms outside its execution, under τ
	cal := calibrationAt(t, config, scl, reqs, 200*time.Millisecond)
	fates, _ := fatesOf(t, reqs, reconstruct.Options{Config: config, ServerConcurrencyLimit: scl, Calibration: cal})
	s := fates["s"]
	upper := limitsOf(t, config.Limits(scl), "hi").UpperCL
	if s.Limit != idle || s.Limit >= upper || s.SeatsInUse != idle {
		t.Fatalf("s found %d seats in use, limit %d (upper %d); the test wants hi's %d seats taken, below its upper limit", s.SeatsInUse, s.Limit, upper, idle)
	}
	if s.Wait < 90*time.Millisecond || s.Queue < 0 {
		t.Errorf("s waited %v in queue %d, want its 90.5 ms in a queue: the seats of the limit were taken", s.Wait, s.Queue)
	}
}
