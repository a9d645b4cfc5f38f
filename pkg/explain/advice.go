package explain

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// advise suggests changes for the explained request.
func advise(in Input, r engine.Request, ex *Explanation, cls engine.Classification) []Advice {
	var out []Advice
	pl := cls.PriorityLevel
	if pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt {
		return nil
	}
	lim := pl.Spec.Limited
	reject := lim == nil || lim.LimitResponse.Type != flowcontrolv1.LimitResponseTypeQueue
	trouble := ex.Verdict.Kind == VerdictRejected || ex.Verdict.RejectReason != ""
	switch {
	case pl.Name == flowcontrolv1.PriorityLevelConfigurationNameCatchAll:
		y, err := IsolationYAML(r, ex.FlowSchema.Precedence)
		if err == nil {
			out = append(out, Advice{Text: fmt.Sprintf("the request falls to %s, a small level without queues meant as a safety net (every request beyond its seats gets 429 at once): give such requests a FlowSchema and a level of their own", pl.Name), YAML: y})
		}
	case trouble:
		y, err := IsolationYAML(r, ex.FlowSchema.Precedence)
		if err == nil {
			out = append(out, Advice{Text: fmt.Sprintf("to keep this flow from being rejected in %s (or from crowding the others there), isolate it with a FlowSchema of higher priority (lower matchingPrecedence) and a level of its own, as in the Kubernetes documentation's list-events example; check the shares with 'kubectl apf capacity -f FILE' before applying", pl.Name), YAML: y})
		}
	}
	if !reject && cls.Flow.Computed && cls.Flow.Method == "" && lim.LimitResponse.Queuing.Queues > 1 {
		out = append(out, Advice{Text: fmt.Sprintf("FlowSchema %s has no distinguisherMethod: every request it matches is one flow, dealt the same %d queues, so one heavy client fills them for all; distinguisherMethod ByUser (or ByNamespace) spreads clients over the %d queues", ex.FlowSchema.Name, lim.LimitResponse.Queuing.HandSize, lim.LimitResponse.Queuing.Queues)})
	}
	if r.Info.Verb == "list" && r.Info.Name == "" {
		if u, err := url.ParseRequestURI(r.URL); err == nil {
			q := u.Query()
			if q.Get("limit") == "" && q.Get("resourceVersion") == "" {
				cost := "can take many seats"
				if ex.Seats != nil && ex.Seats.Max == 1 {
					// the level caps it at 1 seat: the cost is how long it holds it
					cost = "holds its seat for as long as that takes"
				}
				out = append(out, Advice{Text: "this LIST reads every object and " + cost + ": paginate with ?limit=500, read from the watch cache with ?resourceVersion=0, or better keep an informer (one LIST, then a WATCH)"})
			}
		}
	}
	if wl := ex.Verdict.WaitLimit; wl > 0 && ex.Verdict.RejectReason == ReasonTimeOut {
		out = append(out, Advice{Text: fmt.Sprintf("the wait limit is a quarter of the request's deadline (%v here, at most 1m): a short ?timeout= in the client (kubectl --request-timeout) shortens it", wl)})
	}
	return out
}

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// slug turns s into a DNS-1123 label fragment.
func slug(s string) string {
	s = nonDNS.ReplaceAllString(strings.ToLower(s), "-")
	s = strings.Trim(s, "-")
	if len(s) > 40 {
		s = strings.Trim(s[:40], "-")
	}
	if s == "" {
		s = "flow"
	}
	return s
}

// IsolationYAML returns a FlowSchema and a PriorityLevelConfiguration, as
// YAML, that give r's identity and kind of request a level of their own:
// the FlowSchema matches the same user (or service account), verb and
// resource (or non-resource path), with matchingPrecedence one below
// winnerPrecedence so that it is evaluated first, and distinguishes flows
// by user; the level queues (16 queues, hand 4, 50 per queue) and lends
// nothing.
func IsolationYAML(r engine.Request, winnerPrecedence int32) (string, error) {
	prec := winnerPrecedence - 1
	if prec < 2 {
		// Precedence 1 is exempt's; below it nothing else can be put first.
		return "", fmt.Errorf("FlowSchema precedence %d leaves no room before it", winnerPrecedence)
	}
	ri := r.Info
	var what string
	if ri.IsResourceRequest {
		what = ri.Verb + "-" + rsName(ri.Resource, ri.Subresource)
	} else {
		what = ri.Verb + "-" + ri.Path
	}
	name := slug("isolate-" + r.Identity.User + "-" + what)
	var subject flowcontrolv1.Subject
	if ns, sa, err := serviceaccount.SplitUsername(r.Identity.User); err == nil {
		subject = flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: ns, Name: sa}}
	} else {
		subject = flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: r.Identity.User}}
	}
	rule := flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{subject}}
	if ri.IsResourceRequest {
		rr := flowcontrolv1.ResourcePolicyRule{Verbs: []string{ri.Verb}, APIGroups: []string{ri.APIGroup}, Resources: []string{rsName(ri.Resource, ri.Subresource)}}
		if ri.Namespace == "" {
			rr.ClusterScope = true
		} else {
			rr.Namespaces = []string{ri.Namespace}
		}
		rule.ResourceRules = []flowcontrolv1.ResourcePolicyRule{rr}
	} else {
		rule.NonResourceRules = []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{ri.Verb}, NonResourceURLs: []string{ri.Path}}}
	}
	shares, lendable := int32(10), int32(0)
	fs := flowcontrolv1.FlowSchema{
		TypeMeta:   metav1.TypeMeta{APIVersion: flowcontrolv1.SchemeGroupVersion.String(), Kind: "FlowSchema"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: name},
			MatchingPrecedence:         prec,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules:                      []flowcontrolv1.PolicyRulesWithSubjects{rule},
		},
	}
	pl := flowcontrolv1.PriorityLevelConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: flowcontrolv1.SchemeGroupVersion.String(), Kind: "PriorityLevelConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: &shares,
				LendablePercent:          &lendable,
				LimitResponse: flowcontrolv1.LimitResponse{
					Type:    flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 16, HandSize: 4, QueueLengthLimit: 50},
				},
			},
		},
	}
	a, err := config.CleanYAML(&fs)
	if err != nil {
		return "", err
	}
	b, err := config.CleanYAML(&pl)
	if err != nil {
		return "", err
	}
	return a + "---\n" + b, nil
}

func rsName(resource, sub string) string {
	if sub == "" {
		return resource
	}
	return resource + "/" + sub
}
