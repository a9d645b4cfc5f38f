package lint

import (
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// painRules are the rules for the pains users report (issue: callbacks,
// leader election after 1.34, Reject levels that admit, starvation, exempt
// reach).
var painRules = []string{RuleCallbackBelowCaller, RuleLeaderElectionMoves, RuleRejectAdmitsWhenIdle, RuleSeatStarvation, RuleExemptReach}

// lintOver lints the defaults of rel with the YAML objects of extra applied.
func lintOver(t *testing.T, rel engine.Release, target engine.Release, extra string) []Finding {
	t.Helper()
	objs, err := config.ParseObjects([]byte(extra), "extra.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fss, pls := config.DefaultsFor(rel)
	fss, pls = config.Overlay(fss, pls, objs)
	return Lint(Input{FlowSchemas: fss, PriorityLevels: pls, Reference: config.ReferenceFor(rel), Callbacks: objs.ResolvedCallbacks(),
		Release: rel, Target: target}, DefaultOptions())
}

func ofRule(fs []Finding, rule string) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Rule == rule {
			out = append(out, f)
		}
	}
	return out
}

// TestPainRulesSilentOnDefaults: on the defaults of every supported release
// (with the callbacks of a metrics-server installed as upstream's
// components.yaml installs it, in kube-system) none of the five rules fires,
// except leader-election-moves for an upgrade across 1.34, which the
// defaults really undergo.
func TestPainRulesSilentOnDefaults(t *testing.T) {
	for m := engine.OldestRelease.Minor; m <= engine.NewestRelease.Minor; m++ {
		rel := engine.Release{Minor: m}
		got := lintOver(t, rel, engine.Release{}, metricsServer("kube-system"))
		for _, r := range painRules {
			if fs := ofRule(got, r); len(fs) > 0 {
				t.Errorf("%s defaults: %s", rel, dumpFindings(fs))
			}
		}
		moves := ofRule(lintOver(t, rel, engine.NewestRelease, ""), RuleLeaderElectionMoves)
		if m >= leaderElectionRemovedIn {
			if len(moves) > 0 {
				t.Errorf("%s to %s: %s", rel, engine.NewestRelease, dumpFindings(moves))
			}
			continue
		}
		// Leases stay with system-leader-election; the endpoints and
		// configmaps locks move.
		var moved []string
		for _, f := range moves {
			if strings.Contains(f.Message, "moves from workload-leader-election (level leader-election) to kube-system-service-accounts (level workload-high)") {
				moved = append(moved, strings.Fields(strings.SplitN(f.Message, "leader election on ", 2)[1])[0])
			}
		}
		if strings.Join(moved, ",") != "configmaps,endpoints" || len(moves) != 2 {
			t.Errorf("%s to %s: %s", rel, engine.NewestRelease, dumpFindings(moves))
		}
	}
}

// metricsServer is an APIService served by a metrics-server in namespace
// ns, with the Service and Deployment that run it (service account
// metrics-server, as upstream's components.yaml names it).
func metricsServer(ns string) string {
	return strings.ReplaceAll(`apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  service: {name: metrics-server, namespace: NS}
---
apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: NS}
spec:
  selector: {k8s-app: metrics-server}
  ports: [{port: 443, targetPort: https}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: metrics-server, namespace: NS}
spec:
  selector: {matchLabels: {k8s-app: metrics-server}}
  template:
    metadata: {labels: {k8s-app: metrics-server}}
    spec:
      serviceAccountName: metrics-server
      containers: [{name: metrics-server, image: registry.k8s.io/metrics-server/metrics-server:v0.7.2}]
`, "NS", ns)
}

