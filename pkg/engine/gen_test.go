package engine

import (
	"fmt"
	"math/rand/v2"
	"net/url"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fcboot "k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
)

// The generators draw from small pools so that names, namespaces, users and
// paths collide often: collisions are where matching rules are subtle.
var (
	genNamespaces = []string{"default", "kube-system", "kube", "team-a", "foo"}
	genSANames    = []string{"default", "builder", "x"}
	genUsers      = []string{"alice", "bob", "system:kube-controller-manager", "system:kube-scheduler", "system:node:n1", "system:anonymous"}
	genGroups     = []string{"system:authenticated", "system:unauthenticated", "system:masters", "system:nodes", "system:serviceaccounts", "system:serviceaccounts:kube-system", "devs"}
	genVerbs      = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "proxy"}
	genAPIGroups  = []string{"", "apps", "coordination.k8s.io", "rbac.authorization.k8s.io"}
	genResources  = []string{"pods", "pods/status", "pods/log", "pods/exec", "pods/eviction", "nodes", "nodes/status", "namespaces", "namespaces/status", "namespaces/finalize", "leases", "deployments", "deployments/scale", "configmaps", "clusterroles", "services/proxy"}
	genURLs       = []string{"/healthz", "/healthz/*", "/readyz", "/livez", "/apis/*", "/apis", "/", "/metrics", "/metrics/", "/version", "/openapi/*", "/api/*"}
	genNRVerbs    = []string{"get", "list", "create", "update", "delete", "patch", "post"}
	genPLNames    = []string{"p1", "p2", "p3", "global-default", "workload-low", "missing", "exempt", "catch-all"}
	genFSNames    = []string{"aaa", "a", "b", "c", "d", "e", "f", "g", "global-default", "probes", "zzz", "exempt", "catch-all", "service-accounts", "catch-alm", "catch-al"}
)

func pick[T any](r *rand.Rand, l []T) T { return l[r.IntN(len(l))] }

// subset returns a random non-empty subset of l, or ["*"] sometimes.
func subset(r *rand.Rand, l []string, wildcard string) []string {
	if wildcard != "" && r.IntN(2) == 0 {
		return []string{wildcard}
	}
	n := 1 + r.IntN(3)
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, pick(r, l))
	}
	return out
}

func i32(v int32) *int32 { return &v }

// genPriorityLevels draws a set of defaulted levels, sometimes broken ones,
// sometimes without the mandatory objects.
func genPriorityLevels(r *rand.Rand) []*flowcontrolv1.PriorityLevelConfiguration {
	var out []*flowcontrolv1.PriorityLevelConfiguration
	if r.IntN(5) != 0 {
		e := fcboot.MandatoryPriorityLevelConfigurationExempt.DeepCopy()
		if r.IntN(3) == 0 {
			e.Spec.Exempt.NominalConcurrencyShares = i32(int32(r.IntN(50)))
			e.Spec.Exempt.LendablePercent = i32(int32(r.IntN(101)))
		}
		out = append(out, e)
	} else if r.IntN(2) == 0 {
		// A Limited level named exempt: broken ("non-alignment between name
		// and type"), so the server imagines the real one.
		out = append(out, genLimitedPL(r, "exempt"))
	}
	if r.IntN(5) != 0 {
		out = append(out, fcboot.MandatoryPriorityLevelConfigurationCatchAll.DeepCopy())
	}
	used := map[string]bool{"exempt": true, "catch-all": true}
	for n := r.IntN(6); n > 0; n-- {
		name := pick(r, genPLNames)
		if used[name] || name == "missing" {
			continue
		}
		used[name] = true
		out = append(out, genLimitedPL(r, name))
	}
	for i, pl := range out {
		pl.UID = types.UID(fmt.Sprintf("pl-uid-%d", i))
	}
	return out
}

