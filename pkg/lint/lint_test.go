package lint

import (
	"slices"
	"sort"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
)

// Builders: small, so that each case shows only what it is about.

func user(n string) flowcontrolv1.Subject {
	return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: n}}
}

func group(n string) flowcontrolv1.Subject {
	return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: n}}
}

func sa(ns, n string) flowcontrolv1.Subject {
	return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: ns, Name: n}}
}

func res(verbs, groups, resources, namespaces []string, cluster bool) flowcontrolv1.ResourcePolicyRule {
	return flowcontrolv1.ResourcePolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, Namespaces: namespaces, ClusterScope: cluster}
}

func nonRes(verbs []string, urls ...string) flowcontrolv1.NonResourcePolicyRule {
	return flowcontrolv1.NonResourcePolicyRule{Verbs: verbs, NonResourceURLs: urls}
}

var all = []string{"*"}

func l(xs ...string) []string { return xs }

// allRes matches every resource request.
var allRes = res(all, all, all, all, true)

type ruleB struct {
	subjects []flowcontrolv1.Subject
	res      []flowcontrolv1.ResourcePolicyRule
	nonRes   []flowcontrolv1.NonResourcePolicyRule
}

func rule(subjects []flowcontrolv1.Subject, rs ...flowcontrolv1.ResourcePolicyRule) ruleB {
	return ruleB{subjects: subjects, res: rs}
}

func (r ruleB) withNonRes(nr ...flowcontrolv1.NonResourcePolicyRule) ruleB {
	r.nonRes = append(r.nonRes, nr...)
	return r
}

func subjects(s ...flowcontrolv1.Subject) []flowcontrolv1.Subject { return s }

func fsB(name string, prec int32, level string, rules ...ruleB) *flowcontrolv1.FlowSchema {
	fs := &flowcontrolv1.FlowSchema{}
	fs.Name = name
	fs.Spec.MatchingPrecedence = prec
	fs.Spec.PriorityLevelConfiguration.Name = level
	fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType}
	for _, r := range rules {
		fs.Spec.Rules = append(fs.Spec.Rules, flowcontrolv1.PolicyRulesWithSubjects{Subjects: r.subjects, ResourceRules: r.res, NonResourceRules: r.nonRes})
	}
	return fs
}

func noDistinguisher(fs *flowcontrolv1.FlowSchema) *flowcontrolv1.FlowSchema {
	fs.Spec.DistinguisherMethod = nil
	return fs
}

func queuing(name string, queues, hand int32) *flowcontrolv1.PriorityLevelConfiguration {
	p := &flowcontrolv1.PriorityLevelConfiguration{}
	p.Name = name
	p.Spec.Type = flowcontrolv1.PriorityLevelEnablementLimited
	p.Spec.Limited = &flowcontrolv1.LimitedPriorityLevelConfiguration{
		NominalConcurrencyShares: ptr.To[int32](30),
		LendablePercent:          ptr.To[int32](0),
		LimitResponse: flowcontrolv1.LimitResponse{
			Type:    flowcontrolv1.LimitResponseTypeQueue,
			Queuing: &flowcontrolv1.QueuingConfiguration{Queues: queues, HandSize: hand, QueueLengthLimit: 50},
		},
	}
	return p
}

func rejecting(name string) *flowcontrolv1.PriorityLevelConfiguration {
	p := pl(name)
	p.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](5)
	p.Spec.Limited.LendablePercent = ptr.To[int32](0)
	return p
}

func exemptPL(name string) *flowcontrolv1.PriorityLevelConfiguration {
	p := &flowcontrolv1.PriorityLevelConfiguration{}
	p.Name = name
	p.Spec.Type = flowcontrolv1.PriorityLevelEnablementExempt
	p.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](0), LendablePercent: ptr.To[int32](0)}
	return p
}

