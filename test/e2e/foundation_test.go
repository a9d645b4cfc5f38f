package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
)

// pfHeaders sends GET path with cfg and returns the response status and the
// FlowSchema and priority level UIDs the server put in its response headers.
func pfHeaders(t *testing.T, cfg *rest.Config, path string) (status int, fsUID, plUID string) {
	t.Helper()
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: rt, Timeout: 30 * time.Second}).Get(cfg.Host + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode,
		resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID),
		resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)
}

// TestPFHeadersNameExpectedObjects creates a FlowSchema and a priority level,
// sends requests as several identities, and checks that the server's
// X-Kubernetes-PF-* headers name the objects each identity should land in.
func TestPFHeadersNameExpectedObjects(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	admin := c.Client(testcluster.Admin)
	fc := admin.FlowcontrolV1()

	pl, err := fc.PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-foundation"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](5),
				LimitResponse: flowcontrolv1.LimitResponse{
					Type:    flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 16, HandSize: 4, QueueLengthLimit: 10},
				},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating priority level: %v", err)
	}
	fs, err := fc.FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-alice"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: pl.Name},
			MatchingPrecedence:         600,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "alice"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, Namespaces: []string{"*"},
				}},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating flow schema: %v", err)
	}
	t.Cleanup(func() {
		_ = fc.FlowSchemas().Delete(context.Background(), fs.Name, metav1.DeleteOptions{})
		_ = fc.PriorityLevelConfigurations().Delete(context.Background(), pl.Name, metav1.DeleteOptions{})
	})

	byName := func(fsName, plName string) (string, string) {
		f, err := fc.FlowSchemas().Get(ctx, fsName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := fc.PriorityLevelConfigurations().Get(ctx, plName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(f.UID), string(p.UID)
	}
	saToken, err := c.ServiceAccountToken(ctx, "e2e-foundation", "builder")
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name           string
		cfg            *rest.Config
		path           string
		wantFS, wantPL string
	}{
		{"alice matches the new FlowSchema", c.RESTConfig("alice"), "/api/v1/namespaces/default/configmaps", fs.Name, pl.Name},
		{"alice's secrets fall through to global-default", c.RESTConfig("alice"), "/api/v1/namespaces/default/secrets", "global-default", "global-default"},
		{"carol is a plain user", c.RESTConfig("carol"), "/api/v1/namespaces/default/configmaps", "global-default", "global-default"},
		{"a service account", c.TokenConfigFor(c.APIServers[0], saToken), "/api/v1/namespaces/default/configmaps", "service-accounts", "workload-low"},
		{"a node", c.RESTConfig("system:node:n1"), "/api/v1/nodes/n1", "system-node-high", "node-high"},
		{"the admin is exempt", c.RESTConfig(testcluster.Admin), "/api/v1/namespaces", "exempt", "exempt"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantFS, wantPL := byName(tc.wantFS, tc.wantPL)
			// The server's configuration controller digests new objects
			// asynchronously: poll until it has.
			var status int
			var gotFS, gotPL string
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				status, gotFS, gotPL = pfHeaders(t, tc.cfg, tc.path)
				if gotFS == wantFS && gotPL == wantPL {
					return
				}
			}
			t.Errorf("GET %s answered %d with FlowSchema UID %q and priority level UID %q; want %s (%s) and %s (%s)",
				tc.path, status, gotFS, gotPL, tc.wantFS, wantFS, tc.wantPL, wantPL)
		})
	}
}

// TestLoadGeneratorGetsQueueFull429 drives the load generator's tiny priority
// level into rejection and checks the server counted queue-full rejections.
func TestLoadGeneratorGetsQueueFull429(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	names, flows := loadgen.SetUpT(t, c, loadgen.FlowSetup{Flows: 6, Wait: true})
	rep, err := loadgen.Run(ctx, loadgen.Options{Flows: flows, Burst: 10, Rounds: 3, Duration: time.Minute, Pause: 100 * time.Millisecond, Names: names})
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	rep.Print(&buf)
	t.Logf("load report:\n%s", buf.String())
	if rep.Rejected() == 0 {
		t.Fatalf("the load generator got no 429")
	}
	if rep.ByPriority[loadgen.Level] == 0 {
		t.Fatalf("no response named priority level %s", loadgen.Level)
	}

	got := rejectedRequests(t, c, loadgen.Level, "queue-full")
	if got < 1 {
		t.Fatalf("apiserver_flowcontrol_rejected_requests_total{priority_level=%q,reason=\"queue-full\"} = %v, want >= 1", loadgen.Level, got)
	}
	t.Logf("apiserver_flowcontrol_rejected_requests_total{priority_level=%q,reason=\"queue-full\"} = %v", loadgen.Level, got)
}

// rejectedRequests scrapes /metrics as the admin and sums
// apiserver_flowcontrol_rejected_requests_total for a level and reason.
func rejectedRequests(t *testing.T, c *testcluster.Cluster, level, reason string) float64 {
	t.Helper()
	body, err := c.Client(testcluster.Admin).CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	fam := families["apiserver_flowcontrol_rejected_requests_total"]
	if fam == nil {
		t.Fatalf("/metrics has no apiserver_flowcontrol_rejected_requests_total")
	}
	var sum float64
	for _, m := range fam.GetMetric() {
		if label(m, "priority_level") == level && label(m, "reason") == reason {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