func TestCallbackBelowCaller(t *testing.T) {
	got := ofRule(lintOver(t, engine.NewestRelease, engine.Release{}, metricsServer("monitoring")), RuleCallbackBelowCaller)
	if len(got) != 1 {
		t.Fatalf("findings: %s", dumpFindings(got))
	}
	f := got[0]
	for _, s := range []string{"APIService v1beta1.metrics.k8s.io is served by monitoring/metrics-server, whose service account monitoring/metrics-server lands in FlowSchema service-accounts, level workload-low",
		"horizontal-pod-autoscaler", "-> kube-system-service-accounts (workload-high)"} {
		if !strings.Contains(f.Message, s) {
			t.Errorf("message lacks %q: %s", s, f.Message)
		}
	}
	if strings.Contains(f.Message, "assumed") || refsKey(f.Objects) != "flowschema/service-accounts,prioritylevelconfiguration/workload-low" {
		t.Errorf("finding: %s", dumpFindings(got))
	}
	// A FlowSchema for the backend's service account, routing it to
	// workload-high, before service-accounts, fixes it.
	fixed := lintOver(t, engine.NewestRelease, engine.Release{}, metricsServer("monitoring")+`---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: metrics-server}
spec:
  matchingPrecedence: 7000
  priorityLevelConfiguration: {name: workload-high}
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: ServiceAccount, serviceAccount: {namespace: monitoring, name: metrics-server}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}]
`)
	if fs := ofRule(fixed, RuleCallbackBelowCaller); len(fs) > 0 {
		t.Errorf("after the fix: %s", dumpFindings(fs))
	}
	// A webhook whose Service has no workload in the input: the service
	// account is assumed from the service's name, and said so.
	hook := ofRule(lintOver(t, engine.NewestRelease, engine.Release{}, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: policy}
webhooks:
- name: pods.policy.example.com
  clientConfig: {service: {namespace: policy, name: policy-webhook}}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  sideEffects: None
  admissionReviewVersions: [v1]
`), RuleCallbackBelowCaller)
	if len(hook) != 1 || !strings.Contains(hook[0].Message, "policy/policy-webhook (assumed from the service's name") {
		t.Errorf("webhook: %s", dumpFindings(hook))
	}
}

const jail = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: jail}
spec:
  type: Limited
  limited: {nominalConcurrencyShares: 0, lendablePercent: 0, borrowingLimitPercent: 0, limitResponse: {type: Reject}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: jail}
spec:
  matchingPrecedence: 1000
  priorityLevelConfiguration: {name: jail}
  rules:
  - subjects: [{kind: User, user: {name: noisy-bot}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}]
`

func TestRejectAdmitsWhenIdle(t *testing.T) {
	got := ofRule(lintOver(t, engine.NewestRelease, engine.Release{}, jail), RuleRejectAdmitsWhenIdle)
	if len(got) != 1 || refsKey(got[0].Objects) != "prioritylevelconfiguration/jail,flowschema/jail" ||
		!strings.Contains(got[0].Message, "has nominalConcurrencyShares 0 (0 seats of 600) and limitResponse Reject (FlowSchema jail sends it requests), yet admits one request") {
		t.Fatalf("findings: %s", dumpFindings(got))
	}
	// With one share the level has a seat of its own: nothing to say.
	one := strings.Replace(jail, "nominalConcurrencyShares: 0", "nominalConcurrencyShares: 1", 1)
	if fs := ofRule(lintOver(t, engine.NewestRelease, engine.Release{}, one), RuleRejectAdmitsWhenIdle); len(fs) > 0 {
		t.Errorf("with one share: %s", dumpFindings(fs))
	}
}

func TestSeatStarvation(t *testing.T) {
	reports := strings.NewReplacer("jail", "reports", "nominalConcurrencyShares: 0", "nominalConcurrencyShares: 2").Replace(jail)
	for _, tt := range []struct {
		rel  engine.Release
		want string
	}{
		// 2 of 247 shares at 600 seats: 5 seats; a LIST takes up to 10
		// seats up to 1.33 and 100 from 1.34.
		{engine.Release{Minor: 33}, "priority level reports has 5 nominal seats at 600 server seats, and one request there may take 10"},
		{engine.NewestRelease, "priority level reports has 5 nominal seats at 600 server seats, and one request there may take 100"},
	} {
		got := ofRule(lintOver(t, tt.rel, engine.Release{}, reports), RuleSeatStarvation)
		if len(got) != 1 || !strings.Contains(got[0].Message, tt.want) {
			t.Errorf("%s: %s", tt.rel, dumpFindings(got))
		}
	}
	// A level of 1 seat: any request holds it, whatever a LIST may take
	// (make demo's apf-load, capped at 1 seat, and apf-load-reject, at 100).
	for _, limit := range []string{"{type: Queue, queuing: {queues: 8, handSize: 2, queueLengthLimit: 3}}", "{type: Reject}"} {
		one := strings.NewReplacer("nominalConcurrencyShares: 2", "nominalConcurrencyShares: 1", "{type: Reject}", limit).Replace(reports)
		objs, err := config.ParseObjects([]byte(one), "one.yaml")
		if err != nil {
			t.Fatal(err)
		}
		fss, pls := config.DefaultsFor(engine.NewestRelease)
		fss, pls = config.Overlay(fss, pls, objs)
		got := ofRule(Lint(Input{FlowSchemas: fss, PriorityLevels: pls, Reference: config.ReferenceFor(engine.NewestRelease), Release: engine.NewestRelease, ServerConcurrency: 15}, DefaultOptions()), RuleSeatStarvation)
		want := "priority level reports has 1 nominal seat at 15 server seats: any request there holds it, a large LIST for as long as it reads, so its requests run one at a time"
		if len(got) != 1 || !strings.Contains(got[0].Message, want) || strings.Contains(got[0].Fix, "route large LISTs") {
			t.Errorf("a level of 1 seat, %s: %s", limit, dumpFindings(got))
		}
	}
	// A critical level cut to a tenth of its shares.
	system := `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: system, annotations: {apf.kubernetes.io/autoupdate-spec: "false"}}
spec:
  type: Limited
  limited: {nominalConcurrencyShares: 3, lendablePercent: 33, limitResponse: {type: Queue, queuing: {queues: 64, handSize: 6, queueLengthLimit: 50}}}
`
	got := ofRule(lintOver(t, engine.NewestRelease, engine.Release{}, system), RuleSeatStarvation)
	if len(got) != 1 || !strings.Contains(got[0].Message, "critical priority level system has 9 nominal seats at 600 server seats, less than half of the 74") {
		t.Errorf("critical: %s", dumpFindings(got))
	}
}

func TestExemptReach(t *testing.T) {
	got := ofRule(lintOver(t, engine.NewestRelease, engine.Release{}, `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: admins-exempt}
spec:
  matchingPrecedence: 2
  priorityLevelConfiguration: {name: exempt}
  rules:
  - subjects: [{kind: Group, group: {name: system:masters}}, {kind: Group, group: {name: platform-admins}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}]
`), RuleExemptReach)
	if len(got) != 1 || refsKey(got[0].Objects) != "flowschema/admins-exempt,prioritylevelconfiguration/exempt" {
		t.Fatalf("findings: %s", dumpFindings(got))
	}
}
