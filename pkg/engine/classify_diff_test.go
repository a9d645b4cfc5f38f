package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	upstreamss "k8s.io/apiserver/pkg/util/shufflesharding"
)

// compareWithUpstream classifies req with the engine and the real controller
// and returns a description of the first difference, or "".
func compareWithUpstream(cfg *Config, u *upstreamController, req Request) string {
	req.Bypass = "" // compare classification even for requests kube-apiserver lets bypass
	got := cfg.Classify(req)
	ri := req.Info
	want := u.classify(&ri, req.Identity)
	type view struct {
		FS, PL, FSUID, PLUID, Dist string
		Hash                       uint64
	}
	g := view{got.FlowSchema.Name, got.PriorityLevel.Name, string(got.FlowSchema.UID), string(got.PriorityLevel.UID), got.Flow.Distinguisher, got.Flow.Hash}
	w := view{want.fs, want.pl, want.fsUID, want.plUID, want.distinguisher, want.hash}
	if g != w {
		return fmt.Sprintf("engine %+v, upstream %+v", g, w)
	}
	// The hand: deal upstream's hash with upstream's dealer for the
	// level's queue set, when it has queues.
	qc := want.queuingCfg
	if qc.DesiredNumQueues > 0 {
		d, err := upstreamss.NewDealer(qc.DesiredNumQueues, qc.HandSize)
		if err != nil {
			return fmt.Sprintf("upstream level %s has an invalid dealer: %v", qc.Name, err)
		}
		wantHand := d.DealIntoHand(want.hash, nil)
		if !slices.Equal(got.Hand, wantHand) {
			return fmt.Sprintf("hand %v, upstream %v", got.Hand, wantHand)
		}
	} else if got.Hand != nil {
		return fmt.Sprintf("hand %v for a level without queues", got.Hand)
	}
	// The trace must agree with the fast path.
	tr := cfg.ClassifyWithTrace(req)
	if tr.FlowSchema != got.FlowSchema || tr.Rule != got.Rule || tr.Fallback != got.Fallback {
		return fmt.Sprintf("trace path chose %s rule %d, fast path %s rule %d", tr.FlowSchema.Name, tr.Rule, got.FlowSchema.Name, got.Rule)
	}
	last := tr.Trace[len(tr.Trace)-1]
	if !got.Fallback && (!last.Matched || last.FlowSchema != got.FlowSchema.Name) {
		return fmt.Sprintf("trace ends at %s (matched=%v), winner %s", last.FlowSchema, last.Matched, got.FlowSchema.Name)
	}
	return ""
}

// TestClassifyDifferential runs generated (configuration, request) cases
// through the engine and the real upstream controller (NewTestable on a fake
// clientset) and requires the same FlowSchema, priority level, UIDs,
// distinguisher, hash and hand.
func TestClassifyDifferential(t *testing.T) {
	configs, perConfig := 250, 400
	if testing.Short() {
		configs, perConfig = 20, 200
	}
	r := rand.New(rand.NewPCG(7, 11))
	cases, fallbacks, dangling, broken, bypassed := 0, 0, 0, 0, 0
	fsSeen := map[string]int{}
	for c := 0; c < configs; c++ {
		pls := genPriorityLevels(r)
		fss := genFlowSchemas(r, pls)
		cfg := NewConfig(fss, pls)
		dangling += len(cfg.Dangling)
		broken += len(cfg.Broken)
		u := startUpstream(t, fss, pls, 600)
		for i := 0; i < perConfig; i++ {
			method, path := genRequest(r)
			req, err := ParseRequest(method, path, genIdentity(r))
			if err != nil {
				continue // e.g. a path RequestInfoFactory rejects
			}
			if req.Bypass != "" {
				bypassed++
			}
			if diff := compareWithUpstream(cfg, u, req); diff != "" {
				u.Stop()
				t.Fatalf("config %d, %s %s as %+v: %s\nFlowSchemas: %s\nPriorityLevels: %s", c, method, path, req.Identity, diff, dumpFSs(fss), dumpPLs(pls))
			}
			got := cfg.Classify(Request{Identity: req.Identity, Info: req.Info})
			if got.Fallback {
				fallbacks++
			}
			fsSeen[got.FlowSchema.Name]++
			cases++
		}
		u.Stop()
	}
	t.Logf("%d (configuration, request) cases over %d configurations agree with upstream on FlowSchema, priority level, UIDs, distinguisher, hash and hand; %d fell back to catch-all, %d bypass kube-apiserver's APF, %d dangling FlowSchemas, %d broken levels; winners: %v",
		cases, configs, fallbacks, bypassed, dangling, broken, fsSeen)
	if !testing.Short() && cases < 100_000 {
		t.Errorf("only %d cases ran, want at least 100000", cases)
	}
	if fallbacks == 0 || dangling == 0 || broken == 0 || bypassed == 0 {
		t.Errorf("generator misses a category: fallbacks %d, dangling %d, broken %d, bypassed %d", fallbacks, dangling, broken, bypassed)
	}
}

func dumpFSs(fss []*flowcontrolv1.FlowSchema) string {
	s := ""
	for _, fs := range fss {
		s += fmt.Sprintf("\n  %s prec=%d pl=%s dist=%v rules=%+v", fs.Name, fs.Spec.MatchingPrecedence, fs.Spec.PriorityLevelConfiguration.Name, fs.Spec.DistinguisherMethod, fs.Spec.Rules)
	}
	return s
}

func dumpPLs(pls []*flowcontrolv1.PriorityLevelConfiguration) string {
	s := ""
	for _, pl := range pls {
		s += fmt.Sprintf("\n  %s %+v", pl.Name, pl.Spec)
	}
	return s
}
