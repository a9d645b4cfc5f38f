package engine

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
)

// APIResource is a resource a request's path can name, as the server's
// discovery lists it: its group and version (the preferred one), its
// plural name (the path's), singular, kind and short names, and whether
// its objects live in a namespace.
type APIResource struct {
	Group      string   `json:"group"`
	Version    string   `json:"version"`
	Resource   string   `json:"resource"`
	Singular   string   `json:"singular,omitempty"`
	Kind       string   `json:"kind"`
	ShortNames []string `json:"shortNames,omitempty"`
	Namespaced bool     `json:"namespaced"`
}

// GroupResource is the resource as a FlowSchema's rule names it:
// "deployments.apps", "pods".
func (r APIResource) GroupResource() string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

// LookupResource finds the resource a kubectl argument names (pods, pod,
// po, Pod, deployments.apps, deployments.v1.apps), as kubectl's REST
// mapper does: by plural, singular, short name or kind, in any case,
// qualified by group (and version) or not; an unqualified name several
// groups serve (events) is the first group's in rs, the discovery's order,
// which puts the core group first.
func LookupResource(rs []APIResource, typ string) (APIResource, error) {
	arg := strings.ToLower(strings.TrimSpace(typ))
	if arg == "" {
		return APIResource{}, fmt.Errorf("empty resource type")
	}
	type want struct{ name, version, group string }
	var tries []want
	if parts := strings.SplitN(arg, ".", 3); len(parts) == 3 {
		tries = append(tries, want{parts[0], parts[1], parts[2]})
	}
	name, group, _ := strings.Cut(arg, ".")
	tries = append(tries, want{name: name, group: group})
	for _, w := range tries {
		for _, r := range rs {
			if w.group != "" && w.group != r.Group && !(w.group == "core" && r.Group == "") {
				continue
			}
			if w.version != "" && w.version != r.Version {
				continue
			}
			if r.names(w.name) {
				return r, nil
			}
		}
	}
	return APIResource{}, fmt.Errorf("unknown resource type %q", typ)
}

func (r APIResource) names(n string) bool {
	if n == r.Resource || n == r.Singular || n == strings.ToLower(r.Kind) {
		return true
	}
	for _, s := range r.ShortNames {
		if n == s {
			return true
		}
	}
	return false
}

// ResourceArgs is a request given as kubectl gives it: a verb, a resource
// type and an object's name, with kubectl get's flags.
type ResourceArgs struct {
	// Verb is a Kubernetes verb (get, list, watch, create, update, patch,
	// delete, deletecollection); get without a name is a LIST, as kubectl
	// get sends it.
	Verb string
	// Name is the object's ("" for the collection), Subresource a
	// subresource of it (status, scale).
	Name, Subresource string
	// Namespace is the namespace of a namespaced resource (kubectl's -n, or
	// its kubeconfig context's); AllNamespaces, kubectl's -A, lists or
	// watches every namespace's.
	Namespace     string
	AllNamespaces bool
	// LabelSelector and FieldSelector select the objects of a collection
	// (-l, --field-selector), and ChunkSize is the limit of a LIST
	// (kubectl's --chunk-size, 500 unless set; 0 lists at once).
	LabelSelector, FieldSelector string
	ChunkSize                    int64
}

// Request turns a into the verb and the path with its query that kubectl
// sends for it on resource r, for ParseRequest.
func (a ResourceArgs) Request(r APIResource) (verb, pathWithQuery string, err error) {
	verb = a.Verb
	switch verb {
	case "get":
		if a.Name == "" {
			verb = "list"
		}
	case "list", "deletecollection":
		if a.Name != "" {
			return "", "", fmt.Errorf("%s names no object: drop %q, or use get (delete) for one object", verb, a.Name)
		}
	case "watch", "create":
	case "update", "patch", "delete":
		if a.Name == "" {
			return "", "", fmt.Errorf("%s needs the object's name (%s %s NAME)%s", verb, verb, r.Resource, collectionHint(verb))
		}
	default:
		return "", "", fmt.Errorf("unknown verb %q with a resource type: use get, list, watch, create, update, patch, delete or deletecollection (an HTTP method takes a path: GET /api/v1/pods)", a.Verb)
	}
	object := verb == "get" || verb == "update" || verb == "patch" || verb == "delete"
	if a.Subresource != "" && !object {
		return "", "", fmt.Errorf("--subresource %s is of one object: give its name, with get, update, patch or delete", a.Subresource)
	}
	// kubectl (client-go's rest.Request) refuses these before sending
	for _, seg := range []struct{ what, v string }{{"resource name", a.Name}, {"namespace", a.Namespace}, {"subresource", a.Subresource}} {
		if msgs := content.IsPathSegmentName(seg.v); seg.v != "" && len(msgs) > 0 {
			return "", "", fmt.Errorf("invalid %s %q: %s; kubectl refuses it too", seg.what, seg.v, strings.Join(msgs, ", "))
		}
	}
	if a.AllNamespaces && verb == "create" {
		return "", "", fmt.Errorf("an object is created in one namespace: drop -A")
	}
	if a.AllNamespaces && object {
		return "", "", fmt.Errorf("an object cannot be named across all namespaces: drop -A, or its name %q", a.Name)
	}
	path := "/apis/" + r.Group + "/" + r.Version
	if r.Group == "" {
		path = "/api/" + r.Version
	}
	if r.Namespaced && !a.AllNamespaces {
		ns := a.Namespace
		if ns == "" {
			ns = "default"
		}
		path += "/namespaces/" + url.PathEscape(ns)
	}
	path += "/" + r.Resource
	if object {
		path += "/" + url.PathEscape(a.Name)
		if a.Subresource != "" {
			path += "/" + url.PathEscape(a.Subresource)
		}
	}
	q := url.Values{}
	if !object && verb != "create" {
		if a.LabelSelector != "" {
			q.Set("labelSelector", a.LabelSelector)
		}
		fs := a.FieldSelector
		if verb == "watch" && a.Name != "" {
			// kubectl get NAME -w watches the collection for that name
			fs = joinSelector(fs, "metadata.name="+a.Name)
		}
		if fs != "" {
			q.Set("fieldSelector", fs)
		}
		if verb == "list" && a.ChunkSize > 0 {
			q.Set("limit", fmt.Sprint(a.ChunkSize))
		}
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return verb, path, nil
}

func collectionHint(verb string) string {
	if verb == "delete" {
		return ", or deletecollection for the collection"
	}
	return ""
}

func joinSelector(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}
