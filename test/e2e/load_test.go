package e2e

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
)

// loadSetup says what setUpLoad prepares besides the six flows of the
// queuing level.
type loadSetup struct {
	// reject adds a seventh flow, an identity in the Reject level.
	reject bool
	// wait waits until the server classifies the first flow into the load
	// level.
	wait bool
}

// setUpLoad creates the load generator's objects and returns their names and
// the REST configs of its flows: six identities in the queuing level, then,
// with s.reject, one in the Reject level.
func setUpLoad(t *testing.T, c *testcluster.Cluster, s loadSetup) (names map[string]string, flows []*rest.Config) {
	t.Helper()
	ctx := context.Background()
	admin := c.Client(testcluster.Admin)
	var rejectUser string
	if s.reject {
		rejectUser = testcluster.LoadUserName(8)
	}
	if err := loadgen.Setup(ctx, admin, loadgen.SetupOptions{RejectUser: rejectUser}); err != nil {
		t.Fatal(err)
	}
	names, err := loadgen.Names(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 6; i++ {
		flows = append(flows, c.RESTConfig(testcluster.LoadUserName(i)))
	}
	if s.reject {
		flows = append(flows, c.RESTConfig(rejectUser))
	}
	if s.wait {
		if err := loadgen.WaitForLevel(ctx, flows[0], names, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	return names, flows
}
