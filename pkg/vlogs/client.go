// Package vlogs reads kube-apiserver audit events from VictoriaLogs (a
// single node or a cluster's select node, directly or through the
// apiserver's service proxy). It only reads: every request is a GET to a
// /select/logsql/ endpoint.
//
// The work is pushed into the store: the 429s are counted there by second
// (and by apiserver instance, when the events carry one), so that only the
// events around each burst of 429s are pulled for the reconstruction
// (Source.Reader), through the same audit event reader as a file.
package vlogs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
)

// Options say how to reach the store.
type Options struct {
	// URL is the base URL of VictoriaLogs (a single node, or a cluster's
	// select node), such as http://victorialogs:9428.
	URL string
	// Service reaches an in-cluster VictoriaLogs through the apiserver's
	// service proxy instead: NAMESPACE/NAME:PORT, as REST's identity (needs
	// get on services/proxy).
	Service string
	REST    *rest.Config
	// Headers go with every request (AccountID and ProjectID select a
	// tenant).
	Headers map[string]string
	// Timeout bounds each query, in the store (its timeout argument) and
	// here (0: none beyond the context).
	Timeout time.Duration
}

// Client queries VictoriaLogs' LogsQL API.
type Client struct {
	base  string
	where string
	hc    *http.Client
	opts  Options
	// Queries and Bytes count the requests sent and the response bytes
	// read.
	Queries, Bytes atomic.Int64
	// Partial is set when a cluster answered without one of its storage
	// nodes (see Query).
	Partial atomic.Bool
	// PartialCause is the store's message when Partial.
	PartialCause atomic.Value
}

// ParseService reads --victorialogs-service, NAMESPACE/NAME:PORT.
func ParseService(s string) (fetch.Service, error) {
	return fetch.ParseService("--victorialogs-service", "logging/victorialogs:9428", s)
}

// CheckURL checks a --victorialogs URL.
func CheckURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--victorialogs %q is not a URL like http://victorialogs:9428", s)
	}
	return nil
}

// New builds a client.
func New(o Options) (*Client, error) {
	if (o.URL == "") == (o.Service == "") {
		return nil, errors.New("give one of --victorialogs URL and --victorialogs-service NAMESPACE/NAME:PORT")
	}
	c := &Client{opts: o}
	var rt http.RoundTripper
	if o.Service != "" {
		svc, err := ParseService(o.Service)
		if err != nil {
			return nil, err
		}
		if o.REST == nil {
			return nil, errors.New("--victorialogs-service needs a kubeconfig")
		}
		if rt, err = rest.TransportFor(o.REST); err != nil {
			return nil, fmt.Errorf("--victorialogs-service: %w", err)
		}
		c.base = svc.ProxyURL(o.REST.Host)
		c.where = "service " + svc.String() + " (through the apiserver)"
	} else {
		if err := CheckURL(o.URL); err != nil {
			return nil, err
		}
		u, _ := url.Parse(o.URL)
		c.base, c.where = strings.TrimRight(o.URL, "/"), u.Redacted()
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = http.ProxyFromEnvironment
		rt = tr
	}
	c.hc = &http.Client{Transport: rt}
	return c, nil
}

// Describe names the store for messages.
func (c *Client) Describe() string { return c.where }

// Query runs a LogsQL query on /select/logsql/query and calls fn with each
// JSON line of the answer, in the store's order; the line is only valid
// during the call. A cluster whose storage node is down answers 502: the
// query is run again with allow_partial_response=1, and Partial is set.
func (c *Client) Query(ctx context.Context, query string, fn func(line []byte) error) error {
	if c.Partial.Load() {
		return c.explainErr(c.query(ctx, query, true, fn))
	}
	err := c.query(ctx, query, false, fn)
	var se *storeError
	if !errors.As(err, &se) || !se.storageDown() {
		return c.explainErr(err)
	}
	// fn saw nothing yet: an error answer has no rows
	if perr := c.query(ctx, query, true, fn); perr != nil {
		return c.explainErr(perr)
	}
	c.Partial.Store(true)
	c.PartialCause.Store(shorten(afterQuery(se.msg)))
	return nil
}

func (c *Client) query(ctx context.Context, query string, partial bool, fn func(line []byte) error) error {
	q := url.Values{"query": {query}}
	if c.opts.Timeout > 0 {
		q.Set("timeout", c.opts.Timeout.String())
		var cancel context.CancelFunc
		// the store's own timeout answers first, with its message
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout+5*time.Second)
		defer cancel()
	}
	if partial {
		q.Set("allow_partial_response", "1")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/select/logsql/query?"+q.Encode(), nil)
	if err != nil {
		return fmt.Errorf("%s: %w", c.where, err)
	}
	for k, v := range c.opts.Headers {
		req.Header.Set(k, v)
	}
	c.Queries.Add(1)
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body := &countingReader{r: resp.Body, n: &c.Bytes}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(body, 64<<10))
		return &storeError{code: resp.StatusCode, msg: detail(string(b))}
	}
	br := bufio.NewReaderSize(body, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// a long line: gather it whole
			full := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				full = append(full, line...)
			}
			line = full
		}
		if l := bytes.TrimSpace(line); len(l) > 0 {
			if ferr := fn(l); ferr != nil {
				return rowError{ferr}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the answer: %w", err)
		}
	}
}

