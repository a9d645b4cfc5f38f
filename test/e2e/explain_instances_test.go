package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// TestExplainPastTwoInstances drives 429s on two kube-apiservers sharing
// one etcd, each with its own APF (server concurrency limit 15: the load
// level has 1 seat, 8 queues, hand 2, length 3 on each), the same clients
// sending to both for 30 s. The load is moderate (a few percent of 429s):
// under heavier queueing the reconstruction from an audit log alone takes
// its threshold τ from the annotated (slower than 500 ms) requests and
// misses 429s on an instance that serves few exempt requests, whether it
// is given alone or with the other. Then "explain 429 --workload" over both instances' logs
// (each apiserver's httplog and audit log, and the audit logs alone) must:
//
//   - split them into the two instances, each httplog joined to its
//     instance's audit log;
//   - on each instance, reconstruct fates that agree with the server's
//     answers on at least 95% of the requests from httplog + audit, 90%
//     from the audit log alone;
//   - give each instance's rejections by client exactly as its audit log
//     counts its 429s, and the merged incidents their sums.
func TestExplainPastTwoInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the local control plane")
	}
	began := time.Now()
	c := testcluster.StartT(t, testcluster.Options{})
	ctx := context.Background()
	second, err := c.AddAPIServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := setUpLoad(t, c, loadSetup{wait: true, reject: true})
	users := []int{1, 2, 3, 4, 8}
	var flows []loadgen.PlanFlow
	for _, a := range c.APIServers {
		for _, u := range users {
			pf := loadgen.PlanFlow{Config: c.RESTConfigFor(a, testcluster.LoadUserName(u)), Rate: 2.5, Burst: 5}
			if u == 8 {
				pf.Rate, pf.Burst = 1, 4
			}
			flows = append(flows, pf)
		}
	}
	if err := loadgen.WaitForLevel(ctx, c.RESTConfigFor(second, testcluster.LoadUserName(1)), names, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runLintPlugin(t, c, "version"); code != 0 {
		t.Fatalf("kubectl apf version: exit %d: %s", code, errOut)
	}
	rep, err := loadgen.RunPlan(ctx, loadgen.PlanOptions{Seed: 11, Duration: 30 * time.Second, Names: names, Flows: flows})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("load over both instances: sent %d, by status %v, 429s by level %v, %d late", rep.Sent, rep.ByStatus, rep.RejectedByPriority, rep.Late)
	if rep.RejectedByPriority[loadgen.Level] == 0 {
		t.Fatal("the load got no 429 from the level: nothing to explain")
	}
	time.Sleep(time.Second) // the audit backend writes in batches

	// each instance's 429s by user, straight from its audit log
	want := map[string]map[string]float64{}
	instanceOf := map[*testcluster.APIServer]string{c.APIServers[0]: "kube-apiserver-audit.log", second: "kube-apiserver-2-audit.log"}
	for _, a := range c.APIServers {
		w := map[string]float64{}
		queued := 0.0
		for _, ev := range readAudit(t, a.AuditLog) {
			if ev.ResponseStatus.Code == 429 {
				w[ev.User.Username]++
			}
		}
		for _, u := range users[:4] {
			queued += w[testcluster.LoadUserName(u)]
		}
		t.Logf("%s: 429s by user %v", a.Name, w)
		// the queuing level's 429s are the ones a reconstruction can miss
		if queued < 5 || w[testcluster.LoadUserName(8)] == 0 {
			t.Fatalf("%s: %v 429s of the queuing level, %v of the Reject level: too few to compare fates", a.Name, queued, w[testcluster.LoadUserName(8)])
		}
		want[instanceOf[a]] = w
	}
	a1, a2 := c.APIServers[0], second
	explain429 := func(name string, extra []string, files ...string) *rejections.Report {
		t.Helper()
		args := append([]string{"explain", "429", "-o", "json"}, extra...)
		for _, f := range files {
			args = append(args, "--workload", f)
		}
		start := time.Now()
		code, out, errOut := runLintPlugin(t, c, args...)
		if code != 0 {
			t.Fatalf("%s: explain 429 --workload: exit %d: %s", name, code, errOut)
		}
		var r rejections.Report
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%s: %v: %s", name, err, out)
		}
		t.Logf("%s: explain 429 took %v; notes: %q", name, time.Since(start).Round(time.Millisecond), r.Notes)
		return &r
	}
	for _, in := range []struct {
		name   string
		files  []string
		goal   float64
		alone1 []string
		alone2 []string
	}{
		{"httplog+audit", []string{a1.LogFile, a1.AuditLog, a2.LogFile, a2.AuditLog}, 0.95, []string{a1.LogFile, a1.AuditLog}, []string{a2.LogFile, a2.AuditLog}},
		{"audit", []string{a2.AuditLog, a1.AuditLog}, 0.90, []string{a1.AuditLog}, []string{a2.AuditLog}},
	} {
		r := explain429(in.name, nil, in.files...)
		// for comparison, both instances reconstructed as one APF, as
		// before instances were told apart
		if one := explain429(in.name+" as one instance", []string{"--instance", "one"}, in.files...); len(one.Instances) == 1 {
			var notes []string
			for _, n := range one.Notes {
				if strings.Contains(n, "fates agree") {
					notes = append(notes, n)
				}
			}
			t.Logf("%s: as one instance: %s", in.name, strings.Join(notes, "; "))
		}
		// each instance's files alone: the instance's report must be theirs
		alone := map[string]*rejections.Report{"kube-apiserver-audit.log": explain429(in.name+" "+a1.Name+" alone", nil, in.alone1...),
			"kube-apiserver-2-audit.log": explain429(in.name+" "+a2.Name+" alone", nil, in.alone2...)}
		if got := instanceNames(r.Instances); !slices.Equal(got, []string{"kube-apiserver-2-audit.log", "kube-apiserver-audit.log"}) {
			t.Fatalf("%s: instances %q, want the two audit logs' (each httplog joined to its own)", in.name, got)
		}
		merged := map[string]float64{}
		for _, ri := range r.Instances {
			f := ri.Fates
			if f == nil || f.Total == 0 {
				t.Errorf("%s: %s: no fate compared", in.name, ri.Name)
				continue
			}
			frac := float64(f.Agreeing) / float64(f.Total)
			t.Logf("%s: %s (limit %d): fates agree on %d of %d requests (%.1f%%)", in.name, ri.Name, ri.ServerConcurrencyLimit, f.Agreeing, f.Total, 100*frac)
			if frac < in.goal {
				t.Errorf("%s: %s: the reconstructed fates agree with the server on %.1f%% of the requests, below %.0f%%", in.name, ri.Name, 100*frac, 100*in.goal)
			}
			if a := alone[ri.Name]; a != nil {
				for j := range a.Incidents {
					a.Incidents[j].Instances = []rejections.InstanceCount{{Instance: ri.Name, Count: a.Incidents[j].Rejected}}
				}
				if !reflect.DeepEqual(ri.Incidents, a.Incidents) {
					t.Errorf("%s: %s: the instance's incidents differ from its files' alone", in.name, ri.Name)
				}
			}
			got := rejectedByUser(ri.Incidents)
			if !maps.Equal(got, want[ri.Name]) {
				t.Errorf("%s: %s: rejected by user %v, its audit log's 429s %v", in.name, ri.Name, got, want[ri.Name])
			}
			for u, n := range got {
				merged[u] += n
			}
		}
		if got := rejectedByUser(r.Incidents); !maps.Equal(got, merged) {
			t.Errorf("%s: the merged incidents' rejected by user %v, the instances' sums %v", in.name, got, merged)
		}
	}
	t.Logf("test time %v", time.Since(began).Round(time.Second))
}

func instanceNames(is []rejections.Instance) []string {
	out := make([]string, len(is))
	for i, in := range is {
		out[i] = in.Name
	}
	return out
}

// rejectedByUser sums the incidents' rejected clients by user.
func rejectedByUser(incidents []rejections.Incident) map[string]float64 {
	out := map[string]float64{}
	for _, in := range incidents {
		if in.Clients == nil {
			continue
		}
		for _, c := range in.Clients.Rejected {
			out[c.User] += c.Count
		}
	}
	return out
}
