package loadgen

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/client-go/rest"
)

func TestMain(m *testing.M) {
	RunChildIfAsked()
	os.Exit(m.Run())
}

// planServer answers GET /ok with 200 and GET /reject with 429, each with
// the PF headers of a level of its own.
func planServer(t *testing.T) (*httptest.Server, *rest.Config) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID, "fs-uid")
		if r.URL.Path == "/reject" {
			w.Header().Set(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID, "uid-b")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID, "uid-a")
		_, _ = w.Write([]byte(strings.Repeat("x", 1000)))
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return srv, &rest.Config{Host: srv.URL, BearerToken: "t", TLSClientConfig: rest.TLSClientConfig{CAData: ca}, QPS: -1}
}

func testPlan(cfg *rest.Config) PlanOptions {
	return PlanOptions{
		Seed: 3, Duration: 2 * time.Second,
		Names: map[string]string{"uid-a": "level-a", "uid-b": "level-b", "fs-uid": "schema"},
		Flows: []PlanFlow{
			{Config: cfg, Path: "/ok", Rate: 5, Burst: 4},
			{Config: cfg, Path: "/reject", Rate: 3, Burst: 3},
		},
	}
}

// TestRunPlanProcesses runs one plan from goroutines and from client
// processes (this test binary re-executed) and checks that both count
// what the plan's shots make the server answer.
func TestRunPlanProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts client processes")
	}
	_, cfg := planServer(t)
	o := testPlan(cfg)
	var ok, rejected int
	for _, s := range o.Shots() {
		if s.Flow == 0 {
			ok++
		} else {
			rejected++
		}
	}
	if ok == 0 || rejected == 0 {
		t.Fatalf("the plan has %d shots of flow 0 and %d of flow 1: both must send", ok, rejected)
	}
	for _, procs := range []int{0, 3} {
		o.Processes = procs
		rep, err := RunPlan(context.Background(), o)
		if err != nil {
			t.Fatalf("%d processes: %v", procs, err)
		}
		if rep.Sent != ok+rejected || rep.Errors != 0 {
			t.Errorf("%d processes: sent %d with %d errors (%v), want %d without", procs, rep.Sent, rep.Errors, rep.FirstError, ok+rejected)
		}
		if rep.ByStatus[200] != ok || rep.Rejected() != rejected {
			t.Errorf("%d processes: statuses %v, want 200=%d 429=%d", procs, rep.ByStatus, ok, rejected)
		}
		if rep.RejectedByPriority["level-b"] != rejected || len(rep.RejectedByPriority) != 1 {
			t.Errorf("%d processes: 429s by level %v, want level-b=%d", procs, rep.RejectedByPriority, rejected)
		}
		if rep.ByPriority["level-a"] != ok || rep.ByFlowSched["schema"] != ok+rejected || rep.RetryAfter["1"] != rejected {
			t.Errorf("%d processes: by level %v, by schema %v, Retry-After %v", procs, rep.ByPriority, rep.ByFlowSched, rep.RetryAfter)
		}
	}
}

// TestRunPlanProcessesFailing checks that a client process that dies or
// writes something else than results makes RunPlan fail rather than hang.
func TestRunPlanProcessesFailing(t *testing.T) {
	_, cfg := planServer(t)
	o := testPlan(cfg)
	o.Processes = 2
	defer func(c func() (*exec.Cmd, error)) { childCommand = c }(childCommand)
	for _, c := range []struct{ name, script, want string }{
		{"dies", "echo boom >&2; exit 3", "boom"},
		{"garbage before ready", "echo hello; sleep 1", `"hello\n"`},
		{"garbage after ready", `echo '{"ready":true,"i":-1}'; read a; read b; echo '{"i":99999,"status":200}'`, "not the result of one of its requests"},
		{"too few results", `echo '{"ready":true,"i":-1}'; read a; read b`, "it answered for 0 of its"},
	} {
		childCommand = func() (*exec.Cmd, error) { return exec.Command("sh", "-c", c.script), nil }
		// a hang would show as the test's time-out
		_, err := RunPlan(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got error %v, want one with %q", c.name, err, c.want)
		}
	}
}

func TestSplitShots(t *testing.T) {
	shots := []Shot{{At: 1, Flow: 0}, {At: 2, Flow: 1}, {At: 3, Flow: 0}, {At: 4, Flow: 1}, {At: 5, Flow: 0}}
	got := splitShots(shots, 2)
	if len(got) != 2 || len(got[0]) != 3 || len(got[1]) != 2 {
		t.Fatalf("split into %v", got)
	}
	seen := map[int]bool{}
	for _, share := range got {
		for _, s := range share {
			if seen[s.Index] || shots[s.Index].At != s.At || shots[s.Index].Flow != s.Flow {
				t.Errorf("shot %+v is not the plan's shot %d or is dealt twice", s, s.Index)
			}
			seen[s.Index] = true
		}
	}
	if len(seen) != len(shots) {
		t.Errorf("%d of %d shots dealt", len(seen), len(shots))
	}
}
