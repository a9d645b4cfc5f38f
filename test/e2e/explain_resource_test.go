package e2e

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
)

// TestBuiltinResourcesMatchDiscovery: the resources explain request looks
// a type up in without a cluster (engine.BuiltinResources) are the real
// kube-apiserver's, as its discovery lists them: the same groups in the
// same order, the same resources with the same names, kinds, short names
// and scope. A new release that adds or moves one fails here.
func TestBuiltinResourcesMatchDiscovery(t *testing.T) {
	c := cluster(t)
	// the cluster's resources as explain request reads them
	// (load.Options.APIResources over fetch.APIResources)
	rs, from, notes := (&load.Options{Source: &fetch.ClusterSource{Config: c.RESTConfig("alice")}}).APIResources()
	if from != "the cluster's resources" || len(notes) > 0 {
		t.Fatalf("read %s, notes %q", from, notes)
	}
	crdGroups := map[string]bool{}
	crds, err := dynamic.NewForConfigOrDie(c.RESTConfig("admin")).Resource(crdResource).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds.Items {
		g, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		crdGroups[g] = true
	}
	var served []engine.APIResource
	for i := 0; i < len(rs); {
		// a group's run, in discovery's order of groups
		j := i
		for j < len(rs) && rs[j].Group == rs[i].Group {
			j++
		}
		if !crdGroups[rs[i].Group] { // another test's CustomResourceDefinition
			// the table lists a group's resources by name
			group := slices.Clone(rs[i:j])
			slices.SortFunc(group, func(a, b engine.APIResource) int { return strings.Compare(a.Resource, b.Resource) })
			served = append(served, group...)
		}
		i = j
	}
	if len(served) < 60 {
		t.Fatalf("the server's discovery lists %d resources; want the built-in ones", len(served))
	}
	for i := 0; i < max(len(served), len(engine.BuiltinResources)); i++ {
		var s, b engine.APIResource
		if i < len(served) {
			s = served[i]
		}
		if i < len(engine.BuiltinResources) {
			b = engine.BuiltinResources[i]
		}
		if !equalResource(s, b) {
			t.Errorf("resource %d: the server serves %+v, engine.BuiltinResources has %+v", i, s, b)
		}
	}
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func equalResource(a, b engine.APIResource) bool {
	return a.Group == b.Group && a.Version == b.Version && a.Resource == b.Resource && a.Singular == b.Singular &&
		a.Kind == b.Kind && a.Namespaced == b.Namespaced && slices.Equal(a.ShortNames, b.ShortNames)
}

// TestExplainResourceArgsAsKubectlSends: "explain request get pods -n dev"
// explains the request the real kubectl v1.37.1 sends for "kubectl get pods
// -n dev": the same method and URL (read from kubectl -v=6), from the
// cluster's discovery and, with --defaults, from the built-in resources;
// and the server's classification headers agree with the explanation.
func TestExplainResourceArgsAsKubectlSends(t *testing.T) {
	c := cluster(t)
	kubectl, err := testcluster.Binary("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	response := regexp.MustCompile(`"Response" verb="([A-Z]+)" url="([^"]+)"`)
	discovery := regexp.MustCompile(`^/api(/[^/]+)?$|^/apis(/[^/]+){0,2}$|^/openapi(/|$)`)
	sent := func(args ...string) (method, uri string) {
		t.Helper()
		cmd := exec.Command(kubectl, append([]string{"--kubeconfig", c.Kubeconfig, "-v=6"}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		out, err := cmd.CombinedOutput() // a 404 exits non-zero, and still logs the request
		for _, m := range response.FindAllStringSubmatch(string(out), -1) {
			u, err := url.Parse(m[2])
			if err != nil {
				t.Fatal(err)
			}
			if !discovery.MatchString(u.Path) {
				return m[1], u.RequestURI()
			}
		}
		t.Fatalf("kubectl %s: no request logged (%v):\n%s", strings.Join(args, " "), err, out)
		return "", ""
	}
	for _, args := range [][]string{
		{"get", "pods", "-n", "kube-system"},
		{"get", "po", "web", "-n", "dev"},
		{"get", "deployments.apps/web", "-n", "dev"},
		{"get", "deploy", "-A", "-l", "app=web"},
		{"get", "configmaps", "--field-selector", "metadata.name=x", "--chunk-size", "50"},
		{"get", "events"},
		{"get", "nodes", "--chunk-size", "0"},
		{"get", "flowschemas.flowcontrol.apiserver.k8s.io"},
		{"get", "ns", "kube-system"},
		{"get", "csr"},
	} {
		method, uri := sent(args...)
		for _, offline := range []bool{false, true} {
			pargs := append([]string{"--user-name", "alice", "--group", "dev"}, args...)
			if offline {
				pargs = append([]string{"--defaults"}, pargs...)
			}
			ex := runExplain(t, c, pargs...)
			if ex.Request["method"] != method || ex.Request["url"] != uri {
				t.Errorf("explain request %s (offline %v) explains %v %v; kubectl sent %s %s", strings.Join(args, " "), offline, ex.Request["method"], ex.Request["url"], method, uri)
			}
		}
		// the server classifies what kubectl sent as explain says
		ex := runExplain(t, c, append([]string{"--user-name", "alice", "--group", "dev"}, args...)...)
		_, fsUID, plUID, _ := sendAs(t, c.RESTConfig("alice"), method, uri)
		if ex.FlowSchema == nil || ex.FlowSchema.UID != fsUID || ex.PriorityLevel.UID != plUID {
			t.Errorf("explain request %s: %+v / %+v; the server's headers %s / %s", strings.Join(args, " "), ex.FlowSchema, ex.PriorityLevel, fsUID, plUID)
		}
	}

	t.Run("a custom resource, by its short name", func(t *testing.T) {
		ctx := context.Background()
		crds := dynamic.NewForConfigOrDie(c.RESTConfig("admin")).Resource(crdResource)
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "widgets.e2e.example.com"},
			"spec": map[string]any{
				"group": "e2e.example.com", "scope": "Namespaced",
				"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": []any{"wdg"}},
				"versions": []any{map[string]any{"name": "v1alpha1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
			},
		}}
		if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = crds.Delete(ctx, "widgets.e2e.example.com", metav1.DeleteOptions{})
			// gone from discovery before the next test reads it
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				if _, err := crds.Get(ctx, "widgets.e2e.example.com", metav1.GetOptions{}); err != nil {
					return
				}
			}
		})
		// served once its discovery lists it
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			lists, _ := fetch.APIResources(c.RESTConfig("alice"))
			if slices.ContainsFunc(lists, func(l *metav1.APIResourceList) bool { return l.GroupVersion == "e2e.example.com/v1alpha1" }) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the CustomResourceDefinition is not served after a minute")
			}
		}
		method, uri := sent("get", "wdg", "-n", "dev")
		ex := runExplain(t, c, "--user-name", "alice", "--group", "dev", "get", "wdg", "-n", "dev")
		if ex.Request["method"] != method || ex.Request["url"] != uri || uri != "/apis/e2e.example.com/v1alpha1/namespaces/dev/widgets?limit=500" {
			t.Errorf("explain explains %v %v; kubectl sent %s %s", ex.Request["method"], ex.Request["url"], method, uri)
		}
		// without the cluster the type is not known, and the line says where it was looked for
		code, _, errOut := runLintPlugin(t, c, "explain", "request", "--defaults", "--user-name", "alice", "get", "wdg")
		if code == 0 || !strings.Contains(errOut, `unknown resource type "wdg": not among the built-in resources of Kubernetes 1.37`) {
			t.Errorf("--defaults: exit %d, stderr %q", code, errOut)
		}
	})

	t.Run("an unknown type is one line", func(t *testing.T) {
		code, _, errOut := runLintPlugin(t, c, "explain", "request", "--user-name", "alice", "get", "widgets")
		if code == 0 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, `unknown resource type "widgets": not among the cluster's resources`) {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
}

// TestExplainTraceComparesItsHeaders: the trace of the real kubectl
// v1.37.1 at -v=8, given to explain request --from-message with the
// trace's user, is compared with the server's X-Kubernetes-PF-* headers it
// holds (the replay's classification AGREES), and another identity's
// classification DISAGREES with them.
func TestExplainTraceComparesItsHeaders(t *testing.T) {
	c := cluster(t)
	kubectl, err := testcluster.Binary("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cmd := exec.Command(kubectl, "--kubeconfig", c.Kubeconfig, "--token", c.User("alice").Token, "-v=8", "get", "configmaps", "-n", "default")
	cmd.Env = append(os.Environ(), "HOME="+home)
	trace, _ := cmd.CombinedOutput() // alice may not list: a 403 carries the headers too
	if !strings.Contains(string(trace), "X-Kubernetes-Pf-Flowschema-Uid") {
		t.Fatalf("no PF header in kubectl's trace:\n%s", trace)
	}
	for _, c2 := range []struct {
		user   string
		groups []string
		agrees bool
	}{{"alice", []string{"dev"}, true}, {"system:node:n1", []string{"system:nodes"}, false}} {
		args := []string{"--user-name", c2.user}
		for _, g := range c2.groups {
			args = append(args, "--group", g)
		}
		ex := runExplain(t, c, append(args, "--from-message", string(trace))...)
		if ex.Recorded == nil || ex.Recorded.Source != "trace" || ex.Recorded.Agrees == nil || *ex.Recorded.Agrees != c2.agrees {
			t.Errorf("as %s: compared %+v, want agrees %v", c2.user, ex.Recorded, c2.agrees)
		}
	}
}
