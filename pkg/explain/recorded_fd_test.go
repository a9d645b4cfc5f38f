package explain

import (
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// TestCompareDistinguisher: the node-problem-detector line of
// kubernetes/kubernetes#105370 logs apf_fs and apf_pl global-default and
// apf_fd="system:node-problem-detector". Explained as bob, FlowSchema and
// level agree but the flow does not, and the comparison disagrees and says
// why instead of agreeing; explained as its user it agrees. A
// distinguisher the server cut at 64 bytes agrees with its whole (issue
// 47's field test, N4).
func TestCompareDistinguisher(t *testing.T) {
	cfg := defaultsConfig(t)
	explainAs := func(user string) *Explanation {
		ex := Explain(Input{Config: cfg}, mustRequest(t, "get", "/api/v1/nodes/n", engine.NewUserIdentity(user)), nil)
		ex.CompareNames("httplog", "global-default", "global-default", 200)
		return ex
	}
	ex := explainAs("bob")
	ex.CompareDistinguisher("system:node-problem-detector")
	rec := ex.Recorded
	if rec.Agrees == nil || *rec.Agrees || rec.FlowDistinguisher == nil || *rec.FlowDistinguisher != "system:node-problem-detector" {
		t.Fatalf("recorded %+v", rec)
	}
	if !strings.Contains(rec.Detail, `the server's flow distinguisher (apf_fd) was "system:node-problem-detector", the replay's "bob"`) {
		t.Errorf("detail %q", rec.Detail)
	}
	ex = explainAs("system:node-problem-detector")
	ex.CompareDistinguisher("system:node-problem-detector")
	if rec := ex.Recorded; rec.Agrees == nil || !*rec.Agrees {
		t.Errorf("as its user: %+v", rec)
	}
	long := "system:serviceaccount:a-namespace-with-a-long-name:an-account-with-a-long-name"
	ex = explainAs(long)
	ex.CompareDistinguisher(long[:64])
	if rec := ex.Recorded; rec.Agrees == nil || !*rec.Agrees {
		t.Errorf("cut at 64 bytes: %+v", rec)
	}
}
