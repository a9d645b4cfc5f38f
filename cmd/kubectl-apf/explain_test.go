package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

var explainTestdata = filepath.Join("..", "..", "testdata", "explain")

const nodeLogLine = `I1121 15:17:04.048113   31424 httplog.go:135] "HTTP" verb="GET" URI="/api/v1/namespaces/default/configmaps/app" latency="818.375µs" userAgent="kubelet/v1.37.1" contentType="application/json" audit-ID="8d0f2f73-e45e-4990-86e9-a5e6822217b0" srcIP="127.0.0.1:36978" apf_pl="system" apf_fs="system-nodes" apf_iseats=1 apf_fseats=0 apf_additionalLatency="0s" apf_execution_time="125.887µs" resp=200`

func TestExplainRequestGolden(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		golden string
	}{
		{"service account", []string{"--defaults", "--service-account", "kube-system/coredns", "list", "/api/v1/endpoints"}, "explain/cmd-service-account.golden"},
		{"a FlowSchema tried with -f", []string{"--defaults", "-f", filepath.Join(explainTestdata, "isolate-alice.yaml"), "--user-name", "alice", "list", "/api/v1/namespaces/default/events"}, "explain/cmd-file-overlay.golden"},
		{"client-side throttling is not APF", []string{"--from-message", `Waited for 1.195s due to client-side throttling, not priority and fairness, request: GET:https://api.example:6443/apis/apps/v1/deployments`}, "explain/cmd-throttling.golden"},
		{"httplog line replayed", []string{"--defaults", "--from-log", nodeLogLine, "--user-name", "system:node:n1", "--group", "system:nodes"}, "explain/cmd-from-log.golden"},
		{"audit event with impersonation", []string{"--defaults", "--from-audit", filepath.Join(explainTestdata, "audit.jsonl"), "--audit-id", "22222222-2222-2222-2222-222222222222"}, "explain/cmd-from-audit.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runPlugin(append([]string{"explain", "request"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			checkGolden(t, tt.golden, []byte(out))
		})
	}
}

