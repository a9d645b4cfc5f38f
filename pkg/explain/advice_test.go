package explain

import (
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/golden"
	"github.com/kubectl-apf/kubectl-apf/pkg/config"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// TestIsolationYAMLIsValidAndWins decodes the advice strictly as the API
// server would (pkg/lint's parser), applies it over the defaults, and checks
// with the engine that the level is usable, the schema is not dangling, and
// the same request now lands in the new schema and level.
func TestIsolationYAMLIsValidAndWins(t *testing.T) {
	fss, pls := config.UpstreamDefaults()
	base := engine.NewConfig(fss, pls)
	tests := []struct {
		name       string
		verb, path string
		id         engine.Identity
	}{
		{"user list in a namespace", "list", "/api/v1/namespaces/default/events", engine.NewUserIdentity("alice", "dev")},
		{"service account list cluster-wide", "list", "/apis/apps/v1/deployments", engine.NewServiceAccountIdentity("team-a", "operator")},
		{"subresource", "patch", "/api/v1/namespaces/default/pods/web/status", engine.NewUserIdentity("system:node:n1", "system:nodes")},
		{"non-resource path", "get", "/metrics", engine.NewUserIdentity("prometheus")},
		{"odd user name", "get", "/api/v1/namespaces/x/configmaps/y", engine.NewUserIdentity("CN=Weird User/Team#1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustRequest(t, tt.verb, tt.path, tt.id)
			before := base.Classify(r)
			y, err := IsolationYAML(r, before.FlowSchema.Spec.MatchingPrecedence)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := config.ParseObjects([]byte(y), "advice")
			if err != nil {
				t.Fatalf("the advice does not decode strictly: %v\n%s", err, y)
			}
			if len(objs.FlowSchemas) != 1 || len(objs.PriorityLevels) != 1 || objs.Skipped != 0 {
				t.Fatalf("want one FlowSchema and one level, got %+v\n%s", objs, y)
			}
			name := objs.FlowSchemas[0].Name
			if len(name) > 63 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
				t.Errorf("name %q is not a DNS label", name)
			}
			f2, p2 := config.Overlay(fss, pls, objs)
			after := engine.NewConfig(f2, p2)
			if len(after.Broken) != 0 || len(after.Dangling) != 0 {
				t.Fatalf("broken %+v, dangling %+v\n%s", after.Broken, after.Dangling, y)
			}
			got := after.Classify(r)
			if got.FlowSchema.Name != name || got.PriorityLevel.Name != objs.PriorityLevels[0].Name {
				t.Errorf("after applying the advice the request lands in %s/%s, want %s", got.FlowSchema.Name, got.PriorityLevel.Name, name)
			}
			// Another identity is not captured by the new schema.
			other := r
			other.Identity = engine.NewUserIdentity("someone-else")
			if after.Classify(other).FlowSchema.Name == name {
				t.Errorf("the advice captures other users too")
			}
		})
	}
	if _, err := IsolationYAML(mustRequest(t, "get", "/healthz", engine.NewUserIdentity("a")), 1); err == nil {
		t.Errorf("no room before precedence 1 must be an error")
	}
}

// TestAdviceOnCatchAllAndRejections: requests in catch-all, and rejected
// ones, get isolation YAML; a LIST without limit gets pagination advice.
func TestAdviceOnCatchAllAndRejections(t *testing.T) {
	cfg := defaultsConfig(t)
	ex := Explain(Input{Config: cfg}, mustRequest(t, "get", "/api/v1/namespaces/d/pods/p", engine.Identity{User: "odd", Groups: []string{"weird"}}), nil)
	if len(ex.Advice) == 0 || ex.Advice[0].YAML == "" || !strings.Contains(ex.Advice[0].Text, "catch-all") {
		t.Errorf("catch-all advice missing: %+v", ex.Advice)
	}
	ex = Explain(Input{Config: cfg}, mustRequest(t, "list", "/api/v1/pods", engine.NewUserIdentity("alice")), nil)
	found := false
	for _, a := range ex.Advice {
		found = found || strings.Contains(a.Text, "?limit=500")
	}
	if !found {
		t.Errorf("no pagination advice for a LIST without limit: %+v", ex.Advice)
	}
	ex = Explain(Input{Config: cfg}, mustRequest(t, "list", "/api/v1/pods?limit=500", engine.NewUserIdentity("alice")), nil)
	for _, a := range ex.Advice {
		if strings.Contains(a.Text, "?limit=500") {
			t.Errorf("pagination advice for a paginated LIST: %+v", a)
		}
	}
	// a level that caps every request at 1 seat: the LIST's cost is the
	// time it holds that seat, not seats (the demo's apf-load)
	ex = Explain(Input{Config: smallConfig(), ServerConcurrencyLimit: 4}, mustRequest(t, "list", "/api/v1/pods", engine.NewUserIdentity("u")), nil)
	if ex.Seats == nil || ex.Seats.Max != 1 {
		t.Fatalf("level q of 4 seats should cap a LIST at 1 seat: %+v", ex.Seats)
	}
	golden.Holds(t, "advice", adviceText(ex.Advice), []string{"this LIST reads every object and holds its seat for as long as that takes"}, []string{"many seats"})
	cfgQ := smallConfig()
	ex = Explain(Input{Config: cfgQ, Live: liveR(t, time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), 1, 1)}, mustRequest(t, "get", "/api/v1/namespaces/d/pods/p", engine.NewUserIdentity("v")), nil)
	if ex.Verdict.Kind != VerdictRejected || len(ex.Advice) == 0 || ex.Advice[0].YAML == "" {
		t.Errorf("a rejected request gets isolation YAML: %+v %+v", ex.Verdict, ex.Advice)
	}
}

// adviceText is every advice's text, a line each.
func adviceText(as []Advice) string {
	var b strings.Builder
	for _, a := range as {
		b.WriteString(a.Text + "\n")
	}
	return b.String()
}
