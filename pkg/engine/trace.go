package engine

import (
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// TraceStep explains one FlowSchema in matching order.
type TraceStep struct {
	// FlowSchema is the schema's name.
	FlowSchema string
	// Precedence is its matchingPrecedence.
	Precedence int32
	// PriorityLevel is the level it references.
	PriorityLevel string
	// Dangling is true when the server skips the schema because its level is
	// missing or broken; Rules is empty then.
	Dangling bool
	// Imagined is true for a mandatory schema the server supplies.
	Imagined bool
	// Matched is true for the winner.
	Matched bool
	// Rules explains every rule of the schema (for the winner: up to and
	// including the first matching one).
	Rules []RuleTrace
	// Reason is a one-line summary: why it did not match, or which rule did.
	Reason string
}

// RuleTrace explains one PolicyRulesWithSubjects.
type RuleTrace struct {
	// Index is the rule's index in spec.rules.
	Index int
	// Matched is true when the rule matches.
	Matched bool
	// Subject is the index of the first matching subject, or -1.
	Subject int
	// SubjectDetail says which subject matched, or why none did.
	SubjectDetail string
	// Policies explains each resourceRules entry (resource requests) or
	// nonResourceRules entry (non-resource requests).
	Policies []PolicyTrace
	// Failed is the first failing clause in upstream's order: ClauseSubject,
	// ClauseRuleKind (the rule has no rules of the request's kind) or that of
	// the closest policy; ClauseNone when the rule matches.
	Failed Clause
	// Reason is a one-line explanation.
	Reason string
}

// PolicyTrace explains one resource or non-resource policy rule.
type PolicyTrace struct {
	// NonResource is true for a nonResourceRules entry.
	NonResource bool
	// Index is the entry's index in its list.
	Index int
	// Failed is the first failing clause, ClauseNone when it matches.
	Failed Clause
	// Detail explains the failing clause, or the matched clauses.
	Detail string
}

// ClassifyWithTrace classifies r like Classify and also explains, for every
// FlowSchema in matching order up to the winner, why it did or did not
// match. Dangling schemas appear where they would sort, marked as skipped.
func (c *Config) ClassifyWithTrace(r Request) Classification {
	out := c.Classify(r)
	if out.Bypass != "" {
		return out
	}
	imagined := map[*flowcontrolv1.FlowSchema]bool{}
	for _, fs := range c.FlowSchemas {
		if fs.UID == "" && (fs.Name == flowcontrolv1.FlowSchemaNameExempt || fs.Name == flowcontrolv1.FlowSchemaNameCatchAll) && isImagined(c, fs) {
			imagined[fs] = true
		}
	}
	for _, e := range c.all {
		st := TraceStep{
			FlowSchema:    e.fs.Name,
			Precedence:    e.fs.Spec.MatchingPrecedence,
			PriorityLevel: e.fs.Spec.PriorityLevelConfiguration.Name,
			Imagined:      imagined[e.fs],
		}
		if e.dangling {
			st.Dangling = true
			st.Reason = fmt.Sprintf("skipped: dangling, priority level %q is missing or broken", st.PriorityLevel)
			out.Trace = append(out.Trace, st)
			continue
		}
		winner := e.fs == out.FlowSchema && !out.Fallback
		for i := range e.fs.Spec.Rules {
			rt := traceRule(&r, &e.fs.Spec.Rules[i], i)
			st.Rules = append(st.Rules, rt)
			if rt.Matched && winner {
				break
			}
		}
		switch {
		case winner:
			st.Matched = true
			st.Reason = fmt.Sprintf("matched by rule %d: %s", out.Rule, st.Rules[out.Rule].Reason)
		case len(e.fs.Spec.Rules) == 0:
			st.Reason = "no rules"
		default:
			st.Reason = "no rule matched"
			if len(st.Rules) == 1 {
				st.Reason += ": " + st.Rules[0].Reason
			}
		}
		if out.Fallback && e.fs == out.FlowSchema {
			st.Reason += "; no FlowSchema matched, so the server falls back to catch-all"
		}
		out.Trace = append(out.Trace, st)
		if winner {
			break
		}
	}
	return out
}

func isImagined(c *Config, fs *flowcontrolv1.FlowSchema) bool {
	for _, n := range c.Imagined {
		if n == "FlowSchema/"+fs.Name {
			return true
		}
	}
	return false
}

// traceRule explains one rule; the verdict equals matchesPolicyRule's.
func traceRule(r *Request, rule *flowcontrolv1.PolicyRulesWithSubjects, idx int) RuleTrace {
	rt := RuleTrace{Index: idx, Subject: matchingSubject(&r.Identity, rule.Subjects)}
	if rt.Subject >= 0 {
		rt.SubjectDetail = "subject " + describeSubject(&rule.Subjects[rt.Subject]) + " matches " + describeIdentity(&r.Identity)
	} else {
		rt.SubjectDetail = fmt.Sprintf("no subject matches %s (subjects: %s)", describeIdentity(&r.Identity), describeSubjects(rule.Subjects))
	}
	ri := &r.Info
	var best *PolicyTrace
	if ri.IsResourceRequest {
		for i := range rule.ResourceRules {
			pr := &rule.ResourceRules[i]
			pt := PolicyTrace{Index: i, Failed: resourceRuleFailure(ri, pr)}
			pt.Detail = explainResource(ri, pr, pt.Failed)
			rt.Policies = append(rt.Policies, pt)
		}
	} else {
		for i := range rule.NonResourceRules {
			pr := &rule.NonResourceRules[i]
			pt := PolicyTrace{NonResource: true, Index: i, Failed: nonResourceRuleFailure(ri, pr)}
			pt.Detail = explainNonResource(ri, pr, pt.Failed)
			rt.Policies = append(rt.Policies, pt)
		}
	}
	for i := range rt.Policies {
		p := &rt.Policies[i]
		if best == nil || clauseRank(p.Failed) > clauseRank(best.Failed) {
			best = p
		}
	}
	switch {
	case rt.Subject < 0:
		rt.Failed, rt.Reason = ClauseSubject, rt.SubjectDetail
	case len(rt.Policies) == 0:
		rt.Failed = ClauseRuleKind
		if ri.IsResourceRequest {
			rt.Reason = "a resource request is tested only against resourceRules, and this rule has only nonResourceRules"
		} else {
			rt.Reason = "a non-resource request is tested only against nonResourceRules, and this rule has only resourceRules"
		}
	case best.Failed == ClauseNone:
		rt.Matched = true
		kind := "resourceRules"
		if best.NonResource {
			kind = "nonResourceRules"
		}
		rt.Reason = fmt.Sprintf("%s; %s[%d]: %s", rt.SubjectDetail, kind, best.Index, best.Detail)
	default:
		rt.Failed = best.Failed
		kind := "resourceRules"
		if best.NonResource {
			kind = "nonResourceRules"
		}
		rt.Reason = fmt.Sprintf("%s[%d]: %s", kind, best.Index, best.Detail)
		if len(rt.Policies) > 1 {
			rt.Reason = fmt.Sprintf("none of %d %s match; closest %s", len(rt.Policies), kind, rt.Reason)
		}
	}
	return rt
}

// clauseRank orders failures by how far evaluation got, so the summary
// names the policy that came closest to matching.
func clauseRank(c Clause) int {
	switch c {
	case ClauseVerb:
		return 1
	case ClauseResource, ClauseNonResourceURL:
		return 2
	case ClauseAPIGroup:
		return 3
	case ClauseClusterScope, ClauseNamespace:
		return 4
	case ClauseNone:
		return 5
	}
	return 0
}

func explainResource(ri *request.RequestInfo, pr *flowcontrolv1.ResourcePolicyRule, failed Clause) string {
	res := rsJoin(ri.Resource, ri.Subresource)
	switch failed {
	case ClauseVerb:
		return fmt.Sprintf("verb %q not in verbs %s", ri.Verb, quoteList(pr.Verbs))
	case ClauseResource:
		msg := fmt.Sprintf("resource %q not in resources %s", res, quoteList(pr.Resources))
		if ri.Subresource != "" && ContainsString(ri.Resource, pr.Resources, "") {
			msg += fmt.Sprintf(" (a subresource must be listed as %q)", res)
		}
		return msg
	case ClauseAPIGroup:
		return fmt.Sprintf("apiGroup %q not in apiGroups %s", ri.APIGroup, quoteList(pr.APIGroups))
	case ClauseClusterScope:
		return "the request is cluster-scoped (no namespace) and clusterScope is false"
	case ClauseNamespace:
		msg := fmt.Sprintf("namespace %q not in namespaces %s", ri.Namespace, quoteList(pr.Namespaces))
		if ri.Resource == "namespaces" && ri.Name != "" {
			msg += " (a request on a Namespace object carries that namespace, so clusterScope does not apply)"
		}
		return msg
	}
	scope := fmt.Sprintf("namespace %q in %s", ri.Namespace, quoteList(pr.Namespaces))
	if ri.Namespace == "" {
		scope = "cluster-scoped and clusterScope is true"
	}
	return fmt.Sprintf("verb %q, resource %q, apiGroup %q, %s", ri.Verb, res, ri.APIGroup, scope)
}

func explainNonResource(ri *request.RequestInfo, pr *flowcontrolv1.NonResourcePolicyRule, failed Clause) string {
	switch failed {
	case ClauseVerb:
		msg := fmt.Sprintf("verb %q not in verbs %s", ri.Verb, quoteList(pr.Verbs))
		switch ri.Verb {
		case "get", "list", "create", "update", "delete", "deletecollection", "patch", "watch", "proxy":
		default:
			msg += " (a non-resource request's verb is its lower-cased HTTP method; only verbs [\"*\"] matches it)"
		}
		return msg
	case ClauseNonResourceURL:
		return fmt.Sprintf("path %q matches none of nonResourceURLs %s (each URL also matches its sub-paths; a trailing /* does not match the bare prefix)", ri.Path, quoteList(pr.NonResourceURLs))
	}
	i := MatchingNonResourceURL(pr.NonResourceURLs, ri.Path)
	return fmt.Sprintf("verb %q, path %q matches %q", ri.Verb, ri.Path, pr.NonResourceURLs[i])
}

func describeSubject(s *flowcontrolv1.Subject) string {
	switch s.Kind {
	case flowcontrolv1.SubjectKindUser:
		if s.User != nil {
			return fmt.Sprintf("User %q", s.User.Name)
		}
	case flowcontrolv1.SubjectKindGroup:
		if s.Group != nil {
			return fmt.Sprintf("Group %q", s.Group.Name)
		}
	case flowcontrolv1.SubjectKindServiceAccount:
		if s.ServiceAccount != nil {
			return fmt.Sprintf("ServiceAccount %q", s.ServiceAccount.Namespace+"/"+s.ServiceAccount.Name)
		}
	}
	return fmt.Sprintf("%s (without its %s field, never matches)", s.Kind, s.Kind)
}

func describeSubjects(ss []flowcontrolv1.Subject) string {
	if len(ss) == 0 {
		return "none"
	}
	out := ""
	for i := range ss {
		if i > 0 {
			out += ", "
		}
		out += describeSubject(&ss[i])
	}
	return out
}

func describeIdentity(id *Identity) string {
	return fmt.Sprintf("user %q with groups %s", id.User, quoteList(id.Groups))
}
