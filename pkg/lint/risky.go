package lint

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubectl-apf/kubectl-apf/pkg/capacity"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

const groupMasters = "system:masters"

func (c *checker) plOf(fs *flowcontrolv1.FlowSchema) *flowcontrolv1.PriorityLevelConfiguration {
	return c.pls[fs.Spec.PriorityLevelConfiguration.Name]
}

// checkSuggested compares objects named like upstream's suggested ones with
// the suggestion, as the apiserver's ensurer does
// (k8s.io/kubernetes/pkg/registry/flowcontrol/ensurer: flowSchemaSpecEqual and
// plcSpecEqualish default the suggestion, then compare semantically), but
// with a FlowSchema's lists taken as the sets they are
// (canonicalFlowSchemaSpec). The ensurer compares them in order, so it
// rewrites a suggested object whose subjects are only reordered (when it
// is not opted out); that rewrite changes nothing the server does, and is
// not reported.
func (c *checker) checkSuggested() {
	ref := c.in.Reference
	sugPL := map[string]*flowcontrolv1.PriorityLevelConfiguration{}
	for _, pl := range ref.SuggestedPriorityLevels {
		sugPL[pl.Name] = pl
	}
	version := ref.Version
	if version == "" {
		version = "upstream"
	}
	for _, fs := range c.in.FlowSchemas {
		s, ok := c.sugFS[fs.Name]
		if !ok {
			continue
		}
		want, got := canonicalFlowSchemaSpec(engine.DefaultFlowSchema(s).Spec), canonicalFlowSchemaSpec(engine.DefaultFlowSchema(fs).Spec)
		if equality.Semantic.DeepEqual(want, got) {
			continue
		}
		c.suggestedFinding(fsRef(fs.Name), fs.Annotations, diffFlowSchemaSpec(want, got), version)
	}
	for _, pl := range c.in.PriorityLevels {
		s, ok := sugPL[pl.Name]
		if !ok {
			continue
		}
		want, got := engine.DefaultPriorityLevel(s), engine.DefaultPriorityLevel(pl)
		if equality.Semantic.DeepEqual(want.Spec, got.Spec) {
			continue
		}
		c.suggestedFinding(plRef(pl.Name), pl.Annotations, diffPriorityLevelSpec(want.Spec, got.Spec), version)
	}
}

func (c *checker) suggestedFinding(ref ObjectRef, annotations map[string]string, fields []string, version string) {
	what := strings.Join(fields, ", ")
	if annotations[flowcontrolv1.AutoUpdateAnnotationKey] == "false" {
		c.add(Finding{
			Rule:    RuleSuggestedDiffers,
			Objects: []ObjectRef{ref},
			Message: fmt.Sprintf("%s is annotated %s=false and differs from the %s suggestion in %s",
				ref, flowcontrolv1.AutoUpdateAnnotationKey, version, what),
			Why: "the apiserver no longer keeps this suggested object current, so upgrades will not bring upstream's " +
				"fixes to it and it may now disagree with the rest of the suggested configuration",
			Fix: fmt.Sprintf("review the difference against the %s suggestion; if the edit is no longer needed, set %s=true "+
				"and the apiserver restores upstream's spec", version, flowcontrolv1.AutoUpdateAnnotationKey),
		})
		return
	}
	c.add(Finding{
		Rule:    RuleSuggestedDiffers,
		Objects: []ObjectRef{ref},
		Message: fmt.Sprintf("%s differs from the %s suggestion in %s but is not annotated %s=false",
			ref, version, what, flowcontrolv1.AutoUpdateAnnotationKey),
		Why: "the apiserver rewrites suggested objects that are not opted out, so this edit will be reverted " +
			"(or the server runs a different version than the suggestion compared against)",
		Fix: fmt.Sprintf("set annotation %s: \"false\" on the object to keep the edit", flowcontrolv1.AutoUpdateAnnotationKey),
	})
}

