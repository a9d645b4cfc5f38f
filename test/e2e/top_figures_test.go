package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/agreement"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
)

// TestTopFiguresAgreeLive: one capture of the live cluster under load
// (dumps with requests in the queues, and two scrapes), and "top levels",
// the live view, "explain 429" and "capacity" read from it show the same
// waiting and executing requests and limits for every level. Each command
// captures for itself when it reads a cluster, so their figures can only be
// the same for the same capture: the bundle of it.
func TestTopFiguresAgreeLive(t *testing.T) {
	c := cluster(t)
	stop := startLoad(t, c)
	defer stop()
	live := captureQueued(t, c)
	stop()
	bundle := filepath.Join(t.TempDir(), "live.tar.gz")
	if err := dump.WriteBundle(bundle, live, dump.Manifest{Format: dump.BundleFormat, CreatedAt: time.Now().UTC(), Source: c.URL()}); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) ([]byte, error) {
		code, out, errOut := apf(t, "", append(args, "--kubeconfig", "/nonexistent")...)
		if code != 0 {
			return nil, fmt.Errorf("exit %d: %s", code, errOut)
		}
		return []byte(out), nil
	}
	if n := agreement.Check(t, run, bundle); n == 0 {
		t.Fatal("nothing compared")
	}
}

// captureQueued captures every part of the cluster under load (two scrapes
// a second apart), until the request dump holds requests in the queues
// (at most 40 tries).
func captureQueued(t *testing.T, c *testcluster.Cluster) *dump.Capture {
	t.Helper()
	src := &fetch.ClusterSource{Config: c.RESTConfig(testcluster.Admin)}
	var live *dump.Capture
	for i := 0; i < 40; i++ {
		var err error
		live, err = src.Capture(context.Background(), dump.CaptureOptions{Parts: dump.PartAll, MetricsInterval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if len(live.Snapshots[0].RequestDump) > 1 {
			break
		}
	}
	return live
}
