package fetch

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kubectl-apf/kubectl-apf/internal/ctxsleep"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// flowcontrolVersions are the versions kubectl-apf reads, newest first.
var flowcontrolVersions = []string{"v1", "v1beta3", "v1beta2", "v1beta1"}

// ClusterSource reads snapshots from live apiserver instances.
type ClusterSource struct {
	// Config is the kubeconfig's client configuration.
	Config *rest.Config
	// Instances are explicit instance URLs (--apiserver-urls); each is
	// queried with Config's credentials and the TLS server name of
	// Config.Host. Empty means Config.Host alone, unless AllAPIServers.
	Instances []string
	// AllAPIServers discovers the instances from the default/kubernetes
	// EndpointSlice (--all-apiservers).
	AllAPIServers bool
	// Clock stamps snapshots and scrapes and times the wait between the two
	// metrics scrapes (the real clock if nil; tests inject a fake one).
	Clock clock.Clock

	// clients are the instances' clients, built once and reused by every
	// capture (top --watch, the live view, dump bundle --watch): a client
	// per capture opened a connection per capture and instance, each held
	// until the transport's idle timeout.
	mu        sync.Mutex
	clients   map[string]rest.Interface
	discovery kubernetes.Interface
}

// Describe names the source.
func (c *ClusterSource) Describe() string {
	switch {
	case c.AllAPIServers:
		return "every apiserver behind " + c.Config.Host
	case len(c.Instances) > 0:
		return textfmt.Count(len(c.Instances), "apiserver", "apiservers")
	}
	return c.Config.Host
}

func (c *ClusterSource) clock() clock.Clock {
	if c.Clock != nil {
		return c.Clock
	}
	return clock.RealClock{}
}

func (c *ClusterSource) now() time.Time { return c.clock().Now() }

// InstanceConfig returns a copy of base aimed at instance url, keeping the
// credentials, and verifying TLS against the original host's name (an
// instance's certificate is issued for the service name, not its address).
func InstanceConfig(base *rest.Config, instance string) (*rest.Config, error) {
	cfg := rest.CopyConfig(base)
	orig, err := url.Parse(base.Host)
	if err != nil {
		return nil, fmt.Errorf("parsing the kubeconfig server %q: %w", base.Host, err)
	}
	u, err := url.Parse(instance)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("apiserver URL %q: want https://HOST:PORT", instance)
	}
	cfg.Host = instance
	if cfg.TLSClientConfig.ServerName == "" && orig.Hostname() != "" {
		cfg.TLSClientConfig.ServerName = orig.Hostname()
	}
	return cfg, nil
}

// DiscoverAPIServers lists the instance URLs in the default/kubernetes
// EndpointSlice(s), the endpoints of the "kubernetes" Service that every
// kube-apiserver keeps up to date (the endpoint reconciler of
// k8s.io/kubernetes pkg/controlplane/reconcilers).
func DiscoverAPIServers(ctx context.Context, cs kubernetes.Interface) ([]string, error) {
	list, err := cs.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
	if err != nil {
		return nil, ExplainFetchError("the cluster", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", 0, err)
	}
	if len(list.Items) == 0 {
		// kube-apiserver --endpoint-reconciler-type=none keeps no endpoints
		// for the Service; neither is there a list to read nor one to wait for.
		return nil, fmt.Errorf("the cluster has no EndpointSlice for the default/kubernetes Service (its apiservers' endpoint reconciler is off); name the instances with --apiserver-urls, or drop --all-apiservers to read the kubeconfig's server alone")
	}
	seen := map[string]bool{}
	var urls []string
	notReady := 0
	for _, es := range list.Items {
		port := int32(443)
		for _, p := range es.Ports {
			if p.Port != nil && (p.Name == nil || *p.Name == "https") {
				port = *p.Port
			}
		}
		for _, ep := range es.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				notReady++
				continue
			}
			for _, a := range ep.Addresses {
				u := "https://" + net.JoinHostPort(a, strconv.Itoa(int(port)))
				if !seen[u] {
					seen[u] = true
					urls = append(urls, u)
				}
			}
		}
	}
	sort.Strings(urls)
	if len(urls) == 0 {
		return nil, fmt.Errorf("the default/kubernetes EndpointSlice lists no ready apiserver (%d not ready); name the instances with --apiserver-urls", notReady)
	}
	return urls, nil
}

