package reconstruct_test

import (
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
)

// TestFateLimitFrom: a fate carries its level's nominal limit beside the
// current one, and says whether that current limit came from the log's
// demand: before the first borrowing pass (the log's first 10 s) it is the
// share an idle level gets, an assumption, not a figure of the log; after
// it, the log's. Kueue's log of kubernetes-sigs/kueue#4508 showed
// workload-low at 56 seats beside its nominal 245 without saying which
// was which (issue 47's field test, N11).
func TestFateLimitFrom(t *testing.T) {
	const scl = 30
	reqs := []workload.Request{logged("early", "alice", 1, 10, 10, 200), logged("late", "alice", 15000, 10, 10, 200)}
	fates, _ := fatesOf(t, reqs, reconstruct.Options{Config: borrowConfig(), ServerConcurrencyLimit: scl})
	lims := borrowConfig().Limits(scl)
	idle := engine.AllocateCurrentLimitsFor(engine.NewestRelease, lims, nil, nil, scl).CurrentCL
	nominal := limitsOf(t, lims, "hi").NominalCL
	early, late := fates["early"], fates["late"]
	if early.NominalLimit != nominal || early.Limit != idle["hi"] || early.LimitFromLog {
		t.Errorf("early: limit %d nominal %d from log %v, want %d, %d, false", early.Limit, early.NominalLimit, early.LimitFromLog, idle["hi"], nominal)
	}
	if late.NominalLimit != nominal || !late.LimitFromLog {
		t.Errorf("late: nominal %d from log %v, want %d, true", late.NominalLimit, late.LimitFromLog, nominal)
	}
	if early.Limit == early.NominalLimit {
		t.Errorf("the idle share %d equals the nominal limit: the test shows nothing", early.Limit)
	}
}