// base is a small sane configuration every case extends: a general level with
// plenty of queues and a ByUser catch-everything schema at 9900.
func base() ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration) {
	return []*flowcontrolv1.FlowSchema{
			fsB("global-default", 9900, "global-default", rule(subjects(group(groupAuthenticated), group(groupUnauthenticated)), allRes).withNonRes(nonRes(all, "*"))),
		}, []*flowcontrolv1.PriorityLevelConfiguration{
			queuing("global-default", 128, 6), queuing("special", 128, 6),
		}
}

type want struct {
	rule     string
	severity Severity
	objects  string // comma-separated kind/name list, as refsKey renders it
}

func TestLintRules(t *testing.T) {
	tests := []struct {
		name   string
		fss    []*flowcontrolv1.FlowSchema
		pls    []*flowcontrolv1.PriorityLevelConfiguration
		want   []want   // findings that must be present
		absent []string // "rule flowschema/name": findings that must not exist (name is the first object)
	}{
		{
			name: "schema fully shadowed by an earlier broader one",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("broad", 100, "special", rule(subjects(group(groupAuthenticated)), res(all, all, all, all, true))),
				fsB("alice", 200, "special", rule(subjects(user("alice")), res(l("get"), l(""), l("pods"), l("default"), false))),
			},
			want: []want{{RuleShadowedFlowSchema, SeverityError, "flowschema/alice,flowschema/broad"}},
		},
		{
			name: "shadowed by the union of two earlier schemas, neither enough alone",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("gets", 100, "special", rule(subjects(user("alice")), res(l("get"), l(""), l("pods"), all, false))),
				fsB("lists", 101, "special", rule(subjects(user("alice")), res(l("list"), l(""), l("pods"), all, false))),
				fsB("both", 200, "special", rule(subjects(user("alice")), res(l("get", "list"), l(""), l("pods"), l("a", "b"), false))),
			},
			want: []want{{RuleShadowedFlowSchema, SeverityError, "flowschema/both,flowschema/gets,flowschema/lists"}},
		},
		{
			name: "exact non-resource path is not covered by its /* form (/healthz vs /healthz/*)",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("subpaths", 100, "special", ruleB{subjects: subjects(group(groupAuthenticated), group(groupUnauthenticated))}.withNonRes(nonRes(all, "/healthz/*"))),
				fsB("exact", 200, "special", ruleB{subjects: subjects(group(groupAuthenticated), group(groupUnauthenticated))}.withNonRes(nonRes(all, "/healthz"))),
			},
			want:   []want{{RulePartlyShadowed, SeverityInfo, "flowschema/exact,flowschema/subpaths"}},
			absent: []string{RuleShadowedFlowSchema},
		},
		{
			name: "an exact path also covers its sub-paths (/healthz shadows /healthz/*)",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("exact", 100, "special", ruleB{subjects: subjects(group(groupAuthenticated), group(groupUnauthenticated))}.withNonRes(nonRes(all, "/healthz"))),
				fsB("subpaths", 200, "special", ruleB{subjects: subjects(group(groupAuthenticated), group(groupUnauthenticated))}.withNonRes(nonRes(all, "/healthz/*"))),
			},
			want: []want{{RuleShadowedFlowSchema, SeverityError, "flowschema/subpaths,flowschema/exact"}},
		},
		{
			name: "/apis/* does not match /apis",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("apis-star", 100, "special", ruleB{subjects: subjects(group("*"))}.withNonRes(nonRes(all, "/apis/*"))),
				fsB("apis", 200, "special", ruleB{subjects: subjects(group("*"))}.withNonRes(nonRes(all, "/apis"))),
			},
			absent: []string{RuleShadowedFlowSchema},
		},
		{
			name: "the path / matches every path",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("root", 100, "special", ruleB{subjects: subjects(user("*"))}.withNonRes(nonRes(all, "/"))),
				fsB("metrics", 200, "special", ruleB{subjects: subjects(user("bob"))}.withNonRes(nonRes(l("get"), "/metrics"))),
			},
			want: []want{{RuleShadowedFlowSchema, SeverityError, "flowschema/metrics,flowschema/root"}},
		},
		{
			name: "service-account subjects look only at the username, not at the system:serviceaccounts groups",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("sa-group", 100, "special", rule(subjects(group("system:serviceaccounts")), allRes)),
				fsB("sa-ns", 200, "special", rule(subjects(sa("team", "*")), allRes)),
			},
			absent: []string{RuleShadowedFlowSchema},
		},
		{
			name: "a namespace-wide service-account subject covers a named one",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("sa-ns", 100, "special", rule(subjects(sa("team", "*")), allRes)),
				fsB("sa-one", 200, "special", rule(subjects(sa("team", "builder")), res(l("get"), l(""), l("pods"), l("team"), false))),
			},
			want: []want{{RuleShadowedFlowSchema, SeverityError, "flowschema/sa-one,flowschema/sa-ns"}},
		},
		{
			name: "namespace kube is not a prefix match for kube-system service accounts",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("kube", 100, "special", rule(subjects(sa("kube", "*")), allRes)),
				fsB("kube-system", 200, "special", rule(subjects(sa("kube-system", "*")), allRes)),
			},
			absent: []string{RuleShadowedFlowSchema, RulePartlyShadowed + " flowschema/kube-system"},
		},
		{
			name: "authenticated plus unauthenticated covers every real identity",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("all-ids", 100, "special", rule(subjects(group(groupAuthenticated), group(groupUnauthenticated)), allRes)),
				fsB("nodes", 200, "special", rule(subjects(group("system:nodes")), res(l("get"), l(""), l("nodes"), nil, true))),
			},
			want: []want{{RuleShadowedFlowSchema, SeverityError, "flowschema/nodes,flowschema/all-ids"}},
		},
		{
			name: "namespaces * without clusterScope leaves cluster-scoped requests",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("namespaced", 100, "special", rule(subjects(user("alice")), res(all, all, all, all, false))),
				fsB("cluster", 200, "special", rule(subjects(user("alice")), res(all, all, all, nil, true))),
			},
			absent: []string{RuleShadowedFlowSchema, RulePartlyShadowed + " flowschema/cluster"},
		},
		{
			name: "a wildcard inside a longer list is a literal (containsString)",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("star-and-nodes", 100, "special", rule(subjects(user("alice")), res(all, all, l("*", "nodes"), all, true))),
				fsB("pods", 200, "special", rule(subjects(user("alice")), res(all, all, l("pods"), all, true))),
			},
			absent: []string{RuleShadowedFlowSchema, RulePartlyShadowed + " flowschema/pods"},
		},
		{
			name: "plain pods does not cover pods/status",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("pods", 100, "special", rule(subjects(user("alice")), res(all, all, l("pods"), all, true))),
				fsB("status", 200, "special", rule(subjects(user("alice")), res(all, all, l("pods/status"), all, true))),
			},
			absent: []string{RuleShadowedFlowSchema, RulePartlyShadowed + " flowschema/status"},
		},
		{
			name: "schema with subjects but no resource or non-resource rule matches nothing",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("hollow", 100, "special", rule(subjects(user("alice")))),
			},
			want: []want{{RuleEmptyFlowSchema, SeverityError, "flowschema/hollow"}},
		},
		{
			name: "dangling priority level reference",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("lost", 100, "does-not-exist", rule(subjects(user("alice")), allRes)),
			},
			want: []want{{RuleDanglingPriorityLevel, SeverityError, "flowschema/lost,prioritylevelconfiguration/does-not-exist"}},
		},
		{
			// apf_controller.go digests FlowSchemas before it imagines the
			// missing mandatory levels, so this reference dangles.
			name: "a schema pointing at an absent mandatory level dangles although the level is imagined later",
			fss:  []*flowcontrolv1.FlowSchema{fsB("to-catch-all", 100, "catch-all", rule(subjects(user("alice")), allRes))},
			want: []want{{RuleDanglingPriorityLevel, SeverityError, "flowschema/to-catch-all,prioritylevelconfiguration/catch-all"}},
		},
		{
			name: "broken priority level (Exempt type on a level not named exempt)",
			fss:  []*flowcontrolv1.FlowSchema{fsB("vip", 100, "vip", rule(subjects(user("alice")), allRes))},
			pls:  []*flowcontrolv1.PriorityLevelConfiguration{exemptPL("vip")},
			want: []want{
				{RuleBrokenPriorityLevel, SeverityError, "prioritylevelconfiguration/vip"},
				{RuleDanglingPriorityLevel, SeverityError, "flowschema/vip,prioritylevelconfiguration/vip"},
			},
		},
		{
			name: "duplicate FlowSchema",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("twice", 100, "special", rule(subjects(user("alice")), allRes)),
				fsB("twice", 200, "special", rule(subjects(user("bob")), allRes)),
			},
			want: []want{{RuleDuplicateObject, SeverityError, "flowschema/twice"}},
		},
		{
			name: "priority level no schema uses",
			want: []want{{RuleUnusedPriorityLevel, SeverityWarning, "prioritylevelconfiguration/special"}},
		},
		{
			name: "priority level used only by a shadowed schema",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("late", 9950, "special", rule(subjects(user("alice")), allRes)),
			},
			want: []want{{RuleUnusedPriorityLevel, SeverityWarning, "prioritylevelconfiguration/special,flowschema/late"}},
		},
		{
			name: "equal precedence on overlapping schemas",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("b-team", 500, "special", rule(subjects(group("team")), allRes)),
				fsB("a-alice", 500, "special", rule(subjects(user("alice")), allRes)),
			},
			want: []want{{RulePrecedenceTie, SeverityWarning, "flowschema/a-alice,flowschema/b-team"}},
		},
		{
			name: "equal precedence on disjoint schemas is fine",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("bob", 500, "special", rule(subjects(user("bob")), allRes)),
				fsB("alice", 500, "special", rule(subjects(user("alice")), allRes)),
			},
			absent: []string{RulePrecedenceTie},
		},
		{
			name: "exempting all authenticated users for resources is an error",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("vip", 50, "exempt", rule(subjects(group(groupAuthenticated)), allRes)),
			},
			pls:  []*flowcontrolv1.PriorityLevelConfiguration{exemptPL("exempt")},
			want: []want{{RuleExemptBeyondMasters, SeverityError, "flowschema/vip,prioritylevelconfiguration/exempt"}},
		},
		{
			name: "exempting one user is a warning",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("vip", 50, "exempt", rule(subjects(user("bob")), allRes)),
			},
			pls:  []*flowcontrolv1.PriorityLevelConfiguration{exemptPL("exempt")},
			want: []want{{RuleExemptBeyondMasters, SeverityWarning, "flowschema/vip,prioritylevelconfiguration/exempt"}},
		},
		{
			// OpenShift's probes (testdata/lint/public/openshift-kube-apiserver-operator):
			// upstream's suggested probes with ByUser and its subjects
			// in the other order.
			name: "exempting only health checks for everyone is fine",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("probes", 2, "exempt", rule(subjects(group(groupAuthenticated), group(groupUnauthenticated))).withNonRes(nonRes(l("get"), "/healthz", "/readyz", "/livez"))),
			},
			pls:    []*flowcontrolv1.PriorityLevelConfiguration{exemptPL("exempt")},
			absent: []string{RuleExemptBeyondMasters},
		},
		{
			// The health handlers serve every method alike.
			name: "exempting the health checks and their subpaths with any verb is fine",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("strangers", 1000, "exempt", rule(subjects(group(groupUnauthenticated))).withNonRes(nonRes(all, "/healthz", "/livez/*", "/readyz/etcd"))),
			},
			pls:    []*flowcontrolv1.PriorityLevelConfiguration{exemptPL("exempt")},
			absent: []string{RuleExemptBeyondMasters},
		},
		{
			// OpenShift's kube-apiserver operator exempts prometheus-k8s's
			// scrapes of /metrics since 2021 (its commit a2053fb9b).
			name: "exempting /metrics is not a health check",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("openshift-monitoring-metrics", 2000, "exempt", rule(subjects(sa("openshift-monitoring", "prometheus-k8s"))).withNonRes(nonRes(all, "/metrics"))),
			},
			pls:  []*flowcontrolv1.PriorityLevelConfiguration{exemptPL("exempt")},
			want: []want{{RuleExemptBeyondMasters, SeverityWarning, "flowschema/openshift-monitoring-metrics,prioritylevelconfiguration/exempt"}},
		},
		{
			name: "a health path beside another path, or a look-alike, is reported",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("mixed", 1000, "exempt", rule(subjects(group(groupUnauthenticated))).withNonRes(nonRes(l("get"), "/healthz", "/version"))),
				fsB("lookalike", 1001, "exempt", rule(subjects(group("ops"))).withNonRes(nonRes(l("get"), "/healthzz", "/*"))),
			},
			pls: []*flowcontrolv1.PriorityLevelConfiguration{exemptPL("exempt")},
			want: []want{{RuleExemptBeyondMasters, SeverityWarning, "flowschema/mixed,prioritylevelconfiguration/exempt"},
				{RuleExemptBeyondMasters, SeverityWarning, "flowschema/lookalike,prioritylevelconfiguration/exempt"}},
		},
		{
			// The probe rule is passed over; the resource rule is not.
			name: "a schema with a probe rule and a resource rule names the latter's subjects",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("both", 1000, "exempt",
					rule(subjects(group(groupAuthenticated))).withNonRes(nonRes(l("get"), "/readyz")),
					rule(subjects(user("bob")), allRes)),
			},
			pls:  []*flowcontrolv1.PriorityLevelConfiguration{exemptPL("exempt")},
			want: []want{{RuleExemptBeyondMasters, SeverityWarning, "flowschema/both,prioritylevelconfiguration/exempt"}},
		},
		{
			name: "exempting system:masters again is fine",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("masters", 50, "exempt", rule(subjects(group(groupMasters)), allRes)),
			},
			pls:    []*flowcontrolv1.PriorityLevelConfiguration{exemptPL("exempt")},
			absent: []string{RuleExemptBeyondMasters},
		},
		{
			name: "reject level receiving real traffic",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("batch", 100, "bouncer", rule(subjects(group("batch")), allRes)),
			},
			pls:  []*flowcontrolv1.PriorityLevelConfiguration{rejecting("bouncer")},
			want: []want{{RuleRejectWithTraffic, SeverityWarning, "flowschema/batch,prioritylevelconfiguration/bouncer"}},
		},
		{
			name: "queues and hand size that let 4 elephants crush a mouse",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("small", 100, "tiny", rule(subjects(group("batch")), allRes)),
			},
			pls:  []*flowcontrolv1.PriorityLevelConfiguration{queuing("tiny", 8, 4)},
			want: []want{{RuleCrushRisk, SeverityWarning, "prioritylevelconfiguration/tiny"}},
		},
		{
			name: "no distinguisher on a level shared by a whole group",
			fss: []*flowcontrolv1.FlowSchema{
				noDistinguisher(fsB("team", 100, "special", rule(subjects(group("team")), allRes))),
			},
			want: []want{{RuleNoDistinguisherShared, SeverityWarning, "flowschema/team,prioritylevelconfiguration/special"}},
		},
		{
			name: "no distinguisher for a single user is fine",
			fss: []*flowcontrolv1.FlowSchema{
				noDistinguisher(fsB("alice", 100, "special", rule(subjects(user("alice")), allRes))),
			},
			absent: []string{RuleNoDistinguisherShared},
		},
		{
			name: "system components falling through to the fallback schema",
			want: []want{{RuleSystemIdentityFallsDown, SeverityWarning, "flowschema/global-default"}},
		},
		{
			name: "a CI service account in node-high",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("ci-fast-lane", 450, "node-high", rule(subjects(sa("ci", "deployer")), allRes)),
			},
			pls:  []*flowcontrolv1.PriorityLevelConfiguration{queuing("node-high", 64, 6)},
			want: []want{{RuleClientInSystemLevel, SeverityWarning, "flowschema/ci-fast-lane,prioritylevelconfiguration/node-high"}},
		},
		{
			name: "every authenticated user's writes in system",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("writes", 450, "system", rule(subjects(group(groupAuthenticated)), res(l("create", "update"), all, all, all, true))),
			},
			pls:  []*flowcontrolv1.PriorityLevelConfiguration{queuing("system", 64, 6)},
			want: []want{{RuleClientInSystemLevel, SeverityWarning, "flowschema/writes,prioritylevelconfiguration/system"}},
		},
		{
			// the cluster's own components: nodes, system:* users, kube-system's service accounts
			name: "a node agent and kube-system's accounts in node-high are fine",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("agents", 450, "node-high", rule(subjects(group("system:nodes"), user("system:kube-proxy"), sa("kube-system", "*"), user("system:serviceaccount:kube-system:cni")), allRes)),
			},
			pls:    []*flowcontrolv1.PriorityLevelConfiguration{queuing("node-high", 64, 6)},
			absent: []string{RuleClientInSystemLevel},
		},
		{
			name: "a service account of another namespace by its user name",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("agents", 450, "system", rule(subjects(user("system:serviceaccount:monitoring:agent")), allRes)),
			},
			pls:  []*flowcontrolv1.PriorityLevelConfiguration{queuing("system", 64, 6)},
			want: []want{{RuleClientInSystemLevel, SeverityWarning, "flowschema/agents,prioritylevelconfiguration/system"}},
		},
		{
			// Karpenter's chart (testdata/lint/public/karpenter-karpenter-ns)
			name: "a controller's leader election in leader-election is fine",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("karpenter-leader-election", 200, "leader-election", rule(subjects(sa("karpenter", "karpenter")), res(l("get", "create", "update"), l("coordination.k8s.io"), l("leases"), all, false))),
			},
			pls:    []*flowcontrolv1.PriorityLevelConfiguration{queuing("leader-election", 16, 4)},
			absent: []string{RuleClientInSystemLevel},
		},
		{
			name: "a controller's lists in leader-election",
			fss: []*flowcontrolv1.FlowSchema{
				fsB("operator", 200, "leader-election", rule(subjects(sa("ops", "operator")), res(l("get", "create", "update"), l("coordination.k8s.io"), l("leases"), all, false), res(l("list"), all, all, all, true))),
			},
			pls:  []*flowcontrolv1.PriorityLevelConfiguration{queuing("leader-election", 16, 4)},
			want: []want{{RuleClientInSystemLevel, SeverityWarning, "flowschema/operator,prioritylevelconfiguration/leader-election"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fss, pls := base()
			fss = append(tt.fss, fss...)
			pls = append(pls, tt.pls...)
			got := Lint(Input{FlowSchemas: fss, PriorityLevels: pls, Reference: config.UpstreamReference()}, DefaultOptions())
			checkSeverities(t, got)
			for _, w := range tt.want {
				if !hasFinding(got, w) {
					t.Errorf("missing finding %+v; got:\n%s", w, dumpFindings(got))
				}
			}
			for _, r := range tt.absent {
				for _, f := range got {
					if f.Rule+" "+f.Objects[0].String() == r || f.Rule == r {
						t.Errorf("unexpected %s finding: %s", r, f.Message)
					}
				}
			}
		})
	}
}

