package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/auditwrap"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// TestExplainPastTwoInstances drives 429s on two kube-apiservers sharing
// one etcd, each with its own APF (server concurrency limit 15: the load
// level has 1 seat, 8 queues, hand 2, length 3 on each), the same clients
// sending to both for 30 s. The load is moderate (a few percent of 429s).
// Then "explain 429 --workload" over both instances' logs (each
// apiserver's httplog and audit log, and the audit logs alone) must:
//
//   - split them into the two instances, each httplog joined to its
//     instance's audit log;
//   - on each instance, reconstruct fates that agree with the server's
//     answers on at least 95% of the requests from httplog + audit, 90%
//     from the audit log alone;
//   - give each instance's rejections by client exactly as its audit log
//     counts its 429s, and the merged incidents their sums.
//
// Then the two audit logs are given as one CloudWatch export of the log
// group (aws logs filter-log-events: one log stream per instance, the
// events of both interleaved in time order), as EKS hands them over. It
// must split into the two streams and give each the answer of its file:
// for "explain 429 --workload", the same fates, 429s and rejected clients
// with their counts; for "simulate --workload" with a change, the same
// replay of each instance; and "explain request --from-audit" of a
// request the second instance served must reconstruct that instance's
// moment, as its file alone does, and say which instance it was.
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
	names, _ := loadgen.SetUpT(t, c, loadgen.FlowSetup{Flows: 6, Reject: true, Wait: true})
	users := []int{1, 2, 3, 4, 8}
	if err := loadgen.WaitForLevel(ctx, c.RESTConfigFor(second, testcluster.LoadUserName(1)), names, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runLintPlugin(t, c, "version"); code != 0 {
		t.Fatalf("kubectl apf version: exit %d: %s", code, errOut)
	}
	// each instance's 429s by user, straight from its audit log
	auditCounts := func(path string) (byUser map[string]float64, queued float64) {
		byUser = map[string]float64{}
		for _, ev := range readAudit(t, path) {
			if ev.ResponseStatus.Code == 429 {
				byUser[ev.User.Username]++
			}
		}
		for _, u := range users[:4] {
			queued += byUser[testcluster.LoadUserName(u)]
		}
		return byUser, queued
	}
	// The queuing level's 429s are the ones a reconstruction can miss, and
	// the comparison wants a few on each instance. How many a rate gives
	// depends on how fast the machine executes the LISTs (one CI run got 4
	// on one instance, 17 on the other): the load runs in rounds, each a
	// new plan at half as much again as the last, until each instance has
	// rejected at least 5 of the queuing level and some of the Reject level.
	const rounds = 4
	scale := 1.0
	for round := 0; ; round++ {
		var flows []loadgen.PlanFlow
		for _, a := range c.APIServers {
			for _, u := range users {
				pf := loadgen.PlanFlow{Config: c.RESTConfigFor(a, testcluster.LoadUserName(u)), Rate: 2.5 * scale, Burst: 5}
				if u == 8 {
					pf.Rate, pf.Burst = 1, 4
				}
				flows = append(flows, pf)
			}
		}
		rep, err := loadgen.RunPlan(ctx, loadgen.PlanOptions{Seed: 11 + uint64(round), Duration: 30 * time.Second, Names: names, Flows: flows})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("load over both instances (round %d, rate ×%.2f): sent %d, by status %v, 429s by level %v, %d late", round+1, scale, rep.Sent, rep.ByStatus, rep.RejectedByPriority, rep.Late)
		time.Sleep(time.Second) // the audit backend writes in batches
		var short []string
		for _, a := range c.APIServers {
			byUser, queued := auditCounts(a.AuditLog)
			if queued < 5 || byUser[testcluster.LoadUserName(8)] == 0 {
				short = append(short, fmt.Sprintf("%s: %v 429s of the queuing level, %v of the Reject level", a.Name, queued, byUser[testcluster.LoadUserName(8)]))
			}
		}
		if len(short) == 0 {
			break
		}
		if round+1 == rounds {
			t.Fatalf("after %d rounds of load, too few 429s to compare fates: %s", rounds, strings.Join(short, "; "))
		}
		t.Logf("too few 429s yet (%s): another round", strings.Join(short, "; "))
		scale *= 1.5
	}

	// the logs as they stand after the load, read at one moment: the
	// apiservers go on writing (their leases, and each explain's own reads
	// of the cluster), and the reports compared below must read the same
	// requests (the instance's files alone against both instances once
	// gave 1,453 requests against 1,443, and incidents that differed)
	frozen := t.TempDir()
	freeze := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// a line the server was writing is not yet one
		b = b[:bytes.LastIndexByte(b, '\n')+1]
		cp := filepath.Join(frozen, filepath.Base(path))
		f, err := os.OpenFile(cp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644) // two files of one name would be one
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return cp
	}
	logOf, auditOf := map[*testcluster.APIServer]string{}, map[*testcluster.APIServer]string{}
	for _, a := range c.APIServers {
		logOf[a], auditOf[a] = freeze(a.LogFile), freeze(a.AuditLog)
	}

	want := map[string]map[string]float64{}
	instanceOf := map[*testcluster.APIServer]string{c.APIServers[0]: "kube-apiserver-audit.log", second: "kube-apiserver-2-audit.log"}
	for _, a := range c.APIServers {
		if filepath.Base(auditOf[a]) != instanceOf[a] {
			t.Fatalf("%s's audit log is %s, not %s", a.Name, filepath.Base(auditOf[a]), instanceOf[a])
		}
		w, _ := auditCounts(auditOf[a])
		t.Logf("%s: 429s by user %v", a.Name, w)
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
		{"httplog+audit", []string{logOf[a1], auditOf[a1], logOf[a2], auditOf[a2]}, 0.95, []string{logOf[a1], auditOf[a1]}, []string{logOf[a2], auditOf[a2]}},
		{"audit", []string{auditOf[a2], auditOf[a1]}, 0.90, []string{auditOf[a1]}, []string{auditOf[a2]}},
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

	// the same audit logs as one CloudWatch export of the log group, and
	// as files again: the copies frozen after the load (the apiservers
	// still write their leases' updates)
	streamOf := map[string]string{ // file instance → log stream
		"kube-apiserver-audit.log":   "kube-apiserver-audit-3f6c0a9e1b2d4c5e8f7a6b5c4d3e2f1a",
		"kube-apiserver-2-audit.log": "kube-apiserver-audit-9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a",
	}
	var streams []auditwrap.Stream
	var copies []string
	for _, a := range c.APIServers {
		streams = append(streams, auditwrap.Stream{Name: streamOf[instanceOf[a]], Events: rawLines(t, auditOf[a])})
		copies = append(copies, auditOf[a])
	}
	export := filepath.Join(frozen, "filter-log-events.json")
	if err := os.WriteFile(export, auditwrap.CloudWatchFilterStreams(streams), 0o644); err != nil {
		t.Fatal(err)
	}
	a2Copy := auditOf[a2]
	files := explain429("audit copies", nil, copies...)
	fromExport := explain429("cloudwatch export", nil, export)
	if got, want := instanceNames(fromExport.Instances), slices.Sorted(maps.Values(streamOf)); !slices.Equal(got, want) {
		t.Fatalf("cloudwatch export: instances %q, want its log streams %q", got, want)
	}
	for _, fi := range files.Instances {
		var ei *rejections.Instance
		for i := range fromExport.Instances {
			if fromExport.Instances[i].Name == streamOf[fi.Name] {
				ei = &fromExport.Instances[i]
			}
		}
		f := ei.Fates
		if f == nil || f.Total == 0 {
			t.Errorf("cloudwatch export: %s: no fate compared", ei.Name)
			continue
		}
		frac := float64(f.Agreeing) / float64(f.Total)
		t.Logf("cloudwatch export: %s (limit %d): fates agree on %d of %d requests (%.1f%%)", ei.Name, ei.ServerConcurrencyLimit, f.Agreeing, f.Total, 100*frac)
		if frac < 0.90 {
			t.Errorf("cloudwatch export: %s: the reconstructed fates agree with the server on %.1f%% of the requests, below 90%%", ei.Name, 100*frac)
		}
		if !reflect.DeepEqual(f, fi.Fates) || ei.ServerConcurrencyLimit != fi.ServerConcurrencyLimit {
			t.Errorf("cloudwatch export: %s: fates %+v with limit %d, its file %s's %+v with limit %d", ei.Name, *f, ei.ServerConcurrencyLimit, fi.Name, *fi.Fates, fi.ServerConcurrencyLimit)
		}
		if got := rejectedByUser(ei.Incidents); !maps.Equal(got, want[fi.Name]) {
			t.Errorf("cloudwatch export: %s: rejected by user %v, its audit log's 429s %v", ei.Name, got, want[fi.Name])
		}
		// the incidents, with the file's instance named as the stream
		wantIncidents := slices.Clone(fi.Incidents)
		for j := range wantIncidents {
			wantIncidents[j].Instances = []rejections.InstanceCount{{Instance: ei.Name, Count: wantIncidents[j].Rejected}}
		}
		if !reflect.DeepEqual(ei.Incidents, wantIncidents) {
			t.Errorf("cloudwatch export: %s: the instance's incidents differ from its file %s's", ei.Name, fi.Name)
		}
	}
	if got, want := rejectedByUser(fromExport.Incidents), rejectedByUser(files.Incidents); !maps.Equal(got, want) {
		t.Errorf("cloudwatch export: the merged incidents' rejected by user %v, the files' %v", got, want)
	}

	// simulate: each instance of the export replayed as its file, with a
	// change applied to both
	simulate := func(name string, files ...string) map[string]string {
		t.Helper()
		args := []string{"simulate", "-o", "json", "--set", loadgen.Level + ".queueLengthLimit=6"}
		for _, f := range files {
			args = append(args, "--workload", f)
		}
		start := time.Now()
		code, out, errOut := runLintPlugin(t, c, args...)
		if code != 0 {
			t.Fatalf("%s: simulate --workload: exit %d: %s", name, code, errOut)
		}
		var res struct {
			Instances []map[string]any `json:"instances"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("%s: %v: %s", name, err, out)
		}
		t.Logf("%s: simulate took %v", name, time.Since(start).Round(time.Millisecond))
		byName := map[string]string{}
		for _, in := range res.Instances {
			n, _ := in["name"].(string)
			if in["agreement"] == nil {
				t.Errorf("%s: simulate: instance %s compares no rejection with the recorded 429s", name, n)
			}
			delete(in, "name")
			b, _ := json.Marshal(in)
			byName[n] = string(b)
		}
		return byName
	}
	simFiles, simExport := simulate("files", copies...), simulate("cloudwatch export", export)
	if len(simFiles) != 2 || len(simExport) != 2 {
		t.Fatalf("simulate: instances %v of the files, %v of the export, want 2 each", slices.Sorted(maps.Keys(simFiles)), slices.Sorted(maps.Keys(simExport)))
	}
	for file, replay := range simFiles {
		stream := streamOf[file]
		got, ok := simExport[stream]
		if !ok {
			t.Errorf("simulate: the export has no instance %s (its instances: %v)", stream, slices.Sorted(maps.Keys(simExport)))
			continue
		}
		if got != strings.ReplaceAll(replay, file, stream) {
			t.Errorf("simulate: instance %s of the export is not replayed as its file %s:\nexport: %s\nfile:   %s", stream, file, got, replay)
		}
	}

	// explain request: a 429 the second instance served, from the export
	var id429 string
	for _, ev := range readAudit(t, auditOf[a2]) {
		if ev.ResponseStatus.Code == 429 && slices.Contains(users[:4], userNumber(ev.User.Username)) {
			id429 = ev.AuditID
			break
		}
	}
	if id429 == "" {
		t.Fatalf("%s's audit log has no 429 of the queuing level", a2.Name)
	}
	explainPast := func(name, file string) *explain.Explanation {
		t.Helper()
		code, out, errOut := runLintPlugin(t, c, "explain", "request", "-o", "json", "--from-audit", file, "--audit-id", id429)
		if code != 0 {
			t.Fatalf("%s: explain request %s: exit %d: %s", name, id429, code, errOut)
		}
		var ex explain.Explanation
		if err := json.Unmarshal(out, &ex); err != nil {
			t.Fatalf("%s: %v: %s", name, err, out)
		}
		if ex.Past == nil {
			t.Fatalf("%s: explain request %s: no reconstructed moment; notes %q", name, id429, ex.Notes)
		}
		t.Logf("%s: explain request %s: %s (%d seats of %d in use, %d waiting); notes %q", name, id429, ex.Past.Reconstructed, ex.Past.SeatsInUse, ex.Past.Limit, ex.Past.Waiting, ex.Notes)
		return &ex
	}
	exExport, exFile := explainPast("cloudwatch export", export), explainPast(a2.Name+" alone", a2Copy)
	if !reflect.DeepEqual(exExport.Past, exFile.Past) {
		t.Errorf("explain request %s: the export's moment %+v, the second instance's file alone %+v", id429, *exExport.Past, *exFile.Past)
	}
	said := false
	for _, n := range exExport.Notes {
		said = said || strings.Contains(n, "instance "+streamOf["kube-apiserver-2-audit.log"]+" served the request")
	}
	if !said {
		t.Errorf("explain request %s: the notes %q do not say that %s served it", id429, exExport.Notes, streamOf["kube-apiserver-2-audit.log"])
	}
	t.Logf("test time %v", time.Since(began).Round(time.Second))
}

// rawLines are the lines of a file.
func rawLines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// userNumber is the number of a load user's name (0 for another user).
func userNumber(name string) int {
	for u := 1; u <= 16; u++ {
		if testcluster.LoadUserName(u) == name {
			return u
		}
	}
	return 0
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
