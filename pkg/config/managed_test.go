package config

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
