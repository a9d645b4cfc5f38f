package lint

import (
	"math/bits"
	"sort"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// This file decides FlowSchema subsumption from the rules themselves. Every
// attribute of a request that k8s.io/apiserver/pkg/util/flowcontrol/rule.go
// looks at becomes one dimension, and each dimension's value space is cut into
// finitely many "atoms": classes of values that no rule of the configuration can
// tell apart. A rule is then a union of "cubes" (one set of atoms per
// dimension), and "every request F matches is matched by an earlier schema" is a
// finite computation: subtract the earlier cubes from F's cubes and see whether
// anything is left. What is left, if anything, names a concrete request (one
// witness value per atom) that reaches F.
//
// Why the atoms are sound: rule.go compares every attribute by string equality
// (containsString: wildcard only when the list is exactly ["*"]), except the
// ServiceAccount namespace test (a username prefix) and non-resource URLs (exact
// or prefix). For equality tests, "equal to literal x" and "equal to none of the
// literals" are the only classes. For prefix tests over a finite set of exacts S
// and prefixes P, all strings whose longest prefix in P is p and that are not in
// S agree on every exact and prefix test: the prefixes of such a string that are
// in P are exactly the members of P that are prefixes of p.

// Dimension indices. Group membership takes one boolean dimension per group
// named in the configuration, starting at dimGroups.
const (
	dimKind = iota // resource or non-resource request
	dimUser        // username
	dimVerb
	dimAPIGroup
	dimResource // resource, or resource/subresource as rule.go's rsJoin
	dimNamespace
	dimPath
	dimGroups // first group-membership dimension
)

const (
	kindResource    = 0
	kindNonResource = 1
)

const (
	groupAuthenticated   = "system:authenticated"
	groupUnauthenticated = "system:unauthenticated"
	saUsernamePrefix     = "system:serviceaccount:"
	userAnonymous        = "system:anonymous"
)

// bitset is a set of atom indices.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func fullBitset(n int) bitset {
	b := newBitset(n)
	for i := 0; i < n; i++ {
		b.set(i)
	}
	return b
}

func (b bitset) set(i int)     { b[i/64] |= 1 << (uint(i) % 64) }
func (b bitset) clone() bitset { return append(bitset(nil), b...) }
func (b bitset) empty() bool {
	for _, w := range b {
		if w != 0 {
			return false
		}
	}
	return true
}

func (b bitset) first() int {
	for i, w := range b {
		if w != 0 {
			return i*64 + bits.TrailingZeros64(w)
		}
	}
	return -1
}

func (b bitset) and(o bitset) bitset {
	r := make(bitset, len(b))
	for i := range b {
		r[i] = b[i] & o[i]
	}
	return r
}

func (b bitset) andNot(o bitset) bitset {
	r := make(bitset, len(b))
	for i := range b {
		r[i] = b[i] &^ o[i]
	}
	return r
}

func (b bitset) intersects(o bitset) bool {
	for i := range b {
		if b[i]&o[i] != 0 {
			return true
		}
	}
	return false
}

// cube is a product set of requests: one atom set per dimension.
type cube []bitset

func (c cube) clone() cube {
	r := make(cube, len(c))
	for i, s := range c {
		r[i] = s.clone()
	}
	return r
}

func (c cube) empty() bool {
	for _, s := range c {
		if s.empty() {
			return true
		}
	}
	return false
}

func (c cube) intersects(o cube) bool {
	for i := range c {
		if !c[i].intersects(o[i]) {
			return false
		}
	}
	return true
}

func (c cube) intersect(o cube) cube {
	r := make(cube, len(c))
	for i := range c {
		r[i] = c[i].and(o[i])
	}
	return r
}

// minus returns disjoint cubes whose union is c \ o.
func (c cube) minus(o cube) []cube {
	if !c.intersects(o) {
		return []cube{c}
	}
	var out []cube
	cur := c.clone()
	for d := range c {
		rest := cur[d].andNot(o[d])
		if rest.empty() {
			continue
		}
		piece := cur.clone()
		piece[d] = rest
		out = append(out, piece)
		cur[d] = cur[d].and(o[d])
	}
	return out
}

// domain is the atom structure of one string dimension: atom i stands for all
// values that behave like witness[i].
type domain struct {
	witness []string
}

func (d *domain) size() int { return len(d.witness) }

// where returns the atoms whose witness satisfies pred.
func (d *domain) where(pred func(string) bool) bitset {
	b := newBitset(d.size())
	for i, w := range d.witness {
		if pred(w) {
			b.set(i)
		}
	}
	return b
}

