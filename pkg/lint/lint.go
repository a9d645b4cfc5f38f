// Package lint finds mistakes in an API Priority and Fairness configuration:
// FlowSchemas that can never match, precedence ties, dangling and unused
// priority levels, edited suggested objects and risky choices. It is pure: it
// takes flowcontrol v1 objects and returns findings.
package lint

import (
	"fmt"
	"sort"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// Severity ranks a finding. Errors make "kubectl apf lint" exit non-zero.
type Severity string

// The severities, from most to least serious.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Rank orders severities: error 0, warning 1, info 2.
func (s Severity) Rank() int {
	switch s {
	case SeverityError:
		return 0
	case SeverityWarning:
		return 1
	}
	return 2
}

// ParseSeverity turns a flag value into a Severity.
func ParseSeverity(s string) (Severity, error) {
	switch Severity(s) {
	case SeverityError, SeverityWarning, SeverityInfo:
		return Severity(s), nil
	}
	return "", fmt.Errorf("severity must be one of error, warning, info, not %q", s)
}

// Rule identifiers, stable for scripts and for --disable.
const (
	RuleEmptyFlowSchema         = "empty-flowschema"
	RuleShadowedFlowSchema      = "shadowed-flowschema"
	RulePartlyShadowed          = "partly-shadowed-flowschema"
	RuleUndecided               = "undecided-shadowing"
	RulePrecedenceTie           = "precedence-tie"
	RuleDanglingPriorityLevel   = "dangling-priority-level"
	RuleBrokenPriorityLevel     = "broken-priority-level"
	RuleDuplicateObject         = "duplicate-object"
	RuleUnusedPriorityLevel     = "unused-priority-level"
	RuleSuggestedDiffers        = "suggested-object-differs"
	RuleExemptBeyondMasters     = "exempt-beyond-masters"
	RuleRejectWithTraffic       = "reject-level-with-traffic"
	RuleCrushRisk               = "shuffle-sharding-crush-risk"
	RuleNoDistinguisherShared   = "no-distinguisher-shared-level"
	RuleSystemIdentityFallsDown = "system-identity-falls-through"
	RuleCallbackBelowCaller     = "callback-below-caller"
	RuleLeaderElectionMoves     = "leader-election-moves"
	RuleRejectAdmitsWhenIdle    = "reject-level-admits-when-idle"
	RuleSeatStarvation          = "seat-starvation"
	RuleExemptReach             = "exempt-reach"
	RuleClientInSystemLevel     = "client-in-system-level"
)

// ObjectRef names an object a finding is about (config.ObjectRef).
type ObjectRef = config.ObjectRef

const (
	kindFS = "FlowSchema"
	kindPL = "PriorityLevelConfiguration"
)

func fsRef(name string) ObjectRef { return ObjectRef{Kind: kindFS, Name: name} }
func plRef(name string) ObjectRef { return ObjectRef{Kind: kindPL, Name: name} }

// Finding is one problem found in a configuration.
type Finding struct {
	Rule     string      `json:"rule"`
	Severity Severity    `json:"severity"`
	Objects  []ObjectRef `json:"objects"`
	// Message says what is wrong.
	Message string `json:"message"`
	// Why says why it matters.
	Why string `json:"why"`
	// Fix suggests what to do.
	Fix string `json:"fix"`
	// URL is the rule's page (Rule.URL).
	URL string `json:"url"`
	// ManagedBy names the vendor or operator that manages the first object,
	// which reverts edits to it (see Managed); empty for the user's own.
	ManagedBy string `json:"managedBy,omitempty"`
}

// Reference holds upstream's suggested objects for the server's version
// (config.Reference).
type Reference = config.Reference

// Options tune the checks.
type Options struct {
	// CrushWarn and CrushInfo are the probabilities, for a mouse flow against
	// 4 elephants, above which a queuing level's queues and hand size are
	// reported as a warning or as information.
	CrushWarn, CrushInfo float64
}

// DefaultOptions returns the thresholds "kubectl apf lint" uses. With them the
// suggested configuration produces no warning for crush risk: its worst level,
// leader-election (16 queues, hand 4, P=0.19 for 4 elephants), is information.
func DefaultOptions() Options {
	return Options{CrushWarn: 0.5, CrushInfo: 0.01}
}

// Input is a configuration to lint.
type Input struct {
	FlowSchemas    []*flowcontrolv1.FlowSchema
	PriorityLevels []*flowcontrolv1.PriorityLevelConfiguration
	Reference      Reference
	// Callbacks are the APIServices and webhooks whose backends the
	// apiserver calls (read from -f input), for callback-below-caller.
	Callbacks []config.Callback
	// Release is the release the configuration runs on, Target the one it
	// is about to be upgraded to (zero: no upgrade), for
	// leader-election-moves and seat-starvation's list seats.
	Release, Target engine.Release
	// ServerConcurrency is the server's total concurrency limit (0: the
	// kube-apiserver default, 600), for seat-starvation.
	ServerConcurrency int
}

// Lint runs every check over in and returns the findings, most severe first,
// then by rule and object names.
func Lint(in Input, opts Options) []Finding {
	c := newChecker(in, opts)
	c.checkDangling()
	c.checkShadowing()
	c.checkPrecedenceTies()
	c.checkUnusedLevels()
	c.checkSuggested()
	c.checkExempt()
	c.checkRejectLevels()
	c.checkCrushRisk()
	c.checkDistinguishers()
	c.checkSystemIdentities()
	c.checkCallbacks()
	c.checkLeaderElection()
	c.checkRejectAdmits()
	c.checkSeatStarvation()
	c.checkExemptReach()
	c.checkSystemLevels()
	for i := range c.findings {
		f := &c.findings[i]
		if r, ok := RuleByID(f.Rule); ok {
			f.URL = r.URL()
		}
		c.markManaged(f)
	}
	sort.SliceStable(c.findings, func(i, j int) bool {
		a, b := c.findings[i], c.findings[j]
		if a.Severity.Rank() != b.Severity.Rank() {
			return a.Severity.Rank() < b.Severity.Rank()
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return refsKey(a.Objects) < refsKey(b.Objects)
	})
	return c.findings
}

func refsKey(refs []ObjectRef) string {
	var parts []string
	for _, r := range refs {
		parts = append(parts, r.String())
	}
	return strings.Join(parts, ",")
}

// HasErrors reports whether any finding is an error.
func HasErrors(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == SeverityError {
			return true
		}
	}
	return false
}

type checker struct {
	in      Input
	opts    Options
	cfg     *engine.Config
	pls     map[string]*flowcontrolv1.PriorityLevelConfiguration // live levels, defaulted, imagined ones included
	inputPL map[string]bool                                      // names of the levels given in the input
	ordered []*flowcontrolv1.FlowSchema
	reach   map[string]Reachability
	// sugFS are the release's suggested FlowSchemas by name
	// (Input.Reference)
	sugFS    map[string]*flowcontrolv1.FlowSchema
	findings []Finding
	intact   *bool // suggestedIntact, once computed
}

func newChecker(in Input, opts Options) *checker {
	// The engine digests the objects exactly as the apiserver's config
	// controller does: defaults, broken levels, dangling schemas, imagined
	// mandatory objects and the matching order.
	cfg := engine.NewConfig(in.FlowSchemas, in.PriorityLevels)
	c := &checker{in: in, opts: opts, cfg: cfg, pls: cfg.PriorityLevels, ordered: cfg.FlowSchemas,
		inputPL: map[string]bool{}, reach: map[string]Reachability{}, sugFS: map[string]*flowcontrolv1.FlowSchema{}}
	for _, pl := range in.PriorityLevels {
		c.inputPL[pl.Name] = true
	}
	for _, fs := range in.Reference.SuggestedFlowSchemas {
		c.sugFS[fs.Name] = fs
	}
	for _, r := range Analyze(c.ordered) {
		c.reach[r.FlowSchema] = r
	}
	return c
}

func sortedPLNames(m map[string]*flowcontrolv1.PriorityLevelConfiguration) []string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// add records f at its rule's severity: rules.go is the one source of a
// finding's severity and of what --list-rules and the rule pages say.
func (c *checker) add(f Finding) { c.addAt(f, false) }

// addMilder records f at its rule's milder severity (Rule.Milder).
func (c *checker) addMilder(f Finding) { c.addAt(f, true) }

func (c *checker) addAt(f Finding, milder bool) {
	r, _ := RuleByID(f.Rule)
	f.Severity = r.Severity
	if milder && r.Milder != "" {
		f.Severity = r.Milder
	}
	c.findings = append(c.findings, f)
}

// reachable reports whether a schema takes part in matching and gets some
// request.
func (c *checker) reachable(name string) bool {
	r, ok := c.reach[name]
	return ok && !r.Empty && !r.Shadowed
}

func (c *checker) checkDangling() {
	for _, d := range c.cfg.Dangling {
		why := "the apiserver ignores a FlowSchema whose priority level is missing (its status gets Dangling=True), " +
			"so its requests fall through to the next matching FlowSchema, usually global-default or catch-all"
		if d.PriorityLevel == flowcontrolv1.PriorityLevelConfigurationNameExempt || d.PriorityLevel == flowcontrolv1.PriorityLevelConfigurationNameCatchAll {
			why += "; the apiserver does imagine the mandatory level " + d.PriorityLevel + ", but only after it has digested the FlowSchemas"
		}
		c.add(Finding{
			Rule:    RuleDanglingPriorityLevel,
			Objects: []ObjectRef{fsRef(d.Name), plRef(d.PriorityLevel)},
			Message: fmt.Sprintf("FlowSchema %s references priority level %q: %s", d.Name, d.PriorityLevel, d.Reason),
			Why:     why,
			Fix:     fmt.Sprintf("create or repair PriorityLevelConfiguration %q, or point spec.priorityLevelConfiguration.name at an existing level", d.PriorityLevel),
		})
	}
	for _, b := range c.cfg.Broken {
		c.add(Finding{
			Rule:    RuleBrokenPriorityLevel,
			Objects: []ObjectRef{plRef(b.Name)},
			Message: fmt.Sprintf("priority level %s is broken: %s", b.Name, b.Reason),
			Why:     "the apiserver ignores it (\"Ignoring PriorityLevelConfiguration object ... because its spec is broken\"), so every FlowSchema pointing at it is dangling",
			Fix:     "fix the spec: type and the limited/exempt member must agree, only the level named exempt may be Exempt, Reject has no queuing, and queues/handSize must fit shuffle sharding",
		})
	}
	for _, d := range c.cfg.Duplicates {
		kind, name, _ := strings.Cut(d, "/")
		c.add(Finding{
			Rule:    RuleDuplicateObject,
			Objects: []ObjectRef{{Kind: kind, Name: name}},
			Message: fmt.Sprintf("%s %s is defined more than once", kind, name),
			Why:     "only one object of a name can exist; the one applied last would silently replace the other",
			Fix:     "keep a single definition",
		})
	}
}

func (c *checker) checkShadowing() {
	for i, fs := range c.ordered {
		r := c.reach[fs.Name]
		switch {
		case r.Empty:
			c.add(Finding{
				Rule:    RuleEmptyFlowSchema,
				Objects: []ObjectRef{fsRef(fs.Name)},
				Message: fmt.Sprintf("FlowSchema %s matches no request", fs.Name),
				Why: "a rule matches only when one of its subjects and one of its resourceRules or nonResourceRules match; " +
					"every rule of this schema lacks one of the two (or names identities that carry neither " +
					"system:authenticated nor system:unauthenticated)",
				Fix: "give each rule at least one subject and at least one resource or non-resource rule, or delete the FlowSchema",
			})
		case r.Undecided:
			c.add(Finding{
				Rule:    RuleUndecided,
				Objects: []ObjectRef{fsRef(fs.Name)},
				Message: fmt.Sprintf("could not decide whether FlowSchema %s is shadowed: the rules before it are too many to compare", fs.Name),
				Why:     "the comparison is exact but bounded in work",
				Fix:     "none needed; simplify the earlier FlowSchemas if you want a decision",
			})
		case r.Shadowed:
			// The mandatory catch-all is a safety net for identities with
			// neither system:authenticated nor system:unauthenticated; it is
			// meant to be shadowed by global-default.
			if fs.Name == flowcontrolv1.FlowSchemaNameCatchAll {
				continue
			}
			earlier := r.Shadowers
			refs := []ObjectRef{fsRef(fs.Name)}
			for _, e := range earlier {
				refs = append(refs, fsRef(e))
			}
			c.add(Finding{
				Rule:    RuleShadowedFlowSchema,
				Objects: refs,
				Message: fmt.Sprintf("FlowSchema %s (precedence %d) can never match: every request it matches is matched first by %s",
					fs.Name, fs.Spec.MatchingPrecedence, describeSchemas(c.ordered[:i], earlier)),
				Why: "FlowSchemas are tried in order of matchingPrecedence, then name, and the first match wins; " +
					"the priority level this schema points at never gets its requests",
				Fix: fmt.Sprintf("give %s a matchingPrecedence lower than %s, or narrow the earlier schema's rules",
					fs.Name, lowestPrecedence(c.ordered[:i], earlier)),
			})
		default:
			// Everyone may also be in system:masters, so every schema overlaps
			// the mandatory exempt one; saying so would only add noise.
			var overlaps []RuleOverlap
			for _, o := range r.Overlaps {
				if o.Earlier != flowcontrolv1.FlowSchemaNameExempt {
					overlaps = append(overlaps, o)
				}
			}
			r.Overlaps = overlaps
			if len(r.Overlaps) == 0 {
				continue
			}
			c.add(Finding{
				Rule:    RulePartlyShadowed,
				Objects: overlapRefs(fs.Name, r.Overlaps),
				Message: fmt.Sprintf("FlowSchema %s is partly shadowed: %s", fs.Name, describeOverlaps(r.Overlaps)),
				Why: "requests matched by both go to the earlier FlowSchema; this one only gets the rest " +
					fmt.Sprintf("(for example %s)", r.Witness),
				Fix: "nothing if intended (a specific schema before a general one is the usual design); otherwise narrow the rules or reorder",
			})
		}
	}
}

func overlapRefs(name string, os []RuleOverlap) []ObjectRef {
	refs := []ObjectRef{fsRef(name)}
	seen := map[string]bool{}
	for _, o := range os {
		if !seen[o.Earlier] {
			seen[o.Earlier] = true
			refs = append(refs, fsRef(o.Earlier))
		}
	}
	return refs
}

func describeOverlaps(os []RuleOverlap) string {
	var parts []string
	for _, o := range os {
		parts = append(parts, fmt.Sprintf("rule %d overlaps %s rule %d", o.Rule, o.Earlier, o.EarlierAt))
	}
	return strings.Join(parts, ", ")
}

func describeSchemas(ordered []*flowcontrolv1.FlowSchema, names []string) string {
	prec := map[string]int32{}
	for _, fs := range ordered {
		prec[fs.Name] = fs.Spec.MatchingPrecedence
	}
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s (precedence %d)", n, prec[n]))
	}
	return strings.Join(parts, ", ")
}

