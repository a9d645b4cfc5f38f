package dump

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// Redactor replaces user names, namespaces, object names and request paths
// with pseudonyms. A pseudonym is a keyed hash of the original, so the same
// value always gets the same pseudonym within one bundle (and across bundles
// made with the same key) and flows stay recognisable, while the key keeps
// a reader from confirming a guessed name.
type Redactor struct {
	key []byte
}

// NewRedactor returns a Redactor using key.
func NewRedactor(key []byte) *Redactor { return &Redactor{key: key} }

func (r *Redactor) hash(kind, v string) string {
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte(kind + "\x00" + v))
	return hex.EncodeToString(m.Sum(nil))[:10]
}

// Built-in namespaces are kept: they say nothing about a tenant and much
// about which controllers are involved.
var keptNamespaces = map[string]bool{"": true, "default": true, "kube-system": true, "kube-public": true, "kube-node-lease": true}

// Namespace returns the pseudonym of a namespace.
func (r *Redactor) Namespace(ns string) string {
	if keptNamespaces[ns] || ns == "*" {
		return ns
	}
	return "ns-" + r.hash("ns", ns)
}

// Name returns the pseudonym of an object name.
func (r *Redactor) Name(n string) string {
	if n == "" || n == "*" {
		return n
	}
	return "name-" + r.hash("name", n)
}

// User returns the pseudonym of a user name. Control-plane identities
// (system:kube-scheduler, system:apiserver, ...) are kept; a service
// account keeps its shape with namespace and name replaced; a node keeps
// its prefix.
func (r *Redactor) User(u string) string {
	switch {
	case u == "" || u == "*":
		return u
	case strings.HasPrefix(u, "system:serviceaccount:"):
		parts := strings.SplitN(strings.TrimPrefix(u, "system:serviceaccount:"), ":", 2)
		if len(parts) == 2 {
			return "system:serviceaccount:" + r.Namespace(parts[0]) + ":" + r.Name(parts[1])
		}
	case strings.HasPrefix(u, "system:node:"):
		return "system:node:" + r.Name(strings.TrimPrefix(u, "system:node:"))
	case strings.HasPrefix(u, "system:"):
		return u
	}
	return "user-" + r.hash("user", u)
}

// Path returns the pseudonym of a request path: in an API path the
// namespace and object name segments are replaced and the rest (group,
// version, resource, subresource) kept; other paths are kept when they are
// the apiserver's own (/healthz, /metrics, ...), replaced otherwise.
func (r *Redactor) Path(p string) string {
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if len(segs) == 0 || (segs[0] != "api" && segs[0] != "apis") {
		for _, keep := range []string{"/healthz", "/livez", "/readyz", "/metrics", "/version", "/openapi", "/debug/", "/.well-known/"} {
			if strings.HasPrefix(p, keep) {
				return p
			}
		}
		if p == "" || p == "/" {
			return p
		}
		return "/path-" + r.hash("path", p)
	}
	// /api/v1/... or /apis/GROUP/VERSION/...
	i := 2
	if segs[0] == "apis" {
		i = 3
	}
	if i < len(segs) && segs[i] == "watch" {
		i++
	}
	if i+1 < len(segs) && segs[i] == "namespaces" {
		if i+2 == len(segs) || len(segs) == i+3 && (segs[i+2] == "status" || segs[i+2] == "finalize") {
			// The Namespace object itself: its name is a namespace.
			segs[i+1] = r.Namespace(segs[i+1])
			return "/" + strings.Join(segs, "/")
		}
		segs[i+1] = r.Namespace(segs[i+1])
		i += 2
	}
	// segs[i] is the resource, segs[i+1] the object name.
	if i+1 < len(segs) {
		segs[i+1] = r.Name(segs[i+1])
	}
	return "/" + strings.Join(segs, "/")
}

// RedactCapture rewrites every snapshot of c in place: the request dump
// (user, flow distinguisher, path, namespace, name), the FlowSchemas'
// subjects and namespaces. Rendered bodies in Raw are replaced too, so a
// bundle written afterwards holds no original value.
func (r *Redactor) RedactCapture(c *Capture) error {
	for _, s := range c.Snapshots {
		if err := r.redactSnapshot(s); err != nil {
			return fmt.Errorf("redacting %s: %w", s.Instance, err)
		}
		s.Instance = r.instance(s.Instance)
	}
	// Failures name instances and paths of the apiserver's own endpoints,
	// not user data: they are kept.
	return nil
}

