package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// TestExplain429UnderLoad drives the load generator's levels into real
// rejections (queue-full in the queuing level apf-load, concurrency-limit
// in the Reject level) and checks that "explain 429", run while the load
// lasts, names the right levels, reasons, flows and causes, and that
// "explain request" for a loaded flow says it is queued or rejected in
// apf-load.
func TestExplain429UnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the local control plane")
	}
	c := testcluster.StartT(t, testcluster.Options{})
	ctx := context.Background()
	names, flows := loadgen.SetUpT(t, c, loadgen.FlowSetup{Flows: 6, Reject: true})
	// Let the server digest the new levels before loading them.
	warm, err := loadgen.Run(ctx, loadgen.Options{Flows: flows[:1], Burst: 1, Rounds: 1, Duration: 10 * time.Second, Names: names})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); warm.ByPriority[loadgen.Level] == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the server never classified the load into %s", loadgen.Level)
		}
		time.Sleep(300 * time.Millisecond)
		if warm, err = loadgen.Run(ctx, loadgen.Options{Flows: flows[:1], Burst: 1, Rounds: 1, Duration: 10 * time.Second, Names: names}); err != nil {
			t.Fatal(err)
		}
	}

	// Build the plugin (a first run builds it) before the load starts, so
	// the load outlasts every command below.
	if code, _, errOut := runLintPlugin(t, c, "version"); code != 0 {
		t.Fatalf("kubectl apf version: exit %d: %s", code, errOut)
	}
	loadCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var rep *loadgen.Report
	var loadErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		rep, loadErr = loadgen.Run(loadCtx, loadgen.Options{Flows: flows, Burst: 10, Rounds: 10000, Duration: 90 * time.Second, Pause: 50 * time.Millisecond, Names: names})
	}()
	time.Sleep(time.Second)

	// The dumps are a snapshot: one taken between two bursts may hold no
	// request of the level, so take up to four and keep the first with flows.
	var code int
	var out []byte
	var errOut string
	for attempt := 0; attempt < 4; attempt++ {
		code, out, errOut = runLintPlugin(t, c, "explain", "429", "--interval", "2s", "-o", "json")
		if code != 0 || bytes.Contains(out, []byte(`"distinguisher": "load-`)) {
			break
		}
	}
	// While the load still runs: a request of a loaded flow.
	ex := runExplain(t, c, "--user-name", testcluster.LoadUserName(1), "--group", testcluster.LoadGroup, "list", "/api/v1/namespaces/"+loadgen.Namespace+"/configmaps")
	_, human, _ := runLintPlugin(t, c, "explain", "request", "--user-name", testcluster.LoadUserName(2), "--group", testcluster.LoadGroup, "list", "/api/v1/namespaces/"+loadgen.Namespace+"/configmaps")
	// A bundle captured under load, for the offline path.
	capture, capErr := (&fetch.ClusterSource{Config: c.RESTConfig(testcluster.Admin)}).Capture(ctx, dump.CaptureOptions{Parts: dump.PartAll, MetricsInterval: 2 * time.Second})
	_, text, _ := runLintPlugin(t, c, "explain", "429", "--interval", "0")
	stop()
	wg.Wait()
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	var buf strings.Builder
	rep.Print(&buf)
	t.Logf("load report:\n%s", buf.String())
	if rep.Rejected() == 0 {
		t.Fatalf("the load generator got no 429; nothing to explain")
	}
	if code != 0 {
		t.Fatalf("explain 429: exit %d\n%s", code, errOut)
	}
	var tr rejections.Report
	if err := json.Unmarshal(out, &tr); err != nil {
		t.Fatalf("decoding: %v\n%s", err, out)
	}
	if len(tr.Instances) != 1 || !tr.Instances[0].HasRates {
		t.Fatalf("want one instance with rates: %s", out)
	}
	levels := map[string]rejections.Incident{}
	for _, l := range tr.Incidents {
		levels[l.Level] = l
	}
	load, ok := levels[loadgen.Level]
	if !ok || load.Reasons[explain.ReasonQueueFull] <= 0 {
		t.Fatalf("explain 429 does not show queue-full rejections in %s: %s", loadgen.Level, out)
	}
	if len(load.Causes) == 0 || (load.Causes[0].Kind != rejections.CauseTooLittleConcurrency && load.Causes[0].Kind != rejections.CauseElephantFlow) {
		t.Errorf("causes of %s: %+v; want too little concurrency or an elephant flow first", loadgen.Level, load.Causes)
	}
	for _, f := range load.Flows {
		if f.FlowSchema != loadgen.FlowSchema || !strings.HasPrefix(f.Distinguisher, "load-") || len(f.Hand) != 2 {
			t.Errorf("unexpected flow in %s: %+v", loadgen.Level, f)
		}
	}
	if len(load.Flows) == 0 {
		t.Errorf("no flow of %s in the request dump", loadgen.Level)
	}
	rej, ok := levels[loadgen.RejectLevel]
	if !ok || rej.Reasons[explain.ReasonConcurrencyLimit] <= 0 {
		t.Errorf("explain 429 does not show concurrency-limit rejections in %s: %s", loadgen.RejectLevel, out)
	} else if len(rej.Causes) == 0 || rej.Causes[0].Kind != rejections.CauseNoQueues {
		t.Errorf("causes of %s: %+v; want no-queues", loadgen.RejectLevel, rej.Causes)
	}
	for name := range levels {
		if name != loadgen.Level && name != loadgen.RejectLevel {
			t.Errorf("level %s is reported as rejecting, but only the load levels should be", name)
		}
	}

	if ex.PriorityLevel == nil || ex.PriorityLevel.Name != loadgen.Level || ex.FlowDistinguisher != testcluster.LoadUserName(1) {
		t.Fatalf("explain request under load: %+v / %+v / %q", ex.FlowSchema, ex.PriorityLevel, ex.FlowDistinguisher)
	}
	if ex.Queues == nil || len(ex.Queues.Hand) != 2 {
		t.Errorf("want a hand of 2 queues: %+v", ex.Queues)
	}
	switch ex.Verdict.Kind {
	case explain.VerdictQueued, explain.VerdictRejected:
	default:
		// The 1-seat level is saturated for the whole run; a dump taken
		// between two bursts may still see it idle, so only log.
		t.Logf("verdict under load: %+v", ex.Verdict)
	}
	t.Logf("explain request under load: %s: %s", ex.Verdict.Kind, ex.Verdict.Reason)
	t.Logf("explain request under load (human):\n%s", human)
	for _, want := range []string{"live state of " + c.URL(), "Hand of queues:", "WAITING-WORK", "Verdict: ", "FlowSchema " + loadgen.FlowSchema + " (uid "} {
		if !strings.Contains(string(human), want) {
			t.Errorf("the human output under load lacks %q", want)
		}
	}
	t.Logf("explain 429 (totals since start):\n%s", text)
	if !strings.Contains(string(text), loadgen.Level) {
		t.Errorf("the human output does not name %s:\n%s", loadgen.Level, text)
	}

	// Offline: the same triage from the bundle, after the load stopped.
	if capErr != nil {
		t.Fatal(capErr)
	}
	bundle := filepath.Join(t.TempDir(), "apf.tar.gz")
	if err := dump.WriteBundle(bundle, capture, dump.Manifest{Format: dump.BundleFormat, CreatedAt: time.Now().UTC(), Source: c.URL()}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runLintPlugin(t, c, "explain", "429", "--from", bundle, "-o", "json")
	if code != 0 {
		t.Fatalf("explain 429 --from: exit %d\n%s", code, errOut)
	}
	var off rejections.Report
	if err := json.Unmarshal(out, &off); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range off.Incidents {
		found = found || (l.Level == loadgen.Level && l.Reasons[explain.ReasonQueueFull] > 0)
	}
	if !off.Instances[0].HasRates || !found {
		t.Errorf("explain 429 --from BUNDLE: want rates and queue-full rejections in %s: %s", loadgen.Level, out)
	}
}
