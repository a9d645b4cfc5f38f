package config

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// UpstreamVersion is the Kubernetes release whose bootstrap objects
// UpstreamReference returns (the k8s.io/apiserver module this plugin builds
// against).
const UpstreamVersion = "v1.37"

// UpstreamReference returns the suggested objects of
// k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap, deep-copied so callers may
// change them.
func UpstreamReference() Reference {
	return ReferenceFor(engine.NewestRelease)
}

// ReferenceFor returns the suggested objects a kube-apiserver of release rel
// maintains (engine.Release.DefaultFlowSchemas without the mandatory ones),
// deep-copied so callers may change them.
func ReferenceFor(rel engine.Release) Reference {
	if rel.IsZero() {
		rel = engine.NewestRelease
	}
	mandatoryFS := map[string]bool{}
	for _, fs := range bootstrap.MandatoryFlowSchemas {
		mandatoryFS[fs.Name] = true
	}
	mandatoryPL := map[string]bool{}
	for _, pl := range bootstrap.MandatoryPriorityLevelConfigurations {
		mandatoryPL[pl.Name] = true
	}
	ref := Reference{Version: "v" + rel.String()}
	for _, fs := range rel.DefaultFlowSchemas() {
		if !mandatoryFS[fs.Name] {
			ref.SuggestedFlowSchemas = append(ref.SuggestedFlowSchemas, fs.DeepCopy())
		}
	}
	for _, pl := range rel.DefaultPriorityLevels() {
		if !mandatoryPL[pl.Name] {
			ref.SuggestedPriorityLevels = append(ref.SuggestedPriorityLevels, pl.DeepCopy())
		}
	}
	return ref
}

// UpstreamDefaults returns the configuration a fresh cluster of
// UpstreamVersion has: mandatory plus suggested objects (engine.DefaultFlowSchemas
// and engine.DefaultPriorityLevels), deep-copied and with API defaults applied
// as the apiserver would.
func UpstreamDefaults() ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration) {
	return DefaultsFor(engine.NewestRelease)
}

// DefaultsFor is UpstreamDefaults for release rel (engine.Release's default
// objects).
func DefaultsFor(rel engine.Release) ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration) {
	if rel.IsZero() {
		rel = engine.NewestRelease
	}
	fss, pls := copyFS(rel.DefaultFlowSchemas()), copyPL(rel.DefaultPriorityLevels())
	for i := range fss {
		fss[i] = engine.DefaultFlowSchema(fss[i])
	}
	for i := range pls {
		pls[i] = engine.DefaultPriorityLevel(pls[i])
	}
	return fss, pls
}

func copyFS(in []*flowcontrolv1.FlowSchema) []*flowcontrolv1.FlowSchema {
	out := make([]*flowcontrolv1.FlowSchema, len(in))
	for i, o := range in {
		out[i] = o.DeepCopy()
	}
	return out
}

func copyPL(in []*flowcontrolv1.PriorityLevelConfiguration) []*flowcontrolv1.PriorityLevelConfiguration {
	out := make([]*flowcontrolv1.PriorityLevelConfiguration, len(in))
	for i, o := range in {
		out[i] = o.DeepCopy()
	}
	return out
}

// MandatoryPriorityLevels returns copies of the mandatory levels (exempt
// and catch-all), which kube-apiserver always creates as objects.
func MandatoryPriorityLevels() []*flowcontrolv1.PriorityLevelConfiguration {
	out := make([]*flowcontrolv1.PriorityLevelConfiguration, 0, len(bootstrap.MandatoryPriorityLevelConfigurations))
	for _, pl := range bootstrap.MandatoryPriorityLevelConfigurations {
		out = append(out, pl.DeepCopy())
	}
	return out
}
