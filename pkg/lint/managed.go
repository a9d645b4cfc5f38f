package lint

import (
	"fmt"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
		return kubeAPIServerManager + " (a suggested or mandatory object, apf.kubernetes.io/autoupdate-spec=true)"
	}
	return ""
}

// owner is Managed of the input object ref names, and whether the input
// has it.
func (c *checker) owner(ref ObjectRef) (string, bool) {
	if ref.Kind == kindPL {
		for _, pl := range c.in.PriorityLevels {
			if pl.Name == ref.Name {
				return Managed(pl.ObjectMeta), true
			}
		}
		return "", false
	}
	for _, fs := range c.in.FlowSchemas {
		if fs.Name == ref.Name {
			return Managed(fs.ObjectMeta), true
		}
	}
	return "", false
}

// markManaged names the manager of a finding's first object. A finding
// whose objects are all managed (none is the user's own) is information:
// the user cannot fix it by editing them, the manager reverts the edit.
// suggested-object-differs, callback-below-caller and
// leader-election-moves keep their severity: the user's edit, callback or
// upgrade is the cause.
func (c *checker) markManaged(f *Finding) {
	if len(f.Objects) == 0 {
		return
	}
	first, ok := c.owner(f.Objects[0])
	if !ok || first == "" {
		return
	}
	if f.Rule == RuleCallbackBelowCaller || f.Rule == RuleLeaderElectionMoves {
		return // the user's callback or upgrade, not the managed schema, is the cause
	}
	f.ManagedBy = first
	if strings.HasPrefix(first, kubeAPIServerManager) && !c.suggestedIntact() {
		return // the user changed the suggested set: the problem may be theirs
	}
	for _, o := range f.Objects {
		if by, ok := c.owner(o); ok && by == "" {
			return
		}
	}
	switch f.Rule {
	case RuleSuggestedDiffers:
		return // the user's edit of a managed object
	}
	f.Severity = SeverityInfo
	f.Why += "; its manager reverts edits to it (see managedBy): fix it with objects of your own, or report it to the manager"
}

const kubeAPIServerManager = "kube-apiserver"

// suggestedIntact reports whether the input holds every suggested object
// of the reference, unchanged: then a finding on them alone is upstream's
// choice, not the user's.
func (c *checker) suggestedIntact() bool {
	if c.intact == nil {
		ok := allUnchanged(c.in.Reference.SuggestedFlowSchemas, c.in.FlowSchemas, func(fs *flowcontrolv1.FlowSchema) (string, any) {
			return fs.Name, engine.DefaultFlowSchema(fs).Spec
		}) && allUnchanged(c.in.Reference.SuggestedPriorityLevels, c.in.PriorityLevels, func(pl *flowcontrolv1.PriorityLevelConfiguration) (string, any) {
			return pl.Name, engine.DefaultPriorityLevel(pl).Spec
		})
		c.intact = &ok
	}
	return *c.intact
}

// allUnchanged reports whether have holds every object of want with the
// same defaulted spec (key gives an object's name and spec).
func allUnchanged[T any](want, have []T, key func(T) (string, any)) bool {
	specs := map[string]any{}
	for _, o := range have {
		name, spec := key(o)
		specs[name] = spec
	}
	for _, o := range want {
		name, spec := key(o)
		got, found := specs[name]
		if !found || !equality.Semantic.DeepEqual(spec, got) {
			return false
		}
	}
	return true
}
