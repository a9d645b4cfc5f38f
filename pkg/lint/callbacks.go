package lint

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// Callback is an APIService or a webhook whose backend service the
// apiserver calls while it serves another request.
type Callback struct {
	// Kind is APIService, ValidatingWebhookConfiguration or
	// MutatingWebhookConfiguration; Name is the object's.
	Kind, Name string
	// Group, Version and Resource describe what the callers ask for: the
	// APIService's group and version, or a webhook rule's first group and
	// resource.
	Group, Version, Resource string
	// Namespace and Service name the backend service.
	Namespace, Service string
	// ServiceAccount is the backend's service account: the one of the
	// Deployment (or StatefulSet, DaemonSet) in the input whose pods the
	// service selects, else assumed to be named like the service.
	ServiceAccount string
	// Assumed is true when ServiceAccount was not found in the input.
	Assumed bool
}

// workload is what callbacks need of a Deployment, StatefulSet or DaemonSet.
type workload struct {
	namespace, serviceAccount string
	labels                    map[string]string
}

// service is what callbacks need of a Service.
type service struct {
	namespace, name string
	selector        map[string]string
}

// parseCallbackObject records an APIService, a webhook configuration, a
// Service or a workload of raw in out; it reports whether raw was one.
func parseCallbackObject(raw []byte, group, kind string, out *Objects) bool {
	var meta struct {
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	switch {
	case group == "apiregistration.k8s.io" && kind == "APIService":
		var o struct {
			Spec struct {
				Group   string `json:"group"`
				Version string `json:"version"`
				Service *struct {
					Namespace string `json:"namespace"`
					Name      string `json:"name"`
				} `json:"service"`
			} `json:"spec"`
		}
		if json.Unmarshal(raw, &o) != nil || json.Unmarshal(raw, &meta) != nil || o.Spec.Service == nil {
			return true // a local APIService is served by kube-apiserver itself
		}
		out.Callbacks = append(out.Callbacks, Callback{Kind: kind, Name: meta.Metadata.Name, Group: o.Spec.Group,
			Version: o.Spec.Version, Resource: "pods", Namespace: o.Spec.Service.Namespace, Service: o.Spec.Service.Name})
		return true
	case group == "admissionregistration.k8s.io" && (kind == "ValidatingWebhookConfiguration" || kind == "MutatingWebhookConfiguration"):
		var o struct {
			Webhooks []struct {
				ClientConfig struct {
					Service *struct {
						Namespace string `json:"namespace"`
						Name      string `json:"name"`
					} `json:"service"`
				} `json:"clientConfig"`
				Rules []struct {
					APIGroups []string `json:"apiGroups"`
					Resources []string `json:"resources"`
				} `json:"rules"`
			} `json:"webhooks"`
		}
		if json.Unmarshal(raw, &o) != nil || json.Unmarshal(raw, &meta) != nil {
			return true
		}
		for _, w := range o.Webhooks {
			if w.ClientConfig.Service == nil {
				continue
			}
			cb := Callback{Kind: kind, Name: meta.Metadata.Name, Resource: "pods",
				Namespace: w.ClientConfig.Service.Namespace, Service: w.ClientConfig.Service.Name}
			if len(w.Rules) > 0 {
				r := w.Rules[0]
				if len(r.APIGroups) > 0 && r.APIGroups[0] != "*" {
					cb.Group = r.APIGroups[0]
				}
				if len(r.Resources) > 0 && r.Resources[0] != "*" && r.Resources[0] != "*/*" {
					cb.Resource, _, _ = strings.Cut(r.Resources[0], "/")
				}
			}
			out.Callbacks = append(out.Callbacks, cb)
		}
		return true
	case group == "" && kind == "Service":
		var o struct {
			Spec struct {
				Selector map[string]string `json:"selector"`
			} `json:"spec"`
		}
		if json.Unmarshal(raw, &o) == nil && json.Unmarshal(raw, &meta) == nil {
			out.services = append(out.services, service{namespace: meta.Metadata.Namespace, name: meta.Metadata.Name, selector: o.Spec.Selector})
		}
		return true
	case group == "apps" && (kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet"):
		var o struct {
			Spec struct {
				Template struct {
					Metadata struct {
						Labels map[string]string `json:"labels"`
					} `json:"metadata"`
					Spec struct {
						ServiceAccountName string `json:"serviceAccountName"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if json.Unmarshal(raw, &o) == nil && json.Unmarshal(raw, &meta) == nil {
			sa := o.Spec.Template.Spec.ServiceAccountName
			if sa == "" {
				sa = "default"
			}
			out.workloads = append(out.workloads, workload{namespace: meta.Metadata.Namespace, serviceAccount: sa, labels: o.Spec.Template.Metadata.Labels})
		}
		return true
	}
	return false
}

// ResolvedCallbacks returns the callbacks of o with their backends' service
// accounts: the workload in the input whose pod labels the service selects,
// or the service's own name (Assumed) when the input has no such workload.
func (o Objects) ResolvedCallbacks() []Callback {
	var out []Callback
	for _, cb := range o.Callbacks {
		cb.ServiceAccount, cb.Assumed = cb.Service, true
		for _, s := range o.services {
			if s.namespace != cb.Namespace || s.name != cb.Service || len(s.selector) == 0 {
				continue
			}
			for _, w := range o.workloads {
				if w.namespace == cb.Namespace && selects(s.selector, w.labels) {
					cb.ServiceAccount, cb.Assumed = w.serviceAccount, false
				}
			}
		}
		out = append(out, cb)
	}
	return out
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

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
func callbackCallers(cb Callback) []Request {
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
func callbackRequests(cb Callback) []Request {
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
			Rule:     RuleCallbackBelowCaller,
			Severity: SeverityWarning,
			Objects:  []ObjectRef{fsRef(cbFS), plRef(cbPL)},
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
