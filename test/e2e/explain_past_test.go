package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// TestExplainPastIncident drives real 429s on the local control plane: a
// heavy client and two light ones share the load generator's level (1 seat,
// 8 queues, hand 2, length 3). Then, from the apiserver's logs alone:
//
//   - "explain 429 --workload <audit log>" names the heavy client as the
//     main seat holder, and the clients it rejected with the counts counted
//     straight from the audit log's 429 answers;
//   - five 429 lines of the httplog, picked at random, each get from
//     "explain request --from-log" a verdict of 429 with its reason.
func TestExplainPastIncident(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the local control plane")
	}
	c := testcluster.StartT(t, testcluster.Options{})
	ctx := context.Background()
	names, flows := loadgen.SetUpT(t, c, loadgen.FlowSetup{Flows: 6, Wait: true})
	if code, _, errOut := runLintPlugin(t, c, "version"); code != 0 {
		t.Fatalf("kubectl apf version: exit %d: %s", code, errOut)
	}
	heavy, light1, light2 := testcluster.LoadUserName(1), testcluster.LoadUserName(2), testcluster.LoadUserName(3)
	rep, err := loadgen.RunPlan(ctx, loadgen.PlanOptions{Seed: 7, Duration: 15 * time.Second, Names: names, Flows: []loadgen.PlanFlow{
		{Config: flows[0], Rate: 6, Burst: 10},
		{Config: flows[1], Rate: 1, Burst: 3},
		{Config: flows[2], Rate: 1, Burst: 3},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("load: sent %d, by status %v, 429s by level %v", rep.Sent, rep.ByStatus, rep.RejectedByPriority)
	if rep.RejectedByPriority[loadgen.Level] == 0 {
		t.Fatal("the load got no 429 from the level: nothing to explain")
	}
	time.Sleep(time.Second) // the audit backend writes in batches
	a := c.APIServers[0]

	// who was rejected, straight from the audit log
	want := map[string]float64{}
	for _, ev := range readAudit(t, a.AuditLog) {
		if ev.ResponseStatus.Code == 429 && (ev.User.Username == heavy || ev.User.Username == light1 || ev.User.Username == light2) {
			want[ev.User.Username]++
		}
	}
	code, out, errOut := runLintPlugin(t, c, "explain", "429", "--workload", a.AuditLog, "-o", "json")
	if code != 0 {
		t.Fatalf("explain 429 --workload: exit %d: %s", code, errOut)
	}
	var r rejections.Report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got, held := map[string]float64{}, map[string]float64{}
	for _, in := range r.Incidents {
		if in.Level != loadgen.Level || in.Clients == nil {
			continue
		}
		for _, c := range in.Clients.Rejected {
			got[c.User] += c.Count
		}
		for _, c := range in.Clients.HeldSeats {
			held[c.User] += *c.SeatSeconds
		}
	}
	t.Logf("rejected by user: %v (audit log: %v); seat-seconds held: %v; notes: %v", got, want, held, r.Notes)
	for u, n := range want {
		if got[u] != n {
			t.Errorf("%s: explain 429 --workload says %v rejected, the audit log has %v 429s", u, got[u], n)
		}
	}
	for u := range got {
		if _, ok := want[u]; !ok {
			t.Errorf("explain 429 --workload names %s as rejected, the audit log has no 429 of it", u)
		}
	}
	// an elephant is the heavy client; many light flows crowding each
	// other are too little concurrency, not an elephant
	for _, in := range r.Incidents {
		for _, c := range in.Causes {
			t.Logf("%s: cause %s: %s", in.Level, c.Kind, c.Evidence)
			if c.Kind == rejections.CauseElephantFlow && !strings.Contains(c.Evidence, "/"+heavy+" most often") {
				t.Errorf("%s: elephant-flow names another flow than the heavy client %s: %s", in.Level, heavy, c.Evidence)
			}
		}
	}
	for u, s := range held {
		if u != heavy && s >= held[heavy] {
			t.Errorf("%s held %.3f seat-seconds, the heavy client %s %.3f: the heavy client should be the main seat holder", u, s, heavy, held[heavy])
		}
	}

	// five 429 lines at random, explained from the logs
	lines := lines429(t, a.LogFile, loadgen.Level)
	if len(lines) < 5 {
		t.Fatalf("the httplog has %d 429 lines of %s", len(lines), loadgen.Level)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("picking five of %d 429 lines with seed %d", len(lines), seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, i := range rng.Perm(len(lines))[:5] {
		id := lines[i]
		code, out, errOut := runLintPlugin(t, c, "explain", "request", "--from-log", a.LogFile, "--from-audit", a.AuditLog, "--audit-id", id, "-o", "json")
		if code != 0 {
			t.Fatalf("explain request %s: exit %d: %s", id, code, errOut)
		}
		var ex explain.Explanation
		if err := json.Unmarshal(out, &ex); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if ex.Past == nil || ex.Verdict.Kind != explain.VerdictRejected || ex.Verdict.RejectReason == "" {
			t.Errorf("%s: verdict %+v (reconstructed: %v), want 429 and its reason", id, ex.Verdict, ex.Past != nil)
		}
	}
}

type auditEvent struct {
	AuditID string `json:"auditID"`
	Stage   string `json:"stage"`
	User    struct {
		Username string `json:"username"`
	} `json:"user"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// readAudit reads the ResponseComplete events of an audit log.
func readAudit(t *testing.T, path string) []auditEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev auditEvent
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Stage == "ResponseComplete" {
			out = append(out, ev)
		}
	}
	return out
}

// lines429 returns the audit IDs of the httplog's 429 lines of a level.
func lines429(t *testing.T, path, level string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	re := regexp.MustCompile(`"HTTP" .*audit-ID="([^"]+)".*apf_pl="` + regexp.QuoteMeta(level) + `".* resp=429`)
	var ids []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if m := re.FindSubmatch(sc.Bytes()); m != nil {
			ids = append(ids, string(m[1]))
		}
	}
	return ids
}
