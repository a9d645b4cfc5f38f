package config

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// ObjectRef names an object a finding is about.
type ObjectRef struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// String renders the reference as kubectl names objects
// (flowschema/NAME, prioritylevelconfiguration/NAME).
func (o ObjectRef) String() string {
	if o.Kind == kindPL {
		return "prioritylevelconfiguration/" + o.Name
	}
	return "flowschema/" + o.Name
}

const (
	kindFS = "FlowSchema"
	kindPL = "PriorityLevelConfiguration"
)

// Reference holds upstream's suggested objects for the server's version: the
// apiserver keeps them current unless they are annotated
// apf.kubernetes.io/autoupdate-spec=false.
type Reference struct {
	// Version names the upstream release the objects come from, for messages.
	Version                 string
	SuggestedFlowSchemas    []*flowcontrolv1.FlowSchema
	SuggestedPriorityLevels []*flowcontrolv1.PriorityLevelConfiguration
}
