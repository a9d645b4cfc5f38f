package lint

import (
	"slices"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// owner is Managed of the input object ref names, and whether the input
// has it.
func (c *checker) owner(ref ObjectRef) (string, bool) {
	if ref.Kind == kindPL {
		for _, pl := range c.in.PriorityLevels {
			if pl.Name == ref.Name {
				return config.Managed(pl.ObjectMeta), true
			}
		}
		return "", false
	}
	for _, fs := range c.in.FlowSchemas {
		if fs.Name == ref.Name {
			return config.Managed(fs.ObjectMeta), true
		}
	}
	return "", false
}

// keepSeverityWhenManaged are the rules whose findings keep their severity
// on managed objects: the user's edit, callback or upgrade is the cause.
var keepSeverityWhenManaged = []string{RuleSuggestedDiffers, RuleCallbackBelowCaller, RuleLeaderElectionMoves}

// markManaged names the manager of a finding's first object. A finding
// whose objects are all managed (none is the user's own) is information:
// the user cannot fix it by editing them, the manager reverts the edit.
// The rules of keepSeverityWhenManaged keep their severity
// (ManagedNote says so under the list of rules).
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
	if strings.HasPrefix(first, config.KubeAPIServerManager) && !c.suggestedIntact() {
		return // the user changed the suggested set: the problem may be theirs
	}
	for _, o := range f.Objects {
		if by, ok := c.owner(o); ok && by == "" {
			return
		}
	}
	if slices.Contains(keepSeverityWhenManaged, f.Rule) {
		return // the user's edit of a managed object
	}
	f.Severity = SeverityInfo
	f.Why += "; its manager reverts edits to it (see managedBy): fix it with objects of your own, or report it to the manager"
}

// suggestedIntact reports whether the input holds every suggested object
// of the reference, unchanged (a FlowSchema's lists compared as sets):
// then a finding on them alone is upstream's choice, not the user's.
func (c *checker) suggestedIntact() bool {
	if c.intact == nil {
		ok := allUnchanged(c.in.Reference.SuggestedFlowSchemas, c.in.FlowSchemas, func(fs *flowcontrolv1.FlowSchema) (string, any) {
			return fs.Name, canonicalFlowSchemaSpec(engine.DefaultFlowSchema(fs).Spec)
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