// checkSeverities fails for a finding at a severity its rule does not
// list (Rule.Severity, Rule.Milder: what --list-rules and the rule pages
// say), unless it is information on managed objects (ManagedNote).
func checkSeverities(t *testing.T, fs []Finding) {
	t.Helper()
	for _, f := range fs {
		r, ok := RuleByID(f.Rule)
		switch {
		case !ok:
			t.Errorf("finding of no rule %q", f.Rule)
		case f.Severity == r.Severity, r.Milder != "" && f.Severity == r.Milder:
		case f.Severity == SeverityInfo && f.ManagedBy != "":
		default:
			t.Errorf("%s finding at %s, its rule lists %s: %s", f.Rule, f.Severity, r.Severities(), f.Message)
		}
	}
}

func hasFinding(fs []Finding, w want) bool {
	for _, f := range fs {
		if f.Rule == w.rule && f.Severity == w.severity && refsKey(f.Objects) == w.objects {
			return true
		}
	}
	return false
}

func dumpFindings(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(string(f.Severity) + " " + f.Rule + " [" + refsKey(f.Objects) + "] " + f.Message + "\n")
	}
	return b.String()
}

// TestLintUpstreamDefaults pins what the suggested configuration itself gets:
// no error, and exactly the known weak spots.
func TestLintUpstreamDefaults(t *testing.T) {
	fss, pls := config.UpstreamDefaults()
	got := Lint(Input{FlowSchemas: fss, PriorityLevels: pls, Reference: config.UpstreamReference()}, DefaultOptions())
	if HasErrors(got) {
		t.Fatalf("the upstream defaults produce errors:\n%s", dumpFindings(got))
	}
	var rules []string
	for _, f := range got {
		if f.Severity != SeverityInfo {
			rules = append(rules, f.Rule+" "+refsKey(f.Objects))
		}
	}
	sort.Strings(rules)
	// Every finding on the intact suggested configuration is about objects
	// kube-apiserver manages (and reverts edits to), so it is information.
	if len(rules) != 0 {
		t.Fatalf("warnings on the defaults:\n%s", strings.Join(rules, "\n"))
	}
	// kube-proxy has no FlowSchema of its own upstream and lands in
	// global-default: still reported, naming its manager.
	found := false
	for _, f := range got {
		if f.Rule == RuleSystemIdentityFallsDown && refsKey(f.Objects) == "flowschema/global-default" {
			found = strings.HasPrefix(f.ManagedBy, "kube-apiserver")
		}
	}
	if !found {
		t.Fatalf("kube-proxy's fall-through is not reported as managed by kube-apiserver:\n%s", dumpFindings(got))
	}
}

