package dump

import (
	"encoding/json"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// TestConvertListOldExemptLevel: a 1.26/1.27 server serves the exempt level
// as {"type":"Exempt"} (spec.exempt arrived in 1.28). Converted, it must be a
// healthy exempt level with no shares and no lending, not a broken one.
func TestConvertListOldExemptLevel(t *testing.T) {
	// As kube-apiserver v1.27.4 serves it (flowcontrol v1beta3).
	body := []byte(`{"kind":"PriorityLevelConfigurationList","apiVersion":"flowcontrol.apiserver.k8s.io/v1beta3","items":[
	 {"metadata":{"name":"exempt","uid":"u1"},"spec":{"type":"Exempt"}},
	 {"metadata":{"name":"catch-all","uid":"u2"},"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":5,"lendablePercent":0,"limitResponse":{"type":"Reject"}}}}]}`)
	out, err := ConvertList(body)
	if err != nil {
		t.Fatal(err)
	}
	var l flowcontrolv1.PriorityLevelConfigurationList
	if err := json.Unmarshal(out, &l); err != nil {
		t.Fatal(err)
	}
	ex := l.Items[0].Spec.Exempt
	if ex == nil || ex.NominalConcurrencyShares == nil || *ex.NominalConcurrencyShares != 0 || ex.LendablePercent == nil || *ex.LendablePercent != 0 {
		t.Fatalf("converted exempt spec = %+v, want exempt{0, 0}", l.Items[0].Spec)
	}
	var pls []*flowcontrolv1.PriorityLevelConfiguration
	for i := range l.Items {
		pls = append(pls, &l.Items[i])
	}
	cfg := engine.NewConfig(engine.DefaultFlowSchemas(), pls)
	if len(cfg.Broken) != 0 {
		t.Errorf("the engine calls converted levels broken: %+v", cfg.Broken)
	}
}
