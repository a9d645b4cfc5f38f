package config

import (
	"encoding/json"
	"strings"
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
