package lint

import (
	"fmt"
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// leaderElectionRemovedIn is the release whose suggested configuration no
// longer has workload-leader-election (kubernetes/kubernetes#131215).
const leaderElectionRemovedIn = 34

// leaderElectionRequests are a kube-system controller's leader election
// with each resource lock workload-leader-election matched up to 1.33:
// endpoints and configmaps (client-go's older locks, still used by some
// controllers) and leases, which system-leader-election also matches.
var leaderElectionRequests = func() []Request {
	var out []Request
	for _, r := range []struct{ group, resource string }{{"", "configmaps"}, {"", "endpoints"}, {"coordination.k8s.io", "leases"}} {
		out = append(out, Request{
			User:     "system:serviceaccount:kube-system:my-controller",
			Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", groupAuthenticated},
			Resource: true, Verb: "update", APIGroup: r.group, ResourceName: r.resource, Namespace: "kube-system",
		})
	}
	return out
}()

// checkLeaderElection says where lease traffic moves when a configuration
// of a release before 1.34 is upgraded to 1.34 or later: the apiserver's
// ensurer deletes the suggested FlowSchemas the new release no longer
// suggests unless they are annotated apf.kubernetes.io/autoupdate-spec=false
// (k8s.io/kubernetes pkg/registry/flowcontrol/ensurer: RemoveUnwantedObjects).
func (c *checker) checkLeaderElection() {
	from, to := c.in.Release, c.in.Target
	if from.IsZero() || to.IsZero() || from.Minor >= leaderElectionRemovedIn || to.Minor < leaderElectionRemovedIn {
		return
	}
	keep := map[string]bool{}
	for _, fs := range to.DefaultFlowSchemas() {
		keep[fs.Name] = true
	}
	suggestedBefore := map[string]bool{}
	for _, fs := range from.DefaultFlowSchemas() {
		suggestedBefore[fs.Name] = true
	}
	var after []*flowcontrolv1.FlowSchema
	var removed []string
	for _, fs := range c.in.FlowSchemas {
		if suggestedBefore[fs.Name] && !keep[fs.Name] && fs.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "false" {
			removed = append(removed, fs.Name)
			continue
		}
		after = append(after, fs)
	}
	if len(removed) == 0 {
		return
	}
	upgraded := engine.NewConfig(after, c.in.PriorityLevels)
	for _, r := range leaderElectionRequests {
		beforeFS, beforePL := c.classify(r)
		m := upgraded.Classify(engineRequest(r)).FlowSchema
		if m == nil || beforeFS == "" || m.Spec.PriorityLevelConfiguration.Name == beforePL {
			continue
		}
		afterFS, afterPL := m.Name, m.Spec.PriorityLevelConfiguration.Name
		c.add(Finding{
			Rule:    RuleLeaderElectionMoves,
			Objects: []ObjectRef{fsRef(beforeFS), fsRef(afterFS), plRef(afterPL)},
			Message: fmt.Sprintf("upgrading from %s to %s removes %s: leader election on %s (%s) moves from %s (level %s) to %s (level %s)",
				from, to, strings.Join(removed, ", "), r.ResourceName, r, beforeFS, beforePL, afterFS, afterPL),
			Why: fmt.Sprintf("1.34 dropped the suggested workload-leader-election FlowSchema (kubernetes/kubernetes#131215) and the apiserver deletes it on upgrade; "+
				"this lock's renewals then wait with the controllers' other requests in %s, and a late renewal loses the lock", afterPL),
			Fix: fmt.Sprintf("move the controllers to Lease locks (system-leader-election keeps them in leader-election), or add a FlowSchema of your own with matchingPrecedence below %d "+
				"for %s (get, create, update) routed to %s, or annotate %s %s=\"false\" to keep it",
				precedenceOf(c.in.FlowSchemas, afterFS), r.ResourceName, beforePL, beforeFS, flowcontrolv1.AutoUpdateAnnotationKey),
		})
	}
}

func precedenceOf(fss []*flowcontrolv1.FlowSchema, name string) int32 {
	for _, fs := range fss {
		if fs.Name == name {
			return fs.Spec.MatchingPrecedence
		}
	}
	return 0
}

// serverConcurrency is the input's, or kube-apiserver's default.
func (c *checker) serverConcurrency() int {
	if c.in.ServerConcurrency > 0 {
		return c.in.ServerConcurrency
	}
	return engine.DefaultServerConcurrencyLimit
}

func (c *checker) limits() map[string]engine.LevelLimits {
	out := map[string]engine.LevelLimits{}
	for _, l := range c.cfg.Limits(c.serverConcurrency()) {
		out[l.Name] = l
	}
	return out
}

// usedLevels are the levels some reachable FlowSchema sends requests to.
func (c *checker) usedLevels() map[string][]string {
	out := map[string][]string{}
	for _, fs := range c.ordered {
		if c.reachable(fs.Name) {
			n := fs.Spec.PriorityLevelConfiguration.Name
			out[n] = append(out[n], fs.Name)
		}
	}
	return out
}

// checkRejectAdmits finds Reject levels with no seats of their own: the
// queueset admits a request wider than the concurrency limit when nothing
// executes (k8s.io/apiserver pkg/util/flowcontrol/fairqueuing/queueset
// queueset.go canAccommodateSeatsLocked: seats > ConcurrencyLimit and
// totRequestsExecuting == 0 returns true), so such a level lets one request
// at a time through (kubernetes/kubernetes#134196).
func (c *checker) checkRejectAdmits() {
	lim := c.limits()
	used := c.usedLevels()
	for _, name := range sortedPLNames(c.pls) {
		pl := c.pls[name]
		if pl.Spec.Limited == nil || pl.Spec.Limited.LimitResponse.Type != flowcontrolv1.LimitResponseTypeReject {
			continue
		}
		l := lim[name]
		if l.NominalCL > 0 {
			continue
		}
		refs := []ObjectRef{plRef(name)}
		via := ""
		if fss := used[name]; len(fss) > 0 {
			for _, f := range fss {
				refs = append(refs, fsRef(f))
			}
			via = fmt.Sprintf(" (FlowSchema %s sends it requests)", strings.Join(fss, ", "))
		}
		borrow := ""
		if l.BorrowingCL > 0 {
			borrow = fmt.Sprintf(", and it may borrow up to %s when others lend", seatCount(l.BorrowingCL, ""))
		}
		c.add(Finding{
			Rule:    RuleRejectAdmitsWhenIdle,
			Objects: refs,
			Message: fmt.Sprintf("priority level %s has nominalConcurrencyShares %s (0 seats of %d) and limitResponse Reject%s, yet admits one request whenever none executes there%s",
				name, ptrStr(pl.Spec.Limited.NominalConcurrencyShares), c.serverConcurrency(), via, borrow),
			Why: "the queueset runs a request wider than the limit when the level is idle (queueset.go canAccommodateSeatsLocked), " +
				"in every release up to 1.37 (kubernetes/kubernetes#134196); a level built as a jail does not block",
			Fix: "expect one request at a time to pass; to refuse a client, use RBAC or an admission policy instead of APF",
		})
	}
}

// criticalLevels are upstream's levels for the cluster's own traffic.
var criticalLevels = []string{"system", "node-high", "leader-election"}

// checkSeatStarvation finds levels where one request can hold every seat,
// and critical levels sized below half of what upstream gives them.
func (c *checker) checkSeatStarvation() {
	lim := c.limits()
	used := c.usedLevels()
	rel := c.in.Release
	if rel.IsZero() {
		rel = engine.NewestRelease
	}
	for _, name := range sortedPLNames(c.pls) {
		pl, l := c.pls[name], lim[name]
		if pl.Spec.Limited == nil || !c.getsLists(used[name]) || l.NominalCL == 0 {
			continue
		}
		// A queuing level caps one request at MaxSeats, within the work
		// estimator's global cap for a LIST; a Reject level at that cap.
		maxSeats := min(l.MaxSeats, rel.MaxListSeats())
		if !l.Queuing {
			maxSeats = rel.MaxListSeats()
		}
		if maxSeats == 0 || int(maxSeats) < l.NominalCL {
			continue
		}
		f := Finding{
			Rule:    RuleSeatStarvation,
			Objects: []ObjectRef{plRef(name)},
			Message: fmt.Sprintf("priority level %s has %s at %d server seats, and one request there may take %d: at that limit a single large LIST holds every seat (borrowing raises the limit only while other levels lend)",
				name, nominalSeats(l.NominalCL), c.serverConcurrency(), maxSeats),
			Why: "while it runs every other request of the level waits (or is rejected), whatever its flow",
			Fix: fmt.Sprintf("raise %s's nominalConcurrencyShares (or let it borrow), or route large LISTs elsewhere", name),
		}
		if l.NominalCL == 1 {
			// any request holds the one seat: a LIST's width says nothing more
			f.Message = fmt.Sprintf("priority level %s has 1 nominal seat at %d server seats: any request there holds it, a large LIST for as long as it reads, so its requests run one at a time (borrowing raises the limit only while other levels lend)",
				name, c.serverConcurrency())
			f.Fix = fmt.Sprintf("raise %s's nominalConcurrencyShares (or let it borrow)", name)
		}
		c.add(f)
	}
	defLim := map[string]engine.LevelLimits{}
	for _, l := range engine.ComputeLimits(rel.DefaultPriorityLevels(), c.serverConcurrency()) {
		defLim[l.Name] = l
	}
	for _, name := range criticalLevels {
		l, ok := lim[name]
		d, dok := defLim[name]
		if !ok || !dok || !c.inputPL[name] || 2*l.NominalCL >= d.NominalCL {
			continue
		}
		c.add(Finding{
			Rule:    RuleSeatStarvation,
			Objects: []ObjectRef{plRef(name)},
			Message: fmt.Sprintf("critical priority level %s has %s at %d server seats, less than half of the %d upstream's configuration gives it",
				name, nominalSeats(l.NominalCL), c.serverConcurrency(), d.NominalCL),
			Why: "upstream sizes this level for the cluster's own traffic (nodes, controllers, leases); with fewer seats that traffic queues " +
				"behind itself and node heartbeats or lease renewals arrive late",
			Fix: fmt.Sprintf("restore %s's nominalConcurrencyShares, or lower the shares of the levels that took its seats", name),
		})
	}
}

// checkExemptReach finds FlowSchemas besides the mandatory exempt one that
// send system:masters to the exempt level, and suggested exempt schemas
// widened beyond the suggestion (exempt-beyond-masters reports the other
// subjects of user schemas).
func (c *checker) checkExemptReach() {
	for _, fs := range c.in.FlowSchemas {
		pl := c.pls[fs.Spec.PriorityLevelConfiguration.Name]
		if fs.Name == flowcontrolv1.FlowSchemaNameExempt || pl == nil || pl.Spec.Type != flowcontrolv1.PriorityLevelEnablementExempt {
			continue
		}
		if _, ok := c.sugFS[fs.Name]; ok {
			continue // suggested-object-differs reports an edited suggestion
		}
		masters := false
		for _, r := range fs.Spec.Rules {
			for _, s := range r.Subjects {
				masters = masters || s.Kind == flowcontrolv1.SubjectKindGroup && s.Group != nil && s.Group.Name == groupMasters
			}
		}
		if !masters {
			continue
		}
		c.add(Finding{
			Rule:    RuleExemptReach,
			Objects: []ObjectRef{fsRef(fs.Name), plRef(pl.Name)},
			Message: fmt.Sprintf("FlowSchema %s (precedence %d) sends group system:masters to the exempt level %s, which the mandatory exempt FlowSchema already does",
				fs.Name, fs.Spec.MatchingPrecedence, pl.Name),
			Why: "a second exempt schema is where exemption spreads: subjects and rules added to it later reach the apiserver unchecked, " +
				"and an operator shipping one widens exemption without saying so",
			Fix: fmt.Sprintf("delete %s; the mandatory exempt FlowSchema covers system:masters", fs.Name),
		})
	}
}

// getsLists reports whether one of the FlowSchemas named lets LIST requests
// (the ones the work estimator makes wide) through.
func (c *checker) getsLists(names []string) bool {
	for _, fs := range c.ordered {
		for _, n := range names {
			if fs.Name != n {
				continue
			}
			for _, r := range fs.Spec.Rules {
				for _, rr := range r.ResourceRules {
					for _, v := range rr.Verbs {
						if v == "list" || v == flowcontrolv1.VerbAll {
							return true
						}
					}
				}
			}
		}
	}
	return false
}

// systemLevels are the suggested levels that carry the cluster's own
// control traffic, and whose it is.
var systemLevels = map[string]string{
	"node-high":       "the kubelets' node status and leases, so that nodes stay Ready when the control plane is overloaded (kubernetes/kubernetes#101151)",
	"system":          "the kubelets' other requests (group system:nodes)",
	"leader-election": "the controllers' and the scheduler's leader election",
}

// systemSubject reports whether a subject names the cluster's own
// components alone: group system:nodes, a user system:* (a node, the
// controller manager, the scheduler, kube-proxy; not system:anonymous), a
// service account of kube-system.
func systemSubject(s flowcontrolv1.Subject) bool {
	switch {
	case s.Kind == flowcontrolv1.SubjectKindGroup && s.Group != nil:
		return s.Group.Name == "system:nodes"
	case s.Kind == flowcontrolv1.SubjectKindUser && s.User != nil:
		n := s.User.Name
		if rest, ok := strings.CutPrefix(n, saUsernamePrefix); ok {
			if ns, _, ok := strings.Cut(rest, ":"); ok {
				return ns == "kube-system"
			}
		}
		return strings.HasPrefix(n, "system:") && n != userAnonymous
	case s.Kind == flowcontrolv1.SubjectKindServiceAccount && s.ServiceAccount != nil:
		return s.ServiceAccount.Namespace == "kube-system"
	}
	return false
}

// leaderElectionOnly reports whether a rule matches leader election's
// requests alone: get, create, update or patch of leases (or the
// endpoints and configmaps of older locks), as upstream's
// system-leader-election does.
func leaderElectionOnly(r flowcontrolv1.PolicyRulesWithSubjects) bool {
	if len(r.NonResourceRules) > 0 || len(r.ResourceRules) == 0 {
		return false
	}
	allowed := func(xs []string, ok ...string) bool {
		for _, x := range xs {
			if !slices.Contains(ok, x) {
				return false
			}
		}
		return len(xs) > 0
	}
	for _, rr := range r.ResourceRules {
		if !allowed(rr.Verbs, "get", "create", "update", "patch") || !allowed(rr.APIGroups, "", "coordination.k8s.io") ||
			!allowed(rr.Resources, "leases", "endpoints", "configmaps") {
			return false
		}
	}
	return true
}

// checkSystemLevels finds the user's FlowSchemas that send clients other
// than the cluster's own components to a level that carries its control
// traffic (systemLevels).
func (c *checker) checkSystemLevels() {
	for _, fs := range c.ordered {
		level := fs.Spec.PriorityLevelConfiguration.Name
		whose, ok := systemLevels[level]
		if _, sug := c.sugFS[fs.Name]; !ok || sug || c.pls[level] == nil || !c.reachable(fs.Name) {
			continue
		}
		var clients []string
		for _, r := range fs.Spec.Rules {
			if level == "leader-election" && leaderElectionOnly(r) {
				// a controller's leader election belongs there, as
				// Karpenter's chart puts it
				continue
			}
			for _, s := range r.Subjects {
				if !systemSubject(s) {
					clients = append(clients, subjectString(s))
				}
			}
		}
		if len(clients) == 0 {
			continue
		}
		c.add(Finding{
			Rule:    RuleClientInSystemLevel,
			Objects: []ObjectRef{fsRef(fs.Name), plRef(level)},
			Message: fmt.Sprintf("FlowSchema %s (precedence %d) sends %s to priority level %s, which carries %s",
				fs.Name, fs.Spec.MatchingPrecedence, strings.Join(dedupe(clients), ", "), level, whose),
			Why: "a flood from these clients queues the cluster's own control traffic behind it: nodes miss their status " +
				"updates and go NotReady, leaders lose their leases; the level's seats were sized for that traffic alone",
			Fix: fmt.Sprintf("route these clients to workload-high, workload-low or a level of their own instead of %s", level),
		})
	}
}

// nominalSeats is "n nominal seats", "1 nominal seat" for one.
func nominalSeats(n int) string { return seatCount(n, "nominal ") }

// seatCount is "1 seat", "2 seats", with an adjective between ("1 nominal
// seat"): lint, below every writer, counts its own.
func seatCount(n int, adjective string) string {
	if n == 1 {
		return "1 " + adjective + "seat"
	}
	return fmt.Sprintf("%d %sseats", n, adjective)
}
