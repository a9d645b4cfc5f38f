package config

import (
	"fmt"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Managed says who manages an object and reverts edits to it, from the
// labels, annotations, owner references and names vendors and operators
// set; "" for the user's own objects.
func Managed(m metav1.ObjectMeta) string {
	for _, o := range m.OwnerReferences {
		if strings.HasSuffix(strings.SplitN(o.APIVersion, "/", 2)[0], "openshift.io") {
			return fmt.Sprintf("the OpenShift operator that owns it (%s %s)", o.Kind, o.Name)
		}
	}
	for k := range m.Annotations {
		if strings.HasPrefix(k, "include.release.openshift.io/") || k == "release.openshift.io/create-only" {
			return "the OpenShift cluster-version operator (release manifest)"
		}
	}
	switch {
	case strings.HasPrefix(m.Name, "aks-managed-") || m.Labels["kubernetes.azure.com/managedby"] == "aks":
		return "AKS (Azure Kubernetes Service)"
	case strings.HasPrefix(m.Name, "d8-") || m.Labels["heritage"] == "deckhouse":
		return "Deckhouse"
	case m.Labels["addonmanager.kubernetes.io/mode"] == "Reconcile":
		return "the addon manager (addonmanager.kubernetes.io/mode=Reconcile)"
	}
	for _, o := range m.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			return fmt.Sprintf("its controller %s %s", o.Kind, o.Name)
		}
	}
	if m.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] == "true" {
		return KubeAPIServerManager + " (a suggested or mandatory object, apf.kubernetes.io/autoupdate-spec=true)"
	}
	return ""
}

// KubeAPIServerManager is how Managed begins for the objects kube-apiserver
// itself maintains (the suggested and mandatory ones).
const KubeAPIServerManager = "kube-apiserver"
