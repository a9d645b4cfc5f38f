package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
)

// benchRequests is a mix of typical requests: workloads, controllers,
// nodes, probes, service accounts.
func benchRequests(t testing.TB) []Request {
	specs := []struct {
		verb, path string
		id         Identity
	}{
		{"get", "/api/v1/namespaces/default/pods/p", NewUserIdentity("alice")},
		{"list", "/apis/apps/v1/namespaces/team-a/deployments", NewServiceAccountIdentity("team-a", "builder")},
		{"watch", "/api/v1/namespaces/kube-system/endpoints", NewServiceAccountIdentity("kube-system", "coredns")},
		{"update", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", NewUserIdentity("system:node:n1", "system:nodes")},
		{"get", "/api/v1/namespaces/default/configmaps/c", NewUserIdentity("system:node:n1", "system:nodes")},
		{"get", "/readyz", AnonymousIdentity()},
		{"update", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler", NewUserIdentity("system:kube-scheduler")},
		{"create", "/api/v1/namespaces/default/events", NewUserIdentity("bob", "devs")},
	}
	var out []Request
	for _, s := range specs {
		out = append(out, mustParse(t, s.verb, s.path, s.id))
	}
	return out
}

// largeFlowSchemas returns the defaults plus n FlowSchemas for distinct
// teams that typical requests do not match, so they are all evaluated.
func largeFlowSchemas(n int) []*flowcontrolv1.FlowSchema {
	fss := DefaultFlowSchemas()
	all := []string{"*"}
	for i := 0; i < n; i++ {
		team := fmt.Sprintf("team-%03d", i)
		fss = append(fss, fsB("fs-"+team, int32(1000+i*40), "workload-low",
			rule([]flowcontrolv1.Subject{groupSubj(team), saSubj(team, "*")},
				[]flowcontrolv1.ResourcePolicyRule{resRule([]string{"get", "list", "watch"}, []string{"", "apps"}, []string{"pods", "configmaps", "deployments"}, []string{team}, false)},
				[]flowcontrolv1.NonResourcePolicyRule{{Verbs: all, NonResourceURLs: []string{"/apis/" + team + "/*"}}})))
	}
	return fss
}

// benchSchema is a named set of FlowSchemas a benchmark classifies with.
type benchSchema struct {
	name string
	fss  []*flowcontrolv1.FlowSchema
}

// benchSchemas are the FlowSchemas the classification benchmarks run on:
// the defaults, and the defaults with 200 extra schemas.
func benchSchemas() []benchSchema {
	return []benchSchema{{"defaults", DefaultFlowSchemas()}, {"200-flowschemas", largeFlowSchemas(200)}}
}

// BenchmarkClassify measures classifications per second: the engine's fast
// path, its trace path, and upstream's controller (Handle on a no-restraint
// queue set, which includes classification, flow hashing and the filter's
// bookkeeping) in the same run, on the defaults and with 200 extra schemas.
func BenchmarkClassify(b *testing.B) {
	for _, c := range benchSchemas() {
		cfg := NewConfig(c.fss, DefaultPriorityLevels())
		reqs := benchRequests(b)
		b.Run(c.name+"/engine-fast", func(b *testing.B) {
			i := 0
			for b.Loop() {
				_ = cfg.Classify(reqs[i%len(reqs)])
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "classifications/s")
		})
		b.Run(c.name+"/engine-trace", func(b *testing.B) {
			i := 0
			for b.Loop() {
				_ = cfg.ClassifyWithTrace(reqs[i%len(reqs)])
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "classifications/s")
		})
		b.Run(c.name+"/upstream-handle", func(b *testing.B) {
			u := startUpstream(b, c.fss, DefaultPriorityLevels(), 600)
			defer u.Stop()
			digests := make([]utilflowcontrol.RequestDigest, len(reqs))
			for j, r := range reqs {
				ri := r.Info
				digests[j] = utilflowcontrol.RequestDigest{RequestInfo: &ri, User: &user.DefaultInfo{Name: r.Identity.User, Groups: r.Identity.Groups}}
			}
			ctx := context.Background()
			var fsName string
			note := func(fs *flowcontrolv1.FlowSchema, _ *flowcontrolv1.PriorityLevelConfiguration, _ string) {
				fsName = fs.Name
			}
			we := func() fcrequest.WorkEstimate { return fcrequest.WorkEstimate{InitialSeats: 1} }
			i := 0
			b.ResetTimer()
			for b.Loop() {
				u.ctl.Handle(ctx, digests[i%len(digests)], note, we, func(bool) {}, func() {})
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "classifications/s")
			_ = fsName
		})
	}
}

// BenchmarkClassifyMemo measures the replayers' memoized classification
// (ClassifyMemo, which fairqueue's replay, the calibration, tune and the
// reconstruction classify through) against Config.Classify in the same
// run, on the same stream: the typical requests, each for 128 objects of
// its own (a name classification does not read, so the memo answers them
// from one entry), on the defaults and with 200 extra schemas. It reports
// each one's classifications a second and memo-speedup, their ratio.
func BenchmarkClassifyMemo(b *testing.B) {
	for _, c := range benchSchemas() {
		cfg := NewConfig(c.fss, DefaultPriorityLevels())
		var stream []Request
		for _, r := range benchRequests(b) {
			for i := range 128 {
				r.Info.Name = fmt.Sprintf("object-%d", i)
				stream = append(stream, r)
			}
		}
		b.Run(c.name, func(b *testing.B) {
			var plain, memo time.Duration
			var m ClassifyMemo
			for b.Loop() {
				start := time.Now()
				for i := range stream {
					if cfg.Classify(stream[i]).PriorityLevel == nil {
						b.Fatal("no level")
					}
				}
				mid := time.Now()
				for i := range stream {
					if m.Classify(cfg, &stream[i]).PriorityLevel == nil {
						b.Fatal("no level")
					}
				}
				plain, memo = plain+mid.Sub(start), memo+time.Since(mid)
			}
			n := float64(b.N * len(stream))
			b.ReportMetric(n/plain.Seconds(), "classify/s")
			b.ReportMetric(n/memo.Seconds(), "memo/s")
			b.ReportMetric(plain.Seconds()/memo.Seconds(), "memo-speedup")
		})
	}
}
