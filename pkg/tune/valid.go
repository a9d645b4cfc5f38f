package tune

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/lint"
)

// AutoUpdateAnnotation is the annotation with which kube-apiserver stops
// maintaining a suggested object ("false").
const AutoUpdateAnnotation = flowcontrolv1.AutoUpdateAnnotationKey

// checker holds what a candidate is checked against: the mandatory and
// suggested objects, --keep, and the recorded configuration's lint
// findings, which a candidate may keep but not add to.
type checker struct {
	suggested map[ObjectKey]bool
	fixed     map[ObjectKey]string
	ref       config.Reference
	rel       engine.Release
	scl       int
	base      map[string]bool
}

func newChecker(w *world, rel engine.Release, keep []ObjectKey) *checker {
	c := &checker{suggested: map[ObjectKey]bool{}, fixed: map[ObjectKey]string{}, ref: config.ReferenceFor(rel), rel: rel, scl: w.scl}
	for _, fs := range c.ref.SuggestedFlowSchemas {
		c.suggested[ObjectKey{KindFlowSchema, fs.Name}] = true
	}
	for _, pl := range c.ref.SuggestedPriorityLevels {
		c.suggested[ObjectKey{KindPriorityLevel, pl.Name}] = true
	}
	for _, pl := range config.MandatoryPriorityLevels() {
		c.fixed[ObjectKey{KindPriorityLevel, pl.Name}] = "mandatory"
	}
	for _, n := range []string{"exempt", "catch-all"} {
		c.fixed[ObjectKey{KindFlowSchema, n}] = "mandatory"
	}
	for _, k := range keep {
		if c.fixed[k] == "" {
			c.fixed[k] = "--keep"
		}
	}
	// objects a vendor or operator manages revert edits
	for _, fs := range w.fs {
		if m := config.Managed(fs.ObjectMeta); m != "" && !strings.HasPrefix(m, config.KubeAPIServerManager) {
			c.fixed[ObjectKey{KindFlowSchema, fs.Name}] = "managed by " + m
		}
	}
	for _, pl := range w.pl {
		if m := config.Managed(pl.ObjectMeta); m != "" && !strings.HasPrefix(m, config.KubeAPIServerManager) {
			c.fixed[ObjectKey{KindPriorityLevel, pl.Name}] = "managed by " + m
		}
	}
	c.base = c.findings(w.fs, w.pl, true)
	return c
}

// findings are the lint findings of a configuration by rule and
// objects: with all, every one (the recorded configuration's); else those
// worth refusing a candidate for, errors and warnings. A finding the
// recorded configuration has at any severity is not the candidate's: once
// a suggested object is edited, the linter no longer calls the managed
// objects' findings information, as they were, but warnings.
func (c *checker) findings(fss []*flowcontrolv1.FlowSchema, pls []*flowcontrolv1.PriorityLevelConfiguration, all bool) map[string]bool {
	out := map[string]bool{}
	for _, f := range lint.Lint(lint.Input{FlowSchemas: fss, PriorityLevels: pls, Reference: c.ref, Release: c.rel, ServerConcurrency: c.scl}, lint.DefaultOptions()) {
		if !all && f.Rule == lint.RuleSuggestedDiffers && f.Severity != lint.SeverityError && optedOut(f, fss, pls) {
			// the opt-out upstream requires to change a suggested
			// object: the finding reminds to review it on upgrades
			continue
		}
		if all || f.Severity == lint.SeverityError || f.Severity == lint.SeverityWarning {
			var refs []string
			for _, r := range f.Objects {
				refs = append(refs, r.String())
			}
			out[f.Rule+" "+strings.Join(refs, ",")] = true
		}
	}
	return out
}

