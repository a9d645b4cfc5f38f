package fairqueue_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
)

// TestCompiledReplayIsReplays: a workload compiled once under the default
// configuration and replayed under it and under a squeezed one gives the
// Result, the skips and the outcomes, in order, that Replay gives each.
func TestCompiledReplayIsReplays(t *testing.T) {
	src := func() workload.Reader {
		return input.NewJSONLReader(strings.NewReader(flood(3000)), "flood", input.Options{}, nil)
	}
	c, err := fairqueue.Compile(src(), fairqueue.ReplayConfig{Config: engine.DefaultConfig()}, fairqueue.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Len() != 3000 {
		t.Fatalf("compiled %d requests of 3000", c.Len())
	}
	for _, cfg := range []*engine.Config{engine.DefaultConfig(), squeezedGlobalDefault()} {
		rc := fairqueue.ReplayConfig{Config: cfg}
		var want, got []fairqueue.Outcome
		rep, err := fairqueue.Replay(src(), rc, nil, fairqueue.ReplayOptions{OnOutcome: func(_ *workload.Request, o *fairqueue.Outcome) { want = append(want, *o) }})
		if err != nil {
			t.Fatal(err)
		}
		crep, err := c.Replay(context.Background(), rc, func(o *fairqueue.Outcome) { got = append(got, *o) })
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(rep.Result, crep.Result) || rep.Workload.Skipped != crep.Workload.Skipped {
			t.Errorf("the compiled replay differs:\n%+v\n%+v", crep.Result, rep.Result)
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("the outcomes differ: %d against %d", len(got), len(want))
		}
	}
}