// instance keeps the instance URL: an address inside a cluster's network is
// needed to tell instances apart and is not a user's data.
func (r *Redactor) instance(s string) string { return s }

// redactRequests redacts a request dump's rows: their users, flow
// distinguishers (a user or a namespace, as byNamespace's FlowSchemas say),
// paths, namespaces and names.
func (r *Redactor) redactRequests(rows []RequestRow, byNamespace map[string]bool) {
	for i := range rows {
		q := &rows[i]
		if byNamespace[q.FlowSchema] {
			q.FlowDistinguisher = r.Namespace(q.FlowDistinguisher)
		} else {
			q.FlowDistinguisher = r.User(q.FlowDistinguisher)
		}
		q.UserName = r.User(q.UserName)
		q.APIPath = r.Path(q.APIPath)
		q.Namespace = r.Namespace(q.Namespace)
		if q.Resource == "namespaces" {
			q.Name = r.Namespace(q.Name)
		} else {
			q.Name = r.Name(q.Name)
		}
	}
}

func (r *Redactor) redactSnapshot(s *Snapshot) error {
	// A flow distinguisher is the user name (ByUser) or the namespace
	// (ByNamespace) (apf_controller.go: computeFlowDistinguisher); which one
	// depends on the FlowSchema.
	byNamespace := map[string]bool{}
	for _, fs := range s.FlowSchemas {
		if fs.Spec.DistinguisherMethod != nil && fs.Spec.DistinguisherMethod.Type == flowcontrolv1.FlowDistinguisherMethodByNamespaceType {
			byNamespace[fs.Name] = true
		}
	}
	r.redactRequests(s.RequestDump, byNamespace)
	if _, ok := s.Raw[FileRequests]; ok {
		s.Raw[FileRequests] = FormatRequests(s.RequestDump)
	}
	// a watch's bundle keeps the start's request dump beside the end's
	// (Record): read back, it is redacted as the end's is
	if b, ok := s.Raw[StartDumpPrefix+FileRequests]; ok {
		rows, err := ParseRequests(b)
		if err != nil {
			return fmt.Errorf("%s: %w", StartDumpPrefix+FileRequests, err)
		}
		r.redactRequests(rows, byNamespace)
		s.Raw[StartDumpPrefix+FileRequests] = FormatRequests(rows)
	}
	for i := range s.FlowSchemas {
		fs := &s.FlowSchemas[i]
		fs.ManagedFields = nil
		delete(fs.Annotations, "kubectl.kubernetes.io/last-applied-configuration")
		for j := range fs.Spec.Rules {
			rule := &fs.Spec.Rules[j]
			for k := range rule.Subjects {
				sub := &rule.Subjects[k]
				if sub.User != nil {
					sub.User.Name = r.User(sub.User.Name)
				}
				if sub.ServiceAccount != nil {
					sub.ServiceAccount.Namespace = r.Namespace(sub.ServiceAccount.Namespace)
					sub.ServiceAccount.Name = r.Name(sub.ServiceAccount.Name)
				}
			}
			for k := range rule.ResourceRules {
				for n := range rule.ResourceRules[k].Namespaces {
					rule.ResourceRules[k].Namespaces[n] = r.Namespace(rule.ResourceRules[k].Namespaces[n])
				}
			}
		}
	}
	if _, ok := s.Raw[FileFlowSchemas]; ok {
		b, err := json.Marshal(flowcontrolv1.FlowSchemaList{
			TypeMeta: typeMetaList("FlowSchemaList"),
			Items:    s.FlowSchemas,
		})
		if err != nil {
			return err
		}
		s.Raw[FileFlowSchemas] = b
	}
	for i := range s.PriorityLevels {
		s.PriorityLevels[i].ManagedFields = nil
	}
	if _, ok := s.Raw[FilePLCs]; ok {
		b, err := json.Marshal(flowcontrolv1.PriorityLevelConfigurationList{
			TypeMeta: typeMetaList("PriorityLevelConfigurationList"),
			Items:    s.PriorityLevels,
		})
		if err != nil {
			return err
		}
		s.Raw[FilePLCs] = b
	}
	return nil
}
