package lint

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// Reachability is what the rules of an ordered configuration say about one
// FlowSchema.
type Reachability struct {
	// FlowSchema is the schema's name.
	FlowSchema string
	// Empty is true when the schema matches no request at all (no rules, no
	// usable subjects or no resource/non-resource rules).
	Empty bool
	// Shadowed is true when every request the schema matches is matched by an
	// earlier schema, so it never gets any.
	Shadowed bool
	// Undecided is true when the configuration was too complex to decide
	// within the work bound; Shadowed is then false.
	Undecided bool
	// Overlaps lists the rules of this schema that can match requests an
	// earlier schema's rules also match.
	Overlaps []RuleOverlap
	// Witness is a request that reaches this schema, when it is reachable.
	Witness *Request
	// Shadowers is, for a shadowed schema, an irredundant set of earlier
	// schemas that together match everything it matches (dropping any one
	// of them would leave some request to it), in matching order.
	Shadowers []string
}

// RuleOverlap names a rule of a schema (index into spec.rules) and a rule of an
// earlier schema that can match the same request.
type RuleOverlap struct {
	Rule      int    `json:"rule"`
	Earlier   string `json:"earlier"`
	EarlierAt int    `json:"earlierRule"`
}

// Analyze decides, for every schema of an ordered list (see Ordered), whether
// it can ever match a request that no earlier schema takes, from the rules
// themselves. See space.go for why this is exact.
func Analyze(ordered []*flowcontrolv1.FlowSchema) []Reachability {
	sp := newSpace(ordered)
	perRule := make([][][]cube, len(ordered)) // schema -> rule -> cubes
	for i, fs := range ordered {
		perRule[i] = make([][]cube, len(fs.Spec.Rules))
		for j, r := range fs.Spec.Rules {
			perRule[i][j] = sp.restrict(sp.ruleCubes(r))
		}
	}
	out := make([]Reachability, len(ordered))
	var earlier []cube
	cubesOf := func(k int) []cube {
		var cs []cube
		for _, rc := range perRule[k] {
			cs = append(cs, rc...)
		}
		return cs
	}
	for i, fs := range ordered {
		res := Reachability{FlowSchema: fs.Name}
		var mine []cube
		for _, cs := range perRule[i] {
			mine = append(mine, cs...)
		}
		if len(mine) == 0 {
			res.Empty = true
		} else {
			for j, cs := range perRule[i] {
				for k := 0; k < i; k++ {
					for q, ecs := range perRule[k] {
						if anyIntersect(cs, ecs) {
							res.Overlaps = append(res.Overlaps, RuleOverlap{Rule: j, Earlier: ordered[k].Name, EarlierAt: q})
						}
					}
				}
			}
			rest, ok := subtract(mine, earlier)
			switch {
			case !ok:
				res.Undecided = true
			case len(rest) == 0:
				res.Shadowed = true
				res.Shadowers = minimalCover(mine, i, res.Overlaps, ordered, cubesOf)
			default:
				w := sp.witness(sp.readable(rest))
				res.Witness = &w
			}
		}
		earlier = append(earlier, mine...)
		out[i] = res
	}
	return out
}

// minimalCover drops, earliest first, every overlapping earlier schema that
// the others do not need, so the broad schema that really takes the requests
// is named rather than every schema that touches them.
func minimalCover(mine []cube, i int, overlaps []RuleOverlap, ordered []*flowcontrolv1.FlowSchema, cubesOf func(int) []cube) []string {
	idx := map[string]int{}
	for k := 0; k < i; k++ {
		idx[ordered[k].Name] = k
	}
	var cover []int
	seen := map[int]bool{}
	for _, o := range overlaps {
		if k := idx[o.Earlier]; !seen[k] {
			seen[k] = true
			cover = append(cover, k)
		}
	}
	for j := 0; j < len(cover); {
		var others []cube
		for q, k := range cover {
			if q != j {
				others = append(others, cubesOf(k)...)
			}
		}
		if rest, ok := subtract(mine, others); ok && len(rest) == 0 {
			cover = append(cover[:j], cover[j+1:]...)
			continue
		}
		j++
	}
	names := make([]string, len(cover))
	for q, k := range cover {
		names[q] = ordered[k].Name
	}
	return names
}

// Intersect reports whether two schemas can match one same request (of an
// identity that carries system:authenticated or system:unauthenticated), and
// returns such a request.
func Intersect(a, b *flowcontrolv1.FlowSchema) (*Request, bool) {
	sp := newSpace([]*flowcontrolv1.FlowSchema{a, b})
	var ac, bc []cube
	for _, r := range a.Spec.Rules {
		ac = append(ac, sp.restrict(sp.ruleCubes(r))...)
	}
	for _, r := range b.Spec.Rules {
		bc = append(bc, sp.ruleCubes(r)...)
	}
	for _, x := range ac {
		for _, y := range bc {
			if z := x.intersect(y); !z.empty() {
				w := sp.witness(z)
				return &w, true
			}
		}
	}
	return nil, false
}

func anyIntersect(a, b []cube) bool {
	for _, x := range a {
		for _, y := range b {
			if x.intersects(y) {
				return true
			}
		}
	}
	return false
}
