package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
	"github.com/kubectl-apf/kubectl-apf/pkg/config"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
	"github.com/kubectl-apf/kubectl-apf/pkg/lint"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// runLintPlugin runs the built plugin against the cluster and returns its
// exit code, stdout and stderr.
func runLintPlugin(t *testing.T, c *testcluster.Cluster, args ...string) (int, []byte, string) {
	t.Helper()
	bin := pluginBinary(t) // built before the clock starts, as in apf
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, "--kubeconfig", c.Kubeconfig)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %v: %v", args, err)
	}
	return code, out.Bytes(), errOut.String()
}

type lintJSON struct {
	Findings []lint.Finding `json:"findings"`
	Errors   int            `json:"errors"`
}

// TestLintClusterDefaults: the local control plane's own configuration (the
// upstream defaults, plus whatever other tests created) has no lint error.
func TestLintClusterDefaults(t *testing.T) {
	c := cluster(t)
	code, out, errOut := runLintPlugin(t, c, "lint", "-o", "json")
	if code != 0 {
		t.Fatalf("lint of the fresh cluster exited %d: %s\n%s", code, errOut, out)
	}
	var rep lintJSON
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("decoding %s: %v", out, err)
	}
	if rep.Errors != 0 {
		t.Fatalf("errors on the defaults: %+v", rep.Findings)
	}
	// The suggested objects the server keeps are exactly the v1.37
	// suggestions, so none is reported as differing.
	for _, f := range rep.Findings {
		if f.Rule == lint.RuleSuggestedDiffers {
			t.Errorf("server-maintained suggested object reported as differing: %s", f.Message)
		}
	}

	// The same configuration read back from a bundle gives the same report.
	capture, err := (&fetch.ClusterSource{Config: c.RESTConfig(testcluster.Admin)}).Capture(context.Background(),
		dump.CaptureOptions{Parts: dump.PartObjects | dump.PartVersion | dump.PartMetrics})
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(t.TempDir(), "bundle")
	if err := dump.WriteBundle(bundle, capture, dump.Manifest{Source: c.URL()}); err != nil {
		t.Fatal(err)
	}
	code, fromBundle, errOut := runLintPlugin(t, c, "lint", "-o", "json", "--from", bundle)
	if code != 0 {
		t.Fatalf("lint --from exited %d: %s", code, errOut)
	}
	if !bytes.Equal(fromBundle, out) {
		t.Errorf("lint --from the bundle differs from the live lint:\n%s\n--- live ---\n%s", fromBundle, out)
	}
	code, capOut, errOut := runLintPlugin(t, c, "capacity", "-o", "json", "--from", bundle)
	if code != 0 || !bytes.Contains(capOut, []byte(`"serverConcurrencySource": "metrics"`)) || !bytes.Contains(capOut, []byte(`"serverConcurrencyLimit": 15`)) {
		t.Errorf("capacity --from exited %d (%s); server concurrency not inferred from the bundle's metrics:\n%s", code, errOut, capOut)
	}
}