// TestExplainRequestJSON checks the identity and classification that reach
// the JSON from each input.
func TestExplainRequestJSON(t *testing.T) {
	tests := []struct {
		name             string
		args             []string
		wantUser, wantFS string
		wantAgrees       *bool
	}{
		{"audit: the service account and its groups", []string{"--from-audit", filepath.Join(explainTestdata, "audit.jsonl"), "--audit-id", "11111111-1111-1111-1111-111111111111"},
			"system:serviceaccount:kube-system:coredns", "kube-system-service-accounts", nil},
		{"audit: the last request by default, impersonated user", []string{"--from-audit", filepath.Join(explainTestdata, "audit.jsonl")}, "bob", "global-default", nil},
		{"log line agrees", []string{"--from-log", nodeLogLine, "--user-name", "system:node:n1", "--group", "system:nodes"}, "system:node:n1", "system-nodes", ptrBool(true)},
		{"log line with the wrong identity disagrees", []string{"--from-log", nodeLogLine, "--user-name", "alice"}, "alice", "global-default", ptrBool(false)},
		{"-f overlay wins", []string{"-f", filepath.Join(explainTestdata, "isolate-alice.yaml"), "--user-name", "alice", "list", "/api/v1/namespaces/x/events"}, "alice", "list-events-alice", nil},
		{"anonymous", []string{"--anonymous", "get", "/version"}, "system:anonymous", "global-default", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runPlugin(append([]string{"explain", "request", "--defaults", "-o", "json"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var ex explain.Explanation
			if err := json.Unmarshal([]byte(out), &ex); err != nil {
				t.Fatal(err)
			}
			if ex.Request.User != tt.wantUser || ex.FlowSchema == nil || ex.FlowSchema.Name != tt.wantFS {
				t.Errorf("user %q, FlowSchema %+v; want %s, %s", ex.Request.User, ex.FlowSchema, tt.wantUser, tt.wantFS)
			}
			if tt.wantAgrees != nil && (ex.Recorded == nil || ex.Recorded.Agrees == nil || *ex.Recorded.Agrees != *tt.wantAgrees) {
				t.Errorf("recorded %+v, want agrees=%v", ex.Recorded, *tt.wantAgrees)
			}
		})
	}
}

func ptrBool(b bool) *bool { return &b }

func TestExplainRequestFlagErrors(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--defaults", "list", "/api/v1/pods"}, "give the identity"},
		{[]string{"--defaults", "--user-name", "a", "--anonymous", "list", "/api/v1/pods"}, "give one"},
		{[]string{"--defaults", "--anonymous", "--group", "g", "get", "/version"}, "--anonymous requests carry only group"},
		{[]string{"--defaults", "--service-account", "coredns", "get", "/version"}, "want NAMESPACE/NAME"},
		{[]string{"--defaults", "--group", "g", "get", "/version"}, "--group needs --user-name"},
		{[]string{"--defaults", "--user-name", "a", "list"}, "give both VERB_OR_METHOD and PATH"},
		{[]string{"--defaults", "--user-name", "a", "fetch", "/api/v1/pods"}, "unknown verb or method"},
		{[]string{"--defaults", "--user-name", "a", "get", "/api/v1/pods"}, `verb "get" contradicts path`},
		{[]string{"--defaults", "--user-name", "a", "list", "https://h/api/v1/pods"}, "is a full URL"},
		{[]string{"--defaults", "--user-name", "a", "-o", "wide", "get", "/version"}, "--output must be"},
		{[]string{"--defaults", "--from", "x.tgz", "--user-name", "a", "get", "/version"}, "x.tgz"},
		{[]string{"--defaults", "--probe", "--user-name", "a", "get", "/version"}, "--probe sends the request to the cluster"},
		{[]string{"--defaults", "--audit-id", "x", "--user-name", "a", "get", "/version"}, "--audit-id selects a record"},
		{[]string{"--defaults", "--from-log", nodeLogLine}, "carries no user"},
		{[]string{"--defaults", "--from-log", `I1121 "HTTP" but not a request line`, "--user-name", "a"}, "no kube-apiserver httplog"},
		{[]string{"--defaults", "--from-audit", filepath.Join(explainTestdata, "audit.jsonl"), "--audit-id", "nope"}, `no request with audit ID "nope"`},
		{[]string{"--defaults", "--from-audit", filepath.Join(explainTestdata, "missing.jsonl")}, "--from-audit: reading"},
		{[]string{"--defaults", "--from-message", "connection refused"}, "--from-message: unrecognised message"},
		{[]string{"--defaults", "--all-apiservers", "--user-name", "a", "get", "/version"}, "drop --defaults or --from"},
		{[]string{"--apiserver-urls", "10.0.0.1:6443", "--user-name", "a", "get", "/version"}, "is not a URL like"},
		// a request as kubectl takes it (pkg/engine's tests hold the paths)
		{[]string{"--defaults", "--user-name", "a", "get", "widgets"}, `unknown resource type "widgets": not among the built-in resources of Kubernetes 1.37`},
		{[]string{"--defaults", "--user-name", "a", "get", "pods/web", "x"}, `pods/web names its object already: drop "x"`},
		{[]string{"--defaults", "--user-name", "a", "get", "pods/"}, `"pods/": give TYPE, TYPE/NAME or TYPE NAME`},
		{[]string{"--defaults", "--user-name", "a", "get", "/api/v1/pods", "x"}, "a path names its object"},
		{[]string{"--defaults", "--user-name", "a", "-A", "list", "/api/v1/pods"}, "-A goes with a resource type"},
		{[]string{"--defaults", "--user-name", "a", "delete", "pods"}, "delete needs the object's name"},
		{[]string{"--defaults", "--user-name", "a", "get", "pods", "web", "-A"}, "an object cannot be named across all namespaces"},
		{[]string{"--defaults", "--user-name", "a", "get"}, "give both VERB_OR_METHOD and PATH"},
		{[]string{"--defaults", "--user-name", "alice", "get", "cm", "--from-message", builtTrace()}, "--from-message names GET /api/v1/namespaces/default/pods?limit=500, the arguments get cm (/api/v1/namespaces/default/configmaps?limit=500): give one request"},
		// kubectl --as is how users read a request's PF headers
		{[]string{"--defaults", "--as", "system:serviceaccount:ci:deployer", "get", "pods"}, "give the identity: --user-name system:serviceaccount:ci:deployer (--as impersonates the reader of the cluster, not the request explained)"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errOut := runPlugin(append([]string{"explain", "request"}, tt.args...)...)
			if code == 0 || !strings.Contains(errOut, tt.wantErr) || strings.Count(errOut, "\n") != 1 {
				t.Fatalf("exit %d, stderr %q, want one line containing %q", code, errOut, tt.wantErr)
			}
		})
	}
}

