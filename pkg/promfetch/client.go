// Package promfetch reads a Prometheus-compatible store (Prometheus, Thanos,
// Mimir, VictoriaMetrics) over its HTTP API with the official client,
// github.com/prometheus/client_golang/api and its v1 API: directly, with
// bearer, basic or client-certificate authentication and extra headers
// (X-Scope-OrgID), or through the apiserver's service proxy with the
// kubectl identity. Every request it sends is a GET; it counts them and the
// bytes they return.
package promfetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"

	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
	"github.com/kubectl-apf/kubectl-apf/pkg/history"
)

// Options says how to reach the store.
type Options struct {
	// URL is the store's base URL (http://prometheus:9090, or a Thanos,
	// Mimir or VictoriaMetrics query path such as
	// https://mimir/prometheus).
	URL string
	// Service reaches an in-cluster store through the apiserver's service
	// proxy instead: NAMESPACE/NAME:PORT (NAME may start with "https:"),
	// with REST's identity. Needs get on services/proxy.
	Service string
	REST    *rest.Config

	BearerToken     string
	BearerTokenFile string
	Username        string
	Password        string
	PasswordFile    string
	CAFile          string
	CertFile        string
	KeyFile         string
	Insecure        bool
	// Headers are sent with every request, such as X-Scope-OrgID for Mimir
	// and Cortex tenants.
	Headers map[string]string
	// Timeout bounds each query (0: none beyond the context).
	Timeout time.Duration
}

// Stats counts what a Client sent and received.
type Stats struct {
	Queries atomic.Int64
	Bytes   atomic.Int64
	mu      sync.Mutex
	warn    []string
}

// Warnings returns the store's warnings so far, without repeats.
func (s *Stats) Warnings() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.warn...)
}

// Client is a history.Querier over the HTTP API.
type Client struct {
	api   v1.API
	where string
	opts  Options
	Stats *Stats
}

// ParseService reads --prometheus-service, NAMESPACE/NAME:PORT.
func ParseService(s string) (fetch.Service, error) {
	return fetch.ParseService("--prometheus-service", "monitoring/prometheus-k8s:9090", s)
}

// New builds a client; it reads the token, password and certificate files
// now, so a bad path is an error before any query.
func New(o Options) (*Client, error) {
	if (o.URL == "") == (o.Service == "") {
		return nil, fmt.Errorf("give one of --prometheus URL and --prometheus-service NAMESPACE/NAME:PORT")
	}
	stats := &Stats{}
	var rt http.RoundTripper
	var addr, where string
	if o.Service != "" {
		svc, err := ParseService(o.Service)
		if err != nil {
			return nil, err
		}
		if o.REST == nil {
			return nil, fmt.Errorf("--prometheus-service needs a kubeconfig")
		}
		if rt, err = rest.TransportFor(o.REST); err != nil {
			return nil, fmt.Errorf("--prometheus-service: %w", err)
		}
		addr = svc.ProxyURL(o.REST.Host)
		where = "service " + svc.String() + " (through the apiserver)"
	} else {
		u, err := url.Parse(o.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--prometheus %q is not a URL like http://prometheus:9090", o.URL)
		}
		if rt, err = transport(o); err != nil {
			return nil, err
		}
		addr, where = o.URL, u.Redacted()
	}
	auth, err := authHeaders(o)
	if err != nil {
		return nil, err
	}
	rt = &getOnly{rt: rt, headers: auth, stats: stats}
	c, err := api.NewClient(api.Config{Address: addr, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("the Prometheus client: %w", err)
	}
	return &Client{api: v1.NewAPI(c), where: where, opts: o, Stats: stats}, nil
}

// Describe names the store for messages.
func (c *Client) Describe() string { return c.where }

func transport(o Options) (http.RoundTripper, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyFromEnvironment
	tc := &tls.Config{InsecureSkipVerify: o.Insecure} //nolint:gosec // --prometheus-insecure asks for it
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--prometheus-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--prometheus-ca-file %s holds no PEM certificate", o.CAFile)
		}
		tc.RootCAs = pool
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, fmt.Errorf("--prometheus-cert-file and --prometheus-key-file go together")
	}
	if o.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("--prometheus-cert-file/--prometheus-key-file: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	tr.TLSClientConfig = tc
	return tr, nil
}

func authHeaders(o Options) (http.Header, error) {
	h := http.Header{}
	for k, v := range o.Headers {
		h.Set(k, v)
	}
	token := o.BearerToken
	if o.BearerTokenFile != "" {
		b, err := os.ReadFile(o.BearerTokenFile)
		if err != nil {
			return nil, fmt.Errorf("--prometheus-token-file: %w", err)
		}
		token = strings.TrimSpace(string(b))
	}
	pass := o.Password
	if o.PasswordFile != "" {
		b, err := os.ReadFile(o.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("--prometheus-password-file: %w", err)
		}
		pass = strings.TrimRight(string(b), "\r\n")
	}
	switch {
	case token != "" && o.Username != "":
		return nil, fmt.Errorf("--prometheus-token and --prometheus-username are mutually exclusive")
	case token != "" && o.Service != "":
		// The proxy authenticates the kubectl identity with Authorization;
		// a store token cannot travel in the same header.
		return nil, fmt.Errorf("--prometheus-token goes with --prometheus URL, not --prometheus-service (the apiserver takes the Authorization header)")
	case token != "":
		h.Set("Authorization", "Bearer "+token)
	case o.Username != "":
		r := &http.Request{Header: http.Header{}}
		r.SetBasicAuth(o.Username, pass)
		h.Set("Authorization", r.Header.Get("Authorization"))
	}
	return h, nil
}

