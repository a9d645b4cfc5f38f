package main

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
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
)

// Run explains the request and prints the explanation.
func (o *ExplainRequestOptions) Run(ctx context.Context) error {
	if o.messageOnly() {
		if o.message.APF {
			// about APF, but naming no request to classify: say what the
			// message means, and what to add for the request's level
			fmt.Fprintf(o.ErrOut, "note: %s\n", explain.MessageNeedsRequest(o.message))
		}
		return o.print(o.message, func(w io.Writer) error { return explain.WriteMessageText(w, o.message) })
	}
	r, err := engine.ParseRequest(o.verb, o.path, *o.identity)
	if err != nil {
		return err
	}
	st, err := o.Load(ctx, load.Request{Parts: dump.PartPriorityLevels | dump.PartQueues | dump.PartRequests | dump.PartMetrics,
		ConfigOnlyFallback: true, ServerConcurrency: o.Server.Concurrency, InferConcurrency: true, Stdin: o.In, NeedObjects: "requests cannot be classified"})
	if err != nil {
		return err
	}
	for _, n := range st.Notes {
		fmt.Fprintln(o.ErrOut, n)
	}
	in := explain.Input{Config: st.Config(), ServerConcurrencyLimit: st.ServerConcurrency, ServerRequestTimeout: o.Server.RequestTimeout,
		Release: st.Release, ReleaseFrom: st.ReleaseFrom}
	ex := explain.ExplainOnEach(in, st.Live, r, o.givenGroups)
	if o.message != nil {
		ex.Notes = append(ex.Notes, o.message.Explanation)
	}
	if o.recorded != nil {
		if err := o.explainRecorded(ctx, st, ex); err != nil {
			return err
		}
	}
	if o.Probe {
		if err := o.probe(ctx, r, ex, namesByUID(st.BaseFlowSchemas, st.BasePriorityLevels)); err != nil {
			return err
		}
	}
	return o.print(ex, func(w io.Writer) error { return explain.WriteText(w, ex) })
}

func (o *ExplainRequestOptions) print(v any, text func(io.Writer) error) error {
	return printObject(o.Out, o.Flags, v, text)
}

// probe sends r impersonating its identity and records the server's
// classification headers in ex.
func (o *ExplainRequestOptions) probe(ctx context.Context, r engine.Request, ex *explain.Explanation, names map[string]string) error {
	cfg := rest.CopyConfig(o.ProbeConfig)
	// client-go impersonation (kubectl --as/--as-group): the server's
	// WithImpersonation adds system:authenticated (or, for system:anonymous,
	// system:unauthenticated) itself.
	imp := rest.ImpersonationConfig{UserName: r.Identity.User}
	if r.Identity.User != user.Anonymous {
		for _, g := range r.Identity.Groups {
			if g != user.AllAuthenticated {
				imp.Groups = append(imp.Groups, g)
			}
		}
	}
	cfg.Impersonate = imp
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("--probe: building a client: %w", err)
	}
	u, err := url.Parse(strings.TrimRight(cfg.Host, "/") + cfg.APIPath)
	if err != nil {
		return fmt.Errorf("--probe: parsing the server URL %q: %w", cfg.Host, err)
	}
	ru, err := url.ParseRequestURI(r.URL)
	if err != nil {
		return fmt.Errorf("--probe: %w", err)
	}
	u.Path = strings.TrimRight(u.Path, "/") + ru.Path
	q := ru.Query()
	if r.Info.Verb == "list" {
		// Read-only and small: one object is enough to be classified.
		q.Set("limit", "1")
	}
	u.RawQuery = q.Encode()
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return fmt.Errorf("--probe: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("--probe: sending %s %s to %s: %w", method, r.URL, cfg.Host, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	fsUID := resp.Header.Get(dump.HeaderFlowSchemaUID)
	plUID := resp.Header.Get(dump.HeaderPriorityLevelUID)
	_, present := resp.Header[http.CanonicalHeaderKey(dump.HeaderFlowSchemaUID)]
	// A refused impersonation is answered by WithImpersonation, before APF,
	// with "... cannot impersonate resource ...".
	if resp.StatusCode == http.StatusForbidden && !present && strings.Contains(string(body), "cannot impersonate") {
		return fmt.Errorf("--probe: the server refused to impersonate %q (403): the kubeconfig's user needs RBAC verb impersonate on users and groups", r.Identity.User)
	}
	ex.CompareUIDs(fsUID, plUID, present, resp.StatusCode, names)
	return nil
}
