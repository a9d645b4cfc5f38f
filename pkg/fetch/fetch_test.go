package fetch

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
)

// fakeAPIServer serves the read-only endpoints kubectl-apf uses, from
// fixtures, and records every request's method.
type fakeAPIServer struct {
	mu       sync.Mutex
	methods  []string
	paths    []string
	versions string // served flowcontrol versions, e.g. `"v1"` or `"v1beta2"`
	status   map[string]int
	delay    time.Duration
	truncate string // path whose body is cut short
	t        *testing.T
}

func (f *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.methods = append(f.methods, r.Method)
	f.paths = append(f.paths, r.URL.RequestURI())
	f.mu.Unlock()
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	if code, ok := f.status[r.URL.Path]; ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"nope","code":` + strconv.Itoa(code) + `}`))
		return
	}
	if r.URL.Path == f.truncate {
		w.Header().Set("Content-Length", "100000")
		w.Write([]byte("PriorityLevelName, ActiveQueues\n"))
		return
	}
	body, ctype := f.body(r)
	if body == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Write(body)
}

func (f *fakeAPIServer) body(r *http.Request) ([]byte, string) {
	switch p := r.URL.Path; {
	case p == "/version":
		return []byte(`{"major":"1","minor":"37","gitVersion":"v1.37.1"}`), "application/json"
	case p == "/apis/flowcontrol.apiserver.k8s.io":
		vs := f.versions
		if vs == "" {
			vs = `{"groupVersion":"flowcontrol.apiserver.k8s.io/v1","version":"v1"}`
		}
		return []byte(`{"kind":"APIGroup","apiVersion":"v1","name":"flowcontrol.apiserver.k8s.io","versions":[` + vs + `]}`), "application/json"
	case strings.HasSuffix(p, "/flowschemas"):
		return readFixture(f.t, "objects", "flowschemas.json"), "application/json"
	case strings.HasSuffix(p, "/prioritylevelconfigurations"):
		return readFixture(f.t, "objects", "prioritylevelconfigurations-v1beta2.json"), "application/json"
	case p == dump.PathPriorityLevels:
		return readFixture(f.t, "v1.27-layout", dump.FilePriorityLevels), "text/plain"
	case p == dump.PathQueues:
		return readFixture(f.t, "v1.26-layout", dump.FileQueues), "text/plain"
	case p == dump.PathRequests:
		if r.URL.Query().Get("includeRequestDetails") == "" {
			f.t.Errorf("dump_requests fetched without includeRequestDetails")
		}
		return readFixture(f.t, "synthetic-requests", dump.FileRequests), "text/plain"
	case p == "/metrics":
		b := readFixtureMetrics(f.t, "modern-a.txt")
		return b, "text/plain; version=0.0.4"
	}
	return nil, ""
}

func newFake(t *testing.T) (*fakeAPIServer, *httptest.Server) {
	f := &fakeAPIServer{t: t, status: map[string]int{}}
	srv := httptest.NewTLSServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func tlsConfig(srv *httptest.Server) *rest.Config {
	return &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, BearerToken: "t"}
}

func TestClusterCapture(t *testing.T) {
	f, srv := newFake(t)
	at := time.Date(2026, 11, 21, 15, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(at)
	src := &ClusterSource{Config: tlsConfig(srv), Clock: clk}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Step the fake clock once the capture waits for its second scrape.
	go func() {
		for ctx.Err() == nil {
			if clk.HasWaiters() {
				clk.Step(5 * time.Second)
				return
			}
			runtime.Gosched()
		}
	}()
	c, err := src.Capture(ctx, dump.CaptureOptions{Parts: dump.PartAll, MetricsInterval: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Snapshots) != 1 || len(c.Failures) != 0 {
		t.Fatalf("capture = %+v", c)
	}
	s := c.Snapshots[0]
	if s.ServerVersion.GitVersion != "v1.37.1" || s.FlowcontrolVersion != "v1" || len(s.FlowSchemas) != 2 || len(s.PriorityLevels) != 1 {
		t.Errorf("snapshot objects: version %v fc %s fs %d pl %d", s.ServerVersion, s.FlowcontrolVersion, len(s.FlowSchemas), len(s.PriorityLevels))
	}
	// v1beta2's assuredConcurrencyShares arrives as v1's nominalConcurrencyShares.
	if got := s.PriorityLevels[0].Spec.Limited.NominalConcurrencyShares; got == nil || *got != 7 {
		t.Errorf("converted nominalConcurrencyShares = %v, want 7", got)
	}
	if len(s.PriorityLevelDump) != 3 || len(s.QueueDump) != 2 || len(s.RequestDump) != 3 {
		t.Errorf("dumps: %d %d %d", len(s.PriorityLevelDump), len(s.QueueDump), len(s.RequestDump))
	}
	if len(s.Metrics) != 2 || s.Metrics[1].Time.Sub(s.Metrics[0].Time) != 5*time.Second {
		t.Errorf("metrics scrapes: %d", len(s.Metrics))
	}
	names := s.NamesByUID()
	if names.FlowSchemas["11111111-1111-1111-1111-111111111111"] != "apf-load" {
		t.Errorf("names = %+v", names)
	}
	for _, m := range f.methods {
		if m != http.MethodGet {
			t.Errorf("sent a %s request; the plugin only reads", m)
		}
	}
}

func TestClusterCaptureErrors(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(f *fakeAPIServer)
		cfg     func(cfg *rest.Config)
		wantErr string
	}{
		{"forbidden dump names the rule", func(f *fakeAPIServer) { f.status[dump.PathQueues] = 403 }, nil,
			`forbidden (403): your identity lacks the RBAC rule nonResourceURLs ["/debug/api_priority_and_fairness/*"] with verb get; ask an admin to bind the read-only ClusterRole printed by "kubectl apf rbac"`},
		{"forbidden metrics", func(f *fakeAPIServer) { f.status["/metrics"] = 403 }, nil, `nonResourceURLs ["/metrics"] with verb get`},
		{"apf off", func(f *fakeAPIServer) { f.status[dump.PathPriorityLevels] = 404 }, nil, "API Priority and Fairness is disabled on this apiserver"},
		{"unauthorized", func(f *fakeAPIServer) { f.status["/version"] = 401 }, nil, "unauthorized (401)"},
		{"timeout", func(f *fakeAPIServer) { f.delay = 300 * time.Millisecond }, func(c *rest.Config) { c.Timeout = 50 * time.Millisecond },
			"timed out (--request-timeout is 50ms; raise it)"},
		{"truncated", func(f *fakeAPIServer) { f.truncate = dump.PathPriorityLevels }, nil, "truncated response"},
		{"no flowcontrol version", func(f *fakeAPIServer) {
			f.versions = `{"groupVersion":"flowcontrol.apiserver.k8s.io/v9","version":"v9"}`
		}, nil, "serves none of the flowcontrol versions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFake(t)
			tt.setup(f)
			cfg := tlsConfig(srv)
			if tt.cfg != nil {
				tt.cfg(cfg)
			}
			_, err := (&ClusterSource{Config: cfg}).Capture(context.Background(), dump.CaptureOptions{Parts: dump.PartAll})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
}

func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = (&ClusterSource{Config: &rest.Config{Host: "https://" + addr}}).Capture(context.Background(), dump.CaptureOptions{Parts: dump.PartVersion})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err = %v", err)
	}
}

func TestExplicitInstancesOneDown(t *testing.T) {
	_, a := newFake(t)
	_, b := newFake(t)
	b.Close()
	src := &ClusterSource{Config: tlsConfig(a), Instances: []string{a.URL, b.URL}}
	c, err := src.Capture(context.Background(), dump.CaptureOptions{Parts: dump.PartPriorityLevels})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Snapshots) != 1 || c.Snapshots[0].Instance != a.URL {
		t.Errorf("snapshots = %+v", c.Snapshots)
	}
	if len(c.Failures) != 1 || c.Failures[0].Instance != b.URL || !strings.Contains(c.Failures[0].Error(), "connection refused") {
		t.Errorf("failures = %+v", c.Failures)
	}
}

func TestInstanceConfigKeepsServerName(t *testing.T) {
	cfg, err := InstanceConfig(&rest.Config{Host: "https://api.example.com:6443", BearerToken: "x"}, "https://10.0.0.2:6443")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://10.0.0.2:6443" || cfg.TLSClientConfig.ServerName != "api.example.com" || cfg.BearerToken != "x" {
		t.Errorf("cfg = host %s servername %s", cfg.Host, cfg.TLSClientConfig.ServerName)
	}
	if _, err := InstanceConfig(&rest.Config{Host: "https://a"}, "not a url"); err == nil {
		t.Error("no error for a bad URL")
	}
}

// TestDiscoverAPIServers uses a fake clientset: the EndpointSlice of the
// kubernetes Service lists the instances (not-ready ones are skipped).
func TestDiscoverAPIServers(t *testing.T) {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "kubernetes", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](6443), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.0.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"10.0.0.1"}},
			{Addresses: []string{"10.0.0.3"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
		},
	}
	other := es.DeepCopy()
	other.Name, other.Labels = "other", map[string]string{discoveryv1.LabelServiceName: "other"}
	got, err := DiscoverAPIServers(context.Background(), fake.NewClientset(es, other))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"https://10.0.0.1:6443", "https://10.0.0.2:6443"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %v, want %v", got, want)
	}
	// No slice at all (kube-apiserver --endpoint-reconciler-type=none, as
	// make demo's): the error says so, not that a slice lists none ready.
	if _, err := DiscoverAPIServers(context.Background(), fake.NewClientset()); err == nil || !strings.Contains(err.Error(), "has no EndpointSlice") || !strings.Contains(err.Error(), "drop --all-apiservers") {
		t.Errorf("no slice: err = %v", err)
	}
	down := es.DeepCopy()
	down.Endpoints = down.Endpoints[2:]
	if _, err := DiscoverAPIServers(context.Background(), fake.NewClientset(down)); err == nil || !strings.Contains(err.Error(), "no ready apiserver (1 not ready)") || !strings.Contains(err.Error(), "--apiserver-urls") {
		t.Errorf("none ready: err = %v", err)
	}
}

func readFixture(t testing.TB, dir, name string) []byte { return fixture.Read(t, "dump", dir, name) }

func readFixtureMetrics(t testing.TB, name string) []byte { return fixture.Read(t, "metrics", name) }