func TestLintSuggestedObjects(t *testing.T) {
	tests := []struct {
		name       string
		annotation string
		edit       bool
		wantMsg    string
	}{
		{name: "unchanged suggestion", edit: false},
		{name: "opted out and edited", annotation: "false", edit: true, wantMsg: "is annotated apf.kubernetes.io/autoupdate-spec=false and differs from the v1.37 suggestion in nominalConcurrencyShares (200, suggested 100)"},
		{name: "edited without opting out", annotation: "true", edit: true, wantMsg: "differs from the v1.37 suggestion in nominalConcurrencyShares (200, suggested 100) but is not annotated"},
		{name: "opted out but identical", annotation: "false", edit: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fss, pls := config.UpstreamDefaults()
			for _, p := range pls {
				if p.Name != "workload-low" {
					continue
				}
				if tt.annotation != "" {
					p.Annotations = map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: tt.annotation}
				}
				if tt.edit {
					p.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](200)
				}
			}
			got := Lint(Input{FlowSchemas: fss, PriorityLevels: pls, Reference: config.UpstreamReference()}, DefaultOptions())
			var msgs []string
			for _, f := range got {
				if f.Rule == RuleSuggestedDiffers {
					msgs = append(msgs, f.Message)
				}
			}
			if tt.wantMsg == "" {
				if len(msgs) != 0 {
					t.Fatalf("unexpected findings: %v", msgs)
				}
				return
			}
			if len(msgs) != 1 || !strings.Contains(msgs[0], tt.wantMsg) {
				t.Fatalf("got %q, want one containing %q", msgs, tt.wantMsg)
			}
		})
	}
}