func lowestPrecedence(ordered []*flowcontrolv1.FlowSchema, names []string) string {
	best := int32(-1)
	for _, fs := range ordered {
		for _, n := range names {
			if fs.Name == n && (best < 0 || fs.Spec.MatchingPrecedence < best) {
				best = fs.Spec.MatchingPrecedence
			}
		}
	}
	return fmt.Sprint(best)
}

func (c *checker) checkPrecedenceTies() {
	for i := 0; i < len(c.ordered); i++ {
		for j := i + 1; j < len(c.ordered); j++ {
			a, b := c.ordered[i], c.ordered[j]
			if a.Spec.MatchingPrecedence != b.Spec.MatchingPrecedence {
				break
			}
			w, ok := Intersect(a, b)
			if !ok {
				continue
			}
			c.add(Finding{
				Rule:    RulePrecedenceTie,
				Objects: []ObjectRef{fsRef(a.Name), fsRef(b.Name)},
				Message: fmt.Sprintf("FlowSchemas %s and %s share matchingPrecedence %d and can match the same requests (for example %s)",
					a.Name, b.Name, a.Spec.MatchingPrecedence, w),
				Why: fmt.Sprintf("the tie is broken by name, so %s wins; the Kubernetes documentation advises against relying on that", a.Name),
				Fix: fmt.Sprintf("give %s or %s a distinct matchingPrecedence", a.Name, b.Name),
			})
		}
	}
}

