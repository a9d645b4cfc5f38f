package lint

import (
	"fmt"
	"sort"
	"strings"
)

// DocsBase is where the rule pages (docs/lint/RULE.md) are published; every
// finding links to its rule's page under it.
const DocsBase = "https://github.com/kubectl-apf/kubectl-apf/blob/main/docs/lint/"

// Rule describes one check: the one source of the rule list, of
// "kubectl apf lint --list-rules" and "--explain", and of the pages under
// docs/lint (TestRulePages fails when a page is missing or stale;
// "go test ./pkg/lint -run TestRulePages -update" rewrites them).
type Rule struct {
	// ID is stable kebab-case, for scripts, --disable and suppressions.
	ID string `json:"id"`
	// Severity is the severity of the rule's findings; Milder, when set,
	// that of its milder ones (the Summary says which). A finding whose
	// objects only their manager can change is information whatever its
	// rule (Finding.ManagedBy says who manages them).
	Severity Severity `json:"severity"`
	Milder   Severity `json:"milderSeverity,omitempty"`
	// Summary says in one line what the rule checks.
	Summary string `json:"summary"`
	// Why says why it matters.
	Why string `json:"why"`
	// Example is a configuration, in YAML, that trips the rule.
	Example string `json:"example"`
	// Fix says what to do.
	Fix string `json:"fix"`
}

// Severities names the severities of the rule's findings, the most
// serious first: "error", or "error or warning".
func (r Rule) Severities() string {
	if r.Milder == "" || r.Milder == r.Severity {
		return string(r.Severity)
	}
	return string(r.Severity) + " or " + string(r.Milder)
}

// ManagedNote says the one exception to the rules' severities (markManaged),
// under the list of rules.
func ManagedNote() string {
	return "A finding whose objects only their managers can change (a vendor's or an operator's, or kube-apiserver's " +
		"suggested objects while they are all unchanged; the finding's \"managed by\" names the manager) is info, " +
		"whatever its rule's severity, except for " + strings.Join(keepSeverityWhenManaged, ", ") +
		": the user's edit, callback or upgrade is their cause."
}

// URL is the rule's page.
func (r Rule) URL() string { return DocsBase + r.ID + ".md" }

// Rules returns every rule, sorted by ID.
func Rules() []Rule {
	out := append([]Rule(nil), rules...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// RuleByID returns the rule named id.
func RuleByID(id string) (Rule, bool) {
	for _, r := range rules {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}

// UnknownRuleError is the one line for a rule name that is not a rule.
func UnknownRuleError(id string) error {
	var ids []string
	for _, r := range Rules() {
		ids = append(ids, r.ID)
	}
	return fmt.Errorf("no lint rule %q (kubectl apf lint --list-rules lists them: %s)", id, strings.Join(ids, ", "))
}

// RulePage renders the Markdown page of r (docs/lint/ID.md).
func RulePage(r Rule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- Generated from pkg/lint/rules.go by \"go test ./pkg/lint -run TestRulePages -update\"; do not edit. -->\n\n")
	fmt.Fprintf(&b, "# %s\n\n", r.ID)
	fmt.Fprintf(&b, "**Severity:** %s\n\n", r.Severities())
	fmt.Fprintf(&b, "%s\n\n", r.Summary)
	fmt.Fprintf(&b, "## Why it matters\n\n%s\n\n", r.Why)
	fmt.Fprintf(&b, "## Example\n\n```yaml\n%s\n```\n\n", strings.TrimRight(r.Example, "\n"))
	fmt.Fprintf(&b, "## Fix\n\n%s\n\n", r.Fix)
	fmt.Fprintf(&b, "## Suppressing it\n\n")
	fmt.Fprintf(&b, "Annotate one of the FlowSchemas or PriorityLevelConfigurations the finding names, with the reason as the value:\n\n")
	fmt.Fprintf(&b, "```yaml\nmetadata:\n  annotations:\n    %s%s: \"why this is accepted here\"\n```\n\n", SuppressAnnotationPrefix, r.ID)
	fmt.Fprintf(&b, "or list it in the file given with `--config`:\n\n")
	fmt.Fprintf(&b, "```yaml\nsuppressions:\n- rule: %s\n  name: \"my-*\"\n  reason: why this is accepted here\n```\n\n", r.ID)
	fmt.Fprintf(&b, "`--disallow-suppressions` ignores both. See [all rules](README.md).\n")
	return b.String()
}

// RuleIndex renders docs/lint/README.md: the rules, one line each.
func RuleIndex() string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- Generated from pkg/lint/rules.go by \"go test ./pkg/lint -run TestRulePages -update\"; do not edit. -->\n\n")
	fmt.Fprintf(&b, "# kubectl apf lint rules\n\n")
	fmt.Fprintf(&b, "`kubectl apf lint --list-rules` prints this list, `kubectl apf lint --explain RULE` a page.\n\n")
	fmt.Fprintf(&b, "| rule | severity | checks |\n|---|---|---|\n")
	for _, r := range Rules() {
		fmt.Fprintf(&b, "| [%s](%s.md) | %s | %s |\n", r.ID, r.ID, r.Severities(), r.Summary)
	}
	fmt.Fprintf(&b, "\n%s\n", ManagedNote())
	return b.String()
}