// canonicalFlowSchemaSpec returns a copy of spec with its lists in one
// order, without duplicates: its rules, and in each rule its subjects,
// resource rules and non-resource rules, and in those their verbs, API
// groups, resources, namespaces and URLs. kube-apiserver matches a request
// against each of them as a set (k8s.io/apiserver
// pkg/util/flowcontrol/rule.go: matchesFlowSchema, matchesASubject,
// matchesAResourceRule, containsString, ...), so two specs with the same
// canonical form match the same requests.
func canonicalFlowSchemaSpec(spec flowcontrolv1.FlowSchemaSpec) flowcontrolv1.FlowSchemaSpec {
	out := *spec.DeepCopy()
	for i := range out.Rules {
		r := &out.Rules[i]
		r.Subjects = sortedSet(r.Subjects)
		for j := range r.ResourceRules {
			rr := &r.ResourceRules[j]
			rr.Verbs, rr.APIGroups = sortedSet(rr.Verbs), sortedSet(rr.APIGroups)
			rr.Resources, rr.Namespaces = sortedSet(rr.Resources), sortedSet(rr.Namespaces)
		}
		r.ResourceRules = sortedSet(r.ResourceRules)
		for j := range r.NonResourceRules {
			nr := &r.NonResourceRules[j]
			nr.Verbs, nr.NonResourceURLs = sortedSet(nr.Verbs), sortedSet(nr.NonResourceURLs)
		}
		r.NonResourceRules = sortedSet(r.NonResourceRules)
	}
	out.Rules = sortedSet(out.Rules)
	return out
}

