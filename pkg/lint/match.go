package lint

import (
	"strings"

	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
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

// engineRequest converts r into the engine's request model, RequestInfo
// filled in directly as kube-apiserver's RequestInfoFactory would.
func engineRequest(r Request) engine.Request {
	return engine.Request{
		Identity: engine.Identity{User: r.User, Groups: r.Groups},
		Info: request.RequestInfo{
			IsResourceRequest: r.Resource,
			Path:              r.Path,
			Verb:              r.Verb,
			APIGroup:          r.APIGroup,
			Resource:          r.ResourceName,
			Subresource:       r.Subresource,
			Namespace:         r.Namespace,
		},
	}
}