// equalityDomain has one atom per literal plus one for "anything else".
func equalityDomain(literals map[string]bool, otherHint string) *domain {
	d := &domain{}
	d.witness = append(d.witness, sortedKeys(literals)...)
	d.witness = append(d.witness, freshString(otherHint, func(s string) bool { return literals[s] }))
	return d
}

// prefixDomain has one atom per exact string, one per prefix (strings with that
// longest prefix, minus the exacts) and, unless every value is known to carry
// one of the prefixes, one for everything else.
func prefixDomain(exacts, prefixes map[string]bool, otherHint string, withOther bool) *domain {
	d := &domain{}
	d.witness = append(d.witness, sortedKeys(exacts)...)
	ps := sortedKeys(prefixes)
	// taken reports whether s is an exact or has a prefix longer than p.
	taken := func(p string) func(string) bool {
		return func(s string) bool {
			if exacts[s] {
				return true
			}
			for _, q := range ps {
				if len(q) > len(p) && strings.HasPrefix(s, q) {
					return true
				}
			}
			return false
		}
	}
	for _, p := range ps {
		d.witness = append(d.witness, freshString(p+"unlisted", taken(p)))
	}
	if withOther {
		d.witness = append(d.witness, freshString(otherHint, func(s string) bool {
			if exacts[s] {
				return true
			}
			for _, q := range ps {
				if strings.HasPrefix(s, q) {
					return true
				}
			}
			return false
		}))
	}
	return d
}

// freshString returns hint, or hint with a numeric suffix, such that taken is
// false for it. The suffix search ends because only finitely many strings are
// taken by equality, and prefixes can only be longer than the hint's stem.
func freshString(hint string, taken func(string) bool) string {
	s := hint
	for i := 1; taken(s); i++ {
		s = hint + "-" + itoa(i)
	}
	return s
}