func genLimitedPL(r *rand.Rand, name string) *flowcontrolv1.PriorityLevelConfiguration {
	lim := &flowcontrolv1.LimitedPriorityLevelConfiguration{
		NominalConcurrencyShares: i32(int32(r.IntN(101))),
		LendablePercent:          i32(int32(r.IntN(101))),
	}
	if r.IntN(2) == 0 {
		lim.BorrowingLimitPercent = i32(int32(r.IntN(300)))
	}
	if r.IntN(3) == 0 {
		lim.LimitResponse.Type = flowcontrolv1.LimitResponseTypeReject
	} else {
		lim.LimitResponse.Type = flowcontrolv1.LimitResponseTypeQueue
		lim.LimitResponse.Queuing = &flowcontrolv1.QueuingConfiguration{
			Queues:           pick(r, []int32{1, 2, 16, 64, 128, 1024}),
			HandSize:         pick(r, []int32{1, 2, 4, 6, 8, 10}),
			QueueLengthLimit: 50,
		}
	}
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: lim},
	}
	switch r.IntN(12) { // broken variants the server ignores
	case 0:
		pl.Spec.Type = flowcontrolv1.PriorityLevelEnablementExempt // union mismatch
	case 1:
		if lim.LimitResponse.Queuing == nil {
			lim.LimitResponse.Queuing = &flowcontrolv1.QueuingConfiguration{Queues: 8, HandSize: 2, QueueLengthLimit: 5}
		} else {
			lim.LimitResponse.Queuing = nil
		}
	}
	return pl
}

func genSubject(r *rand.Rand) flowcontrolv1.Subject {
	switch r.IntN(3) {
	case 0:
		n := pick(r, genUsers)
		if r.IntN(6) == 0 {
			n = "*"
		}
		return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: n}}
	case 1:
		n := pick(r, genGroups)
		if r.IntN(3) == 0 {
			n = pick(r, []string{"system:authenticated", "system:unauthenticated"})
		}
		if r.IntN(8) == 0 {
			n = "*"
		}
		return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: n}}
	default:
		n := pick(r, genSANames)
		if r.IntN(2) == 0 {
			n = "*"
		}
		return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: pick(r, genNamespaces), Name: n}}
	}
}

func genRule(r *rand.Rand) flowcontrolv1.PolicyRulesWithSubjects {
	var pr flowcontrolv1.PolicyRulesWithSubjects
	for n := 1 + r.IntN(3); n > 0; n-- {
		pr.Subjects = append(pr.Subjects, genSubject(r))
	}
	for n := r.IntN(3) + r.IntN(2); n > 0; n-- {
		rr := flowcontrolv1.ResourcePolicyRule{
			Verbs:        subset(r, genVerbs, "*"),
			APIGroups:    subset(r, genAPIGroups, "*"),
			Resources:    subset(r, genResources, "*"),
			ClusterScope: r.IntN(2) == 0,
		}
		if r.IntN(4) != 0 {
			rr.Namespaces = subset(r, genNamespaces, "*")
		}
		pr.ResourceRules = append(pr.ResourceRules, rr)
	}
	for n := r.IntN(2); n > 0; n-- {
		pr.NonResourceRules = append(pr.NonResourceRules, flowcontrolv1.NonResourcePolicyRule{
			Verbs:           subset(r, genNRVerbs, "*"),
			NonResourceURLs: subset(r, genURLs, "*"),
		})
	}
	return pr
}

// genFlowSchemas draws defaulted FlowSchemas with precedence ties, references
// to missing or broken levels, and sometimes real mandatory objects.
func genFlowSchemas(r *rand.Rand, pls []*flowcontrolv1.PriorityLevelConfiguration) []*flowcontrolv1.FlowSchema {
	var out []*flowcontrolv1.FlowSchema
	used := map[string]bool{}
	for n := 1 + r.IntN(12); n > 0; n-- {
		name := pick(r, genFSNames)
		if used[name] {
			continue
		}
		used[name] = true
		var fs *flowcontrolv1.FlowSchema
		switch {
		case name == "exempt" && r.IntN(2) == 0:
			fs = fcboot.MandatoryFlowSchemaExempt.DeepCopy()
		case name == "catch-all" && r.IntN(2) == 0:
			fs = fcboot.MandatoryFlowSchemaCatchAll.DeepCopy()
		default:
			fs = &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: name}}
			fs.Spec.MatchingPrecedence = pick(r, []int32{2, 100, 500, 500, 1000, 9000, 9900, 10000})
			if name == "exempt" {
				fs.Spec.MatchingPrecedence = 1
			}
			fs.Spec.PriorityLevelConfiguration.Name = pick(r, genPLNames)
			if len(pls) > 0 && r.IntN(4) != 0 {
				fs.Spec.PriorityLevelConfiguration.Name = pick(r, pls).Name
			}
			switch r.IntN(3) {
			case 0:
				fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType}
			case 1:
				fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByNamespaceType}
			}
			for k := r.IntN(4) + r.IntN(2); k > 0; k-- {
				fs.Spec.Rules = append(fs.Spec.Rules, genRule(r))
			}
		}
		fs.UID = types.UID("fs-uid-" + name)
		out = append(out, fs)
	}
	return out
}

