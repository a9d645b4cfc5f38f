package explain

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// TestExplain429WithoutObjects: metrics pasted from a vendor guide show
// workload-low rejecting; the input holds no PriorityLevelConfiguration, so
// the level is unknown, not "deleted, or being drained" (issue 26, D3).
func TestExplain429WithoutObjects(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "field", "eks-rejected-inqueue.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var in dump.RawInput
	if err := dump.DetectRaw("eks", b, &in); err != nil {
		t.Fatal(err)
	}
	live, err := in.Snapshot("eks", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	tr := Explain429(engine.NewConfig(nil, nil), 0, time.Minute, []*dump.Snapshot{live})
	if len(tr.Incidents) != 1 {
		t.Fatalf("incidents %+v", tr.Incidents)
	}
	inc := tr.Incidents[0]
	if inc.Level != "workload-low" || len(inc.Causes) != 1 {
		t.Fatalf("incident %+v", inc)
	}
	if ev := inc.Causes[0].Evidence; strings.Contains(ev, "deleted") || !strings.Contains(ev, "the input holds no PriorityLevelConfiguration objects") {
		t.Errorf("evidence %q", ev)
	}
	// With the objects read, a level missing from them is still called
	// deleted or draining.
	live.PriorityLevels = []flowcontrolv1.PriorityLevelConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "global-default"}}}
	tr = Explain429(engine.NewConfig(nil, nil), 0, time.Minute, []*dump.Snapshot{live})
	if ev := tr.Incidents[0].Causes[0].Evidence; !strings.Contains(ev, "deleted, or being drained") {
		t.Errorf("evidence with objects %q", ev)
	}
}
