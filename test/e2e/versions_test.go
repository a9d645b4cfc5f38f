package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
)

// serverVersion is the gitVersion of the control plane's /version, e.g.
// "v1.37.1"; make test-versions runs this package against older releases
// (KUBE_APISERVER_BIN, see hack/test-versions.sh).
func serverVersion(t *testing.T, c *testcluster.Cluster) string {
	t.Helper()
	v, err := clientFor(t, c.RESTConfig(testcluster.Admin)).Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	return v.GitVersion
}

// ReleaseDefaults is the file -capture-fixtures writes to
// DIR/engine/defaults/VERSION.json: the FlowSchemas and priority levels a
// fresh server of that release maintains itself (those annotated
// apf.kubernetes.io/autoupdate-spec=true), without server-set metadata and
// status, sorted by name. pkg/engine's tests compare the release defaults it
// builds with these.
type ReleaseDefaults struct {
	ServerVersion  string                                     `json:"serverVersion"`
	FlowSchemas    []flowcontrolv1.FlowSchema                 `json:"flowSchemas"`
	PriorityLevels []flowcontrolv1.PriorityLevelConfiguration `json:"priorityLevels"`
}

// TestCaptureReleaseDefaults writes the shared control plane's own default
// objects when -capture-fixtures is given; without it there is nothing to do.
func TestCaptureReleaseDefaults(t *testing.T) {
	c := cluster(t)
	if *captureFixtures == "" {
		t.Skip("only with -capture-fixtures")
	}
	cs := clientFor(t, c.RESTConfig(testcluster.Admin))
	ctx := context.Background()
	fsl, err := cs.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pll, err := cs.FlowcontrolV1().PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const autoUpdate = "apf.kubernetes.io/autoupdate-spec"
	out := ReleaseDefaults{ServerVersion: serverVersion(t, c)}
	strip := func(m metav1.ObjectMeta) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: m.Name, Annotations: map[string]string{autoUpdate: m.Annotations[autoUpdate]}}
	}
	for _, fs := range fsl.Items {
		if fs.Annotations[autoUpdate] == "true" {
			out.FlowSchemas = append(out.FlowSchemas, flowcontrolv1.FlowSchema{ObjectMeta: strip(fs.ObjectMeta), Spec: fs.Spec})
		}
	}
	for _, pl := range pll.Items {
		if pl.Annotations[autoUpdate] == "true" {
			out.PriorityLevels = append(out.PriorityLevels, flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: strip(pl.ObjectMeta), Spec: pl.Spec})
		}
	}
	sort.Slice(out.FlowSchemas, func(i, j int) bool { return out.FlowSchemas[i].Name < out.FlowSchemas[j].Name })
	sort.Slice(out.PriorityLevels, func(i, j int) bool { return out.PriorityLevels[i].Name < out.PriorityLevels[j].Name })
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(*captureFixtures, "engine", "defaults")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, out.ServerVersion+".json")
	if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: %d FlowSchemas, %d priority levels", p, len(out.FlowSchemas), len(out.PriorityLevels))
}
