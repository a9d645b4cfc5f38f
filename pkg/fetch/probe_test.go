package fetch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
)

// TestProbe checks what --probe sends (a GET, impersonating the identity
// without system:authenticated, limit=1 for a list) and what it reads
// back, against a server that records the request; the classification
// itself is checked against the real kube-apiserver in test/e2e.
func TestProbe(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		if r.Header.Get("Impersonate-User") == "mallory" {
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`users "mallory" is forbidden: User "alice" cannot impersonate resource "users" in API group ""`))
			return
		}
		w.Header().Set(dump.HeaderFlowSchemaUID, "fs-uid")
		w.Header().Set(dump.HeaderPriorityLevelUID, "pl-uid")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}

	res, err := Probe(context.Background(), cfg, ProbeRequest{URL: "/api/v1/namespaces/default/pods?labelSelector=a%3Db", List: true,
		User: "bob", Groups: []string{"dev", "system:authenticated"}})
	if err != nil {
		t.Fatal(err)
	}
	if res != (ProbeResult{FlowSchemaUID: "fs-uid", PriorityLevelUID: "pl-uid", Present: true, Status: 200}) {
		t.Errorf("result %+v", res)
	}
	if got.Method != http.MethodGet || got.URL.Path != "/api/v1/namespaces/default/pods" || got.URL.Query().Get("limit") != "1" || got.URL.Query().Get("labelSelector") != "a=b" {
		t.Errorf("sent %s %s", got.Method, got.URL)
	}
	if u, g := got.Header.Get("Impersonate-User"), got.Header.Values("Impersonate-Group"); u != "bob" || strings.Join(g, ",") != "dev" {
		t.Errorf("impersonated %q %q, want bob [dev]", u, g)
	}

	// anonymous: no group is sent (the server adds system:unauthenticated)
	if _, err := Probe(context.Background(), cfg, ProbeRequest{URL: "/version", User: "system:anonymous", Groups: []string{"system:unauthenticated"}}); err != nil {
		t.Fatal(err)
	}
	if g := got.Header.Values("Impersonate-Group"); len(g) != 0 || got.URL.RawQuery != "" {
		t.Errorf("anonymous probe sent groups %q, query %q", g, got.URL.RawQuery)
	}

	for _, tt := range []struct {
		r    ProbeRequest
		want string
	}{
		{ProbeRequest{URL: "/api/v1/pods", User: "mallory"}, `--probe: the server refused to impersonate "mallory" (403)`},
		{ProbeRequest{Method: http.MethodPost, URL: "/api/v1/namespaces/default/pods", User: "bob"}, "--probe sends only GETs, not POST"},
	} {
		got = nil
		_, err := Probe(context.Background(), cfg, tt.r)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %v, want one line starting %q", tt.r, err, tt.want)
		}
		if tt.r.Method == http.MethodPost && got != nil {
			t.Errorf("a POST was sent")
		}
	}
}
