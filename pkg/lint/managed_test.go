package lint

import (
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// TestManagedFindingsAreInfo: a vendor's broken object is information that
// names the vendor; the same mistake in the user's object stays an error,
// and so does a finding that involves one of the user's objects.
func TestManagedFindingsAreInfo(t *testing.T) {
	aks := `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: aks-managed-debug}
spec:
  matchingPrecedence: 9950
  priorityLevelConfiguration: {name: workload-high}
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: alice}}]
    resourceRules: [{verbs: ["get"], apiGroups: [""], resources: ["pods"], namespaces: ["*"]}]
`
	got := ofRule(lintOver(t, engine.NewestRelease, engine.Release{}, aks), RuleShadowedFlowSchema)
	if len(got) != 1 || got[0].Severity != SeverityInfo || !strings.Contains(got[0].ManagedBy, "AKS") ||
		!strings.Contains(got[0].Why, "reverts edits") {
		t.Fatalf("vendor's: %s", dumpFindings(got))
	}
	own := strings.Replace(aks, "aks-managed-debug", "team-debug", 1)
	got = ofRule(lintOver(t, engine.NewestRelease, engine.Release{}, own), RuleShadowedFlowSchema)
	if len(got) != 1 || got[0].Severity != SeverityError || got[0].ManagedBy != "" {
		t.Fatalf("user's: %s", dumpFindings(got))
	}
	// The user's schema shadowed by the vendor's: the problem involves the
	// user's object, so it stays an error.
	both := aks + "---\n" + strings.NewReplacer("aks-managed-debug", "team-debug", "9950", "9960").Replace(aks)
	got = ofRule(lintOver(t, engine.NewestRelease, engine.Release{}, both), RuleShadowedFlowSchema)
	for _, f := range got {
		if f.Objects[0].Name == "team-debug" && f.Severity != SeverityError {
			t.Errorf("user's schema behind a vendor's: %s", dumpFindings(got))
		}
	}
}