// check makes the draft's changed objects what would be applied (a
// suggested object gets autoupdate-spec "false") and returns why the
// draft may not be proposed, "" when it may.
func (c *checker) check(d *draft) (string, []runtime.Object) {
	keys := slices.SortedFunc(maps.Keys(d.changed), func(a, b ObjectKey) int { return strings.Compare(a.String(), b.String()) })
	var objs []runtime.Object
	for _, k := range keys {
		if why := c.fixed[k]; why != "" {
			return fmt.Sprintf("changes %s (%s)", k, why), nil
		}
	}
	for i, fs := range d.fs {
		k := ObjectKey{KindFlowSchema, fs.Name}
		if !d.changed[k] {
			continue
		}
		fs = c.applied(fs.DeepCopy(), k, &fs.ObjectMeta).(*flowcontrolv1.FlowSchema)
		if errs := config.ValidateFlowSchema(fs); len(errs) > 0 {
			return fmt.Sprintf("%s is invalid: %v", k, errs.ToAggregate()), nil
		}
		d.fs[i] = fs
		objs = append(objs, fs)
	}
	for i, pl := range d.pl {
		k := ObjectKey{KindPriorityLevel, pl.Name}
		if !d.changed[k] {
			continue
		}
		pl = c.applied(pl.DeepCopy(), k, &pl.ObjectMeta).(*flowcontrolv1.PriorityLevelConfiguration)
		if errs := config.ValidatePriorityLevel(pl, "nominalConcurrencyShares"); len(errs) > 0 {
			return fmt.Sprintf("%s is invalid: %v", k, errs.ToAggregate()), nil
		}
		d.pl[i] = pl
		objs = append(objs, pl)
	}
	cfg := engine.NewConfig(d.fs, d.pl)
	if len(cfg.Broken) > 0 || len(cfg.Dangling) > 0 || len(cfg.Duplicates) > 0 {
		return "the apiserver would ignore part of it", nil
	}
	for f := range c.findings(d.fs, d.pl, false) {
		if !c.base[f] {
			return "lint: " + f, nil
		}
	}
	slices.SortStableFunc(objs, func(a, b runtime.Object) int { return strings.Compare(objectKey(a).String(), objectKey(b).String()) })
	return "", objs
}

// applied returns obj as it would be applied: type, name, the
// autoupdate-spec annotation of a suggested object, the spec; no status
// nor server-set metadata.
func (c *checker) applied(obj runtime.Object, k ObjectKey, was *metav1.ObjectMeta) runtime.Object {
	meta := metav1.ObjectMeta{Name: was.Name}
	if c.suggested[k] || was.Annotations[AutoUpdateAnnotation] != "" {
		meta.Annotations = map[string]string{AutoUpdateAnnotation: "false"}
	}
	switch o := obj.(type) {
	case *flowcontrolv1.FlowSchema:
		o.TypeMeta = metav1.TypeMeta{APIVersion: "flowcontrol.apiserver.k8s.io/v1", Kind: KindFlowSchema}
		o.ObjectMeta, o.Status = meta, flowcontrolv1.FlowSchemaStatus{}
	case *flowcontrolv1.PriorityLevelConfiguration:
		o.TypeMeta = metav1.TypeMeta{APIVersion: "flowcontrol.apiserver.k8s.io/v1", Kind: KindPriorityLevel}
		o.ObjectMeta, o.Status = meta, flowcontrolv1.PriorityLevelConfigurationStatus{}
	}
	return obj
}

func objectKey(o runtime.Object) ObjectKey {
	switch x := o.(type) {
	case *flowcontrolv1.FlowSchema:
		return ObjectKey{KindFlowSchema, x.Name}
	case *flowcontrolv1.PriorityLevelConfiguration:
		return ObjectKey{KindPriorityLevel, x.Name}
	}
	return ObjectKey{}
}

// optedOut says whether the object of a suggested-object-differs finding
// carries autoupdate-spec "false".
func optedOut(f lint.Finding, fss []*flowcontrolv1.FlowSchema, pls []*flowcontrolv1.PriorityLevelConfiguration) bool {
	if len(f.Objects) != 1 {
		return false
	}
	r := f.Objects[0]
	for _, fs := range fss {
		if strings.EqualFold(r.Kind, KindFlowSchema) && fs.Name == r.Name {
			return fs.Annotations[AutoUpdateAnnotation] == "false"
		}
	}
	for _, pl := range pls {
		if strings.EqualFold(r.Kind, KindPriorityLevel) && pl.Name == r.Name {
			return pl.Annotations[AutoUpdateAnnotation] == "false"
		}
	}
	return false
}
