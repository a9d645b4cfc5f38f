package engine

import (
	"fmt"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// Classification is the outcome of classifying one request.
type Classification struct {
	// Bypass is non-empty when kube-apiserver serves the request without APF;
	// nothing else is set then.
	Bypass string
	// FlowSchema is the FlowSchema that matched.
	FlowSchema *flowcontrolv1.FlowSchema
	// PriorityLevel is its priority level.
	PriorityLevel *flowcontrolv1.PriorityLevelConfiguration
	// Fallback is true when no FlowSchema matched (a user in neither
	// system:authenticated nor system:unauthenticated) and the server fell
	// back to catch-all with the warning "no match found".
	Fallback bool
	// Rule is the index in FlowSchema.Spec.Rules of the first matching rule
	// (-1 with Fallback).
	Rule int
	// Flow is the flow identity; Flow.Computed is false when the server
	// computes none (exempt, Reject, or a single queue).
	Flow Flow
	// Hand is the set of queues the flow may use, in deal order, for a level
	// with queues (with a single queue: [0]); nil otherwise.
	Hand []int
	// Trace explains every FlowSchema considered, in matching order, up to
	// and including the winner; set only by ClassifyWithTrace.
	Trace []TraceStep
}

// Flow is the flow identity of a classified request
// (apf_controller.go:startRequest, computeFlowDistinguisher, hashFlowID).
type Flow struct {
	// Computed is false for exempt levels, Reject levels and levels with at
	// most one queue: the server then uses distinguisher "" and hash 0.
	Computed bool
	// Method is the FlowSchema's distinguisher method (ByUser, ByNamespace)
	// or "" for none.
	Method flowcontrolv1.FlowDistinguisherMethodType
	// Distinguisher is the user name, the namespace, or "".
	Distinguisher string
	// Hash is HashFlowID(flowSchema, distinguisher), or 0.
	Hash uint64
}

// Classify classifies r against c without building a trace (the fast path).
func (c *Config) Classify(r Request) Classification {
	if r.Bypass != "" {
		return Classification{Bypass: r.Bypass}
	}
	idx, rule := -1, -1
	catchAll := -1
	for i, fs := range c.FlowSchemas {
		if rule = matchesFlowSchema(&r, fs); rule >= 0 {
			idx = i
			break
		}
		if fs.Name == flowcontrolv1.FlowSchemaNameCatchAll {
			catchAll = i
		}
	}
	out := Classification{Rule: rule}
	if idx < 0 {
		// apf_controller.go:startRequest falls back to the catch-all FlowSchema
		// (there always is one: NewConfig imagines it when absent).
		idx, out.Fallback, out.Rule = catchAll, true, -1
	}
	c.finish(&out, &r, idx)
	return out
}

func (c *Config) finish(out *Classification, r *Request, idx int) {
	fs := c.FlowSchemas[idx]
	li := c.levelOf[idx]
	out.FlowSchema, out.PriorityLevel = fs, li.pl
	if !li.exempt && li.numQueues > 1 {
		out.Flow = computeFlow(r, fs)
	}
	if li.dealer != nil && li.numQueues > 0 {
		out.Hand = li.dealer.DealIntoHand(out.Flow.Hash, make([]int, 0, li.dealer.handSize))
	}
}

// computeFlow mirrors computeFlowDistinguisher and hashFlowID. An unknown
// distinguisher type (rejected by validation; upstream panics) is treated as
// none.
func computeFlow(r *Request, fs *flowcontrolv1.FlowSchema) Flow {
	f := Flow{Computed: true}
	if m := fs.Spec.DistinguisherMethod; m != nil {
		f.Method = m.Type
		switch m.Type {
		case flowcontrolv1.FlowDistinguisherMethodByUserType:
			f.Distinguisher = r.Identity.User
		case flowcontrolv1.FlowDistinguisherMethodByNamespaceType:
			f.Distinguisher = r.Info.Namespace
		}
	}
	f.Hash = HashFlowID(fs.Name, f.Distinguisher)
	return f
}

// matchesFlowSchema mirrors rule.go:matchesFlowSchema and returns the index
// of the first matching rule, or -1.
func matchesFlowSchema(r *Request, fs *flowcontrolv1.FlowSchema) int {
	for i := range fs.Spec.Rules {
		if matchesPolicyRule(r, &fs.Spec.Rules[i]) {
			return i
		}
	}
	return -1
}

// matchesPolicyRule mirrors rule.go:matchesPolicyRule: some subject must
// match, then a resource request is tested only against resourceRules and a
// non-resource request only against nonResourceRules.
func matchesPolicyRule(r *Request, rule *flowcontrolv1.PolicyRulesWithSubjects) bool {
	if matchingSubject(&r.Identity, rule.Subjects) < 0 {
		return false
	}
	ri := &r.Info
	if ri.IsResourceRequest {
		for i := range rule.ResourceRules {
			if resourceRuleFailure(ri, &rule.ResourceRules[i]) == ClauseNone {
				return true
			}
		}
		return false
	}
	for i := range rule.NonResourceRules {
		if nonResourceRuleFailure(ri, &rule.NonResourceRules[i]) == ClauseNone {
			return true
		}
	}
	return false
}

// matchingSubject returns the index of the first subject that matches, or -1.
func matchingSubject(id *Identity, subjects []flowcontrolv1.Subject) int {
	for i := range subjects {
		if matchesSubject(id, &subjects[i]) {
			return i
		}
	}
	return -1
}

// matchesSubject mirrors rule.go:matchesSubject. ServiceAccount subjects
// look only at the user name, never at the groups.
func matchesSubject(id *Identity, s *flowcontrolv1.Subject) bool {
	switch s.Kind {
	case flowcontrolv1.SubjectKindUser:
		return s.User != nil && (s.User.Name == flowcontrolv1.NameAll || s.User.Name == id.User)
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			return false
		}
		if s.Group.Name == "*" {
			return true
		}
		for _, g := range id.Groups {
			if g == s.Group.Name {
				return true
			}
		}
		return false
	case flowcontrolv1.SubjectKindServiceAccount:
		return s.ServiceAccount != nil && MatchesServiceAccount(s.ServiceAccount, id.User)
	default:
		return false
	}
}