// rowError is the error of a row's callback, returned as it is.
type rowError struct{ error }

// storeError is a non-200 answer.
type storeError struct {
	code int
	msg  string
}

func (e *storeError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.msg) }

// storageDown tells a cluster's answer when one of its storage nodes is
// unavailable: vlselect answers 502 Bad Gateway (see VictoriaLogs'
// docs/victorialogs/querying/README.md, "Partial responses"), and again
// with allow_partial_response=1 only when every node is down.
func (e *storeError) storageDown() bool {
	return e.code == http.StatusBadGateway
}

// maxQueryDuration finds the store's own limit in its message of a query
// stopped at the deadline (app/vlselect/main.go, logRequestErrorIfNeeded).
var maxQueryDuration = regexp.MustCompile(`-search\.maxQueryDuration=([0-9a-zµ.]+)`)

// timeoutText is --victorialogs-timeout as said in a message.
func timeoutText(d time.Duration) string {
	if d <= 0 {
		return "(none)"
	}
	return d.String()
}

// afterQuery is a message without the query it quotes ("cannot execute
// query [...]: why").
func afterQuery(msg string) string {
	if i := strings.LastIndex(msg, "]: "); i >= 0 {
		return msg[i+3:]
	}
	return msg
}

// explainErr is explain, nil for nil.
func (c *Client) explainErr(err error) error {
	if err == nil {
		return nil
	}
	return c.explain(err)
}

// explain turns an error into one line that says what to do.
func (c *Client) explain(err error) error {
	var se *storeError
	var ne net.Error
	var re rowError
	switch {
	case errors.As(err, &re):
		return re.error
	case errors.As(err, &se):
		switch {
		case se.code == http.StatusForbidden && c.opts.Service != "":
			return fetch.ServiceProxyForbidden(c.where, c.opts.Service)
		case se.code == http.StatusUnauthorized || se.code == http.StatusForbidden:
			return fmt.Errorf("%s: %s (HTTP %d): check the credentials", c.where, http.StatusText(se.code), se.code)
		case se.code == http.StatusBadRequest && strings.Contains(se.msg, "unsupported path"):
			return fmt.Errorf("%s: no LogsQL API there (HTTP 400, %s): give VictoriaLogs' base URL, such as http://victorialogs:9428", c.where, se.msg)
		case se.code == http.StatusBadRequest && strings.Contains(se.msg, "cannot parse `query`"):
			msg := shorten(afterQuery(se.msg))
			return fmt.Errorf("%s: the store cannot parse the query (check --victorialogs-query and --victorialogs-prefix): %s", c.where, msg)
		case se.code == http.StatusNotFound:
			return fmt.Errorf("%s: no LogsQL API at /select/logsql/query (HTTP 404): is it the URL of VictoriaLogs (a single node or a cluster's select node)?", c.where)
		case maxQueryDuration.MatchString(se.msg):
			// the store stops a query at the lower of its own limit and
			// the timeout argument; its message names the former
			return fmt.Errorf("%s: the query timed out in the store, which stops a query at the lower of its -search.maxQueryDuration=%s and this command's --victorialogs-timeout %s: narrow --since/--until or the filter, or raise the lower one",
				c.where, maxQueryDuration.FindStringSubmatch(se.msg)[1], timeoutText(c.opts.Timeout))
		case strings.Contains(se.msg, "timeout") || strings.Contains(se.msg, "deadline"):
			return fmt.Errorf("%s: the query timed out in the store (%s): narrow --since/--until or the filter, or raise --victorialogs-timeout", c.where, se.msg)
		case se.storageDown():
			return fmt.Errorf("%s: no storage node answered (HTTP 502): %s", c.where, shorten(afterQuery(se.msg)))
		}
		return fmt.Errorf("%s: the store refused the query (HTTP %d): %s", c.where, se.code, shorten(se.msg))
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return fmt.Errorf("%s: no answer in time: narrow --since/--until or raise --victorialogs-timeout", c.where)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("interrupted: %w", err)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("%s: cannot reach VictoriaLogs: %v", c.where, err)
}

// shorten keeps the first 300 bytes of a message.
func shorten(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// detail is the first line of an error body, shortened.
func detail(body string) string {
	body = strings.TrimSpace(body)
	if i := strings.IndexByte(body, '\n'); i >= 0 {
		body = body[:i]
	}

	if body == "" {
		return "empty answer"
	}
	return body
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (b *countingReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n.Add(int64(n))
	return n, err
}
