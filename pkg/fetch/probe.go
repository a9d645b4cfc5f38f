package fetch

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
)

// ProbeRequest is a read-only request to send as an identity, for
// "explain request --probe".
type ProbeRequest struct {
	// Method is GET (or empty, read as GET); any other is refused.
	Method string
	// URL is the request's path and query, below the server's API path.
	URL string
	// List adds limit=1: one object is enough to be classified.
	List bool
	// User and Groups are the identity impersonated.
	User   string
	Groups []string
}

// ProbeResult is the server's classification of a probe: the UIDs of its
// X-Kubernetes-PF-* headers, whether the FlowSchema header was present at
// all, and the status code.
type ProbeResult struct {
	FlowSchemaUID, PriorityLevelUID string
	Present                         bool
	Status                          int
}

// Probe sends r to the server of cfg impersonating r's identity and
// returns the server's classification headers. Errors are one line, each
// starting "--probe:".
func Probe(ctx context.Context, cfg *rest.Config, r ProbeRequest) (ProbeResult, error) {
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	if method != http.MethodGet {
		return ProbeResult{}, fmt.Errorf("--probe sends only GETs, not %s", method)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = probeImpersonation(r.User, r.Groups)
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return ProbeResult{}, fmt.Errorf("--probe: building a client: %w", err)
	}
	u, err := url.Parse(strings.TrimRight(cfg.Host, "/") + cfg.APIPath)
	if err != nil {
		return ProbeResult{}, fmt.Errorf("--probe: parsing the server URL %q: %w", cfg.Host, err)
	}
	ru, err := url.ParseRequestURI(r.URL)
	if err != nil {
		return ProbeResult{}, fmt.Errorf("--probe: %w", err)
	}
	u.Path = strings.TrimRight(u.Path, "/") + ru.Path
	q := ru.Query()
	if r.List {
		// Read-only and small: one object is enough to be classified.
		q.Set("limit", "1")
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return ProbeResult{}, fmt.Errorf("--probe: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return ProbeResult{}, fmt.Errorf("--probe: sending %s %s to %s: %w", method, r.URL, cfg.Host, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_, present := resp.Header[http.CanonicalHeaderKey(dump.HeaderFlowSchemaUID)]
	// A refused impersonation is answered by WithImpersonation, before APF,
	// with "... cannot impersonate resource ...".
	if resp.StatusCode == http.StatusForbidden && !present && strings.Contains(string(body), "cannot impersonate") {
		return ProbeResult{}, fmt.Errorf("--probe: the server refused to impersonate %q (403): the kubeconfig's user needs RBAC verb impersonate on users and groups", r.User)
	}
	return ProbeResult{FlowSchemaUID: resp.Header.Get(dump.HeaderFlowSchemaUID), PriorityLevelUID: resp.Header.Get(dump.HeaderPriorityLevelUID),
		Present: present, Status: resp.StatusCode}, nil
}

// probeImpersonation is client-go's impersonation (kubectl --as/--as-group)
// of a user and groups: the server's WithImpersonation adds
// system:authenticated (or, for system:anonymous, system:unauthenticated)
// itself, so it is not sent, and an anonymous user is sent with no group.
func probeImpersonation(userName string, groups []string) rest.ImpersonationConfig {
	imp := rest.ImpersonationConfig{UserName: userName}
	if userName != user.Anonymous {
		for _, g := range groups {
			if g != user.AllAuthenticated {
				imp.Groups = append(imp.Groups, g)
			}
		}
	}
	return imp
}
