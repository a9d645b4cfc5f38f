package lint

import (
	"fmt"
	"sort"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
)

// levelRank orders upstream's levels from the most to the least
// protected; a level of the user's own has no rank.
var levelRank = map[string]int{
	flowcontrolv1.PriorityLevelConfigurationNameExempt: 0, "system": 1, "node-high": 2, "leader-election": 3,
	"workload-high": 4, "workload-low": 5, "global-default": 6, flowcontrolv1.PriorityLevelConfigurationNameCatchAll: 7,
}

// protectedLevels are upstream's levels meant for the cluster's own
// traffic: a callback sharing one with its caller is upstream's design.
var protectedLevels = map[string]bool{"exempt": true, "system": true, "node-high": true, "leader-election": true, "workload-high": true}

// below reports whether a callback served at level cb waits no better
// than its caller at level caller: a lower upstream rank, or the caller's
// own level when that is not one of upstream's protected ones.
func below(cb, caller string) bool {
	if cb == caller {
		return !protectedLevels[cb]
	}
	rc, ok1 := levelRank[cb]
	rk, ok2 := levelRank[caller]
	return ok1 && ok2 && rc > rk
}

// callbackCallers are the requests that make the apiserver call a
// callback's backend: a user, and for the metrics APIs the HPA controller,
// reading an APIService's resources; a controller and a user writing what a webhook
// intercepts.
func callbackCallers(cb config.Callback) []Request {
	hpa := "system:serviceaccount:kube-system:horizontal-pod-autoscaler"
	rs := "system:serviceaccount:kube-system:replicaset-controller"
	ctrl := []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", groupAuthenticated}
	user := []string{groupAuthenticated}
	if cb.Kind == "APIService" {
		out := []Request{{User: "alice", Groups: user, Resource: true, Verb: "list", APIGroup: cb.Group, ResourceName: cb.Resource, Namespace: "default"}}
		// The HPA controller reads the resource, custom and external
		// metrics APIs; other aggregated APIs are called by their users.
		if strings.HasSuffix(cb.Group, "metrics.k8s.io") {
			out = append(out, Request{User: hpa, Groups: ctrl, Resource: true, Verb: "list", APIGroup: cb.Group, ResourceName: cb.Resource, Namespace: "default"})
		}
		return out
	}
	return []Request{
		{User: rs, Groups: ctrl, Resource: true, Verb: "create", APIGroup: cb.Group, ResourceName: cb.Resource, Namespace: "default"},
		{User: "alice", Groups: user, Resource: true, Verb: "create", APIGroup: cb.Group, ResourceName: cb.Resource, Namespace: "default"},
	}
}

// callbackRequests are what a backend sends back while it serves: an
// aggregated apiserver delegates authentication and authorization
// (TokenReview, SubjectAccessReview); a webhook typically reads.
func callbackRequests(cb config.Callback) []Request {
	sa := "system:serviceaccount:" + cb.Namespace + ":" + cb.ServiceAccount
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + cb.Namespace, groupAuthenticated}
	if cb.Kind == "APIService" {
		return []Request{
			{User: sa, Groups: groups, Resource: true, Verb: "create", APIGroup: "authorization.k8s.io", ResourceName: "subjectaccessreviews"},
			{User: sa, Groups: groups, Resource: true, Verb: "create", APIGroup: "authentication.k8s.io", ResourceName: "tokenreviews"},
		}
	}
	return []Request{
		{User: sa, Groups: groups, Resource: true, Verb: "get", ResourceName: "namespaces", Subresource: "", Namespace: ""},
	}
}

func (c *checker) checkCallbacks() {
	for _, cb := range c.in.Callbacks {
		cbFS, cbPL := c.classify(callbackRequests(cb)[0])
		if cbFS == "" {
			continue
		}
		var callers []string
		worst := ""
		for _, r := range callbackCallers(cb) {
			fs, pl := c.classify(r)
			if fs == "" || !below(cbPL, pl) {
				continue
			}
			callers = append(callers, fmt.Sprintf("%s -> %s (%s)", r, fs, pl))
			if worst == "" {
				worst = pl
			}
		}
		if len(callers) == 0 {
			continue
		}
		sort.Strings(callers)
		assumed := ""
		if cb.Assumed {
			assumed = " (assumed from the service's name: no workload in the input runs it)"
		}
		c.add(Finding{
			Rule:    RuleCallbackBelowCaller,
			Objects: []ObjectRef{fsRef(cbFS), plRef(cbPL)},
			Message: fmt.Sprintf("%s %s is served by %s/%s, whose service account %s/%s%s lands in FlowSchema %s, level %s; its callers wait no lower: %s",
				cb.Kind, cb.Name, cb.Namespace, cb.Service, cb.Namespace, cb.ServiceAccount, assumed, cbFS, cbPL, strings.Join(callers, "; ")),
			Why: fmt.Sprintf("the apiserver holds the caller's seat in %s while the backend calls back (TokenReview, SubjectAccessReview, reads); "+
				"those callbacks queue in %s, so when it is busy the caller times out (kubernetes/kubernetes#121202)", worst, cbPL),
			Fix: fmt.Sprintf("add a FlowSchema for serviceaccount %s/%s with a matchingPrecedence below %s's that routes it to workload-high or a level of its own",
				cb.Namespace, cb.ServiceAccount, cbFS),
		})
	}
}

// classify returns the FlowSchema and level r lands in, or "" when none.
func (c *checker) classify(r Request) (fs, pl string) {
	m := c.cfg.Classify(engineRequest(r)).FlowSchema
	if m == nil {
		return "", ""
	}
	return m.Name, m.Spec.PriorityLevelConfiguration.Name
}