// builtTrace is testdata/field/built/kubectl-v8-429-trace.txt: kubectl
// get pods -v=8 of default's pods (limit 500), answered 429.
func builtTrace() string {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "field", "built", "kubectl-v8-429-trace.txt"))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestExplainRequestResourceArgs: "get deploy -n dev" without a cluster is
// the LIST kubectl sends, looked up in the built-in resources, said in one
// note; the namespace defaults to the kubeconfig context's.
func TestExplainRequestResourceArgs(t *testing.T) {
	code, out, errOut := runPlugin("explain", "request", "--defaults", "--user-name", "alice", "get", "deploy", "-n", "dev", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var ex struct {
		Request explain.RequestView `json:"request"`
	}
	if err := json.Unmarshal([]byte(out), &ex); err != nil {
		t.Fatal(err)
	}
	if r := ex.Request; r.Method != "GET" || r.URL != "/apis/apps/v1/namespaces/dev/deployments?limit=500" || r.Verb != "list" || r.Resource != "deployments" || r.APIGroup != "apps" || r.Namespace != "dev" {
		t.Errorf("request %+v", r)
	}
	if errOut != "note: get deploy is LIST /apis/apps/v1/namespaces/dev/deployments?limit=500, as kubectl sends it\n" {
		t.Errorf("stderr %q", errOut)
	}
	// kubectl never WATCHes from no resourceVersion (get --watch LISTs
	// first): the note says what was explained and how to explain
	// kubectl's WATCH, where it said "as kubectl sends it"
	_, _, errOut = runPlugin("explain", "request", "--defaults", "--user-name", "alice", "watch", "pods", "-n", "dev")
	if !strings.HasPrefix(errOut, "note: watch pods is WATCH /api/v1/namespaces/dev/pods?watch=1 from no resourceVersion, which starts with every object; kubectl get --watch and informers LIST first") ||
		strings.Contains(errOut, "as kubectl sends it") {
		t.Errorf("watch: stderr %q", errOut)
	}

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	const cfg = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts: [{name: team, context: {cluster: c, user: u, namespace: team-a}}]
current-context: team
`
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runPlugin("explain", "request", "--kubeconfig", kubeconfig, "--defaults", "--user-name", "alice", "get", "cm", "app")
	if code != 0 || !strings.Contains(errOut, "GET /api/v1/namespaces/team-a/configmaps/app,") {
		t.Errorf("exit %d, stderr %q: want the context's namespace team-a", code, errOut)
	}

	// with the PF headers a "kubectl get po -v=8 | grep -i x-kubernetes-pf"
	// leaves: the resource arguments are the request (they were taken
	// for none, and the state was never read: "Complete was not called")
	const headers = "\tX-Kubernetes-Pf-Flowschema-Uid: 9c0ad3d7-6ee6-412e-ace2-dbcc7c0365a5\n\tX-Kubernetes-Pf-Prioritylevel-Uid: ae3129c5-9baa-4dd6-a370-f4804cd34163\n"
	quiet := filepath.Join("..", "..", "testdata", "simulate", "recordings", "quiet", "bundle.tar.gz")
	code, out, errOut = runPlugin("explain", "request", "--from", quiet, "--service-account", "default/builder", "get", "po", "--from-message", headers)
	if code != 0 || !strings.Contains(out, "✓ service-accounts") || !strings.Contains(out, "the response headers show API Priority and Fairness classified the request") {
		t.Errorf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}

	// the same from standard input (--from-message -)
	streams, in, sout, serr := genericiooptions.NewTestIOStreams()
	in.WriteString(headers)
	if code := run([]string{"explain", "request", "--from", quiet, "--service-account", "default/builder", "get", "po", "--from-message", "-"}, streams); code != 0 ||
		!strings.Contains(sout.String(), "the response headers show API Priority and Fairness classified the request") {
		t.Errorf("--from-message -: exit %d, stderr %q, stdout:\n%s", code, serr.String(), sout.String())
	}

	// a file's name, where the flag takes the text: one line that says how
	// to give the file
	trace := filepath.Join("..", "..", "testdata", "field", "built", "curl-v-429.txt")
	code, _, errOut = runPlugin("explain", "request", "--defaults", "--from-message", trace)
	if want := fmt.Sprintf("give --from-message - < %s", trace); code != 1 || !strings.Contains(errOut, want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("--from-message FILE: exit %d, stderr %q; want one line with %q", code, errOut, want)
	}
}

func TestProbeAllowed(t *testing.T) {
	for _, tt := range []struct {
		verb, path string
		ok         bool
	}{
		{"get", "/api/v1/namespaces/d/pods/p", true},
		{"list", "/api/v1/pods", true},
		{"GET", "/healthz", true},
		{"create", "/api/v1/namespaces/d/configmaps", false},
		{"PATCH", "/api/v1/nodes/n1", false},
		{"deletecollection", "/api/v1/namespaces/d/pods", false},
		{"GET", "/api/v1/pods?watch=1", false},
		{"watch", "/api/v1/pods", false},
	} {
		if err := probeAllowed(tt.verb, tt.path); (err == nil) != tt.ok {
			t.Errorf("%s %s: %v, want allowed=%v", tt.verb, tt.path, err, tt.ok)
		}
	}
}

// fakeSource returns fixed snapshots.
type fakeSource struct{ snaps []*dump.Snapshot }

func (f *fakeSource) Capture(context.Context, dump.CaptureOptions) (*dump.Capture, error) {
	return &dump.Capture{Snapshots: f.snaps}, nil
}
func (f *fakeSource) Describe() string { return "fake" }

// TestExplain429Command runs the command over a fake source: two scrapes
// with rejections in the defaults' workload-low.
func TestExplain429Command(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	fss, pls := engine.DefaultFlowSchemas(), engine.DefaultPriorityLevels()
	snap := &dump.Snapshot{Instance: "https://apiserver-1", CapturedAt: at, PriorityLevelDump: []dump.PriorityLevelRow{{Name: "workload-low"}}}
	for _, fs := range fss {
		snap.FlowSchemas = append(snap.FlowSchemas, *fs)
	}
	for _, pl := range pls {
		snap.PriorityLevels = append(snap.PriorityLevels, *pl)
	}
	text := func(n int) string {
		return "# TYPE apiserver_flowcontrol_nominal_limit_seats gauge\napiserver_flowcontrol_nominal_limit_seats{priority_level=\"workload-low\"} 245\n" +
			"# TYPE apiserver_flowcontrol_rejected_requests_total counter\napiserver_flowcontrol_rejected_requests_total{flow_schema=\"service-accounts\",priority_level=\"workload-low\",reason=\"queue-full\"} " + itoa(n) + "\n"
	}
	for i, n := range []int{10, 30} {
		s, err := metrics.ParseText([]byte(text(n)), at.Add(time.Duration(i)*5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		snap.Metrics = append(snap.Metrics, s)
	}
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	o := NewExplain429Options(genericclioptions.NewConfigFlags(true), streams)
	o.Source = &fakeSource{snaps: []*dump.Snapshot{snap}}
	o.Output = "json"
	if err := o.Complete(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background()); err != nil {
		t.Fatalf("%v (%s)", err, errOut)
	}
	var tr rejections.Report
	if err := json.Unmarshal(out.Bytes(), &tr); err != nil {
		t.Fatal(err)
	}
	if len(tr.Instances) != 1 || len(tr.Incidents) != 1 || tr.Source.Kind != rejections.SourceCluster {
		t.Fatalf("triage %s", out)
	}
	l := tr.Incidents[0]
	if l.Level != "workload-low" || l.Reasons["queue-full"] != 4 || len(l.Causes) == 0 {
		t.Errorf("level %+v; want workload-low at 4 queue-full/s with a cause", l)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestExplainFromLogSkipsUnreadableLines: a log file or stdin is read as a
// real log is, a line that cannot be read (here one cut short, as a server
// still writing it or a rotation leaves it) skipped and said once; when the
// request looked for is not found, the error says what was skipped, since
// it may be that line.
func TestExplainFromLogSkipsUnreadableLines(t *testing.T) {
	cut := nodeLogLine[:strings.Index(nodeLogLine, `contentType=`)+len(`contentType="appl`)]
	log := filepath.Join(t.TempDir(), "kube-apiserver.log")
	if err := os.WriteFile(log, []byte(cut+"\n"+nodeLogLine+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	who := []string{"--user-name", "system:node:n1", "--group", "system:nodes"}
	for _, tc := range []struct {
		name, from, stdin string
	}{
		{"file", log, ""},
		{"stdin", "-", cut + "\n" + nodeLogLine + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			streams, _, out, errOut := genericiooptions.NewTestIOStreams()
			streams.In = strings.NewReader(tc.stdin)
			args := append([]string{"explain", "request", "--defaults", "-o", "json", "--from-log", tc.from, "--audit-id", "8d0f2f73-e45e-4990-86e9-a5e6822217b0"}, who...)
			if code := run(args, streams); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var ex explain.Explanation
			if err := json.Unmarshal(out.Bytes(), &ex); err != nil {
				t.Fatal(err)
			}
			if ex.Recorded == nil || ex.Recorded.Agrees == nil || !*ex.Recorded.Agrees {
				t.Errorf("recorded %+v, want the log line compared and agreeing", ex.Recorded)
			}
			said := 0
			for _, n := range ex.Notes {
				if strings.Contains(n, "skipped 1 line that could not be read as a request") && strings.Contains(n, ":1:") {
					said++
				}
			}
			if said != 1 {
				t.Errorf("notes %q: want the cut line said once, with its line number", ex.Notes)
			}
		})
	}
	t.Run("not found", func(t *testing.T) {
		code, _, errOut := runPlugin(append([]string{"explain", "request", "--defaults", "--from-log", log, "--audit-id", "nope"}, who...)...)
		if code == 0 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, `no request with audit ID "nope"`) || !strings.Contains(errOut, "skipped 1 line that could not be read") {
			t.Errorf("exit %d, stderr %q: want one line naming the ID and the line skipped", code, errOut)
		}
	})
	t.Run("the line given is read strictly", func(t *testing.T) {
		code, _, errOut := runPlugin(append([]string{"explain", "request", "--defaults", "--from-log", cut}, who...)...)
		if code == 0 || strings.Count(errOut, "\n") != 1 || strings.Contains(errOut, "no kube-apiserver httplog") {
			t.Errorf("exit %d, stderr %q: want one line saying why the line cannot be read", code, errOut)
		}
	})
}