// Capture reads one snapshot per instance, concurrently.
func (c *ClusterSource) Capture(ctx context.Context, opts dump.CaptureOptions) (*dump.Capture, error) {
	instances := c.Instances
	if c.AllAPIServers {
		cs, err := c.discoveryClient()
		if err != nil {
			return nil, err
		}
		if instances, err = DiscoverAPIServers(ctx, cs); err != nil {
			return nil, err
		}
	}
	direct := len(instances) == 0
	if direct {
		instances = []string{c.Config.Host}
	}
	snaps := make([]*dump.Snapshot, len(instances))
	errs := make([]error, len(instances))
	var wg sync.WaitGroup
	for i, inst := range instances {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := c.Config
			if !direct {
				var err error
				if cfg, err = InstanceConfig(c.Config, inst); err != nil {
					errs[i] = err
					return
				}
			}
			snaps[i], errs[i] = c.captureOne(ctx, inst, cfg, opts)
		}()
	}
	wg.Wait()
	out := &dump.Capture{}
	for i := range instances {
		if errs[i] != nil {
			out.Failures = append(out.Failures, dump.InstanceError{Instance: instances[i], Err: errs[i], Message: errs[i].Error()})
			continue
		}
		out.Snapshots = append(out.Snapshots, snaps[i])
	}
	if len(out.Snapshots) == 0 && len(out.Failures) == 1 {
		// One instance: its error is the command's error.
		return nil, out.Failures[0].Err
	}
	return out, nil
}

// fetcher GETs paths of one instance through client-go.
type fetcher struct {
	rc       rest.Interface
	instance string
	timeout  time.Duration
}

func (f *fetcher) get(ctx context.Context, path string, params map[string]string) ([]byte, error) {
	req := f.rc.Get().AbsPath(path)
	for k, v := range params {
		req = req.Param(k, v)
	}
	body, err := req.DoRaw(ctx)
	if err != nil {
		return nil, ExplainFetchError(f.instance, path, f.timeout, err)
	}
	return body, nil
}

// NewFetcherClient returns the rest.Interface used for one instance.
func NewFetcherClient(cfg *rest.Config) (rest.Interface, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building a client for %s: %w", cfg.Host, err)
	}
	return cs.Discovery().RESTClient(), nil
}

// discoveryClient is the client that lists the instances
// (--all-apiservers), built on the first capture.
func (c *ClusterSource) discoveryClient() (kubernetes.Interface, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.discovery == nil {
		cs, err := kubernetes.NewForConfig(c.Config)
		if err != nil {
			return nil, fmt.Errorf("building a client for %s: %w", c.Config.Host, err)
		}
		c.discovery = cs
	}
	return c.discovery, nil
}

// client is the instance's client, built on its first capture.
func (c *ClusterSource) client(instance string, cfg *rest.Config) (rest.Interface, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rc, ok := c.clients[instance]; ok {
		return rc, nil
	}
	rc, err := NewFetcherClient(cfg)
	if err != nil {
		return nil, err
	}
	if c.clients == nil {
		c.clients = map[string]rest.Interface{}
	}
	c.clients[instance] = rc
	return rc, nil
}

