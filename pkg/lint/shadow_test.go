package lint

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// refMatch is a deliberately separate, literal transcription of
// k8s.io/apiserver/pkg/util/flowcontrol/rule.go used as the oracle of the
// randomized tests below.
func refMatch(fs *flowcontrolv1.FlowSchema, r Request) bool {
	for _, rule := range fs.Spec.Rules {
		subj := false
		for _, s := range rule.Subjects {
			switch s.Kind {
			case "User":
				subj = subj || (s.User != nil && (s.User.Name == "*" || s.User.Name == r.User))
			case "Group":
				if s.Group != nil {
					for _, g := range r.Groups {
						subj = subj || g == s.Group.Name
					}
					subj = subj || s.Group.Name == "*"
				}
			case "ServiceAccount":
				if s.ServiceAccount != nil {
					u, ok := strings.CutPrefix(r.User, "system:serviceaccount:")
					if ok {
						if s.ServiceAccount.Name == "*" {
							rest, ok2 := strings.CutPrefix(u, s.ServiceAccount.Namespace)
							subj = subj || (ok2 && strings.HasPrefix(rest, ":"))
						} else {
							subj = subj || u == s.ServiceAccount.Namespace+":"+s.ServiceAccount.Name
						}
					}
				}
			}
		}
		if !subj {
			continue
		}
		in := func(x string, list []string, w string) bool {
			if len(list) == 1 && list[0] == w {
				return true
			}
			for _, y := range list {
				if y == x {
					return true
				}
			}
			return false
		}
		if r.Resource {
			res := r.ResourceName
			if r.Subresource != "" {
				res = res + "/" + r.Subresource
			}
			for _, rr := range rule.ResourceRules {
				if in(r.Verb, rr.Verbs, "*") && in(res, rr.Resources, "*") && in(r.APIGroup, rr.APIGroups, "*") &&
					((r.Namespace == "" && rr.ClusterScope) || (r.Namespace != "" && in(r.Namespace, rr.Namespaces, "*"))) {
					return true
				}
			}
			continue
		}
		for _, nr := range rule.NonResourceRules {
			if !in(r.Verb, nr.Verbs, "*") {
				continue
			}
			for _, p := range nr.NonResourceURLs {
				prefix := strings.TrimSuffix(p, "*")
				if !strings.HasSuffix(prefix, "/") {
					prefix += "/"
				}
				if p == "*" || p == r.Path || strings.HasPrefix(r.Path, prefix) {
					return true
				}
			}
		}
	}
	return false
}

func refClassify(ordered []*flowcontrolv1.FlowSchema, r Request) int {
	for i, fs := range ordered {
		if refMatch(fs, r) {
			return i
		}
	}
	return -1
}

// Pools from which random configurations and requests are drawn. They are
// small on purpose, so that random schemas overlap often.
var (
	poolUsers      = []string{"alice", "system:anonymous", "bob", "system:serviceaccount:ns1:sa1", "system:serviceaccount:ns1:sa2", "system:serviceaccount:ns2:sa1", "system:serviceaccount:ns10:x", "system:kube-proxy"}
	poolGroups     = []string{"g1", "g2", "system:serviceaccounts", "system:authenticated", "system:unauthenticated"}
	poolSANS       = []string{"ns1", "ns2", "ns"}
	poolVerbs      = []string{"get", "list", "create", "watch", "post"}
	poolAPIGroups  = []string{"", "apps", "coordination.k8s.io"}
	poolResources  = []string{"pods", "pods/status", "nodes", "leases"}
	poolNamespaces = []string{"ns1", "ns2", "kube-system"}
	poolURLs       = []string{"/healthz", "/healthz/*", "/apis/*", "/api", "/", "/metrics/", "/readyz"}
	poolPaths      = []string{"/healthz", "/healthz/etcd", "/healthzfoo", "/apis", "/apis/", "/apis/apps/v1", "/api", "/api/v1", "/metrics", "/metrics/x", "/readyz", "/other", "/"}
)

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