func (c *checker) checkUnusedLevels() {
	used := map[string]bool{}
	usedOnlyByUnreachable := map[string][]string{}
	for _, fs := range c.ordered {
		name := fs.Spec.PriorityLevelConfiguration.Name
		if c.reachable(fs.Name) || fs.Name == flowcontrolv1.FlowSchemaNameCatchAll {
			used[name] = true
		} else {
			usedOnlyByUnreachable[name] = append(usedOnlyByUnreachable[name], fs.Name)
		}
	}
	for _, pl := range c.in.PriorityLevels {
		if used[pl.Name] || pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt ||
			pl.Name == flowcontrolv1.PriorityLevelConfigurationNameCatchAll {
			continue
		}
		msg := fmt.Sprintf("priority level %s is used by no FlowSchema", pl.Name)
		refs := []ObjectRef{plRef(pl.Name)}
		if fss := usedOnlyByUnreachable[pl.Name]; len(fss) > 0 {
			msg = fmt.Sprintf("priority level %s is used only by FlowSchemas that never match (%s)", pl.Name, strings.Join(fss, ", "))
			for _, f := range fss {
				refs = append(refs, fsRef(f))
			}
		}
		c.add(Finding{
			Rule:    RuleUnusedPriorityLevel,
			Objects: refs,
			Message: msg,
			Why: "its nominalConcurrencyShares still count in the sum every level's nominal seats are divided by, " +
				"so it takes seats from the levels that do get traffic (less what it lends)",
			Fix: "delete it, or route traffic to it with a FlowSchema",
		})
	}
}