// MatchesServiceAccount reports whether the user name is the service
// account sa names, as rule.go:matchesSubject decides it for a
// ServiceAccount subject: name "*" through
// rule.go:serviceAccountMatchesNamespace, any other name through
// k8s.io/apiserver/pkg/authentication/serviceaccount.MatchesUsername. Only
// the user name counts, never the system:serviceaccounts groups.
func MatchesServiceAccount(sa *flowcontrolv1.ServiceAccountSubject, user string) bool {
	if sa.Name == flowcontrolv1.NameAll {
		return serviceAccountMatchesNamespace(sa.Namespace, user)
	}
	return serviceaccount.MatchesUsername(sa.Namespace, sa.Name, user)
}

// serviceAccountMatchesNamespace mirrors rule.go:serviceAccountMatchesNamespace:
// the user name is system:serviceaccount:<namespace>:<anything>.
func serviceAccountMatchesNamespace(namespace, username string) bool {
	const prefix = "system:serviceaccount:"
	if !strings.HasPrefix(username, prefix) {
		return false
	}
	username = username[len(prefix):]
	if !strings.HasPrefix(username, namespace) {
		return false
	}
	return strings.HasPrefix(username[len(namespace):], ":")
}

// Clause names one test inside a policy rule.
type Clause string

// The clauses of a policy rule, in upstream's evaluation order
// (rule.go:matchesResourcePolicyRule, matchesNonResourcePolicyRule).
const (
	ClauseNone           Clause = ""
	ClauseSubject        Clause = "subject"
	ClauseRuleKind       Clause = "ruleKind"
	ClauseVerb           Clause = "verb"
	ClauseResource       Clause = "resource"
	ClauseAPIGroup       Clause = "apiGroup"
	ClauseClusterScope   Clause = "clusterScope"
	ClauseNamespace      Clause = "namespace"
	ClauseNonResourceURL Clause = "nonResourceURL"
)

// resourceRuleFailure mirrors rule.go:matchesResourcePolicyRule and returns
// the first failing clause, or ClauseNone.
func resourceRuleFailure(ri *request.RequestInfo, pr *flowcontrolv1.ResourcePolicyRule) Clause {
	if !ContainsString(ri.Verb, pr.Verbs, flowcontrolv1.VerbAll) {
		return ClauseVerb
	}
	if !ContainsString(rsJoin(ri.Resource, ri.Subresource), pr.Resources, flowcontrolv1.ResourceAll) {
		return ClauseResource
	}
	if !ContainsString(ri.APIGroup, pr.APIGroups, flowcontrolv1.APIGroupAll) {
		return ClauseAPIGroup
	}
	if len(ri.Namespace) == 0 {
		if pr.ClusterScope {
			return ClauseNone
		}
		return ClauseClusterScope
	}
	if !ContainsString(ri.Namespace, pr.Namespaces, flowcontrolv1.NamespaceEvery) {
		return ClauseNamespace
	}
	return ClauseNone
}

// nonResourceRuleFailure mirrors rule.go:matchesNonResourcePolicyRule.
func nonResourceRuleFailure(ri *request.RequestInfo, pr *flowcontrolv1.NonResourcePolicyRule) Clause {
	if !ContainsString(ri.Verb, pr.Verbs, flowcontrolv1.VerbAll) {
		return ClauseVerb
	}
	if MatchingNonResourceURL(pr.NonResourceURLs, ri.Path) < 0 {
		return ClauseNonResourceURL
	}
	return ClauseNone
}

// MatchingNonResourceURL mirrors rule.go:matchPolicyRuleNonResourceURL and
// returns the index of the first matching URL pattern or -1. Every pattern
// is a prefix: "/healthz" matches "/healthz/etcd", "/apis/*" does not match
// "/apis", and "/" matches everything.
func MatchingNonResourceURL(patterns []string, path string) int {
	for i, p := range patterns {
		if p == flowcontrolv1.NonResourceAll || p == path {
			return i
		}
		if strings.HasPrefix(path, NonResourceURLPrefix(p)) {
			return i
		}
	}
	return -1
}

// NonResourceURLPrefix is the prefix that rule.go:matchPolicyRuleNonResourceURL
// derives from a rule's URL pattern: one trailing '*' stripped, then a '/'
// ensured.
func NonResourceURLPrefix(pattern string) string {
	prefix := strings.TrimSuffix(pattern, "*")
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return prefix
}

func rsJoin(resource, subresource string) string {
	if subresource != "" {
		return resource + "/" + subresource
	}
	return resource
}

// ContainsString mirrors rule.go:containsString: the wildcard is special only
// when it is the whole list (validation keeps it alone).
func ContainsString(x string, list []string, wildcard string) bool {
	if len(list) == 1 && list[0] == wildcard {
		return true
	}
	for _, y := range list {
		if x == y {
			return true
		}
	}
	return false
}

// quoteList renders a string list for trace messages.
func quoteList(l []string) string {
	if len(l) == 0 {
		return "[]"
	}
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ",") + "]"
}
