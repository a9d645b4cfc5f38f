package config

import (
	"encoding/json"
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta1 "k8s.io/api/flowcontrol/v1beta1"
	flowcontrolv1beta2 "k8s.io/api/flowcontrol/v1beta2"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
)

// servedVersions are the flowcontrol versions -f reads: v1, the betas
// kube-apiserver converted from (v1beta1 until 1.26, v1beta2 until 1.29,
// v1beta3 until 1.32), which configuration repositories and upstream's own
// e2e objects still use, and v1alpha1 (1.18 to 1.20 manifests), whose
// fields are v1beta1's as 1.20 introduced it.
var servedVersions = []string{"v1", "v1beta3", "v1beta2", "v1beta1", "v1alpha1"}

// v1alpha1Lacks are the v1beta1 fields added after v1alpha1 was last
// served (lendablePercent and borrowingLimitPercent in 1.26, exempt in
// 1.28): k8s.io/api no longer has v1alpha1's types, so a v1alpha1 object is
// decoded with v1beta1's and these are refused as the v1alpha1 server would.
var v1alpha1Lacks = []string{"lendablePercent", "borrowingLimitPercent", "exempt"}

// defaultShares is the nominal (assured, before v1beta3) concurrency shares
// the server gives a Limited level that sets none (pkg/apis/flowcontrol
// v1beta1..v1beta3 and v1 defaults.go).
const defaultShares int32 = 30

// convertToV1 decodes raw, a FlowSchema or PriorityLevelConfiguration of a
// beta version, strictly in that version (so a field that version lacks is
// an error), applies that version's defaults and converts it to v1 as
// kube-apiserver does (k8s.io/kubernetes pkg/apis/flowcontrol/v1beta*/
// defaults.go and conversion.go): the versions differ only in the shares of
// a Limited level, assuredConcurrencyShares in v1beta1 and v1beta2 (0
// defaults to 30), nominalConcurrencyShares in v1beta3 (0 defaults to 30
// unless the object carries the annotation
// flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares, which the
// conversion drops).
func convertToV1(raw []byte, kind, version string) (any, error) {
	var obj any
	var shares func() (*int32, bool) // the converted shares of a Limited level, if any
	switch {
	case kind == "FlowSchema" && (version == "v1beta1" || version == "v1alpha1"):
		obj = &flowcontrolv1beta1.FlowSchema{}
	case kind == "FlowSchema" && version == "v1beta2":
		obj = &flowcontrolv1beta2.FlowSchema{}
	case kind == "FlowSchema" && version == "v1beta3":
		obj = &flowcontrolv1beta3.FlowSchema{}
	case version == "v1beta1" || version == "v1alpha1":
		if version == "v1alpha1" {
			if f := v1alpha1Field(raw); f != "" {
				return nil, fmt.Errorf("%s has unknown field \"spec.%s\" (v1alpha1 has no such field)", kind, f)
			}
		}
		pl := &flowcontrolv1beta1.PriorityLevelConfiguration{}
		obj, shares = pl, func() (*int32, bool) {
			if l := pl.Spec.Limited; l != nil {
				return assured(l.AssuredConcurrencyShares), true
			}
			return nil, false
		}
	case version == "v1beta2":
		pl := &flowcontrolv1beta2.PriorityLevelConfiguration{}
		obj, shares = pl, func() (*int32, bool) {
			if l := pl.Spec.Limited; l != nil {
				return assured(l.AssuredConcurrencyShares), true
			}
			return nil, false
		}
	case version == "v1beta3":
		pl := &flowcontrolv1beta3.PriorityLevelConfiguration{}
		obj, shares = pl, func() (*int32, bool) {
			l := pl.Spec.Limited
			if l == nil {
				return nil, false
			}
			v := l.NominalConcurrencyShares
			if _, keep := pl.Annotations[flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey]; v == 0 && !keep {
				v = defaultShares
			}
			return &v, true
		}
	default:
		return nil, fmt.Errorf("%s: version %s is not one of %v", kind, version, servedVersions)
	}
	if err := strictDecode(raw, obj); err != nil {
		return nil, fmt.Errorf("%s %w", kind, err)
	}
	var m map[string]any
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["apiVersion"] = flowcontrolGroup + "/v1"
	// only the v1beta3 conversion drops the annotation; the server refuses
	// it on an object of any other version
	if md, ok := m["metadata"].(map[string]any); ok && version == "v1beta3" {
		if ann, ok := md["annotations"].(map[string]any); ok {
			delete(ann, flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey)
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
	}
	if shares != nil {
		if v, ok := shares(); ok {
			lim := m["spec"].(map[string]any)["limited"].(map[string]any)
			delete(lim, "assuredConcurrencyShares")
			lim["nominalConcurrencyShares"] = *v
		}
	}
	b, err = json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out any = &flowcontrolv1.FlowSchema{}
	if kind != "FlowSchema" {
		out = &flowcontrolv1.PriorityLevelConfiguration{}
	}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("converting %s %s to v1: %w", kind, version, err)
	}
	return out, nil
}

// assured is v1beta1's and v1beta2's assuredConcurrencyShares with its
// default applied.
func assured(v int32) *int32 {
	if v == 0 {
		v = defaultShares
	}
	return &v
}

// v1alpha1Field returns the first field of v1alpha1Lacks that raw's spec
// (or spec.limited) sets, or "".
func v1alpha1Field(raw []byte) string {
	var doc struct {
		Spec map[string]json.RawMessage `json:"spec"`
	}
	if json.Unmarshal(raw, &doc) != nil {
		return ""
	}
	var limited map[string]json.RawMessage
	if l, ok := doc.Spec["limited"]; ok {
		_ = json.Unmarshal(l, &limited)
	}
	for _, f := range v1alpha1Lacks {
		if _, ok := doc.Spec[f]; ok {
			return f
		}
		if _, ok := limited[f]; ok {
			return "limited." + f
		}
	}
	return ""
}