func itoa(i int) string {
	const digits = "0123456789"
	if i == 0 {
		return "0"
	}
	var buf [20]byte
	n := len(buf)
	for i > 0 {
		n--
		buf[n] = digits[i%10]
		i /= 10
	}
	return string(buf[n:])
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// space is the atom structure built from a whole configuration.
type space struct {
	user, verb, apiGroup, resource, namespace, path *domain
	groups                                          []string       // names of the group dimensions, in order
	groupDim                                        map[string]int // group name -> dimension
}

func (sp *space) dims() int { return dimGroups + len(sp.groups) }

func (sp *space) dimSize(d int) int {
	switch d {
	case dimKind:
		return 2
	case dimUser:
		return sp.user.size()
	case dimVerb:
		return sp.verb.size()
	case dimAPIGroup:
		return sp.apiGroup.size()
	case dimResource:
		return sp.resource.size()
	case dimNamespace:
		return sp.namespace.size()
	case dimPath:
		return sp.path.size()
	default:
		return 2 // group membership: atom 0 = not a member, atom 1 = member
	}
}

func (sp *space) full() cube {
	c := make(cube, sp.dims())
	for d := range c {
		c[d] = fullBitset(sp.dimSize(d))
	}
	return c
}

// newSpace collects every literal and prefix that the rules of fss can test.
func newSpace(fss []*flowcontrolv1.FlowSchema) *space {
	users, userPrefixes := map[string]bool{userAnonymous: true}, map[string]bool{}
	verbs, apiGroups, resources, namespaces := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	paths, pathPrefixes := map[string]bool{}, map[string]bool{"/": true}
	groups := map[string]bool{groupAuthenticated: true, groupUnauthenticated: true}
	addAll := func(m map[string]bool, list []string, wildcard string) {
		if len(list) == 1 && list[0] == wildcard {
			return
		}
		for _, s := range list {
			m[s] = true
		}
	}
	for _, fs := range fss {
		for _, r := range fs.Spec.Rules {
			for _, s := range r.Subjects {
				switch {
				case s.Kind == flowcontrolv1.SubjectKindUser && s.User != nil && s.User.Name != flowcontrolv1.NameAll:
					users[s.User.Name] = true
				case s.Kind == flowcontrolv1.SubjectKindGroup && s.Group != nil && s.Group.Name != flowcontrolv1.NameAll:
					groups[s.Group.Name] = true
				case s.Kind == flowcontrolv1.SubjectKindServiceAccount && s.ServiceAccount != nil:
					if s.ServiceAccount.Name == flowcontrolv1.NameAll {
						userPrefixes[saUsernamePrefix+s.ServiceAccount.Namespace+":"] = true
					} else {
						users[saUsernamePrefix+s.ServiceAccount.Namespace+":"+s.ServiceAccount.Name] = true
					}
				}
			}
			for _, rr := range r.ResourceRules {
				addAll(verbs, rr.Verbs, flowcontrolv1.VerbAll)
				addAll(apiGroups, rr.APIGroups, flowcontrolv1.APIGroupAll)
				addAll(resources, rr.Resources, flowcontrolv1.ResourceAll)
				addAll(namespaces, rr.Namespaces, flowcontrolv1.NamespaceEvery)
			}
			for _, nr := range r.NonResourceRules {
				addAll(verbs, nr.Verbs, flowcontrolv1.VerbAll)
				for _, p := range nr.NonResourceURLs {
					if p == flowcontrolv1.NonResourceAll {
						continue
					}
					paths[p] = true
					pathPrefixes[engine.NonResourceURLPrefix(p)] = true
				}
			}
		}
	}
	// The empty namespace is how a cluster-scoped request looks to rule.go; it
	// is always an atom of its own.
	delete(namespaces, "")
	nsDomain := equalityDomain(namespaces, "unlisted-namespace")
	nsDomain.witness = append([]string{""}, nsDomain.witness...)

	sp := &space{
		user:      prefixDomain(users, userPrefixes, "unlisted-user", true),
		verb:      equalityDomain(verbs, "unlisted-verb"),
		apiGroup:  equalityDomain(apiGroups, "unlisted.example.com"),
		resource:  equalityDomain(resources, "unlistedresources"),
		namespace: nsDomain,
		// Every request path starts with "/", so the implicit prefix "/" covers
		// all of them and no "other" atom is needed.
		path:     prefixDomain(paths, pathPrefixes, "", false),
		groupDim: map[string]int{},
	}
	sp.groups = sortedKeys(groups)
	for i, g := range sp.groups {
		sp.groupDim[g] = dimGroups + i
	}
	return sp
}

// universe returns the cubes of all identities that really reach APF, as
// the standard authentication chain builds them: the anonymous authenticator
// gives system:anonymous the group system:unauthenticated, and
// k8s.io/apiserver/pkg/authentication/group.AuthenticatedGroupAdder (and the
// impersonation filter) give every other user system:authenticated. An
// authenticator that itself hands out system:unauthenticated to a named user,
// or a client certificate for "system:anonymous", could break this; no
// standard setup does, and the mandatory catch-all FlowSchema exists for them.
func (sp *space) universe() []cube {
	anon := sp.user.where(func(u string) bool { return u == userAnonymous })
	named := fullBitset(sp.user.size()).andNot(anon)
	a := sp.full()
	a[dimUser] = named
	a[sp.groupDim[groupAuthenticated]] = bitOf(2, 1)
	a[sp.groupDim[groupUnauthenticated]] = bitOf(2, 0)
	b := sp.full()
	b[dimUser] = anon
	b[sp.groupDim[groupAuthenticated]] = bitOf(2, 0)
	b[sp.groupDim[groupUnauthenticated]] = bitOf(2, 1)
	return []cube{a, b}
}

func bitOf(n, i int) bitset {
	b := newBitset(n)
	b.set(i)
	return b
}

// subjectCube is the set of requests whose identity matches one subject, as
// rule.go:matchesSubject decides it.
func (sp *space) subjectCube(s flowcontrolv1.Subject) (cube, bool) {
	c := sp.full()
	switch s.Kind {
	case flowcontrolv1.SubjectKindUser:
		if s.User == nil {
			return nil, false
		}
		if s.User.Name != flowcontrolv1.NameAll {
			c[dimUser] = sp.user.where(func(u string) bool { return u == s.User.Name })
		}
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			return nil, false
		}
		if s.Group.Name != flowcontrolv1.NameAll {
			c[sp.groupDim[s.Group.Name]] = bitOf(2, 1)
		}
	case flowcontrolv1.SubjectKindServiceAccount:
		if s.ServiceAccount == nil {
			return nil, false
		}
		sa := *s.ServiceAccount
		c[dimUser] = sp.user.where(func(u string) bool { return engine.MatchesServiceAccount(&sa, u) })
	default:
		return nil, false
	}
	return c, true
}