func subset(rng *rand.Rand, xs []string, wildcard string) []string {
	if wildcard != "" && rng.IntN(4) == 0 {
		return []string{wildcard}
	}
	var out []string
	for _, x := range xs {
		if rng.IntN(3) == 0 {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		out = []string{pick(rng, xs)}
	}
	return out
}

func randomSubject(rng *rand.Rand) flowcontrolv1.Subject {
	switch rng.IntN(3) {
	case 0:
		name := pick(rng, poolUsers)
		if rng.IntN(5) == 0 {
			name = "*"
		}
		return flowcontrolv1.Subject{Kind: "User", User: &flowcontrolv1.UserSubject{Name: name}}
	case 1:
		name := pick(rng, poolGroups)
		if rng.IntN(6) == 0 {
			name = "*"
		}
		return flowcontrolv1.Subject{Kind: "Group", Group: &flowcontrolv1.GroupSubject{Name: name}}
	default:
		name := pick(rng, []string{"sa1", "sa2", "*"})
		return flowcontrolv1.Subject{Kind: "ServiceAccount", ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: pick(rng, poolSANS), Name: name}}
	}
}

func randomSchema(rng *rand.Rand, name string) *flowcontrolv1.FlowSchema {
	fs := &flowcontrolv1.FlowSchema{}
	fs.Name = name
	fs.Spec.MatchingPrecedence = int32(1 + rng.IntN(5))
	fs.Spec.PriorityLevelConfiguration.Name = "pl"
	for r := 0; r < 1+rng.IntN(2); r++ {
		var rule flowcontrolv1.PolicyRulesWithSubjects
		for s := 0; s < 1+rng.IntN(2); s++ {
			rule.Subjects = append(rule.Subjects, randomSubject(rng))
		}
		for k := 0; k < rng.IntN(3); k++ {
			rr := flowcontrolv1.ResourcePolicyRule{
				Verbs:        subset(rng, poolVerbs, "*"),
				APIGroups:    subset(rng, poolAPIGroups, "*"),
				Resources:    subset(rng, poolResources, "*"),
				ClusterScope: rng.IntN(2) == 0,
			}
			if rng.IntN(4) != 0 {
				rr.Namespaces = subset(rng, poolNamespaces, "*")
			}
			rule.ResourceRules = append(rule.ResourceRules, rr)
		}
		for k := 0; k < rng.IntN(2); k++ {
			rule.NonResourceRules = append(rule.NonResourceRules, flowcontrolv1.NonResourcePolicyRule{
				Verbs:           subset(rng, poolVerbs, "*"),
				NonResourceURLs: subset(rng, poolURLs, "*"),
			})
		}
		fs.Spec.Rules = append(fs.Spec.Rules, rule)
	}
	return fs
}

func randomRequest(rng *rand.Rand) Request {
	r := Request{User: pick(rng, append(poolUsers, "carol", "system:serviceaccount:ns:z", "system:serviceaccount:ns1", "system:anonymous"))}
	// The identities the standard authenticators produce (see space.go).
	if r.User == "system:anonymous" {
		r.Groups = append(r.Groups, "system:unauthenticated")
	} else {
		r.Groups = append(r.Groups, "system:authenticated")
	}
	for _, g := range poolGroups[:3] {
		if rng.IntN(3) == 0 {
			r.Groups = append(r.Groups, g)
		}
	}
	r.Verb = pick(rng, append(poolVerbs, "delete", "put"))
	if rng.IntN(3) == 0 {
		r.Path = pick(rng, poolPaths)
		return r
	}
	r.Resource = true
	r.APIGroup = pick(rng, append(poolAPIGroups, "batch"))
	r.ResourceName, r.Subresource, _ = strings.Cut(pick(rng, append(poolResources, "secrets", "nodes/status")), "/")
	if rng.IntN(3) != 0 {
		r.Namespace = pick(rng, append(poolNamespaces, "default"))
	}
	return r
}

