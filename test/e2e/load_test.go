package e2e

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubectl-apf/kubectl-apf/internal/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testcluster"
)

// setUpLoad creates the load generator's objects and returns their names and
// the REST configs of its six flows; with wait, it also waits until the
// server classifies the flows into the load level.
func setUpLoad(t *testing.T, c *testcluster.Cluster, wait bool) (names map[string]string, flows []*rest.Config) {
	t.Helper()
	ctx := context.Background()
	admin := c.Client(testcluster.Admin)
	if err := loadgen.Setup(ctx, admin, loadgen.SetupOptions{}); err != nil {
		t.Fatal(err)
	}
	names, err := loadgen.Names(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 6; i++ {
		flows = append(flows, c.RESTConfig(testcluster.LoadUserName(i)))
	}
	if wait {
		if err := loadgen.WaitForLevel(ctx, flows[0], names, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	return names, flows
}