// TestLintSuggestedFlowSchemaOrder: a suggested FlowSchema whose lists
// (subjects, verbs, URLs, groups, resources, rules) are only in another
// order matches the same requests (kube-apiserver reads each as a set), so
// it does not differ; a real difference beside a reordering names that
// difference alone. OpenShift's probes is upstream's with its two subjects
// swapped and ByUser added.
func TestLintSuggestedFlowSchemaOrder(t *testing.T) {
	reverse := func(fs *flowcontrolv1.FlowSchema) {
		slices.Reverse(fs.Spec.Rules)
		for i := range fs.Spec.Rules {
			r := &fs.Spec.Rules[i]
			slices.Reverse(r.Subjects)
			slices.Reverse(r.ResourceRules)
			for j := range r.ResourceRules {
				slices.Reverse(r.ResourceRules[j].Verbs)
				slices.Reverse(r.ResourceRules[j].APIGroups)
				slices.Reverse(r.ResourceRules[j].Resources)
				slices.Reverse(r.ResourceRules[j].Namespaces)
			}
			for j := range r.NonResourceRules {
				slices.Reverse(r.NonResourceRules[j].Verbs)
				slices.Reverse(r.NonResourceRules[j].NonResourceURLs)
			}
		}
	}
	tests := []struct {
		name    string
		edit    func(fs *flowcontrolv1.FlowSchema)
		wantMsg string
	}{
		{name: "every list reversed", edit: reverse},
		{name: "reversed and ByUser added to probes", edit: func(fs *flowcontrolv1.FlowSchema) {
			reverse(fs)
			if fs.Name == "probes" {
				fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType}
			}
		}, wantMsg: "flowschema/probes differs from the v1.37 suggestion in distinguisherMethod but"},
		{name: "a subject dropped from probes", edit: func(fs *flowcontrolv1.FlowSchema) {
			if fs.Name == "probes" {
				fs.Spec.Rules[0].Subjects = fs.Spec.Rules[0].Subjects[:1]
			}
		}, wantMsg: "flowschema/probes differs from the v1.37 suggestion in rules but"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fss, pls := config.UpstreamDefaults()
			reordered := 0
			for _, fs := range fss {
				before := fs.DeepCopy()
				tt.edit(fs)
				if !equality.Semantic.DeepEqual(before.Spec, fs.Spec) {
					reordered++
				}
			}
			if reordered == 0 {
				t.Fatal("the edit changed no suggested FlowSchema")
			}
			got := Lint(Input{FlowSchemas: fss, PriorityLevels: pls, Reference: config.UpstreamReference()}, DefaultOptions())
			var msgs []string
			for _, f := range got {
				if f.Rule == RuleSuggestedDiffers {
					msgs = append(msgs, f.Message)
				}
			}
			if tt.wantMsg == "" {
				if len(msgs) != 0 {
					t.Fatalf("unexpected findings: %q", msgs)
				}
				// Reordered, the suggested set is still intact: its
				// findings stay information.
				for _, f := range got {
					if f.Severity != SeverityInfo {
						t.Errorf("%s finding on the reordered defaults: %s", f.Severity, f.Message)
					}
				}
				return
			}
			if len(msgs) != 1 || !strings.Contains(msgs[0], tt.wantMsg) {
				t.Fatalf("got %q, want one containing %q", msgs, tt.wantMsg)
			}
		})
	}
}