// TestLintClusterFindsAppliedMistakes applies the planted mistakes of
// testdata/lint/broken (renamed with a prefix, and without the edit of the
// suggested workload-low level, which would change every other test's
// seats) and checks that lint finds each one on the live cluster, and that
// the server itself agrees about the dangling reference.
func TestLintClusterFindsAppliedMistakes(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	fc := c.Client(testcluster.Admin).FlowcontrolV1()
	const prefix = "e2e-lint-"

	var objs config.Objects
	for _, f := range []string{"levels.yaml", "flowschemas.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "lint", "broken", f))
		if err != nil {
			t.Fatal(err)
		}
		o, err := config.ParseObjects(data, f)
		if err != nil {
			t.Fatal(err)
		}
		objs.Add(o)
	}
	ours := map[string]bool{}
	for _, pl := range objs.PriorityLevels {
		ours[pl.Name] = true
	}
	ours["batch"] = true // the missing level batch-jobs points at
	for _, pl := range objs.PriorityLevels {
		if pl.Name == "workload-low" {
			continue
		}
		pl.Name = prefix + pl.Name
		if _, err := fc.PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s: %v", pl.Name, err)
		}
		name := pl.Name
		t.Cleanup(func() {
			_ = fc.PriorityLevelConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	for _, fs := range objs.FlowSchemas {
		fs.Name = prefix + fs.Name
		if ours[fs.Spec.PriorityLevelConfiguration.Name] {
			fs.Spec.PriorityLevelConfiguration.Name = prefix + fs.Spec.PriorityLevelConfiguration.Name
		}
		if _, err := fc.FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s: %v", fs.Name, err)
		}
		name := fs.Name
		t.Cleanup(func() { _ = fc.FlowSchemas().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}

	code, out, errOut := runLintPlugin(t, c, "lint", "-o", "json")
	if code != 1 {
		t.Fatalf("lint exited %d, want 1 (errors found): %s\n%s", code, errOut, out)
	}
	if !strings.Contains(errOut, "lint findings at or above error found") {
		t.Errorf("stderr %q", errOut)
	}
	var rep lintJSON
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("decoding %s: %v", out, err)
	}
	want := []string{
		lint.RuleShadowedFlowSchema + " flowschema/" + prefix + "alice-debug",
		lint.RuleDanglingPriorityLevel + " flowschema/" + prefix + "batch-jobs",
		lint.RulePrecedenceTie + " flowschema/" + prefix + "ci-bots",
		lint.RuleNoDistinguisherShared + " flowschema/" + prefix + "ci-runners",
		lint.RuleExemptBeyondMasters + " flowschema/" + prefix + "oncall-exempt",
		lint.RuleRejectWithTraffic + " flowschema/" + prefix + "scrapers",
		lint.RuleUnusedPriorityLevel + " prioritylevelconfiguration/" + prefix + "reserved",
		lint.RuleCrushRisk + " prioritylevelconfiguration/" + prefix + "tiny",
	}
	got := map[string]bool{}
	for _, f := range rep.Findings {
		got[f.Rule+" "+f.Objects[0].String()] = true
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("not found on the cluster: %s", w)
		}
	}

	// The server's config controller marks the same FlowSchema dangling.
	deadline := time.Now().Add(60 * time.Second)
	for {
		fs, err := fc.FlowSchemas().Get(ctx, prefix+"batch-jobs", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dangling := false
		for _, cond := range fs.Status.Conditions {
			dangling = dangling || (cond.Type == flowcontrolv1.FlowSchemaConditionDangling && cond.Status == flowcontrolv1.ConditionTrue)
		}
		if dangling {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never marked %sbatch-jobs Dangling: %+v", prefix, fs.Status)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestCapacityMatchesServerMetrics checks "kubectl apf capacity" against the
// apiserver's own gauges: the inferred server concurrency limit is the
// control plane's --max-requests-inflight + --max-mutating-requests-inflight,
// and every level's nominal, lower and upper limits equal
// apiserver_flowcontrol_{nominal,lower,upper}_limit_seats.
func TestCapacityMatchesServerMetrics(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	admin := c.Client(testcluster.Admin)
	var lastErr string
	// Other tests may change priority levels between the command's read and
	// the scrape; retry a few times before calling it a mismatch.
	for attempt := 0; attempt < 10; attempt++ {
		code, out, errOut := runLintPlugin(t, c, "capacity", "-o", "json")
		if code != 0 {
			t.Fatalf("capacity exited %d: %s", code, errOut)
		}
		var rep struct {
			ServerConcurrencySource string `json:"serverConcurrencySource"`
			Current                 struct {
				ServerConcurrencyLimit int `json:"serverConcurrencyLimit"`
				Levels                 []struct {
					Name    string `json:"name"`
					Nominal int    `json:"nominalLimitSeats"`
					Lower   int    `json:"lowerLimitSeats"`
					Upper   int    `json:"upperLimitSeats"`
				} `json:"levels"`
			} `json:"current"`
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("decoding %s: %v", out, err)
		}
		if rep.ServerConcurrencySource != "metrics" || rep.Current.ServerConcurrencyLimit != 15 {
			t.Fatalf("server concurrency %d from %s, want 15 (10+5) from metrics", rep.Current.ServerConcurrencyLimit, rep.ServerConcurrencySource)
		}
		body, err := admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		scrape, err := metrics.ParseText(body, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		nominal := scrape.SumBy("apiserver_flowcontrol_nominal_limit_seats", "priority_level")
		lower := scrape.SumBy("apiserver_flowcontrol_lower_limit_seats", "priority_level")
		upper := scrape.SumBy("apiserver_flowcontrol_upper_limit_seats", "priority_level")
		var mismatches []string
		for _, l := range rep.Current.Levels {
			if float64(l.Nominal) != nominal[l.Name] || float64(l.Lower) != lower[l.Name] || float64(l.Upper) != upper[l.Name] {
				mismatches = append(mismatches, l.Name)
			}
		}
		if len(rep.Current.Levels) < 8 {
			t.Fatalf("only %d levels", len(rep.Current.Levels))
		}
		if len(mismatches) == 0 {
			return
		}
		lastErr = strings.Join(mismatches, ", ")
		time.Sleep(time.Second)
	}
	t.Fatalf("capacity disagrees with the server's metrics for: %s", lastErr)
}

// lintPainsManifest is what a team would keep in its repository: a jail
// level for one service account, and a metrics-server-like aggregated API
// whose backend runs as e2e-metrics/metrics-server (outside kube-system, so
// the suggested service-accounts FlowSchema sends it to workload-low).
const lintPainsManifest = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: e2e-jail}
spec:
  type: Limited
  limited: {nominalConcurrencyShares: 0, lendablePercent: 0, borrowingLimitPercent: 0, limitResponse: {type: Reject}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: e2e-jail}
spec:
  matchingPrecedence: 800
  priorityLevelConfiguration: {name: e2e-jail}
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: ServiceAccount, serviceAccount: {namespace: e2e-jail, name: prisoner}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  service: {namespace: e2e-metrics, name: metrics-server}
---
apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: e2e-metrics}
spec:
  selector: {k8s-app: metrics-server}
  ports: [{port: 443, targetPort: 10250}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: metrics-server, namespace: e2e-metrics}
spec:
  selector: {matchLabels: {k8s-app: metrics-server}}
  template:
    metadata: {labels: {k8s-app: metrics-server}}
    spec:
      serviceAccountName: metrics-server
      containers: [{name: metrics-server, image: registry.k8s.io/metrics-server/metrics-server:v0.7.2}]
`

// pfLevel sends one request with token and returns its status and the
// priority level UID the server's APF filter put in the response.
func pfLevel(t *testing.T, c *testcluster.Cluster, token, method, path, body string) (int, string) {
	t.Helper()
	cfg := c.TokenConfigFor(c.APIServers[0], token)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, c.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID")
}

// TestLintCallbackAndJail applies a jail level (Reject, no seats) and lints
// the cluster with a metrics-server-like APIService in -f: lint flags the
// jail as admitting when idle and the callback as waiting below its caller.
// Then the real server shows both: the backend's service account lands in
// workload-low, and one request sent to the idle jail is admitted.
func TestLintCallbackAndJail(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	admin := c.Client(testcluster.Admin)
	fc := admin.FlowcontrolV1()

	objs, err := config.ParseObjects([]byte(lintPainsManifest), "manifest")
	if err != nil {
		t.Fatal(err)
	}
	jail, err := fc.PriorityLevelConfigurations().Create(ctx, objs.PriorityLevels[0], metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = fc.PriorityLevelConfigurations().Delete(context.Background(), "e2e-jail", metav1.DeleteOptions{})
	})
	if _, err := fc.FlowSchemas().Create(ctx, objs.FlowSchemas[0], metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fc.FlowSchemas().Delete(context.Background(), "e2e-jail", metav1.DeleteOptions{}) })

	// The cluster alone: the jail.
	code, out, errOut := runLintPlugin(t, c, "lint", "-o", "json", "--min-severity", "info")
	if code != 0 {
		t.Fatalf("lint exited %d: %s\n%s", code, errOut, out)
	}
	var rep lintJSON
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	found := map[string]lint.Finding{}
	for _, f := range rep.Findings {
		found[f.Rule+" "+f.Objects[0].String()] = f
	}
	jailFinding, ok := found[lint.RuleRejectAdmitsWhenIdle+" prioritylevelconfiguration/e2e-jail"]
	if !ok || jailFinding.Severity != lint.SeverityWarning {
		t.Fatalf("the jail is not flagged: %+v", rep.Findings)
	}

	// With the manifest: the callback too, and --fail-on warning fails.
	manifest := filepath.Join(t.TempDir(), "apf.yaml")
	if err := os.WriteFile(manifest, []byte(lintPainsManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runLintPlugin(t, c, "lint", "-f", manifest, "-o", "json", "--fail-on", "warning")
	if code != 1 {
		t.Fatalf("lint --fail-on warning exited %d: %s\n%s", code, errOut, out)
	}
	rep = lintJSON{}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	var callback *lint.Finding
	for i, f := range rep.Findings {
		if f.Rule == lint.RuleCallbackBelowCaller {
			callback = &rep.Findings[i]
		}
	}
	if callback == nil || !strings.Contains(callback.Message, "whose service account e2e-metrics/metrics-server lands in FlowSchema service-accounts, level workload-low") {
		t.Fatalf("the callback is not flagged: %+v", rep.Findings)
	}

	// The server agrees: the backend's SubjectAccessReview is classified
	// into workload-low (APF runs before authorization, so the 403 still
	// carries the level).
	wl, err := fc.PriorityLevelConfigurations().Get(ctx, "workload-low", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	saToken, err := c.ServiceAccountToken(ctx, "e2e-metrics", "metrics-server")
	if err != nil {
		t.Fatal(err)
	}
	sar := `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"alice","resourceAttributes":{"verb":"list","resource":"pods"}}}`
	if status, uid := pfLevel(t, c, saToken, http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar); uid != string(wl.UID) {
		t.Fatalf("the backend's SubjectAccessReview (status %d) went to level UID %q, not workload-low's %s", status, uid, wl.UID)
	}

	// One request to the idle jail is admitted, as the rule says: the
	// server's config controller needs a moment to pick the level up.
	prisoner, err := c.ServiceAccountToken(ctx, "e2e-jail", "prisoner")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, uid := pfLevel(t, c, prisoner, http.MethodGet, "/api/v1/namespaces/e2e-jail/configmaps", "")
		if uid == string(jail.UID) {
			if status == http.StatusTooManyRequests {
				t.Fatalf("the idle jail rejected the request: lint's %s is wrong", lint.RuleRejectAdmitsWhenIdle)
			}
			t.Logf("one request to the idle jail (0 seats, Reject): HTTP %d, admitted", status)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("requests never reached the jail level (last: HTTP %d, level UID %q)", status, uid)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if jail.Spec.Limited == nil || jail.Spec.Limited.LimitResponse.Type != flowcontrolv1.LimitResponseTypeReject {
		t.Fatalf("the jail level is %+v", jail.Spec)
	}
}

// TestNamespacedFlowSchemaIsAccepted: kube-apiserver accepts a FlowSchema
// and a level that carry metadata.namespace, as Kueue's manifests do, and
// stores them without it; lint reads them the same way (with a note)
// instead of calling them invalid.
func TestNamespacedFlowSchemaIsAccepted(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	rc := c.Client(testcluster.Admin).FlowcontrolV1().RESTClient()
	for _, o := range []struct{ resource, body string }{
		{"prioritylevelconfigurations", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"e2e-namespaced","namespace":"kueue-system"},"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":1,"limitResponse":{"type":"Reject"}}}}`},
		{"flowschemas", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"e2e-namespaced","namespace":"kueue-system"},"spec":{"matchingPrecedence":8000,"priorityLevelConfiguration":{"name":"e2e-namespaced"},"rules":[{"subjects":[{"kind":"User","user":{"name":"nobody-e2e"}}],"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/e2e"]}]}]}}`},
	} {
		var got metav1.PartialObjectMetadata
		if err := rc.Post().AbsPath("/apis/flowcontrol.apiserver.k8s.io/v1", o.resource).Body([]byte(o.body)).Do(ctx).Into(&got); err != nil {
			t.Fatalf("the server refused a namespaced %s: %v", o.resource, err)
		}
		resource := o.resource
		t.Cleanup(func() {
			_ = rc.Delete().AbsPath("/apis/flowcontrol.apiserver.k8s.io/v1", resource, "e2e-namespaced").Do(context.Background()).Error()
		})
		if got.Namespace != "" {
			t.Errorf("the server kept namespace %q on %s", got.Namespace, o.resource)
		}
		objs, err := config.ParseObjects([]byte(o.body), o.resource)
		if err != nil {
			t.Fatalf("lint refuses what the server accepted: %v", err)
		}
		if len(objs.Converted) != 1 || !strings.Contains(objs.Converted[0], `metadata.namespace "kueue-system", which kube-apiserver clears`) {
			t.Errorf("notes %q", objs.Converted)
		}
	}
}