// TestAnalyzeAgreesWithFirstMatch cross-checks the subsumption decision with
// the literal first-match evaluator: a schema declared shadowed never wins any
// sampled request, and a schema declared reachable really wins its witness.
func TestAnalyzeAgreesWithFirstMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	const configs, samples = 400, 1500
	shadowed, reachable := 0, 0
	for c := 0; c < configs; c++ {
		n := 2 + rng.IntN(4)
		var fss []*flowcontrolv1.FlowSchema
		for i := 0; i < n; i++ {
			fss = append(fss, randomSchema(rng, fmt.Sprintf("fs%d", i)))
		}
		cfg := engine.NewConfig(fss, []*flowcontrolv1.PriorityLevelConfiguration{pl("pl")})
		// Leave out the imagined mandatory schemas: they would shadow or
		// catch everything and hide what the random schemas do.
		ordered := cfg.FlowSchemas[1 : len(cfg.FlowSchemas)-1]
		got := Analyze(ordered)
		hits := make([]int, len(ordered))
		reqs := make([]Request, samples)
		for s := range reqs {
			reqs[s] = randomRequest(rng)
		}
		for _, r := range reqs {
			i := refClassify(ordered, r)
			// The engine's classifier is the second oracle; the random pools
			// never contain system:masters, so the imagined exempt schema
			// never matches and the imagined catch-all takes the rest.
			if e := engineClassify(cfg, r); e != i {
				t.Fatalf("config %d: oracles disagree on %v: literal %d, engine %d", c, r, i, e)
			}
			if i >= 0 {
				hits[i]++
			}
		}
		for i, res := range got {
			switch {
			case res.Undecided:
				t.Fatalf("config %d: %s undecided", c, res.FlowSchema)
			case res.Shadowed || res.Empty:
				shadowed++
				if hits[i] > 0 {
					t.Fatalf("config %d: %s declared shadowed/empty but won %d sampled requests\n%s", c, res.FlowSchema, hits[i], dumpSchemas(ordered))
				}
				// The named shadowers alone must take every request the
				// schema matches.
				byName := map[string]*flowcontrolv1.FlowSchema{}
				for _, fs := range ordered {
					byName[fs.Name] = fs
				}
				for _, r := range reqs {
					if !refMatch(ordered[i], r) {
						continue
					}
					taken := false
					for _, sh := range res.Shadowers {
						taken = taken || refMatch(byName[sh], r)
					}
					if !taken {
						t.Fatalf("config %d: %s shadowed by %v, but none of them matches %v\n%s", c, res.FlowSchema, res.Shadowers, r, dumpSchemas(ordered))
					}
				}
			default:
				reachable++
				if res.Witness == nil {
					t.Fatalf("config %d: %s reachable without witness", c, res.FlowSchema)
				}
				anon := res.Witness.User == "system:anonymous"
				if hasAny(res.Witness.Groups, groupAuthenticated) == anon || hasAny(res.Witness.Groups, groupUnauthenticated) != anon {
					t.Fatalf("config %d: witness %v is not an identity the authenticators produce", c, res.Witness)
				}
				if w := refClassify(ordered, *res.Witness); w != i {
					t.Fatalf("config %d: witness %v of %s classifies to %d\n%s", c, res.Witness, res.FlowSchema, w, dumpSchemas(ordered))
				}
			}
		}
	}
	t.Logf("%d schemas declared shadowed or empty, %d reachable", shadowed, reachable)
	// Guard against a generator that never exercises one of the two answers.
	if shadowed < configs/10 || reachable < configs/2 {
		t.Fatalf("generator too one-sided: %d shadowed, %d reachable", shadowed, reachable)
	}
}

func engineClassify(cfg *engine.Config, r Request) int {
	got := cfg.Classify(engineRequest(r))
	for i, fs := range cfg.FlowSchemas {
		if fs == got.FlowSchema {
			if i == len(cfg.FlowSchemas)-1 {
				return -1
			}
			return i - 1
		}
	}
	return -2
}

func hasAny(xs []string, ys ...string) bool {
	for _, x := range xs {
		for _, y := range ys {
			if x == y {
				return true
			}
		}
	}
	return false
}

func dumpSchemas(fss []*flowcontrolv1.FlowSchema) string {
	var b strings.Builder
	for _, fs := range fss {
		fmt.Fprintf(&b, "%s prec=%d rules=%+v\n", fs.Name, fs.Spec.MatchingPrecedence, fs.Spec.Rules)
	}
	return b.String()
}

func pl(name string) *flowcontrolv1.PriorityLevelConfiguration {
	p := &flowcontrolv1.PriorityLevelConfiguration{}
	p.Name = name
	p.Spec.Type = flowcontrolv1.PriorityLevelEnablementLimited
	p.Spec.Limited = &flowcontrolv1.LimitedPriorityLevelConfiguration{
		LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
	}
	return p
}

// BenchmarkShadowing compares the exact decision over the upstream defaults
// with the naive alternative it replaces: classifying sampled requests with
// the engine (which can only ever show reachability, never prove shadowing).
func BenchmarkShadowing(b *testing.B) {
	fss, pls := config.UpstreamDefaults()
	cfg := engine.NewConfig(fss, pls)
	b.Run("exact/defaults", func(b *testing.B) {
		for b.Loop() {
			Analyze(cfg.FlowSchemas)
		}
	})
	b.Run("sample-10000-requests/defaults", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 2))
		reqs := make([]engine.Request, 10000)
		for i := range reqs {
			reqs[i] = engineRequest(randomRequest(rng))
		}
		b.ResetTimer()
		for b.Loop() {
			for _, r := range reqs {
				cfg.Classify(r)
			}
		}
	})
}
