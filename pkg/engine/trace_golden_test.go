package engine

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/golden"
)

// goldenTrace is the part of a classification a golden file pins.
type goldenTrace struct {
	Request       string
	Identity      Identity
	FlowSchema    string
	PriorityLevel string
	Fallback      bool
	Rule          int
	Flow          Flow
	Hand          []int
	Trace         []TraceStep
}

// TestTraceGolden pins the full trace of representative requests on the
// default configuration (review the diff of testdata/engine/trace/*.json
// like code when it changes; rewrite with go test ./pkg/engine -run
// TestTraceGolden -update).
func TestTraceGolden(t *testing.T) {
	cfg := DefaultConfig()
	tests := []struct {
		name, verb, path string
		id               Identity
	}{
		{"alice-get-pod", "get", "/api/v1/namespaces/default/pods/p", NewUserIdentity("alice")},
		{"kube-proxy-list-endpointslices", "list", "/apis/discovery.k8s.io/v1/endpointslices", NewServiceAccountIdentity("kube-system", "kube-proxy")},
		{"node-lease-update", "update", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", NewUserIdentity("system:node:n1", "system:nodes")},
		{"anonymous-post-healthz", "POST", "/healthz", AnonymousIdentity()},
		{"user-without-groups", "get", "/api/v1/namespaces/default/pods/p", Identity{User: "nobody"}},
		{"namespace-status", "update", "/api/v1/namespaces/team-a/status", NewServiceAccountIdentity("team-a", "ctl")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustParse(t, tt.verb, tt.path, tt.id)
			c := cfg.ClassifyWithTrace(r)
			got, err := json.MarshalIndent(goldenTrace{
				Request: tt.verb + " " + tt.path, Identity: tt.id, FlowSchema: c.FlowSchema.Name, PriorityLevel: c.PriorityLevel.Name,
				Fallback: c.Fallback, Rule: c.Rule, Flow: c.Flow, Hand: c.Hand, Trace: c.Trace,
			}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("..", "..", "testdata", "engine", "trace", tt.name+".json")
			golden.Assert(t, path, got)
		})
	}
}