func (c *ClusterSource) captureOne(ctx context.Context, instance string, cfg *rest.Config, opts dump.CaptureOptions) (*dump.Snapshot, error) {
	rc, err := c.client(instance, cfg)
	if err != nil {
		return nil, err
	}
	f := &fetcher{rc: rc, instance: instance, timeout: cfg.Timeout}
	s := &dump.Snapshot{Instance: instance, CapturedAt: c.now(), Raw: map[string][]byte{}}
	if opts.Parts&dump.PartVersion != 0 {
		body, err := f.get(ctx, "/version", nil)
		if err != nil {
			return nil, err
		}
		var v version.Info
		if err := json.Unmarshal(body, &v); err != nil {
			return nil, fmt.Errorf("decoding /version of %s: %w", instance, err)
		}
		s.ServerVersion = &v
		s.Raw[dump.FileVersion] = body
	}
	dumps := []struct {
		part   dump.Parts
		path   string
		file   string
		params map[string]string
	}{
		{dump.PartPriorityLevels, dump.PathPriorityLevels, dump.FilePriorityLevels, nil},
		{dump.PartQueues, dump.PathQueues, dump.FileQueues, nil},
		{dump.PartRequests, dump.PathRequests, dump.FileRequests, map[string]string{"includeRequestDetails": "1"}},
	}
	for _, d := range dumps {
		if opts.Parts&d.part == 0 {
			continue
		}
		body, err := f.get(ctx, d.path, d.params)
		if err != nil {
			return nil, err
		}
		s.Raw[d.file] = body
	}
	if opts.Parts&dump.PartMetrics != 0 {
		if err := c.scrape(ctx, f, s, 0); err != nil {
			return nil, err
		}
		if opts.MetricsInterval > 0 {
			if err := ctxsleep.Sleep(ctx, c.clock(), opts.MetricsInterval); err != nil {
				return nil, fmt.Errorf("waiting for the second /metrics scrape of %s: %w", instance, err)
			}
			if err := c.scrape(ctx, f, s, 1); err != nil {
				return nil, err
			}
		}
	}
	// The objects come last: a 403 on the dumps or /metrics, which is
	// what an identity without the role usually meets, names that rule.
	if opts.Parts&dump.PartObjects != 0 {
		if err := f.objects(ctx, s); err != nil {
			return nil, err
		}
	}
	if err := s.ParseRaw(); err != nil {
		return nil, fmt.Errorf("%s: %w", instance, err)
	}
	return s, nil
}

// scrape reads /metrics as a stream through the APF filter, so memory stays
// bounded by the kept families however large the body.
func (c *ClusterSource) scrape(ctx context.Context, f *fetcher, s *dump.Snapshot, i int) error {
	rc, err := f.rc.Get().AbsPath("/metrics").SetHeader("Accept", "text/plain;version=0.0.4").Stream(ctx)
	if err != nil {
		return ExplainFetchError(f.instance, "/metrics", f.timeout, err)
	}
	defer rc.Close()
	at := c.now()
	kept, err := metrics.FilterAPF(rc)
	if err != nil {
		return ExplainFetchError(f.instance, "/metrics", f.timeout, err)
	}
	s.Raw[dump.MetricsFile(i)] = kept
	s.Raw[dump.MetricsTimeKey(i)] = []byte(at.UTC().Format(time.RFC3339Nano))
	return nil
}

// objects lists FlowSchemas and priority levels through the newest
// flowcontrol version the server serves.
func (f *fetcher) objects(ctx context.Context, s *dump.Snapshot) error {
	groupPath := "/apis/" + dump.FlowcontrolGroup
	body, err := f.get(ctx, groupPath, nil)
	if err != nil {
		return err
	}
	var g metav1.APIGroup
	if err := json.Unmarshal(body, &g); err != nil {
		return fmt.Errorf("decoding %s of %s: %w", groupPath, f.instance, err)
	}
	served := map[string]bool{}
	for _, v := range g.Versions {
		served[v.Version] = true
	}
	for _, v := range flowcontrolVersions {
		if served[v] {
			s.FlowcontrolVersion = v
			break
		}
	}
	if s.FlowcontrolVersion == "" {
		return fmt.Errorf("%s serves none of the flowcontrol versions %v of %s", f.instance, flowcontrolVersions, dump.FlowcontrolGroup)
	}
	for _, o := range []struct{ resource, file string }{{"flowschemas", dump.FileFlowSchemas}, {"prioritylevelconfigurations", dump.FilePLCs}} {
		body, err := f.get(ctx, groupPath+"/"+s.FlowcontrolVersion+"/"+o.resource, nil)
		if err != nil {
			return err
		}
		conv, err := dump.ConvertList(body)
		if err != nil {
			return fmt.Errorf("%s %s: %w", f.instance, o.resource, err)
		}
		s.Raw[o.file] = conv
	}
	return nil
}

// CountRequests makes s count every request it sends in n (the live view
// shows its own load on the apiserver: a monitoring tool loads the server
// it watches too). s's Config is copied, not changed in place.
func (s *ClusterSource) CountRequests(n *atomic.Int64) {
	cfg := *s.Config
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{rt: rt, n: n} })
	s.Config = &cfg
}

// countingTransport counts the requests sent through it.
type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

// RoundTrip counts r and sends it on.
func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.rt.RoundTrip(r)
}
