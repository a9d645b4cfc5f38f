package engine

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// memoCase mutates a generated request so that the memo sees what a
// reader may hand it: a user or namespace from the fuzzer, a request info
// that no path gives (a namespace on a non-resource request), an object
// name or API version that classification never reads.
func memoCase(r *rand.Rand, user, ns string) Request {
	for {
		method, path := genRequest(r)
		req, err := ParseRequest(method, path, genIdentity(r))
		if err != nil {
			continue
		}
		switch r.IntN(8) {
		case 0:
			req.Identity.User = user
		case 1:
			req.Info.Namespace = ns
		case 2:
			req.Info.IsResourceRequest = !req.Info.IsResourceRequest
		case 3:
			req.Info.Name, req.Info.APIVersion = ns, user
		case 4:
			req.Identity.Groups = append(append([]string(nil), req.Identity.Groups...), user)
		case 5:
			if gs := req.Identity.Groups; len(gs) > 0 {
				req.Identity.Groups = append([]string{pick(r, []string{"system:masters", "system:nodes", user})}, gs[1:]...)
			}
		}
		return req
	}
}

// checkMemo classifies n requests drawn from r under configurations drawn
// from cr, each by a memo and by Config.Classify, and fails on the first
// difference. One memo serves both configurations, in turn (the first,
// the second, the first again): it must start afresh at each change.
func checkMemo(t *testing.T, cr, r *rand.Rand, n int, user, ns string) (hits int) {
	var cfgs []*Config
	for range 2 {
		pls := genPriorityLevels(cr)
		cfgs = append(cfgs, NewConfig(genFlowSchemas(cr, pls), pls))
	}
	// half the requests repeat earlier ones, as clients do
	var seen []Request
	var m, all ClassifyMemo
	all.collide = true // every key in one bucket: the comparison decides
	for i := range n {
		c := cfgs[(3*i/n)%len(cfgs)] // 0, 1, 0
		var req Request
		if len(seen) > 0 && r.IntN(2) == 0 {
			req = seen[r.IntN(len(seen))]
		} else {
			req = memoCase(r, user, ns)
			seen = append(seen, req)
		}
		before := m.Len()
		got := m.Classify(c, &req)
		want := c.Classify(req)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("request %d %+v: memo gives %+v, Classify %+v", i, req, got, want)
		}
		if got := all.Classify(c, &req); !reflect.DeepEqual(got, want) {
			t.Fatalf("request %d %+v: memo of colliding keys gives %+v, Classify %+v", i, req, got, want)
		}
		if m.Len() == before && req.Bypass == "" {
			hits++
		}
	}
	return hits
}

// TestClassifyMemo checks the memo against Config.Classify on generated
// configurations and requests, and that it is hit.
func TestClassifyMemo(t *testing.T) {
	hits := 0
	for s := range uint64(40) {
		hits += checkMemo(t, rand.New(rand.NewPCG(s, 1)), rand.New(rand.NewPCG(s, 2)), 1000, "mallory", "team-b")
	}
	if hits < 10_000 {
		t.Errorf("the memo answered %d of 40000 requests, want at least 10000", hits)
	}
}

// TestClassifyMemoInvalidated checks that the memo starts afresh when the
// configuration's FlowSchemas change, even under the same *Config.
func TestClassifyMemoInvalidated(t *testing.T) {
	dc := *DefaultConfig()
	c := &dc
	req, err := ParseRequest("get", "/api/v1/namespaces/default/pods/x", NewUserIdentity("alice"))
	if err != nil {
		t.Fatal(err)
	}
	var m ClassifyMemo
	if got := m.Classify(c, &req).FlowSchema.Name; got != "global-default" {
		t.Fatalf("default configuration: %s, want global-default", got)
	}
	d := *c
	d.FlowSchemas = append([]*flowcontrolv1.FlowSchema{c.FlowSchemas[len(c.FlowSchemas)-1]}, c.FlowSchemas...)
	d.levelOf = append([]*levelInfo{c.levelOf[len(c.levelOf)-1]}, c.levelOf...)
	if got, want := m.Classify(&d, &req).FlowSchema.Name, d.Classify(req).FlowSchema.Name; got != want || got != "catch-all" {
		t.Errorf("after catch-all moved first: memo %s, Classify %s, want catch-all", got, want)
	}
	if got := m.Classify(c, &req).FlowSchema.Name; got != "global-default" {
		t.Fatalf("default configuration again: %s, want global-default", got)
	}
	c.FlowSchemas, c.levelOf = d.FlowSchemas, d.levelOf
	if got := m.Classify(c, &req).FlowSchema.Name; got != "catch-all" {
		t.Errorf("the same *Config with other FlowSchemas: memo %s, want catch-all", got)
	}
}

// FuzzClassifyMemo checks the memo against Config.Classify on random
// configurations and requests, with users and namespaces from the fuzzer.
func FuzzClassifyMemo(f *testing.F) {
	f.Add(uint64(1), uint64(2), "alice", "default")
	f.Add(uint64(3), uint64(4), "system:serviceaccount:kube-system:x", "kube-system")
	f.Add(uint64(5), uint64(6), "", "")
	f.Add(uint64(7), uint64(8), "a\x00b", "ns\x00")
	f.Fuzz(func(t *testing.T, cs, rs uint64, user, ns string) {
		checkMemo(t, rand.New(rand.NewPCG(cs, 1)), rand.New(rand.NewPCG(rs, 2)), 300, user, ns)
	})
}

// TestClassifyMemoBounded checks that the memo holds at most
// MaxMemoizedClassifications keys and still answers right past them.
func TestClassifyMemoBounded(t *testing.T) {
	c := DefaultConfig()
	var m ClassifyMemo
	for i := range MaxMemoizedClassifications + 10 {
		req, err := ParseRequest("list", fmt.Sprintf("/api/v1/namespaces/ns-%d/pods", i), NewUserIdentity("alice"))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := m.Classify(c, &req), c.Classify(req); !reflect.DeepEqual(got, want) {
			t.Fatalf("namespace %d: memo gives %+v, Classify %+v", i, got, want)
		}
		if m.Len() > MaxMemoizedClassifications {
			t.Fatalf("after %d keys the memo holds %d, want at most %d", i+1, m.Len(), MaxMemoizedClassifications)
		}
	}
	if m.Len() != 10 {
		t.Errorf("the memo holds %d keys, want the last 10, since it started afresh when full", m.Len())
	}
}
