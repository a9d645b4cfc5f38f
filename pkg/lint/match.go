package lint

import (
	"sort"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// Request is the part of a request that FlowSchema matching looks at
// (k8s.io/apiserver/pkg/util/flowcontrol.RequestDigest: the user's name and
// groups and the RequestInfo fields rule.go reads).
type Request struct {
	User   string   `json:"user"`
	Groups []string `json:"groups,omitempty"`
	// Resource is RequestInfo.IsResourceRequest.
	Resource     bool   `json:"resource"`
	Verb         string `json:"verb"`
	APIGroup     string `json:"apiGroup,omitempty"`
	ResourceName string `json:"resourceName,omitempty"`
	Subresource  string `json:"subresource,omitempty"`
	// Namespace is empty for cluster-scoped requests.
	Namespace string `json:"namespace,omitempty"`
	// Path is the URL path of a non-resource request.
	Path string `json:"path,omitempty"`
}

// String renders the request in one line for messages.
func (r Request) String() string {
	var b strings.Builder
	b.WriteString("user ")
	b.WriteString(quote(r.User))
	if len(r.Groups) > 0 {
		b.WriteString(" groups [")
		b.WriteString(strings.Join(r.Groups, " "))
		b.WriteString("]")
	}
	b.WriteString(" ")
	b.WriteString(r.Verb)
	if !r.Resource {
		b.WriteString(" ")
		b.WriteString(r.Path)
		return b.String()
	}
	b.WriteString(" ")
	if r.APIGroup != "" {
		b.WriteString(r.APIGroup)
		b.WriteString("/")
	}
	b.WriteString(r.ResourceName)
	if r.Subresource != "" {
		b.WriteString("/")
		b.WriteString(r.Subresource)
	}
	if r.Namespace == "" {
		b.WriteString(" (cluster scope)")
	} else {
		b.WriteString(" in namespace ")
		b.WriteString(r.Namespace)
	}
	return b.String()
}

func quote(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// Matches reports whether fs matches r, exactly as
// k8s.io/apiserver/pkg/util/flowcontrol/rule.go:matchesFlowSchema decides it.
func Matches(fs *flowcontrolv1.FlowSchema, r Request) bool {
	for _, rule := range fs.Spec.Rules {
		if matchesRule(rule, r) {
			return true
		}
	}
	return false
}

func matchesRule(rule flowcontrolv1.PolicyRulesWithSubjects, r Request) bool {
	subject := false
	for _, s := range rule.Subjects {
		if matchesSubject(s, r.User, r.Groups) {
			subject = true
			break
		}
	}
	if !subject {
		return false
	}
	if r.Resource {
		for _, rr := range rule.ResourceRules {
			if matchesResourceRule(rr, r) {
				return true
			}
		}
		return false
	}
	for _, nr := range rule.NonResourceRules {
		if containsString(r.Verb, nr.Verbs, flowcontrolv1.VerbAll) && matchNonResourceURL(nr.NonResourceURLs, r.Path) {
			return true
		}
	}
	return false
}

// matchesSubject mirrors rule.go:matchesSubject.
func matchesSubject(s flowcontrolv1.Subject, user string, groups []string) bool {
	switch s.Kind {
	case flowcontrolv1.SubjectKindUser:
		return s.User != nil && (s.User.Name == flowcontrolv1.NameAll || s.User.Name == user)
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			return false
		}
		if s.Group.Name == flowcontrolv1.NameAll {
			return true
		}
		for _, g := range groups {
			if g == s.Group.Name {
				return true
			}
		}
		return false
	case flowcontrolv1.SubjectKindServiceAccount:
		return s.ServiceAccount != nil && saMatches(*s.ServiceAccount, user)
	}
	return false
}

// saMatches mirrors rule.go's serviceAccountMatchesNamespace (name "*") and
// k8s.io/apiserver/pkg/authentication/serviceaccount.MatchesUsername: only the
// username counts, never the system:serviceaccounts groups.
func saMatches(sa flowcontrolv1.ServiceAccountSubject, user string) bool {
	if sa.Name == flowcontrolv1.NameAll {
		return strings.HasPrefix(user, saUsernamePrefix+sa.Namespace+":")
	}
	return user == saUsernamePrefix+sa.Namespace+":"+sa.Name
}

// matchesResourceRule mirrors rule.go:matchesResourcePolicyRule.
func matchesResourceRule(rr flowcontrolv1.ResourcePolicyRule, r Request) bool {
	res := r.ResourceName
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	if !containsString(r.Verb, rr.Verbs, flowcontrolv1.VerbAll) ||
		!containsString(res, rr.Resources, flowcontrolv1.ResourceAll) ||
		!containsString(r.APIGroup, rr.APIGroups, flowcontrolv1.APIGroupAll) {
		return false
	}
	if r.Namespace == "" {
		return rr.ClusterScope
	}
	return containsString(r.Namespace, rr.Namespaces, flowcontrolv1.NamespaceEvery)
}

// matchNonResourceURL mirrors rule.go:matchPolicyRuleNonResourceURL: an exact
// path also matches everything below it, "/apis/*" does not match "/apis".
func matchNonResourceURL(urls []string, path string) bool {
	for _, u := range urls {
		if u == flowcontrolv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasPrefix(path, nonResourcePrefix(u)) {
			return true
		}
	}
	return false
}

// containsString mirrors rule.go:containsString: the wildcard is special only
// when it is the whole list.
func containsString(x string, list []string, wildcard string) bool {
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

// Ordered returns the FlowSchemas in the order the apiserver tries them, as
// k8s.io/apiserver/pkg/util/flowcontrol/apf_controller.go:digestFlowSchemasLocked
// builds it: schemas whose priority level does not exist are dropped, the rest
// sorted by matchingPrecedence then name (apihelpers.FlowSchemaSequence), the
// mandatory exempt schema prepended and catch-all appended when missing.
// mandatoryExempt and mandatoryCatchAll are the objects to imagine.
func Ordered(fss []*flowcontrolv1.FlowSchema, pls []*flowcontrolv1.PriorityLevelConfiguration,
	mandatoryExempt, mandatoryCatchAll *flowcontrolv1.FlowSchema) []*flowcontrolv1.FlowSchema {
	plNames := map[string]bool{}
	for _, pl := range pls {
		plNames[pl.Name] = true
	}
	// The mandatory priority levels are imagined when missing
	// (apf_controller.go:lockAndDigestConfigObjects calls imaginePL).
	plNames[flowcontrolv1.PriorityLevelConfigurationNameExempt] = true
	plNames[flowcontrolv1.PriorityLevelConfigurationNameCatchAll] = true
	var out []*flowcontrolv1.FlowSchema
	haveExempt, haveCatchAll := false, false
	for _, fs := range fss {
		if !plNames[fs.Spec.PriorityLevelConfiguration.Name] {
			continue
		}
		out = append(out, fs)
		haveExempt = haveExempt || fs.Name == flowcontrolv1.FlowSchemaNameExempt
		haveCatchAll = haveCatchAll || fs.Name == flowcontrolv1.FlowSchemaNameCatchAll
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Spec.MatchingPrecedence != b.Spec.MatchingPrecedence {
			return a.Spec.MatchingPrecedence < b.Spec.MatchingPrecedence
		}
		return a.Name < b.Name
	})
	if !haveExempt && mandatoryExempt != nil {
		out = append([]*flowcontrolv1.FlowSchema{mandatoryExempt}, out...)
	}
	if !haveCatchAll && mandatoryCatchAll != nil {
		out = append(out, mandatoryCatchAll)
	}
	return out
}

// Classify returns the FlowSchema an ordered list (see Ordered) assigns r to,
// mirroring apf_controller.go:startRequest: the first match wins, and a request
// nothing matches falls to the schema named catch-all.
func Classify(ordered []*flowcontrolv1.FlowSchema, r Request) *flowcontrolv1.FlowSchema {
	var catchAll *flowcontrolv1.FlowSchema
	for _, fs := range ordered {
		if Matches(fs, r) {
			return fs
		}
		if fs.Name == flowcontrolv1.FlowSchemaNameCatchAll {
			catchAll = fs
		}
	}
	return catchAll
}
