package lint

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

func TestManaged(t *testing.T) {
	yes := true
	tests := []struct {
		meta metav1.ObjectMeta
		want string
	}{
		{metav1.ObjectMeta{Name: "aks-managed-apiserver-guard"}, "AKS"},
		{metav1.ObjectMeta{Name: "d8-serviceaccounts"}, "Deckhouse"},
		{metav1.ObjectMeta{Name: "openshift-apiserver", Annotations: map[string]string{"include.release.openshift.io/self-managed-high-availability": "true"}}, "OpenShift cluster-version operator"},
		{metav1.ObjectMeta{Name: "x", OwnerReferences: []metav1.OwnerReference{{APIVersion: "operator.openshift.io/v1", Kind: "KubeAPIServer", Name: "cluster"}}}, "OpenShift operator that owns it (KubeAPIServer cluster)"},
		{metav1.ObjectMeta{Name: "x", Labels: map[string]string{"addonmanager.kubernetes.io/mode": "Reconcile"}}, "addon manager"},
		{metav1.ObjectMeta{Name: "x", OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Operator", Name: "o", Controller: &yes}}}, "its controller Operator o"},
		{metav1.ObjectMeta{Name: "global-default", Annotations: map[string]string{"apf.kubernetes.io/autoupdate-spec": "true"}}, "kube-apiserver"},
		{metav1.ObjectMeta{Name: "global-default", Annotations: map[string]string{"apf.kubernetes.io/autoupdate-spec": "false"}}, ""},
		{metav1.ObjectMeta{Name: "team-a"}, ""},
	}
	for _, tt := range tests {
		got := Managed(tt.meta)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.meta.Name, got, tt.want)
		}
	}
}

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
