package lint

import (
	"encoding/json"
	"os"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// TestReferenceFollowsRelease lints the default objects a real kube-apiserver
// v1.29.15 created (testdata/engine/defaults, captured by make
// test-versions) against the 1.29 and the 1.37 suggestions: with 1.29's they
// are clean, and an opted-out edit of endpoint-controller (a 1.29-1.33
// suggestion that 1.34 removed) is found only with 1.29's.
func TestReferenceFollowsRelease(t *testing.T) {
	b, err := os.ReadFile("../../testdata/engine/defaults/v1.29.15.json")
	if err != nil {
		t.Fatal(err)
	}
	var captured struct {
		FlowSchemas    []flowcontrolv1.FlowSchema                 `json:"flowSchemas"`
		PriorityLevels []flowcontrolv1.PriorityLevelConfiguration `json:"priorityLevels"`
	}
	if err := json.Unmarshal(b, &captured); err != nil {
		t.Fatal(err)
	}
	in := Input{}
	for i := range captured.FlowSchemas {
		in.FlowSchemas = append(in.FlowSchemas, &captured.FlowSchemas[i])
	}
	for i := range captured.PriorityLevels {
		in.PriorityLevels = append(in.PriorityLevels, &captured.PriorityLevels[i])
	}
	differs := func(ref Reference) []string {
		in.Reference = ref
		var out []string
		for _, f := range Lint(in, DefaultOptions()) {
			if f.Rule == RuleSuggestedDiffers {
				out = append(out, f.Message)
			}
		}
		return out
	}
	rel129 := engine.Release{Minor: 29}
	if got := differs(config.ReferenceFor(rel129)); len(got) != 0 {
		t.Errorf("the 1.29 server's own defaults differ from the 1.29 suggestions: %v", got)
	}
	for _, fs := range in.FlowSchemas {
		if fs.Name == "endpoint-controller" {
			fs.Spec.MatchingPrecedence = 160
			fs.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
		}
	}
	if got := differs(config.ReferenceFor(rel129)); len(got) != 1 {
		t.Errorf("an edited endpoint-controller against 1.29: %v, want one finding", got)
	}
	if got := differs(config.ReferenceFor(engine.NewestRelease)); len(got) != 0 {
		t.Errorf("against 1.37, which has no endpoint-controller: %v", got)
	}
	fss, _ := config.DefaultsFor(rel129)
	if len(fss) != len(captured.FlowSchemas) {
		t.Errorf("DefaultsFor(1.29) has %d FlowSchemas, the 1.29 server %d", len(fss), len(captured.FlowSchemas))
	}
}
