package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// TestListSeatsAgreeWithServer sizes LISTs of the load's 100 ConfigMaps of
// 32 KiB with the LIST estimator of the server's release (engine.ListSeats,
// from the object counts and sizes in the server's /metrics) and compares
// each with the seats the server logged for it (httplog apf_iseats). The
// LISTs are the admin's, whose exempt level caps them only at the release's
// LIST cap, with the queries whose seats differ between releases: consistent
// reads, resourceVersion 0, ?limit, selectors, exact resourceVersions. The
// server counts objects every second (--etcd-count-metric-poll-period; the
// default is a minute), and the LISTs are sent once /metrics shows the
// ConfigMaps counted, so that the estimator and the test see one count; the
// httplog is read from there on (the server's own LISTs at its start were
// sized from the counts of then).
func TestListSeatsAgreeWithServer(t *testing.T) {
	if testing.Short() {
		t.Skip("the local control plane does not run with -short")
	}
	const inflight, mutating = 10, 5
	c := testcluster.StartT(t, testcluster.Options{MaxRequestsInflight: inflight, MaxMutatingRequestsInflight: mutating,
		ExtraAPIServerArgs: []string{"--etcd-count-metric-poll-period=1s"}})
	ctx := context.Background()
	admin := c.Client(testcluster.Admin)
	if err := loadgen.Setup(ctx, admin, loadgen.SetupOptions{}); err != nil {
		t.Fatal(err)
	}
	src := &fetch.ClusterSource{Config: c.RESTConfig(testcluster.Admin)}
	counted := func() (*dump.Snapshot, engine.ObjectCounts) {
		t.Helper()
		capture, err := src.Capture(ctx, dump.CaptureOptions{Parts: dump.PartObjects | dump.PartVersion | dump.PartMetrics})
		if err != nil {
			t.Fatal(err)
		}
		snap := capture.Snapshots[0]
		_, cur := snap.LatestMetrics()
		counts := engine.ObjectCounts{}
		for k, n := range metrics.ObjectCounts(cur) {
			counts[k] = engine.ObjectStats{Count: int64(n.Count), AvgSize: n.AverageSize()}
		}
		return snap, counts
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, counts := counted(); counts["configmaps"].Count >= 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server's /metrics did not count the load's 100 ConfigMaps within 30s")
		}
		time.Sleep(500 * time.Millisecond)
	}
	// the httplog from here on: LISTs sized from the counts /metrics shows
	logFile := c.APIServers[0].LogFile
	logFrom := recording.Size(logFile)
	cms, err := admin.CoreV1().ConfigMaps(loadgen.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv := cms.ResourceVersion
	for _, q := range []map[string]string{
		{}, {"resourceVersion": "0"}, {"limit": "50"}, {"limit": "50", "resourceVersion": "0"},
		{"labelSelector": "a=b"}, {"labelSelector": "a=b", "resourceVersion": "0"},
		{"fieldSelector": "metadata.name=load-001"},
		// (resourceVersionMatch=NotOlderThan with the LIST's revision is left
		// out: a 1.29 watch cache waits for a ConfigMap event that recent)
		{"resourceVersion": rv, "resourceVersionMatch": "Exact"}, {"limit": "50", "resourceVersion": rv},
	} {
		req := admin.CoreV1().RESTClient().Get().Namespace(loadgen.Namespace).Resource("configmaps")
		for k, v := range q {
			req = req.Param(k, v)
		}
		if err := req.Do(ctx).Error(); err != nil {
			t.Fatalf("LIST configmaps %v: %v", q, err)
		}
	}
	snap, counts := counted()
	time.Sleep(time.Second) // let the apiserver write its last log lines
	if snap.ServerVersion == nil {
		t.Fatal("the capture has no /version")
	}
	rel, _, err := engine.ReleaseForServer(snap.ServerVersion.GitVersion)
	if err != nil {
		t.Fatal(err)
	}
	tail := filepath.Join(t.TempDir(), "kube-apiserver.log")
	if err := recording.CopyTail(logFile, logFrom, tail); err != nil {
		t.Fatal(err)
	}
	res, err := recording.CompareListSeats(tail, rel, engine.Unchanging(counts), recording.LevelLimits(snap, inflight+mutating))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range res.Disagreements {
		t.Error(d)
	}
	t.Logf("LIST seats from object counts (engine replaying %s; configmaps %+v): agree with the server's apf_iseats on %d of %d LISTs (server's seats: %v):\n%s",
		rel, counts["configmaps"], res.Agree, res.Total, res.ByServerSeats, strings.Join(res.Seats, "\n"))
	if res.Total == 0 || res.Wide == 0 {
		t.Errorf("%d LISTs compared, %d of them above 1 seat: nothing release-dependent seen", res.Total, res.Wide)
	}
}
