package engine

import (
	"hash/maphash"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// ClassifyMemo memoizes Config.Classify by exactly what classification
// reads of a request: the user name and groups (subjects; the ByUser
// distinguisher), and of the request info whether it is a resource
// request, the verb, the namespace (resource rules; the ByNamespace
// distinguisher), then the API group, resource and subresource (resource
// rules) or the path (non-resource rules). Nothing else (object name, API version, query,
// user agent, method) takes part, so requests that differ only there
// share an entry: a workload has few distinct keys even where it has
// millions of requests. A request that bypasses APF is not memoized.
//
// A memo answers for one configuration at a time: given another (or the
// same one with other FlowSchemas) it starts afresh. It holds at most
// MaxMemoizedClassifications keys; past that it starts afresh. The zero
// value is ready to use; it is not safe for concurrent use.
type ClassifyMemo struct {
	cfg  *Config
	fs   []*flowcontrolv1.FlowSchema // cfg.FlowSchemas when the memo began
	seed maphash.Seed
	m    map[uint64][]memoEntry
	n    int
	// collide makes every key hash alike, for the tests of the comparison
	collide bool
}

// MaxMemoizedClassifications bounds a ClassifyMemo.
const MaxMemoizedClassifications = 1 << 14

type memoEntry struct {
	user                                                   string
	groups                                                 []string
	isResource                                             bool
	verb, apiGroup, resource, subresource, namespace, path string
	cl                                                     Classification
}

// Classify is c.Classify(*r). The Hand of the classification it returns is
// shared with other requests of the same key: callers must not modify it.
func (m *ClassifyMemo) Classify(c *Config, r *Request) Classification {
	if r.Bypass != "" {
		return Classification{Bypass: r.Bypass}
	}
	if m.cfg != c || !sameSchemas(m.fs, c.FlowSchemas) || m.m == nil || m.n >= MaxMemoizedClassifications {
		m.reset(c)
	}
	h := m.hash(r)
	for i := range m.m[h] {
		if e := &m.m[h][i]; e.matches(r) {
			return e.cl
		}
	}
	cl := c.Classify(*r)
	e := memoEntry{user: r.Identity.User, groups: append([]string(nil), r.Identity.Groups...),
		isResource: r.Info.IsResourceRequest, verb: r.Info.Verb, namespace: r.Info.Namespace, cl: cl}
	if e.isResource {
		e.apiGroup, e.resource, e.subresource = r.Info.APIGroup, r.Info.Resource, r.Info.Subresource
	} else {
		e.path = r.Info.Path
	}
	m.m[h] = append(m.m[h], e)
	m.n++
	return cl
}

func (m *ClassifyMemo) reset(c *Config) {
	if m.m == nil {
		m.seed = maphash.MakeSeed()
	}
	m.cfg, m.fs, m.m, m.n = c, c.FlowSchemas, make(map[uint64][]memoEntry), 0
}

// sameSchemas reports whether a and b are the same slice (the same array,
// the same length), as a configuration's FlowSchemas stay unless replaced.
func sameSchemas(a, b []*flowcontrolv1.FlowSchema) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// hash mixes the key's fields; entries are compared field by field, so a
// collision costs a comparison, never a wrong answer.
func (m *ClassifyMemo) hash(r *Request) uint64 {
	const k = 0x9e3779b97f4a7c15
	if m.collide {
		return 0
	}
	ri := &r.Info
	h := maphash.String(m.seed, r.Identity.User)
	for _, g := range r.Identity.Groups {
		h = (h^maphash.String(m.seed, g))*k + 1
	}
	h = (h ^ maphash.String(m.seed, ri.Verb)) * k
	h = (h ^ maphash.String(m.seed, ri.Namespace)) * k
	if !ri.IsResourceRequest {
		return (h ^ maphash.String(m.seed, ri.Path)) * k
	}
	h = (h^maphash.String(m.seed, ri.APIGroup))*k + 2
	h = (h ^ maphash.String(m.seed, ri.Resource)) * k
	return (h ^ maphash.String(m.seed, ri.Subresource)) * k
}

func (e *memoEntry) matches(r *Request) bool {
	ri := &r.Info
	if e.user != r.Identity.User || e.isResource != ri.IsResourceRequest || e.verb != ri.Verb || e.namespace != ri.Namespace || len(e.groups) != len(r.Identity.Groups) {
		return false
	}
	for i, g := range e.groups {
		if g != r.Identity.Groups[i] {
			return false
		}
	}
	if !e.isResource {
		return e.path == ri.Path
	}
	return e.apiGroup == ri.APIGroup && e.resource == ri.Resource && e.subresource == ri.Subresource
}

// Len is how many keys m holds.
func (m *ClassifyMemo) Len() int { return m.n }
