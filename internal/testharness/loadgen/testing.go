package loadgen

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
)

// FlowSetup says what SetUpT prepares on a control plane.
type FlowSetup struct {
	// Flows is how many load identities (testcluster.LoadUserName 1, 2, …)
	// send to the queuing level.
	Flows int
	// Reject adds one more flow, the last load identity
	// (testcluster.NumLoadUsers), routed to the Reject level.
	Reject bool
	// Wait waits until the server classifies the first flow into the
	// queuing level (WaitForLevel).
	Wait bool
}

// SetUpT creates the load's objects on c (Setup) and returns their names
// (Names) and the REST configs of its flows: the queuing ones, then, with
// s.Reject, the one in the Reject level. It fails t on any error.
func SetUpT(t testing.TB, c *testcluster.Cluster, s FlowSetup) (names map[string]string, flows []*rest.Config) {
	t.Helper()
	if s.Flows < 1 || s.Flows >= testcluster.NumLoadUsers {
		t.Fatalf("loadgen.SetUpT: %d queuing flows; there are %d load identities, the last kept for the Reject level", s.Flows, testcluster.NumLoadUsers)
	}
	ctx := context.Background()
	admin := c.Client(testcluster.Admin)
	var rejectUser string
	if s.Reject {
		rejectUser = testcluster.LoadUserName(testcluster.NumLoadUsers)
	}
	if err := Setup(ctx, admin, SetupOptions{RejectUser: rejectUser}); err != nil {
		t.Fatal(err)
	}
	names, err := Names(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= s.Flows; i++ {
		flows = append(flows, c.RESTConfig(testcluster.LoadUserName(i)))
	}
	if s.Reject {
		flows = append(flows, c.RESTConfig(rejectUser))
	}
	if s.Wait {
		if err := WaitForLevel(ctx, flows[0], names, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	return names, flows
}