// getOnly sends every request as a GET (the client POSTs queries as forms
// first; a GET keeps the service proxy read-only), adds the headers, and
// counts requests and response bytes.
type getOnly struct {
	rt      http.RoundTripper
	headers http.Header
	stats   *Stats
}

// RoundTrip implements http.RoundTripper.
func (g *getOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if r.Method == http.MethodPost && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("the query form: %w", err)
		}
		q := r.URL.Query()
		for k, vs := range form {
			for _, v := range vs {
				q.Add(k, v)
			}
		}
		r.URL.RawQuery = q.Encode()
		r.Method, r.Body, r.ContentLength, r.GetBody = http.MethodGet, nil, 0, nil
		r.Header.Del("Content-Type")
	}
	if r.Method != http.MethodGet {
		return nil, fmt.Errorf("refusing to send %s %s: kubectl-apf only reads", r.Method, r.URL.Path)
	}
	for k, vs := range g.headers {
		r.Header[k] = vs
	}
	g.stats.Queries.Add(1)
	resp, err := g.rt.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &countingBody{ReadCloser: resp.Body, n: &g.stats.Bytes}
	return resp, nil
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// QueryRange implements history.Querier.
func (c *Client) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]history.Series, error) {
	if c.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
	}
	v, warnings, err := c.api.QueryRange(ctx, expr, v1.Range{Start: start, End: end, Step: step})
	c.addWarnings(warnings)
	if err != nil {
		return nil, c.explain(err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("%s answered a range query with a %s, not a matrix", c.where, v.Type())
	}
	return FromMatrix(m), nil
}

// StartTime implements history.Started: when the store started, from
// /api/v1/status/runtimeinfo (Prometheus; other stores may not serve it,
// and then the error says so).
func (c *Client) StartTime(ctx context.Context) (time.Time, error) {
	if c.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
	}
	ri, err := c.api.Runtimeinfo(ctx)
	if err != nil {
		return time.Time{}, c.explain(err)
	}
	return ri.StartTime, nil
}

// RawSamples fetches the raw samples of a series selector over [start, end]
// (a range-vector instant query). kubectl-apf never does this; the scale
// benchmark does, as the naive alternative to pushing the aggregation to
// the store.
func (c *Client) RawSamples(ctx context.Context, selector string, start, end time.Time) ([]history.Series, error) {
	d := end.Sub(start)
	v, warnings, err := c.api.Query(ctx, fmt.Sprintf("%s[%dms]", selector, d.Milliseconds()), end)
	c.addWarnings(warnings)
	if err != nil {
		return nil, c.explain(err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("%s answered a range selector with a %s, not a matrix", c.where, v.Type())
	}
	return FromMatrix(m), nil
}

func (c *Client) addWarnings(w v1.Warnings) {
	if len(w) == 0 {
		return
	}
	c.Stats.mu.Lock()
	defer c.Stats.mu.Unlock()
	for _, s := range w {
		seen := false
		for _, o := range c.Stats.warn {
			seen = seen || o == s
		}
		if !seen {
			c.Stats.warn = append(c.Stats.warn, s)
		}
	}
}

// explain turns the client's errors into actionable ones.
func (c *Client) explain(err error) error {
	var ae *v1.Error
	if errors.As(err, &ae) {
		switch {
		case ae.Type == v1.ErrClient && strings.Contains(ae.Msg, "401"):
			return fmt.Errorf("%s refused the credentials (401): check --prometheus-token, --prometheus-username or the client certificate", c.where)
		case ae.Type == v1.ErrClient && strings.Contains(ae.Msg, "403"):
			if c.opts.Service != "" {
				return fetch.ServiceProxyForbidden(c.where, c.opts.Service)
			}
			return fetch.Forbidden(c.where, "check the credentials and, for Mimir or Cortex, --prometheus-header X-Scope-OrgID=TENANT")
		case ae.Type == v1.ErrClient && strings.Contains(ae.Msg, "404"):
			return fmt.Errorf("%s has no Prometheus query API (404): give the base URL the /api/v1/query_range path hangs off", c.where)
		}
		msg := strings.TrimSpace(ae.Msg)
		if d := detail(ae.Detail); d != "" {
			msg += ": " + d
		}
		return fmt.Errorf("%s: %s", c.where, msg)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s did not answer in time: narrow --since or raise --prometheus-timeout", c.where)
	}
	return fmt.Errorf("querying %s: %w", c.where, err)
}

// detail is the gist of an error body: a Kubernetes Status's message (the
// service proxy answers with one), else its first line, shortened.
func detail(body string) string {
	var st struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	}
	if json.Unmarshal([]byte(body), &st) == nil && st.Kind == "Status" && st.Message != "" {
		body = st.Message
	}
	body, _, _ = strings.Cut(strings.TrimSpace(body), "\n")
	if len(body) > 200 {
		body = body[:200] + "..."
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, body)
}

// FromMatrix converts the client's matrix to history series.
func FromMatrix(m model.Matrix) []history.Series {
	out := make([]history.Series, 0, len(m))
	for _, ss := range m {
		s := history.Series{Labels: make(map[string]string, len(ss.Metric)), Points: make([]history.Point, 0, len(ss.Values))}
		for k, v := range ss.Metric {
			s.Labels[string(k)] = string(v)
		}
		for _, p := range ss.Values {
			v := float64(p.Value)
			if math.IsInf(v, 0) {
				v = math.NaN()
			}
			s.Points = append(s.Points, history.Point{T: p.Timestamp.Time().UTC(), V: v})
		}
		out = append(out, s)
	}
	return out
}