// genIdentity draws an identity, including service accounts, anonymous and
// (rarely) a user in no group at all, which matches nothing.
func genIdentity(r *rand.Rand) Identity {
	switch r.IntN(8) {
	case 0, 1:
		if r.IntN(10) == 0 {
			return Identity{User: pick(r, genUsers)} // no groups: the fallback case
		}
		return NewServiceAccountIdentity(pick(r, genNamespaces), pick(r, genSANames))
	case 2:
		return AnonymousIdentity()
	case 3:
		return NewServiceAccountIdentity(pick(r, genNamespaces), pick(r, genSANames))
	case 4:
		return NewUserIdentity("system:node:n1", "system:nodes")
	case 5:
		return NewUserIdentity("root", "system:masters")
	default:
		var gs []string
		for n := r.IntN(3); n > 0; n-- {
			gs = append(gs, pick(r, genGroups))
		}
		return NewUserIdentity(pick(r, genUsers), gs...)
	}
}

// genRequest draws a request path and method covering resource and
// non-resource requests, subresources, the Namespace-object quirk and the
// /watch/ prefix.
func genRequest(r *rand.Rand) (method, path string) {
	ns := pick(r, genNamespaces)
	name := pick(r, []string{"", "", "n1", "foo"})
	seg := func(parts ...string) string {
		p := ""
		for _, s := range parts {
			if s != "" {
				p += "/" + s
			}
		}
		return p
	}
	withName := func(base string, subs ...string) string {
		if name == "" {
			return base
		}
		p := base + "/" + name
		if r.IntN(2) == 0 {
			p += "/" + pick(r, subs)
		}
		return p
	}
	switch r.IntN(12) {
	case 0:
		path = withName(seg("api", "v1", "namespaces", ns, pick(r, []string{"pods", "configmaps", "services"})), "status", "log", "exec", "eviction", "binding", "proxy")
	case 1:
		path = withName("/api/v1/nodes", "status", "proxy")
	case 2: // the Namespace objects themselves
		path = withName("/api/v1/namespaces", "status", "finalize")
	case 3:
		path = withName(seg("apis", "apps", "v1", "namespaces", ns, "deployments"), "scale", "status")
	case 4:
		path = withName(seg("apis", "coordination.k8s.io", "v1", "namespaces", ns, "leases"), "status")
	case 5:
		path = withName("/apis/rbac.authorization.k8s.io/v1/clusterroles", "status")
	case 6:
		path = seg("apis", "apps", "v1", "watch", "namespaces", ns, "deployments")
	case 7:
		path = withName("/api/v1/pods", "status")
	default:
		path = pick(r, []string{"/healthz", "/healthz/etcd", "/healthzfoo", "/readyz", "/livez", "/metrics", "/metrics/slis", "/apis", "/apis/", "/api", "/api/v1", "/version", "/openapi/v2", "/", "/logs", "/apis/apps", "/apis/apps/v1"})
	}
	method = pick(r, []string{"GET", "GET", "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"})
	switch r.IntN(6) {
	case 0:
		path += "?watch=1"
	case 1:
		path += "?fieldSelector=" + url.QueryEscape("metadata.name=foo")
	}
	return method, path
}