// The example configurations share these lines.
const (
	exampleLimited = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: batch}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 10
    limitResponse: {type: Queue, queuing: {queues: 64, handSize: 6, queueLengthLimit: 50}}`
)

var rules = []Rule{
	{
		ID: RuleEmptyFlowSchema, Severity: SeverityError,
		Summary: "A FlowSchema matches no request at all.",
		Why: "A rule matches only when one of its subjects and one of its resourceRules or nonResourceRules match, and a schema " +
			"without rules matches nothing. Such a schema is dead configuration: the level it names never gets its requests.",
		Example: `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: batch}
spec:
  matchingPrecedence: 1000
  priorityLevelConfiguration: {name: workload-low}
  rules: []            # no rule: valid, and matches nothing`,
		Fix: "Give each rule at least one subject and one resource or non-resource rule, or delete the FlowSchema.",
	},
	{
		ID: RuleShadowedFlowSchema, Severity: SeverityError,
		Summary: "Every request a FlowSchema matches is matched first by earlier FlowSchemas, so it never matches.",
		Why: "FlowSchemas are tried in order of matchingPrecedence (then name) and the first match wins. " +
			"Shadowing is decided from the rules themselves (subjects, verbs, groups, resources, namespaces, URLs), not by sampling.",
		Example: `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: alice-debug}
spec:
  matchingPrecedence: 9950          # after global-default (9900), which matches every authenticated user
  priorityLevelConfiguration: {name: workload-high}
  rules:
  - subjects: [{kind: User, user: {name: alice}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]`,
		Fix: "Give the schema a matchingPrecedence below the schemas that shadow it, or narrow their rules.",
	},
	{
		ID: RulePartlyShadowed, Severity: SeverityInfo,
		Summary: "Some of a FlowSchema's rules overlap an earlier FlowSchema, which gets those requests.",
		Why:     "Requests matched by both go to the earlier schema. Usually intended (a specific schema before a general one), sometimes a surprise.",
		Example: `# workload-high's kube-system service accounts, also named by a later schema
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: my-controllers}
spec:
  matchingPrecedence: 1000
  priorityLevelConfiguration: {name: batch}
  rules:
  - subjects: [{kind: ServiceAccount, serviceAccount: {namespace: kube-system, name: "*"}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"]}]`,
		Fix: "Nothing if intended; otherwise narrow the rules or reorder the schemas.",
	},
	{
		ID: RuleUndecided, Severity: SeverityInfo,
		Summary: "Whether a FlowSchema is shadowed could not be decided within the comparison's work bound.",
		Why:     "The shadowing comparison is exact but bounded in work; very many earlier rules can exceed it.",
		Example: `# a FlowSchema preceded by hundreds of rules naming overlapping subjects and resources`,
		Fix:     "None needed; simplify the earlier FlowSchemas for a decision.",
	},
	{
		ID: RulePrecedenceTie, Severity: SeverityWarning,
		Summary: "Two FlowSchemas share a matchingPrecedence and can match the same requests.",
		Why:     "The tie is broken by name; the Kubernetes documentation advises against relying on that, and a rename changes the routing.",
		Example: `# ci-bots and ci-runners, both matchingPrecedence 700, both matching group ci
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: ci-bots}
spec:
  matchingPrecedence: 700
  priorityLevelConfiguration: {name: batch}
  rules:
  - subjects: [{kind: Group, group: {name: ci}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"]}]`,
		Fix: "Give one of the two a distinct matchingPrecedence.",
	},
	{
		ID: RuleDanglingPriorityLevel, Severity: SeverityError,
		Summary: "A FlowSchema names a priority level that does not exist or is broken.",
		Why: "The apiserver ignores a dangling FlowSchema (status Dangling=True): its requests fall through to the next matching " +
			"schema, usually global-default or catch-all.",
		Example: `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: batch-jobs}
spec:
  matchingPrecedence: 1000
  priorityLevelConfiguration: {name: batch}     # no PriorityLevelConfiguration named batch
  rules:
  - subjects: [{kind: Group, group: {name: batch}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"]}]`,
		Fix: "Create or repair the priority level, or point spec.priorityLevelConfiguration.name at an existing one.",
	},
	{
		ID: RuleBrokenPriorityLevel, Severity: SeverityError,
		Summary: "A PriorityLevelConfiguration passes validation but the apiserver's config controller ignores it.",
		Why:     "Every FlowSchema pointing at it is then dangling.",
		Example: `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: vip}
spec:
  type: Exempt          # only the level named exempt may be Exempt
  exempt: {}`,
		Fix: "Make type and the limited/exempt member agree; only the level named exempt may be Exempt.",
	},
	{
		ID: RuleDuplicateObject, Severity: SeverityError,
		Summary: "The input defines an object of the same kind and name more than once.",
		Why:     "Only one can exist: the one applied last silently replaces the other.",
		Example: `# two documents with kind: FlowSchema and metadata.name: batch`,
		Fix:     "Keep a single definition.",
	},
	{
		ID: RuleUnusedPriorityLevel, Severity: SeverityWarning,
		Summary: "A priority level gets no traffic: no FlowSchema that can match points at it.",
		Why: "Its nominalConcurrencyShares still count in the sum every level's nominal seats are divided by, so it takes seats " +
			"from the levels that do get traffic (less what it lends).",
		Example: exampleLimited + "\n# and no FlowSchema with priorityLevelConfiguration.name: batch",
		Fix:     "Delete it, or route traffic to it with a FlowSchema.",
	},
	{
		ID: RuleSuggestedDiffers, Severity: SeverityWarning,
		Summary: "A suggested object (one kube-apiserver maintains) differs from the release's suggestion.",
		Why: "The apiserver rewrites suggested objects that are not annotated apf.kubernetes.io/autoupdate-spec=false, so an edit " +
			"is reverted; one that is opted out no longer gets upstream's fixes on upgrade.",
		Example: `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: workload-low}       # no apf.kubernetes.io/autoupdate-spec: "false"
spec:
  type: Limited
  limited: {nominalConcurrencyShares: 500, limitResponse: {type: Queue, queuing: {queues: 128, handSize: 6, queueLengthLimit: 50}}}`,
		Fix: "Annotate apf.kubernetes.io/autoupdate-spec: \"false\" to keep the edit, or drop the edit.",
	},
	{
		ID: RuleExemptBeyondMasters, Severity: SeverityError, Milder: SeverityWarning,
		Summary: "A FlowSchema routes clients other than system:masters to the exempt level for more than the health checks (error when it exempts everyone's resource requests).",
		Why: "Exempt requests are never queued, limited or rejected: a flood from them reaches the apiserver unchecked and APF " +
			"cannot protect anyone else. A rule that exempts only /healthz, /livez and /readyz (and their checks' subpaths), as " +
			"upstream's suggested FlowSchema probes does for everyone, is not reported: the checks are cheap, and a probe answered 429 " +
			"counts as a failed one.",
		Example: `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: oncall-exempt}
spec:
  matchingPrecedence: 500
  priorityLevelConfiguration: {name: exempt}
  rules:
  - subjects: [{kind: Group, group: {name: oncall}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"]}]`,
		Fix: "Route these clients to a Limited level with enough shares (for example workload-high).",
	},
	{
		ID: RuleRejectWithTraffic, Severity: SeverityWarning,
		Summary: "A Reject priority level gets real traffic from a FlowSchema.",
		Why:     "A Reject level has no queues: when its seats are busy a request gets HTTP 429 at once instead of waiting.",
		Example: `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: bouncer}
spec:
  type: Limited
  limited: {nominalConcurrencyShares: 5, limitResponse: {type: Reject}}
# and a FlowSchema sending group scrapers' GET /metrics to bouncer`,
		Fix: "Route the traffic to a queuing level, or give the level limitResponse type Queue.",
	},
	{
		ID: RuleCrushRisk, Severity: SeverityWarning, Milder: SeverityInfo,
		Summary: "A queuing level's queues and hand size let a few heavy flows crush a light one (information when the chance is small, or the level has a single queue).",
		Why: "Shuffle sharding deals each flow a hand of queues; when heavy flows hold every queue of a light flow's hand, " +
			"the light flow waits behind them.",
		Example: `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: tiny}
spec:
  type: Limited
  limited: {nominalConcurrencyShares: 10, limitResponse: {type: Queue, queuing: {queues: 4, handSize: 2, queueLengthLimit: 50}}}`,
		Fix: "Raise queues (the finding proposes a number), or accept the risk on a level with few flows.",
	},
	{
		ID: RuleNoDistinguisherShared, Severity: SeverityWarning,
		Summary: "A FlowSchema without a distinguisherMethod matches many clients at a queuing level.",
		Why: "Without a distinguisher every request of the schema is one flow, so fair queuing cannot separate its clients: " +
			"one heavy client fills the flow's queues and the others wait behind it.",
		Example: `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: ci-runners}
spec:
  matchingPrecedence: 700
  priorityLevelConfiguration: {name: batch}
  rules:                                   # no distinguisherMethod
  - subjects: [{kind: Group, group: {name: ci}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"]}]`,
		Fix: "Set spec.distinguisherMethod.type to ByUser (or ByNamespace).",
	},
	{
		ID: RuleSystemIdentityFallsDown, Severity: SeverityWarning,
		Summary: "Traffic of a core component (kube-proxy, kubelet, controllers) falls through to global-default or catch-all.",
		Why:     "System components then compete with every ordinary client for the fallback level's seats; a busy workload can starve the cluster's own control loops.",
		Example: `# the upstream defaults: kube-proxy (user system:kube-proxy) matches no suggested schema
# before global-default`,
		Fix: "Add a FlowSchema before global-default that routes the component to a system or workload-high level.",
	},
	{
		ID: RuleCallbackBelowCaller, Severity: SeverityWarning,
		Summary: "An aggregated apiserver's or a webhook's service account lands at a level at or below the requests that call it.",
		Why: "The apiserver calls an APIService backend or a webhook while it holds a seat for the caller's request; the backend's " +
			"own requests back (SubjectAccessReviews, TokenReviews, reads) then wait in a level no better than the caller's. " +
			"When that level is busy the callback waits, the caller times out, and HPA sees 500s (kubernetes/kubernetes#121202).",
		Example: `apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  group: metrics.k8s.io
  version: v1beta1
  service: {namespace: kube-system, name: metrics-server}
# metrics-server runs as kube-system/metrics-server, whose requests the
# FlowSchemas send to workload-low, where controllers' metrics reads also go`,
		Fix: "Add a FlowSchema for the backend's service account before the callers' schemas that routes it to a higher level " +
			"(workload-high, or a level of its own with enough shares).",
	},
	{
		ID: RuleLeaderElectionMoves, Severity: SeverityWarning,
		Summary: "Upgrading to 1.34 or later moves leader election off leader-election: the suggested workload-leader-election FlowSchema is gone.",
		Why: "Up to 1.33 workload-leader-election sent kube-system service accounts' leader election on endpoints, configmaps and " +
			"leases to the leader-election level. 1.34 removed it (kubernetes/kubernetes#131215) and the apiserver deletes it on " +
			"upgrade unless it is opted out of auto-update. Leases stay in leader-election (system-leader-election matches them), " +
			"but endpoints and configmaps locks then land where the controllers' other requests do, where a busy level can delay " +
			"a renewal past its deadline and make them lose the lock. Given --kube-version before 1.34 and --target-version 1.34 " +
			"or later, lint says which locks move and where.",
		Example: `# kubectl apf lint --defaults --kube-version 1.33 --target-version 1.34
# a kube-system controller's "update configmaps" lock moves from
# workload-leader-election (leader-election) to kube-system-service-accounts (workload-high)`,
		Fix: "Move the controllers to Lease locks, or before the upgrade add a FlowSchema of your own for their endpoints or " +
			"configmaps locks (get, create, update) routed to leader-election.",
	},
	{
		ID: RuleRejectAdmitsWhenIdle, Severity: SeverityWarning,
		Summary: "A Reject level meant to block (\"jail\") still admits one request at a time when it is idle.",
		Why: "With nominalConcurrencyShares 0 (and nothing to borrow) a level's limit is 0 seats, yet the queueset dispatches " +
			"a request wider than the limit when nothing executes at the level, in every release up to 1.37 " +
			"(kubernetes/kubernetes#134196). A level built to refuse everything lets one request through at a time.",
		Example: `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: jail}
spec:
  type: Limited
  limited: {nominalConcurrencyShares: 0, lendablePercent: 0, limitResponse: {type: Reject}}`,
		Fix: "Expect one request at a time to pass. To refuse a client outright, use RBAC or an admission policy; APF only " +
			"shapes concurrency.",
	},
	{
		ID: RuleSeatStarvation, Severity: SeverityWarning,
		Summary: "One request can take every seat of a level, or a critical level has fewer seats than its own traffic needs.",
		Why: "A LIST can take up to the release's max seats (10 up to 1.33, 100 from 1.34) at a level with enough seats; at a " +
			"level whose limit is at or below that, one large LIST holds every seat and all other requests wait; a level of one seat " +
			"runs its requests one at a time, whatever they are. A critical level " +
			"(system, node-high, leader-election) below a few seats at the server's concurrency queues the cluster's own " +
			"control traffic.",
		Example: `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: reports}
spec:
  type: Limited
  limited: {nominalConcurrencyShares: 1, limitResponse: {type: Queue, queuing: {queues: 16, handSize: 4, queueLengthLimit: 50}}}
# at 600 server seats this level has 3 seats; one LIST of 300 pods takes them all`,
		Fix: "Raise the level's nominalConcurrencyShares (or let it borrow), or send large LISTs elsewhere; keep critical " +
			"levels at their upstream shares.",
	},
	{
		ID: RuleExemptReach, Severity: SeverityWarning,
		Summary: "A FlowSchema other than the mandatory exempt one sends system:masters to the exempt level: a second exempt schema, where exemption spreads.",
		Why: "The mandatory exempt FlowSchema already exempts system:masters. A second exempt schema is how exemption " +
			"spreads: subjects, verbs and URLs are added to it later, each reaching the apiserver unchecked. Operators that " +
			"ship one extend exemption without saying so.",
		Example: `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: admins-exempt}
spec:
  matchingPrecedence: 2
  priorityLevelConfiguration: {name: exempt}
  rules:
  - subjects: [{kind: Group, group: {name: system:masters}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"]}]`,
		Fix: "Delete the extra exempt schema; the mandatory one covers system:masters. Route anyone else to a Limited level.",
	},
	{
		ID: RuleClientInSystemLevel, Severity: SeverityWarning,
		Summary: "A FlowSchema sends clients other than the cluster's own components to node-high, system or leader-election, the levels of its control traffic.",
		Why: "Upstream keeps node-high for the kubelets' status and leases, so that nodes stay Ready when the control plane is " +
			"overloaded (kubernetes/kubernetes#101151), system for the kubelets' other requests and leader-election for the " +
			"controllers' leases, each with the seats that traffic needs. A client's flood routed there queues the nodes and " +
			"the leaders behind it: nodes go NotReady, controllers lose leadership. The cluster's own components are group " +
			"system:nodes, users system:* (not system:anonymous) and service accounts of kube-system; a rule that matches " +
			"leader election alone (get, create, update or patch of leases, or of the endpoints and configmaps of older locks) " +
			"belongs in leader-election whoever makes it, as Karpenter's chart routes its controller's.",
		Example: `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: ci-fast-lane}
spec:
  matchingPrecedence: 450
  priorityLevelConfiguration: {name: node-high}
  rules:
  - subjects: [{kind: ServiceAccount, serviceAccount: {namespace: ci, name: deployer}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"]}]`,
		Fix: "Route the client to workload-high (a controller), workload-low or a level of its own with the shares it needs; " +
			"an agent that must report node health from outside kube-system can be suppressed with its reason.",
	},
}