func TestCatchAllWithRealTraffic(t *testing.T) {
	fss, pls := config.UpstreamDefaults()
	var kept []*flowcontrolv1.FlowSchema
	for _, fs := range fss {
		if fs.Name != "global-default" {
			kept = append(kept, fs)
		}
	}
	got := Lint(Input{FlowSchemas: kept, PriorityLevels: pls, Reference: config.UpstreamReference()}, DefaultOptions())
	if !hasFinding(got, want{RuleRejectWithTraffic, SeverityWarning, "flowschema/catch-all,prioritylevelconfiguration/catch-all"}) {
		t.Fatalf("without global-default, catch-all gets real traffic; findings:\n%s", dumpFindings(got))
	}
	// catch-all's finding says what catch-all is for; another Reject
	// level's does not (TestLintRules' bouncer)
	for _, f := range got {
		if f.Rule == RuleRejectWithTraffic && !strings.Contains(f.Why, "catch-all is meant only for requests nothing else matches") {
			t.Errorf("catch-all's finding: %+v", f)
		}
	}
	if !hasFinding(got, want{RuleUnusedPriorityLevel, SeverityWarning, "prioritylevelconfiguration/global-default"}) {
		t.Fatalf("global-default level is now unused; findings:\n%s", dumpFindings(got))
	}
}
