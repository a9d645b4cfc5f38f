package explain

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/golden"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	rejrender "github.com/kubectl-apf/kubectl-apf/pkg/rejections/render"
)

// goldenDir is the repository's testdata/explain.
var goldenDir = filepath.Join("..", "..", "testdata", "explain")

// checkGolden compares got with testdata/explain/<name> (internal/testharness/golden: go
// test ./pkg/explain -update rewrites it).
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Assert(t, filepath.Join(goldenDir, name), got)
}

// TestGoldenText freezes the human output. Everything that varies is fixed:
// the live state is hand-built, the instance name and times are constants,
// map iteration never reaches the output.
func TestGoldenText(t *testing.T) {
	defaults := defaultsConfig(t)
	small := smallConfig()
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	u := engine.NewUserIdentity("u")
	hand := Explain(Input{Config: small}, mustRequest(t, "get", "/api/v1/namespaces/d/pods/p", u), nil).Queues.Hand
	agree := func(ex *Explanation) *Explanation {
		ex.CompareNames("httplog", "system-nodes", "system", 200)
		return ex
	}
	disagree := func(ex *Explanation) *Explanation {
		ex.CompareUIDs("probe", "uid-fs-other", "uid-pl-q", true, 403, map[string]string{"uid-fs-other": "other", "uid-pl-q": "q"})
		return ex
	}
	tests := []struct {
		name string
		ex   *Explanation
	}{
		{"request-node-configmap-defaults.txt", agree(Explain(Input{Config: defaults}, mustRequest(t, "GET", "/api/v1/namespaces/default/configmaps/app", engine.NewUserIdentity("system:node:n1", "system:nodes")), []string{"system:nodes"}))},
		{"request-service-account-list.txt", Explain(Input{Config: defaults}, mustRequest(t, "list", "/api/v1/endpoints", engine.NewServiceAccountIdentity("kube-system", "coredns")), nil)},
		{"request-nonresource-healthz.txt", Explain(Input{Config: defaults}, mustRequest(t, "get", "/healthz", engine.NewUserIdentity("alice")), nil)},
		{"request-bypass-exec.txt", Explain(Input{Config: defaults}, mustRequest(t, "create", "/api/v1/namespaces/default/pods/web/exec", engine.NewUserIdentity("alice")), nil)},
		{"request-fallback-catch-all.txt", Explain(Input{Config: defaults}, mustRequest(t, "get", "/api/v1/namespaces/default/pods/web", engine.Identity{User: "odd", Groups: []string{"weird"}}), []string{"weird"})},
		{"request-queued.txt", Explain(Input{Config: small, ServerConcurrencyLimit: 100, Live: liveQ(t, at, 4, 4, 2*time.Second,
			dump.QueueRow{PriorityLevel: "q", Index: hand[0].Index, PendingRequests: 1, MaxSeatsSum: 1, TotalWorkSum: 0.003},
			dump.QueueRow{PriorityLevel: "q", Index: hand[1].Index, PendingRequests: 1, MaxSeatsSum: 1, TotalWorkSum: 0.006})}, mustRequest(t, "get", "/api/v1/namespaces/d/pods/p", u), nil)},
		{"request-rejected-queue-full.txt", disagree(Explain(Input{Config: small, ServerConcurrencyLimit: 100, Live: liveQ(t, at, 4, 4, time.Second,
			dump.QueueRow{PriorityLevel: "q", Index: hand[0].Index, PendingRequests: 2, MaxSeatsSum: 2, TotalWorkSum: 0.006},
			dump.QueueRow{PriorityLevel: "q", Index: hand[1].Index, PendingRequests: 2, MaxSeatsSum: 2, TotalWorkSum: 0.006})}, mustRequest(t, "list", "/api/v1/namespaces/d/events", u), nil))},
		{"request-rejected-reject-level.txt", Explain(Input{Config: small, ServerConcurrencyLimit: 100, Live: liveR(t, at, 2, 2)}, mustRequest(t, "get", "/api/v1/namespaces/d/pods/p", engine.NewUserIdentity("v")), nil)},
	}
	la, lb := liveR(t, at, 2, 0), liveR(t, at, 2, 2)
	la.Instance, lb.Instance = "https://apiserver-1", "https://apiserver-2"
	tests = append(tests, struct {
		name string
		ex   *Explanation
	}{"request-two-apiservers.txt", ExplainOnEach(Input{Config: small, ServerConcurrencyLimit: 100}, []*dump.Snapshot{la, lb}, mustRequest(t, "get", "/api/v1/namespaces/d/pods/p", engine.NewUserIdentity("v")), nil)})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteText(&buf, tt.ex); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tt.name, buf.Bytes())
		})
	}
	t.Run("request-queued.json", func(t *testing.T) {
		b, err := json.MarshalIndent(tests[5].ex, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "request-queued.json", append(b, '\n'))
	})
	t.Run("message-client-throttling.txt", func(t *testing.T) {
		m, err := ParseMessage(`"Waited before sending request" delay="1.034s" reason="client-side throttling, not priority and fairness" verb="GET" URL="https://10.0.0.1:443/api/v1/pods?limit=500"`)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WriteMessageText(&buf, m); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "message-client-throttling.txt", buf.Bytes())
	})
	t.Run("triage.txt", func(t *testing.T) {
		live := twoScrapes(t, "q", 4, 4, map[string]int{"queue-full": 10}, map[string]int{"queue-full": 60, "time-out": 5}, 0, 70)
		live.QueueDump = []dump.QueueRow{{PriorityLevel: "q", Index: hand[0].Index, PendingRequests: 2}, {PriorityLevel: "q", Index: hand[1].Index, PendingRequests: 2}}
		for i := 0; i < 4; i++ {
			live.RequestDump = append(live.RequestDump, dump.RequestRow{PriorityLevel: "q", FlowSchema: "fs-q", FlowDistinguisher: "u", QueueIndex: hand[i%2].Index, IndexInQueue: i / 2, InitialSeats: 1 + i})
		}
		// a dump of 1.27 or later, whose counters say nothing was rejected
		idle := &dump.Snapshot{Instance: "https://apiserver-2", PriorityLevelDump: []dump.PriorityLevelRow{{Name: "q", HasCounters: true}}}
		var buf bytes.Buffer
		if err := rejrender.WriteText(&buf, Explain429(small, 100, time.Minute, []*dump.Snapshot{live, idle}), rejrender.Options{}); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "triage.txt", buf.Bytes())
	})
}