// resourceCube is the set of resource requests one resource rule matches
// (rule.go:matchesResourcePolicyRule).
func (sp *space) resourceCube(rr flowcontrolv1.ResourcePolicyRule) cube {
	c := sp.full()
	c[dimKind] = bitOf(2, kindResource)
	c[dimVerb] = sp.verb.where(func(v string) bool { return engine.ContainsString(v, rr.Verbs, flowcontrolv1.VerbAll) })
	c[dimAPIGroup] = sp.apiGroup.where(func(g string) bool { return engine.ContainsString(g, rr.APIGroups, flowcontrolv1.APIGroupAll) })
	c[dimResource] = sp.resource.where(func(r string) bool { return engine.ContainsString(r, rr.Resources, flowcontrolv1.ResourceAll) })
	c[dimNamespace] = sp.namespace.where(func(ns string) bool {
		if ns == "" {
			return rr.ClusterScope
		}
		return engine.ContainsString(ns, rr.Namespaces, flowcontrolv1.NamespaceEvery)
	})
	return c
}

// nonResourceCube is the set of non-resource requests one non-resource rule
// matches (rule.go:matchesNonResourcePolicyRule).
func (sp *space) nonResourceCube(nr flowcontrolv1.NonResourcePolicyRule) cube {
	c := sp.full()
	c[dimKind] = bitOf(2, kindNonResource)
	c[dimVerb] = sp.verb.where(func(v string) bool { return engine.ContainsString(v, nr.Verbs, flowcontrolv1.VerbAll) })
	c[dimPath] = sp.path.where(func(p string) bool { return engine.MatchingNonResourceURL(nr.NonResourceURLs, p) >= 0 })
	return c
}

// ruleCubes returns the cubes of one PolicyRulesWithSubjects: the union over
// its subjects times the union over its resource and non-resource rules.
func (sp *space) ruleCubes(r flowcontrolv1.PolicyRulesWithSubjects) []cube {
	var subjects, actions []cube
	for _, s := range r.Subjects {
		if c, ok := sp.subjectCube(s); ok {
			subjects = append(subjects, c)
		}
	}
	for _, rr := range r.ResourceRules {
		actions = append(actions, sp.resourceCube(rr))
	}
	for _, nr := range r.NonResourceRules {
		actions = append(actions, sp.nonResourceCube(nr))
	}
	var out []cube
	for _, s := range subjects {
		for _, a := range actions {
			if c := s.intersect(a); !c.empty() {
				out = append(out, c)
			}
		}
	}
	return out
}

// restrict intersects cubes with the universe of real identities.
func (sp *space) restrict(cs []cube) []cube {
	var out []cube
	for _, u := range sp.universe() {
		for _, c := range cs {
			if x := c.intersect(u); !x.empty() {
				out = append(out, x)
			}
		}
	}
	return out
}

// maxCubes bounds the cubes a subtraction may produce; beyond it the answer
// is "undecided" rather than a guess.
const maxCubes = 200_000

// subtract removes every cube of minus from cs. ok is false if the result grew
// beyond maxCubes.
func subtract(cs []cube, minus []cube) (rest []cube, ok bool) {
	rest = cs
	for _, m := range minus {
		var next []cube
		for _, c := range rest {
			next = append(next, c.minus(m)...)
			if len(next) > maxCubes {
				return nil, false
			}
		}
		rest = next
		if len(rest) == 0 {
			break
		}
	}
	return rest, true
}

// readable picks, among cubes, the one whose witness names the most literal
// values of the configuration (rather than "unlisted-..." stand-ins), so that
// examples in messages look like real requests. Ties go to the first.
func (sp *space) readable(cs []cube) cube {
	best, bestScore := cs[0], -1
	for _, c := range cs {
		score := 0
		for d, dom := range map[int]*domain{dimUser: sp.user, dimVerb: sp.verb, dimAPIGroup: sp.apiGroup, dimResource: sp.resource, dimNamespace: sp.namespace} {
			if w := dom.witness[c[d].first()]; !strings.HasPrefix(w, "unlisted") && w != userAnonymous {
				score++
			}
		}
		if score > bestScore {
			best, bestScore = c, score
		}
	}
	return best
}

// witness turns the first atom of every dimension of c into a concrete request.
func (sp *space) witness(c cube) Request {
	r := Request{
		User:     sp.user.witness[c[dimUser].first()],
		Verb:     sp.verb.witness[c[dimVerb].first()],
		Resource: true,
	}
	for i, g := range sp.groups {
		if c[dimGroups+i].first() == 1 {
			r.Groups = append(r.Groups, g)
		}
	}
	if c[dimKind].first() == kindNonResource {
		r.Resource = false
		r.Path = sp.path.witness[c[dimPath].first()]
		return r
	}
	r.APIGroup = sp.apiGroup.witness[c[dimAPIGroup].first()]
	res := sp.resource.witness[c[dimResource].first()]
	r.ResourceName, r.Subresource, _ = strings.Cut(res, "/")
	r.Namespace = sp.namespace.witness[c[dimNamespace].first()]
	return r
}
