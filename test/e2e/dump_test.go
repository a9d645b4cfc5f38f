package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
	levelsrender "github.com/kubectl-apf/kubectl-apf/pkg/levels/render"
)

// -capture-fixtures DIR writes the raw dumps and APF metrics captured from
// the local control plane (idle, then under load) into DIR/dump and
// DIR/metrics, named by the server's /version: that is how
// testdata/dump/v1.37.1-* are made, and (make test-versions CAPTURE=1) those
// of the older releases.
var captureFixtures = flag.String("capture-fixtures", "", "write real captures into this testdata directory")

// apf runs the plugin and returns its exit code, stdout and stderr.
func apf(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	// Built (once) before the clock starts: on a busy machine the build
	// alone can take longer than the run's limit.
	bin := pluginBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func mustApf(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := apf(t, "", args...)
	if code != 0 {
		t.Fatalf("kubectl apf %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// startLoad drives the apf-load level into queueing and 429s in the
// background until the returned stop is called.
func startLoad(t *testing.T, c *testcluster.Cluster) (stop func()) {
	t.Helper()
	names, flows := loadgen.SetUpT(t, c, loadgen.FlowSetup{Flows: 6})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_, _ = loadgen.Run(ctx, loadgen.Options{Flows: flows, Burst: 10, Rounds: 3, Duration: 20 * time.Second, Pause: 50 * time.Millisecond, Names: names})
		}
	}()
	return func() { cancel(); <-done }
}

func kubeconfig(t *testing.T, c *testcluster.Cluster) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDumpTopWhoisUnderLoad runs dump, top and whois against the local
// control plane while the load generator keeps apf-load queueing.
func TestDumpTopWhoisUnderLoad(t *testing.T) {
	c := cluster(t)
	kc := kubeconfig(t, c)
	if *captureFixtures != "" {
		writeCapture(t, c, serverVersion(t, c)+"-idle")
	}
	stop := startLoad(t, c)
	defer stop()

	// The dumps are snapshots: poll until a waiting apf-load request shows.
	var requests string
	for i := 0; i < 40; i++ {
		requests = mustApf(t, "dump", "requests", "--kubeconfig", kc, "--level", loadgen.Level)
		if strings.Contains(requests, "waiting") {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("dump requests:\n%s", requests)
	if !strings.Contains(requests, "waiting") || !strings.Contains(requests, "load-") || !strings.Contains(requests, "/api/v1/namespaces/"+loadgen.Namespace+"/configmaps") {
		t.Errorf("no waiting apf-load request from a load user in:\n%s", requests)
	}
	if *captureFixtures != "" {
		writeCapture(t, c, serverVersion(t, c)+"-load")
	}

	levels := mustApf(t, "dump", "levels", "--kubeconfig", kc)
	if !strings.Contains(levels, loadgen.Level) || !strings.Contains(levels, "exempt") || !strings.Contains(levels, "catch-all") {
		t.Errorf("dump levels lacks levels:\n%s", levels)
	}
	queues := mustApf(t, "dump", "queues", "--kubeconfig", kc, "--all", "--level", loadgen.Level, "-o", "json")
	if !strings.Contains(queues, `"priorityLevel": "apf-load"`) {
		t.Errorf("dump queues --all lacks apf-load queues:\n%s", queues)
	}

	top := mustApf(t, "top", "levels", "--kubeconfig", kc, "--rate-window", "2s", "--level", loadgen.Level, "-o", "json")
	t.Logf("top levels:\n%s", top)
	if !strings.Contains(top, `"level": "apf-load"`) || !strings.Contains(top, `"nominalLimit": 1`) || !strings.Contains(top, `"queue-full"`) {
		t.Errorf("top levels for apf-load lacks the limit of 1 seat or queue-full rejections:\n%s", top)
	}
	var flows string
	for i := 0; i < 40; i++ {
		flows = mustApf(t, "top", "flows", "--kubeconfig", kc, "--level", loadgen.Level)
		if strings.Contains(flows, "load-") {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("top flows:\n%s", flows)
	if !strings.Contains(flows, "load-") {
		t.Errorf("top flows shows no load user flow:\n%s", flows)
	}

	// whois: the headers of a request as a load user name apf-load.
	_, fsUID, plUID := pfHeaders(t, c.RESTConfig(testcluster.LoadUserName(1)), "/api/v1/namespaces/"+loadgen.Namespace+"/configmaps?limit=1")
	pasted := fmt.Sprintf("I1121 round_trippers.go:632]     X-Kubernetes-Pf-Flowschema-Uid: %s\nI1121 round_trippers.go:632]     X-Kubernetes-Pf-Prioritylevel-Uid: %s\n", fsUID, plUID)
	code, who, errs := apf(t, pasted, "whois", "-", "--kubeconfig", kc)
	if code != 0 {
		t.Fatalf("whois: exit %d: %s", code, errs)
	}
	t.Logf("whois:\n%s", who)
	if strings.Count(who, loadgen.FlowSchema) < 1 || !strings.Contains(who, "FlowSchema") || !strings.Contains(who, "PriorityLevelConfiguration") {
		t.Errorf("whois did not name the objects:\n%s", who)
	}
	assertPluginOnlyRead(t, c)
}

// assertPluginOnlyRead reads the apiserver's audit log: every request the
// plugin sent (its user agent starts with "kubectl-apf/") is a read.
func assertPluginOnlyRead(t *testing.T, c *testcluster.Cluster) {
	t.Helper()
	b, err := os.ReadFile(c.APIServers[0].AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range bytes.Split(b, []byte("\n")) {
		var ev struct {
			Verb       string `json:"verb"`
			UserAgent  string `json:"userAgent"`
			RequestURI string `json:"requestURI"`
		}
		if json.Unmarshal(line, &ev) != nil || !strings.HasPrefix(ev.UserAgent, "kubectl-apf/") {
			continue
		}
		n++
		if ev.Verb != "get" && ev.Verb != "list" && ev.Verb != "watch" {
			t.Errorf("the plugin sent %s %s", ev.Verb, ev.RequestURI)
		}
	}
	if n == 0 {
		t.Error("no request of the plugin in the audit log")
	}
	t.Logf("%d requests of the plugin in the audit log, all reads", n)
}

// writeCapture stores a real capture as test fixtures.
func writeCapture(t *testing.T, c *testcluster.Cluster, name string) {
	t.Helper()
	src := &fetch.ClusterSource{Config: c.RESTConfig(testcluster.Admin)}
	cap, err := src.Capture(context.Background(), dump.CaptureOptions{Parts: dump.PartAll})
	if err != nil {
		t.Fatal(err)
	}
	s := cap.Snapshots[0]
	dir := filepath.Join(*captureFixtures, "dump", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{dump.FilePriorityLevels, dump.FileQueues, dump.FileRequests} {
		if err := os.WriteFile(filepath.Join(dir, f), s.Raw[f], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(*captureFixtures, "metrics", name+".txt"), s.Raw[dump.MetricsFile(0)], 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBundleReadBackGivesSameOutput captures a bundle live (under load, so
// there is something in the queues), and checks that every printer gives the
// same output from the capture in memory and from the bundle read back with
// --from by the real command line; then the dump bundle command itself.
func TestBundleReadBackGivesSameOutput(t *testing.T) {
	c := cluster(t)
	kc := kubeconfig(t, c)
	stop := startLoad(t, c)
	defer stop()

	live := captureQueued(t, c)
	dir := t.TempDir()
	bundle := filepath.Join(dir, "live.tar.gz")
	if err := dump.WriteBundle(bundle, live, dump.Manifest{CreatedAt: time.Now(), Source: "e2e"}); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		args  []string
		print func(*bytes.Buffer) error
	}{
		{[]string{"dump", "levels"}, func(b *bytes.Buffer) error {
			return render.PrintLevels(b, render.Flags("table"), live.Snapshots, "")
		}},
		{[]string{"dump", "queues", "--all"}, func(b *bytes.Buffer) error {
			return render.PrintQueues(b, render.Flags("table"), live.Snapshots, "", true)
		}},
		{[]string{"dump", "requests", "-o", "wide"}, func(b *bytes.Buffer) error {
			return render.PrintRequests(b, render.Flags("wide"), live.Snapshots, "")
		}},
		{[]string{"top", "levels"}, func(b *bytes.Buffer) error {
			return levelsrender.PrintTopLevels(b, render.Flags("table"), live.Snapshots, "", "utilisation")
		}},
		{[]string{"top", "flows", "-o", "json"}, func(b *bytes.Buffer) error {
			return render.PrintTopFlows(b, render.Flags("json"), live.Snapshots, "", 20)
		}},
	}
	for _, ch := range checks {
		var want bytes.Buffer
		if err := ch.print(&want); err != nil {
			t.Fatal(err)
		}
		got := mustApf(t, append(ch.args, "--from", bundle)...)
		if got != want.String() {
			t.Errorf("kubectl apf %s --from differs from the live capture:\n--- from bundle\n%s\n--- live\n%s", strings.Join(ch.args, " "), got, want.String())
		}
		if len(strings.Split(strings.TrimSpace(got), "\n")) < 2 {
			t.Errorf("kubectl apf %s --from printed nothing but a header:\n%s", strings.Join(ch.args, " "), got)
		}
	}

	// The dump bundle command, redacted, read back without a cluster.
	out := filepath.Join(dir, "cmd-bundle")
	code, _, errs := apf(t, "", "dump", "bundle", "--kubeconfig", kc, "-o", out, "--metrics-interval", "1s", "--redact")
	if code != 0 {
		t.Fatalf("dump bundle: exit %d: %s", code, errs)
	}
	levels := mustApf(t, "dump", "levels", "--from", out, "--kubeconfig", "/nonexistent")
	if !strings.Contains(levels, loadgen.Level) {
		t.Errorf("levels from the command's bundle lack apf-load:\n%s", levels)
	}
	requests := mustApf(t, "dump", "requests", "--from", out)
	for i := 1; i <= 6; i++ {
		if strings.Contains(requests, testcluster.LoadUserName(i)+" ") {
			t.Errorf("redacted bundle still names %s:\n%s", testcluster.LoadUserName(i), requests)
		}
	}
}

// TestForbiddenIdentityGetsRBACHint runs dump as a user without RBAC: the
// error names the rule and the rbac command; then an admin applies what
// "kubectl apf rbac --user" prints and the same user can read.
func TestForbiddenIdentityGetsRBACHint(t *testing.T) {
	c := cluster(t)
	kc := kubeconfig(t, c)
	code, out, errs := apf(t, "", "dump", "levels", "--kubeconfig", kc, "--context", "apf-local-carol")
	if code != 1 || out != "" {
		t.Fatalf("exit %d, stdout %q; want 1 and nothing", code, out)
	}
	for _, want := range []string{"forbidden (403)", `nonResourceURLs ["/debug/api_priority_and_fairness/*"] with verb get`, "kubectl apf rbac"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Count(strings.TrimSpace(errs), "\n") != 0 || strings.Contains(errs, "goroutine") {
		t.Errorf("error is not one line:\n%s", errs)
	}

	applyPrinted(t, c, mustApf(t, "rbac", "--user", "carol", "--name", "e2e-carol-apf-reader"))
	// RBAC changes reach the authorizer through an informer: retry briefly.
	for i := 0; ; i++ {
		code, out, errs = apf(t, "", "top", "levels", "--kubeconfig", kc, "--context", "apf-local-carol", "--rate-window", "0")
		if code == 0 || i == 20 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if code != 0 || !strings.Contains(out, "exempt") {
		t.Fatalf("with the printed role, top levels still fails: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := apf(t, "", "dump", "requests", "--kubeconfig", kc, "--context", "apf-local-carol"); code != 0 {
		t.Errorf("with the printed role, dump requests fails: %s", errs)
	}
	// whois reads the objects: a UID of none of them is its answer (exit 1
	// as kubectl get's NotFound), not a refusal to read.
	if code, _, errs := apf(t, "", "whois", "00000000-0000-0000-0000-000000000000", "--kubeconfig", kc, "--context", "apf-local-carol"); code != 1 || !strings.Contains(errs, "the UID names no FlowSchema or PriorityLevelConfiguration of") {
		t.Errorf("with the printed role, whois: exit %d: %s", code, errs)
	}
}

// applyPrinted creates, as the admin, the objects "kubectl apf rbac"
// printed (its ClusterRole, Roles and their bindings; those that exist are
// kept), after checking that they grant nothing but reads, and deletes them
// when the test ends.
func applyPrinted(t *testing.T, c *testcluster.Cluster, manifest string) {
	t.Helper()
	admin := c.Client(testcluster.Admin)
	ctx := context.Background()
	for _, doc := range strings.Split(manifest, "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		var err error
		var rules []rbacv1.PolicyRule
		switch meta.Kind {
		case "ClusterRole":
			var o rbacv1.ClusterRole
			if err = yaml.UnmarshalStrict([]byte(doc), &o); err == nil {
				rules = o.Rules
				_, err = admin.RbacV1().ClusterRoles().Create(ctx, &o, metav1.CreateOptions{})
				t.Cleanup(func() { admin.RbacV1().ClusterRoles().Delete(ctx, o.Name, metav1.DeleteOptions{}) })
			}
		case "ClusterRoleBinding":
			var o rbacv1.ClusterRoleBinding
			if err = yaml.UnmarshalStrict([]byte(doc), &o); err == nil {
				_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &o, metav1.CreateOptions{})
				t.Cleanup(func() { admin.RbacV1().ClusterRoleBindings().Delete(ctx, o.Name, metav1.DeleteOptions{}) })
			}
		case "Role":
			var o rbacv1.Role
			if err = yaml.UnmarshalStrict([]byte(doc), &o); err == nil {
				rules = o.Rules
				_, err = admin.RbacV1().Roles(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
				t.Cleanup(func() { admin.RbacV1().Roles(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{}) })
			}
		case "RoleBinding":
			var o rbacv1.RoleBinding
			if err = yaml.UnmarshalStrict([]byte(doc), &o); err == nil {
				_, err = admin.RbacV1().RoleBindings(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
				t.Cleanup(func() { admin.RbacV1().RoleBindings(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{}) })
			}
		default:
			t.Fatalf("rbac printed a %q:\n%s", meta.Kind, doc)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("%s: %v", meta.Kind, err)
		}
		for _, r := range rules {
			for _, v := range r.Verbs {
				if v != "get" && v != "list" && v != "watch" {
					t.Errorf("the %s grants %q", meta.Kind, v)
				}
			}
		}
	}
}

// TestTwoAPIServers queries two kube-apiservers sharing one etcd through
// --apiserver-urls, with a third URL where nothing listens.
func TestTwoAPIServers(t *testing.T) {
	c := testcluster.StartT(t, testcluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	second, err := c.AddAPIServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kc := kubeconfig(t, c)
	dead := "https://127.0.0.1:1"
	urls := strings.Join([]string{c.URL(), second.URL, dead}, ",")
	code, out, errs := apf(t, "", "dump", "levels", "--kubeconfig", kc, "--apiserver-urls", urls)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	t.Logf("levels:\n%s\nstderr:\n%s", out, errs)
	for _, want := range []string{c.URL() + " ", second.URL + " ", render.AllInstances} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if !strings.Contains(errs, dead) || !strings.Contains(errs, "connection refused") {
		t.Errorf("stderr does not say %s is unreachable:\n%s", dead, errs)
	}
	top := mustApf(t, "top", "levels", "--kubeconfig", kc, "--apiserver-urls", c.URL()+","+second.URL, "--rate-window", "0", "--level", "exempt")
	if strings.Count(top, "exempt") != 3 {
		t.Errorf("top levels should show exempt for two instances and merged:\n%s", top)
	}

	testAllAPIServersInNetns(t, c, second)
}
