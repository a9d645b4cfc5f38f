package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
)

// Objects of the explain tests: precedence ties, ByUser and ByNamespace,
// service accounts, nodes, non-resource URLs and prefixes, wildcards, a
// Reject level, a single-queue level and a dangling reference.
func explainTestObjects() ([]*flowcontrolv1.PriorityLevelConfiguration, []*flowcontrolv1.FlowSchema) {
	queue := func(name string, shares, queues, hand, qll int32) *flowcontrolv1.PriorityLevelConfiguration {
		return &flowcontrolv1.PriorityLevelConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
				Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To(shares),
					LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
						Queuing: &flowcontrolv1.QueuingConfiguration{Queues: queues, HandSize: hand, QueueLengthLimit: qll}}}}}
	}
	pls := []*flowcontrolv1.PriorityLevelConfiguration{
		queue("e2e-team", 10, 16, 4, 10),
		queue("e2e-single", 5, 1, 1, 10),
		{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-reject"},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
				Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](2),
					LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}},
		},
	}
	group := func(g string) flowcontrolv1.Subject {
		return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: g}}
	}
	userS := func(u string) flowcontrolv1.Subject {
		return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: u}}
	}
	sa := func(ns, name string) flowcontrolv1.Subject {
		return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: ns, Name: name}}
	}
	byUser := &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType}
	byNS := &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByNamespaceType}
	fs := func(name string, prec int32, pl string, d *flowcontrolv1.FlowDistinguisherMethod, rules ...flowcontrolv1.PolicyRulesWithSubjects) *flowcontrolv1.FlowSchema {
		return &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: prec, DistinguisherMethod: d,
				PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: pl}, Rules: rules}}
	}
	res := func(verbs, groups, resources, namespaces []string, cluster bool) []flowcontrolv1.ResourcePolicyRule {
		return []flowcontrolv1.ResourcePolicyRule{{Verbs: verbs, APIGroups: groups, Resources: resources, Namespaces: namespaces, ClusterScope: cluster}}
	}
	all := []string{"*"}
	fss := []*flowcontrolv1.FlowSchema{
		// A dangling schema before everything else: the server skips it.
		fs("e2e-dangling", 300, "e2e-missing", nil, flowcontrolv1.PolicyRulesWithSubjects{
			Subjects: []flowcontrolv1.Subject{group("system:authenticated")}, ResourceRules: res(all, all, all, all, true)}),
		// Nodes reading secrets go before system-node-high (400).
		fs("e2e-nodes-secrets", 350, "e2e-team", byUser, flowcontrolv1.PolicyRulesWithSubjects{
			Subjects: []flowcontrolv1.Subject{group("system:nodes")}, ResourceRules: res([]string{"get", "list"}, []string{""}, []string{"secrets"}, all, false)}),
		// A precedence tie: bob (dev and qa) gets e2e-tie-a, the first by name.
		fs("e2e-tie-b", 700, "e2e-team", byUser, flowcontrolv1.PolicyRulesWithSubjects{
			Subjects: []flowcontrolv1.Subject{group("dev")}, ResourceRules: res([]string{"get", "list", "create", "delete"}, []string{""}, []string{"configmaps"}, all, false)}),
		fs("e2e-tie-a", 700, "e2e-reject", nil, flowcontrolv1.PolicyRulesWithSubjects{
			Subjects: []flowcontrolv1.Subject{group("qa")}, ResourceRules: res([]string{"get", "list", "create", "delete"}, []string{""}, []string{"configmaps"}, all, false)}),
		// One service account of e2e-ns2, for its pods only.
		fs("e2e-sa-builder", 740, "e2e-reject", nil, flowcontrolv1.PolicyRulesWithSubjects{
			Subjects: []flowcontrolv1.Subject{sa("e2e-ns2", "builder")}, ResourceRules: res(all, []string{""}, []string{"pods", "pods/status"}, []string{"e2e-ns2"}, false)}),
		// Every service account of e2e-ns1, everything, by namespace.
		fs("e2e-ns1-accounts", 750, "e2e-team", byNS, flowcontrolv1.PolicyRulesWithSubjects{
			Subjects: []flowcontrolv1.Subject{sa("e2e-ns1", "*")}, ResourceRules: res(all, all, all, all, true),
			NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: all, NonResourceURLs: all}}}),
		// Non-resource URLs: an exact path and a prefix.
		fs("e2e-nonresource", 760, "e2e-single", byUser, flowcontrolv1.PolicyRulesWithSubjects{
			Subjects:         []flowcontrolv1.Subject{group("system:authenticated")},
			NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/version", "/apis/apps/*"}}}}),
		// Wildcards for one user, cluster scope included.
		fs("e2e-carol-lists", 780, "e2e-single", nil, flowcontrolv1.PolicyRulesWithSubjects{
			Subjects: []flowcontrolv1.Subject{userS("carol")}, ResourceRules: res([]string{"list"}, all, all, all, true)}),
	}
	return pls, fss
}

// applyExplainObjects creates the test objects and waits until the server
// has digested them (a probe request lands in the new schema).
func applyExplainObjects(t *testing.T, c *testcluster.Cluster) {
	t.Helper()
	ctx := context.Background()
	admin := c.Client(testcluster.Admin)
	pls, fss := explainTestObjects()
	for _, pl := range pls {
		if _, err := admin.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s: %v", pl.Name, err)
		}
	}
	for _, fs := range fss {
		if _, err := admin.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s: %v", fs.Name, err)
		}
	}
	for _, ns := range []string{"e2e-ns1", "e2e-ns2", "e2e-explain"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating namespace %s: %v", ns, err)
		}
	}
	want, err := admin.FlowcontrolV1().FlowSchemas().Get(ctx, "e2e-carol-lists", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		_, fsUID, _ := pfHeaders(t, c.RESTConfig("carol"), "/api/v1/namespaces")
		if fsUID == string(want.UID) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not digest the new FlowSchemas in 30s")
		}
	}
}

// explainIdentity is one identity of the agreement test.
type explainIdentity struct {
	name string
	cfg  *rest.Config
	id   engine.Identity
}

func explainIdentities(t *testing.T, c *testcluster.Cluster) []explainIdentity {
	t.Helper()
	ctx := context.Background()
	var out []explainIdentity
	for _, u := range []string{testcluster.Admin, "alice", "bob", "carol", "monitor", "system:node:n1", "system:node:n2",
		"system:kube-controller-manager", "system:kube-scheduler", "system:kube-proxy", "load-1"} {
		tu := c.User(u)
		out = append(out, explainIdentity{name: u, cfg: c.RESTConfig(u), id: engine.NewUserIdentity(tu.Name, tu.Groups...)})
	}
	for _, s := range [][2]string{{"e2e-ns1", "a"}, {"e2e-ns1", "b"}, {"e2e-ns2", "builder"}, {"e2e-ns2", "other"}, {"kube-system", "coredns"}, {"default", "default"}} {
		tok, err := c.ServiceAccountToken(ctx, s[0], s[1])
		if err != nil {
			t.Fatalf("token for %s/%s: %v", s[0], s[1], err)
		}
		out = append(out, explainIdentity{name: s[0] + "/" + s[1], cfg: c.TokenConfigFor(c.APIServers[0], tok), id: engine.NewServiceAccountIdentity(s[0], s[1])})
	}
	// No credentials at all: system:anonymous when the server allows
	// anonymous requests (its catch-all cases), skipped otherwise.
	out = append(out, explainIdentity{name: "anonymous", cfg: rest.AnonymousClientConfig(c.RESTConfig(testcluster.Admin)), id: engine.AnonymousIdentity()})
	return out
}

// explainRequests are harmless requests: reads, and writes that RBAC denies
// (still classified: APF runs before authorization) or that go to a scratch
// namespace.
var explainRequests = []struct{ method, path string }{
	{"GET", "/api/v1/namespaces/default/configmaps"},
	{"GET", "/api/v1/namespaces/default/configmaps/missing"},
	{"GET", "/api/v1/namespaces/default/secrets/missing"},
	{"GET", "/api/v1/namespaces/e2e-ns2/pods"},
	{"GET", "/api/v1/namespaces/e2e-ns1/pods?limit=5"},
	{"GET", "/api/v1/nodes"},
	{"GET", "/api/v1/nodes/n1"},
	{"GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler"},
	{"GET", "/apis/apps/v1/deployments?limit=1"},
	{"GET", "/apis/apps/v1"},
	{"GET", "/version"},
	{"GET", "/healthz"},
	{"GET", "/livez"},
	{"GET", "/api"},
	{"GET", "/api/v1/namespaces/default/pods/missing/log"},
	{"DELETE", "/api/v1/namespaces/e2e-explain/configmaps/missing"},
	{"POST", "/api/v1/namespaces/e2e-explain/configmaps"},
}

// sendAs sends one request with cfg's credentials and returns the status and
// the PF headers (present is false when the response has none).
func sendAs(t *testing.T, cfg *rest.Config, method, path string) (status int, fsUID, plUID string, present bool) {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var body io.Reader
	if method == http.MethodPost {
		// A ConfigMap without a name: the server answers 403 or 422, never
		// creates anything.
		body = bytes.NewReader([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`))
	}
	req, err := http.NewRequest(method, cfg.Host+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_, present = resp.Header[http.CanonicalHeaderKey(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID)]
	return resp.StatusCode, resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID),
		resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID), present
}

// readClusterConfig reads the FlowSchemas and levels the plugin would read.
func readClusterConfig(t *testing.T, c *testcluster.Cluster) ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration) {
	t.Helper()
	src := &fetch.ClusterSource{Config: c.RESTConfig(testcluster.Admin)}
	capture, err := src.Capture(context.Background(), dump.CaptureOptions{Parts: dump.PartObjects})
	if err != nil {
		t.Fatal(err)
	}
	return capture.Snapshots[0].Objects()
}

// TestExplainAgreesWithServerHeaders is explain's agreement test: for
// every (identity, request) pair, the FlowSchema and priority level that
// "explain request" computes from the cluster's objects must carry the UIDs
// the server puts in its X-Kubernetes-PF-* response headers for the same
// request sent with that identity's own credentials; requests that bypass
// APF must get no headers.
func TestExplainAgreesWithServerHeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the local control plane")
	}
	c := testcluster.StartT(t, testcluster.Options{})
	applyExplainObjects(t, c)
	ids := explainIdentities(t, c)
	fss, pls := readClusterConfig(t, c)
	cfg := engine.NewConfig(fss, pls)
	if len(cfg.Dangling) != 1 || cfg.Dangling[0].Name != "e2e-dangling" {
		t.Fatalf("dangling schemas %+v, want e2e-dangling alone", cfg.Dangling)
	}

	agree, classified, bypass, skipped := 0, 0, 0, 0
	schemasSeen, levelsSeen := map[string]bool{}, map[string]bool{}
	for _, id := range ids {
		for _, rq := range explainRequests {
			r, err := engine.ParseRequest(rq.method, rq.path, id.id)
			if err != nil {
				t.Fatalf("parsing %s %s: %v", rq.method, rq.path, err)
			}
			ex := explain.Explain(explain.Input{Config: cfg}, r, nil)
			status, fsUID, plUID, present := sendAs(t, id.cfg, rq.method, rq.path)
			label := fmt.Sprintf("%s: %s %s (HTTP %d)", id.name, rq.method, rq.path, status)
			if status == http.StatusUnauthorized {
				if id.name == "anonymous" {
					// Authentication fails before APF: nothing to compare.
					skipped++
					continue
				}
				t.Fatalf("%s: the identity was not authenticated", label)
			}
			if ex.FlowSchema == nil {
				if present {
					t.Errorf("%s: explain says the request bypasses APF (%s), the server classified it (%s, %s)", label, ex.Verdict.Reason, fsUID, plUID)
					continue
				}
				bypass++
				agree++
				continue
			}
			if !present {
				t.Errorf("%s: explain says %s/%s, the server sent no PF headers", label, ex.FlowSchema.Name, ex.PriorityLevel.Name)
				continue
			}
			if ex.FlowSchema.UID != fsUID || ex.PriorityLevel.UID != plUID {
				t.Errorf("%s: explain says %s (%s) / %s (%s), the server %s / %s", label, ex.FlowSchema.Name, ex.FlowSchema.UID,
					ex.PriorityLevel.Name, ex.PriorityLevel.UID, fsUID, plUID)
				continue
			}
			agree++
			classified++
			schemasSeen[ex.FlowSchema.Name] = true
			levelsSeen[ex.PriorityLevel.Name] = true
		}
	}
	t.Logf("agreement: %d of %d (identity, request) cases (%d classified, %d bypassing APF, %d anonymous refused with 401); %d FlowSchemas and %d levels exercised: %v",
		agree, len(ids)*len(explainRequests)-skipped, classified, bypass, skipped, len(schemasSeen), len(levelsSeen), keys(schemasSeen))
	if classified < 50 {
		t.Errorf("only %d classified cases agree, want at least 50", classified)
	}
	for _, want := range []string{"e2e-nodes-secrets", "e2e-tie-a", "e2e-tie-b", "e2e-sa-builder", "e2e-ns1-accounts", "e2e-nonresource", "e2e-carol-lists",
		"exempt", "probes", "system-nodes", "system-node-high", "kube-controller-manager", "kube-scheduler", "kube-system-service-accounts", "service-accounts", "global-default", "system-leader-election"} {
		if !schemasSeen[want] {
			t.Errorf("no agreeing case landed in FlowSchema %s; the test lost coverage", want)
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// explainJSON is the part of "-o json" the e2e tests read.
type explainJSON struct {
	Request     map[string]any `json:"request"`
	Release     string         `json:"release"`
	ReleaseFrom string         `json:"releaseFrom"`
	FlowSchema  *struct {
		Name string `json:"name"`
		UID  string `json:"uid"`
	} `json:"flowSchema"`
	PriorityLevel *struct {
		Name string `json:"name"`
		UID  string `json:"uid"`
	} `json:"priorityLevel"`
	FlowDistinguisher string `json:"flowDistinguisher"`
	Trace             []struct {
		FlowSchema string `json:"flowSchema"`
		Matched    bool   `json:"matched"`
		Reason     string `json:"reason"`
	} `json:"trace"`
	Queues *struct {
		Hand []struct {
			Index int `json:"index"`
		} `json:"hand"`
	} `json:"queues"`
	Verdict struct {
		Kind         string `json:"kind"`
		Reason       string `json:"reason"`
		RejectReason string `json:"rejectReason"`
	} `json:"verdict"`
	Instances []struct {
		Instance string `json:"instance"`
		Verdict  struct {
			Kind string `json:"kind"`
		} `json:"verdict"`
	} `json:"instances"`
	Recorded *struct {
		Source        string `json:"source"`
		FlowSchema    string `json:"flowSchema"`
		PriorityLevel string `json:"priorityLevel"`
		Agrees        *bool  `json:"agrees"`
		Detail        string `json:"detail"`
		InitialSeats  *int   `json:"initialSeats"`
	} `json:"recorded"`
	Seats *struct {
		Initial int `json:"initial"`
		Max     int `json:"max"`
	} `json:"seats"`
}

func runExplain(t *testing.T, c *testcluster.Cluster, args ...string) explainJSON {
	t.Helper()
	code, out, errOut := runLintPlugin(t, c, append([]string{"explain", "request", "-o", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("kubectl apf explain request %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	var ex explainJSON
	if err := json.Unmarshal(out, &ex); err != nil {
		t.Fatalf("decoding the JSON output: %v\n%s", err, out)
	}
	return ex
}

// TestExplainBinaryAgreesWithServer runs the built plugin on a few cases of
// the agreement test, so the command line (flags, implied groups, JSON)
// is covered too.
func TestExplainBinaryAgreesWithServer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the local control plane")
	}
	c := testcluster.StartT(t, testcluster.Options{})
	applyExplainObjects(t, c)
	ctx := context.Background()
	tok, err := c.ServiceAccountToken(ctx, "e2e-ns1", "a")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		cfg    *rest.Config
		flags  []string
		method string
		verb   string
		path   string
		wantFS string
	}{
		{"tie goes to the first name", c.RESTConfig("bob"), []string{"--user-name", "bob", "--group", "dev", "--group", "qa"}, "GET", "get", "/api/v1/namespaces/default/configmaps/x", "e2e-tie-a"},
		{"node secrets", c.RESTConfig("system:node:n1"), []string{"--user-name", "system:node:n1", "--group", "system:nodes"}, "GET", "GET", "/api/v1/namespaces/default/secrets/x", "e2e-nodes-secrets"},
		{"service account by namespace", c.TokenConfigFor(c.APIServers[0], tok), []string{"--service-account", "e2e-ns1/a"}, "GET", "list", "/api/v1/namespaces/kube-system/pods", "e2e-ns1-accounts"},
		{"non-resource prefix", c.RESTConfig("alice"), []string{"--user-name", "alice", "--group", "dev"}, "GET", "get", "/apis/apps/v1", "e2e-nonresource"},
		{"wildcard list", c.RESTConfig("carol"), []string{"--user-name", "carol"}, "GET", "list", "/api/v1/nodes", "e2e-carol-lists"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex := runExplain(t, c, append(tc.flags, tc.verb, tc.path)...)
			// The engine replays the server's own release, read from /version.
			if sv := serverVersion(t, c); ex.ReleaseFrom != "server "+sv || !strings.HasPrefix(sv, "v"+ex.Release+".") {
				t.Errorf("explain replayed %s (%s), the server is %s", ex.Release, ex.ReleaseFrom, sv)
			}
			_, fsUID, plUID, _ := sendAs(t, tc.cfg, tc.method, tc.path)
			if ex.FlowSchema == nil || ex.PriorityLevel == nil {
				t.Fatalf("no flowSchema/priorityLevel in the output: %+v", ex)
			}
			if ex.FlowSchema.Name != tc.wantFS || ex.FlowSchema.UID != fsUID || ex.PriorityLevel.UID != plUID {
				t.Errorf("explain says %s (%s) / %s (%s); server %s / %s; want FlowSchema %s",
					ex.FlowSchema.Name, ex.FlowSchema.UID, ex.PriorityLevel.Name, ex.PriorityLevel.UID, fsUID, plUID, tc.wantFS)
			}
			if n := len(ex.Trace); n == 0 || !ex.Trace[n-1].Matched || ex.Trace[n-1].FlowSchema != ex.FlowSchema.Name {
				t.Errorf("the trace does not end with the winner: %+v", ex.Trace)
			}
			if ex.Verdict.Kind == "" || ex.Verdict.Reason == "" {
				t.Errorf("empty verdict: %+v", ex.Verdict)
			}
		})
	}

	t.Run("a verdict on each apiserver", func(t *testing.T) {
		a2, err := c.AddAPIServer(ctx)
		if err != nil {
			t.Fatal(err)
		}
		urls := c.APIServers[0].URL + "," + a2.URL
		ex := runExplain(t, c, "--apiserver-urls", urls, "--user-name", "alice", "--group", "dev", "list", "/api/v1/namespaces/default/configmaps")
		if len(ex.Instances) != 2 || ex.Instances[0].Instance != c.APIServers[0].URL || ex.Instances[1].Instance != a2.URL {
			t.Fatalf("instances %+v, want %s and %s", ex.Instances, c.APIServers[0].URL, a2.URL)
		}
		for _, iv := range ex.Instances {
			// An idle test cluster: the request runs at once everywhere.
			if iv.Verdict.Kind != explain.VerdictRuns {
				t.Errorf("%s: verdict %s, want runs on an idle apiserver", iv.Instance, iv.Verdict.Kind)
			}
		}
	})
}