// sortedSet returns xs sorted by their JSON encoding, without duplicates
// (nil stays nil, so that an absent list and an empty one compare as
// Semantic.DeepEqual compares them).
func sortedSet[T any](xs []T) []T {
	if len(xs) < 2 {
		return xs
	}
	keys := make(map[string]T, len(xs))
	for _, x := range xs {
		b, err := json.Marshal(x)
		if err != nil {
			return xs // an API type always encodes; keep the order if not
		}
		keys[string(b)] = x
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	out := make([]T, 0, len(sorted))
	for _, k := range sorted {
		out = append(out, keys[k])
	}
	return out
}

func diffFlowSchemaSpec(a, b flowcontrolv1.FlowSchemaSpec) []string {
	var out []string
	if a.MatchingPrecedence != b.MatchingPrecedence {
		out = append(out, fmt.Sprintf("matchingPrecedence (%d, suggested %d)", b.MatchingPrecedence, a.MatchingPrecedence))
	}
	if a.PriorityLevelConfiguration != b.PriorityLevelConfiguration {
		out = append(out, fmt.Sprintf("priorityLevelConfiguration (%s, suggested %s)", b.PriorityLevelConfiguration.Name, a.PriorityLevelConfiguration.Name))
	}
	if !equality.Semantic.DeepEqual(a.DistinguisherMethod, b.DistinguisherMethod) {
		out = append(out, "distinguisherMethod")
	}
	if !equality.Semantic.DeepEqual(a.Rules, b.Rules) {
		out = append(out, "rules")
	}
	return out
}

func diffPriorityLevelSpec(a, b flowcontrolv1.PriorityLevelConfigurationSpec) []string {
	var out []string
	if a.Type != b.Type {
		out = append(out, "type")
	}
	if a.Limited != nil && b.Limited != nil {
		al, bl := a.Limited, b.Limited
		if !equality.Semantic.DeepEqual(al.NominalConcurrencyShares, bl.NominalConcurrencyShares) {
			out = append(out, fmt.Sprintf("nominalConcurrencyShares (%s, suggested %s)", ptrStr(bl.NominalConcurrencyShares), ptrStr(al.NominalConcurrencyShares)))
		}
		if !equality.Semantic.DeepEqual(al.LendablePercent, bl.LendablePercent) {
			out = append(out, fmt.Sprintf("lendablePercent (%s, suggested %s)", ptrStr(bl.LendablePercent), ptrStr(al.LendablePercent)))
		}
		if !equality.Semantic.DeepEqual(al.BorrowingLimitPercent, bl.BorrowingLimitPercent) {
			out = append(out, fmt.Sprintf("borrowingLimitPercent (%s, suggested %s)", ptrStr(bl.BorrowingLimitPercent), ptrStr(al.BorrowingLimitPercent)))
		}
		if !equality.Semantic.DeepEqual(al.LimitResponse, bl.LimitResponse) {
			out = append(out, "limitResponse")
		}
	} else if !equality.Semantic.DeepEqual(a.Limited, b.Limited) {
		out = append(out, "limited")
	}
	if !equality.Semantic.DeepEqual(a.Exempt, b.Exempt) {
		out = append(out, "exempt")
	}
	return out
}

func ptrStr(p *int32) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// broadSubjects returns the subjects of fs that stand for many clients: any
// group, every user, or every service account of a namespace.
func broadSubjects(fs *flowcontrolv1.FlowSchema) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range fs.Spec.Rules {
		for _, s := range r.Subjects {
			var d string
			switch {
			case s.Kind == flowcontrolv1.SubjectKindGroup && s.Group != nil:
				d = "group " + s.Group.Name
			case s.Kind == flowcontrolv1.SubjectKindUser && s.User != nil && s.User.Name == flowcontrolv1.NameAll:
				d = "every user"
			case s.Kind == flowcontrolv1.SubjectKindServiceAccount && s.ServiceAccount != nil && s.ServiceAccount.Name == flowcontrolv1.NameAll:
				d = "every service account of namespace " + s.ServiceAccount.Namespace
			}
			if d != "" && !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	return out
}

// everyone reports whether a subject covers all authenticated or all
// unauthenticated identities.
func everyone(s flowcontrolv1.Subject) bool {
	switch {
	case s.Kind == flowcontrolv1.SubjectKindGroup && s.Group != nil:
		n := s.Group.Name
		return n == flowcontrolv1.NameAll || n == groupAuthenticated || n == groupUnauthenticated
	case s.Kind == flowcontrolv1.SubjectKindUser && s.User != nil:
		return s.User.Name == flowcontrolv1.NameAll
	}
	return false
}

// healthPaths are kube-apiserver's health endpoints (k8s.io/apiserver
// pkg/server/healthz: /healthz, /livez, /readyz, each with a subpath per
// check). Upstream's suggested FlowSchema probes exempts them for everyone
// (k8s.io/apiserver pkg/apis/flowcontrol/bootstrap/default.go): a check is
// cheap, its handler serves every method alike, and a kubelet or a load
// balancer that gets 429 from one takes the apiserver for dead.
var healthPaths = []string{"/healthz", "/livez", "/readyz"}

// healthURL reports whether every path a nonResourceURLs pattern matches
// is a health endpoint or one of its checks ("/healthz", "/readyz/*",
// "/livez/etcd"; not "*" or "/").
func healthURL(pattern string) bool {
	if pattern == flowcontrolv1.NonResourceAll {
		return false
	}
	prefix := engine.NonResourceURLPrefix(pattern)
	for _, h := range healthPaths {
		if strings.HasPrefix(prefix, h+"/") {
			return true
		}
	}
	return false
}

// probesOnly reports whether a rule matches health checks alone: no
// resource rules, and only health endpoints in its non-resource rules,
// whatever their verbs.
func probesOnly(r flowcontrolv1.PolicyRulesWithSubjects) bool {
	if len(r.ResourceRules) > 0 || len(r.NonResourceRules) == 0 {
		return false
	}
	for _, nr := range r.NonResourceRules {
		for _, u := range nr.NonResourceURLs {
			if !healthURL(u) {
				return false
			}
		}
	}
	return true
}

func (c *checker) checkExempt() {
	for _, fs := range c.ordered {
		pl := c.plOf(fs)
		if pl == nil || pl.Spec.Type != flowcontrolv1.PriorityLevelEnablementExempt || !c.reachable(fs.Name) {
			continue
		}
		if fs.Name == flowcontrolv1.FlowSchemaNameExempt {
			continue
		}
		var beyond []string
		wide, resources := false, false
		for _, r := range fs.Spec.Rules {
			// A rule that exempts only health checks is upstream's own
			// choice (its suggested probes), whoever it names.
			if probesOnly(r) {
				continue
			}
			resources = resources || len(r.ResourceRules) > 0
			for _, s := range r.Subjects {
				if s.Kind == flowcontrolv1.SubjectKindGroup && s.Group != nil && s.Group.Name == groupMasters {
					continue
				}
				wide = wide || everyone(s)
				beyond = append(beyond, subjectString(s))
			}
		}
		if len(beyond) == 0 {
			continue
		}
		// An error when it exempts everyone's resource requests, else
		// the rule's milder warning.
		add := c.addMilder
		if wide && resources {
			add = c.add
		}
		add(Finding{
			Rule:    RuleExemptBeyondMasters,
			Objects: []ObjectRef{fsRef(fs.Name), plRef(pl.Name)},
			Message: fmt.Sprintf("FlowSchema %s routes %s to the exempt priority level %s",
				fs.Name, strings.Join(dedupe(beyond), ", "), pl.Name),
			Why: "exempt requests are never queued, limited or rejected, so a flood from these clients reaches the " +
				"apiserver unchecked and APF cannot protect anyone else; upstream exempts only system:masters (and, for everyone, the health checks /healthz, /livez and /readyz)",
			Fix: "route these clients to a Limited level with enough shares (for example workload-high) instead of exempt",
		})
	}
}

func subjectString(s flowcontrolv1.Subject) string {
	switch {
	case s.Kind == flowcontrolv1.SubjectKindUser && s.User != nil:
		return "user " + s.User.Name
	case s.Kind == flowcontrolv1.SubjectKindGroup && s.Group != nil:
		return "group " + s.Group.Name
	case s.Kind == flowcontrolv1.SubjectKindServiceAccount && s.ServiceAccount != nil:
		return "serviceaccount " + s.ServiceAccount.Namespace + "/" + s.ServiceAccount.Name
	}
	return "subject of kind " + string(s.Kind)
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func (c *checker) checkRejectLevels() {
	for _, fs := range c.ordered {
		pl := c.plOf(fs)
		if pl == nil || pl.Spec.Limited == nil || pl.Spec.Limited.LimitResponse.Type != flowcontrolv1.LimitResponseTypeReject {
			continue
		}
		r := c.reach[fs.Name]
		if r.Empty || r.Shadowed || r.Undecided || r.Witness == nil {
			continue
		}
		why := "a Reject level has no queues: when its seats are busy a request gets HTTP 429 at once (reason concurrency-limit) instead of waiting"
		if pl.Name == flowcontrolv1.PriorityLevelConfigurationNameCatchAll {
			why += "; catch-all is meant only for requests nothing else matches"
		}
		c.add(Finding{
			Rule:    RuleRejectWithTraffic,
			Objects: []ObjectRef{fsRef(fs.Name), plRef(pl.Name)},
			// the example is a request the FlowSchema is the first to
			// match, built from its rules, not one read from traffic
			Message: fmt.Sprintf("priority level %s rejects instead of queuing, and FlowSchema %s sends it the requests it matches first (for example %s)",
				pl.Name, fs.Name, r.Witness),
			Why: why,
			Fix: fmt.Sprintf("route this traffic to a queuing level with a FlowSchema before %s, or give %s limitResponse type Queue",
				fs.Name, pl.Name),
		})
	}
}

func (c *checker) checkCrushRisk() {
	for _, name := range sortedPLNames(c.pls) {
		pl := c.pls[name]
		if !c.inputPL[name] || pl.Spec.Limited == nil || pl.Spec.Limited.LimitResponse.Type != flowcontrolv1.LimitResponseTypeQueue ||
			pl.Spec.Limited.LimitResponse.Queuing == nil {
			continue
		}
		q := pl.Spec.Limited.LimitResponse.Queuing
		queues, hand := int(q.Queues), int(q.HandSize)
		p4, err := capacity.CrushProbability(queues, hand, 4)
		if err != nil {
			continue
		}
		// A warning above CrushWarn, the rule's milder information for
		// a single queue or above CrushInfo.
		var add func(Finding)
		switch {
		case queues == 1:
			add = c.addMilder
		case p4 >= c.opts.CrushWarn:
			add = c.add
		case p4 >= c.opts.CrushInfo:
			add = c.addMilder
		default:
			continue
		}
		p1, _ := capacity.CrushProbability(queues, hand, 1)
		p16, _ := capacity.CrushProbability(queues, hand, 16)
		f := Finding{
			Rule:    RuleCrushRisk,
			Objects: []ObjectRef{plRef(name)},
			Message: fmt.Sprintf("priority level %s (%d queues, hand size %d): a small flow is crushed by 1, 4, 16 heavy flows with probability %s, %s, %s",
				name, queues, hand, fmtProb(p1), fmtProb(p4), fmtProb(p16)),
			Why: "shuffle sharding deals each flow a hand of queues; when heavy flows hold every queue of a light flow's hand, " +
				"the light flow waits behind them (Kubernetes docs, \"Example Shuffle Sharding Configurations\")",
		}
		if queues == 1 {
			f.Message = fmt.Sprintf("priority level %s has a single queue: every flow shares it", name)
			f.Why = "with one queue there is no fair queuing between flows; a heavy client delays all others at this level"
		}
		f.Fix = suggestQueues(queues, hand, c.opts.CrushInfo)
		add(f)
	}
}

// suggestQueues proposes more queues (same hand size) until the 4-elephant
// crush probability falls below target, within the limits API validation puts
// on shuffle sharding: ceil(log2(queues)*handSize) <= 60 bits of entropy
// (ValidatePriorityLevelQueuingConfiguration, shufflesharding.RequiredEntropyBits).
func suggestQueues(queues, hand int, target float64) string {
	for q := max(queues*2, hand); q <= 1<<16; q *= 2 {
		if int(math.Ceil(math.Log2(float64(q))*float64(hand))) > 60 {
			break
		}
		if p, err := capacity.CrushProbability(q, hand, 4); err == nil && p < target {
			return fmt.Sprintf("raise queues to %d (4-elephant probability %s), or accept the risk if this level has few flows", q, fmtProb(p))
		}
	}
	return "raise queues or lower handSize, or accept the risk if this level has few flows"
}

func fmtProb(p float64) string {
	return fmt.Sprintf("%.3g", p)
}

func (c *checker) checkDistinguishers() {
	for _, fs := range c.ordered {
		pl := c.plOf(fs)
		if fs.Spec.DistinguisherMethod != nil || pl == nil || pl.Spec.Limited == nil || !c.reachable(fs.Name) {
			continue
		}
		lr := pl.Spec.Limited.LimitResponse
		if lr.Type != flowcontrolv1.LimitResponseTypeQueue || lr.Queuing == nil || lr.Queuing.Queues <= 1 {
			continue
		}
		broad := broadSubjects(fs)
		if len(broad) == 0 {
			continue
		}
		c.add(Finding{
			Rule:    RuleNoDistinguisherShared,
			Objects: []ObjectRef{fsRef(fs.Name), plRef(pl.Name)},
			Message: fmt.Sprintf("FlowSchema %s has no distinguisherMethod but matches many clients (%s) at queuing level %s",
				fs.Name, strings.Join(broad, ", "), pl.Name),
			Why: "without a distinguisher every request of the FlowSchema belongs to one flow, so fair queuing cannot " +
				"separate its clients: one heavy client fills the flow's queues and the others wait behind it",
			Fix: "set spec.distinguisherMethod.type to ByUser (or ByNamespace when clients map to namespaces)",
		})
	}
}

// SystemIdentity is a well-known Kubernetes component with typical requests.
type SystemIdentity struct {
	Name     string
	Requests []Request
}

// SystemIdentities are the components whose traffic should not fall through to
// global-default or catch-all. Their names and groups are the ones the
// standard authenticators give them.
func SystemIdentities() []SystemIdentity {
	authd := []string{groupAuthenticated}
	node := []string{"system:nodes", groupAuthenticated}
	ctrl := []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", groupAuthenticated}
	return []SystemIdentity{
		{Name: "kube-proxy", Requests: []Request{
			{User: "system:kube-proxy", Groups: authd, Resource: true, Verb: "watch", APIGroup: "discovery.k8s.io", ResourceName: "endpointslices"},
			{User: "system:kube-proxy", Groups: authd, Resource: true, Verb: "list", ResourceName: "services"},
		}},
		{Name: "kubelet", Requests: []Request{
			{User: "system:node:node-1", Groups: node, Resource: true, Verb: "get", ResourceName: "configmaps", Namespace: "default"},
			{User: "system:node:node-1", Groups: node, Resource: true, Verb: "patch", ResourceName: "nodes", Subresource: "status"},
			{User: "system:node:node-1", Groups: node, Resource: true, Verb: "update", APIGroup: "coordination.k8s.io", ResourceName: "leases", Namespace: "kube-node-lease"},
		}},
		{Name: "kube-controller-manager", Requests: []Request{
			{User: "system:kube-controller-manager", Groups: authd, Resource: true, Verb: "list", ResourceName: "pods"},
			{User: "system:kube-controller-manager", Groups: authd, Resource: true, Verb: "update", APIGroup: "coordination.k8s.io", ResourceName: "leases", Namespace: "kube-system"},
		}},
		{Name: "kube-scheduler", Requests: []Request{
			{User: "system:kube-scheduler", Groups: authd, Resource: true, Verb: "create", ResourceName: "pods", Subresource: "binding", Namespace: "default"},
			{User: "system:kube-scheduler", Groups: authd, Resource: true, Verb: "list", ResourceName: "nodes"},
		}},
		{Name: "controllers (kube-system service accounts)", Requests: []Request{
			{User: "system:serviceaccount:kube-system:replicaset-controller", Groups: ctrl, Resource: true, Verb: "create", ResourceName: "pods", Namespace: "default"},
		}},
	}
}

func (c *checker) checkSystemIdentities() {
	fallback := map[string]bool{"global-default": true, flowcontrolv1.FlowSchemaNameCatchAll: true}
	for _, id := range SystemIdentities() {
		landed := map[string]bool{}
		var examples []string
		for _, r := range id.Requests {
			fs := c.cfg.Classify(engineRequest(r)).FlowSchema
			if fs == nil {
				continue
			}
			if fallback[fs.Name] || fallback[fs.Spec.PriorityLevelConfiguration.Name] {
				landed[fs.Name] = true
				examples = append(examples, fmt.Sprintf("%s -> %s", r, fs.Name))
			}
		}
		if len(landed) == 0 {
			continue
		}
		var refs []ObjectRef
		for _, n := range sortedKeys(landed) {
			refs = append(refs, fsRef(n))
		}
		sort.Strings(examples)
		c.add(Finding{
			Rule:    RuleSystemIdentityFallsDown,
			Objects: refs,
			Message: fmt.Sprintf("%s traffic falls through to %s: %s", id.Name, strings.Join(sortedKeys(landed), ", "),
				strings.Join(examples, "; ")),
			Why: "system components then compete with every ordinary client for the fallback level's seats, " +
				"so a busy workload can starve the cluster's own control loops",
			Fix: fmt.Sprintf("add a FlowSchema for %s before global-default that routes it to a system or workload-high level", id.Name),
		})
	}
}
