package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
)

// TestTuneFirstCandidateHoldsInARerun is tune's proof on a real server
// (issue 55). It records a fresh overload on the local control plane
// (recording.Noisy: one user's storm of whole LISTs, about three times
// what its one-seat, one-queue level serves, keeps the queue full, and a
// light controller, load-7, that shares the level through a FlowSchema
// of its own is answered 429 whenever it arrives behind it), and fails
// when the controller got no 429. It runs "kubectl apf tune --protect
// user=load-7 --ignore user=load-1" on the recording (its bundle, httplog
// and audit log: the storm's own wait is not judged, for a remedy that
// takes the controller's short requests out of the storm's queue leaves
// the storm queued behind its own long LISTs, which the goal would
// otherwise count against it, by a few milliseconds that one recording
// has and the next has not: testdata/tune/noisy-wait), and
// applies the first-ranked candidate's -o yaml to a fresh control plane
// through the real apiserver (its validation is the judge:
// Session.ApplyChange creates or updates each object, annotations
// included, and checks the nominal seats tune computed for every level
// against the server's apiserver_flowcontrol_nominal_limit_seats; the
// test harness writes to its own test cluster, the plugin never does).
// It re-runs the same seeded load there and checks that the controller
// gets no 429 (read from the re-run's audit log), and that every level's
// 429s are within 0.75–1.25 of tune's prediction for the candidate, or
// within 10 where either side has fewer than 20 (recording.WhatIfAgrees);
// where a level misses that band, the load is re-run twice more on fresh
// servers and the prediction held to the three
// (recording.WhatIfAgreesRuns, the what-if check's rule). A recording
// whose kube-apiserver the machine's other work starved
// (starvedByTheMachine) is made once more.
//
// The re-run's server starts while tune searches, and the -o yaml call
// searches the candidates up to the first-ranked one's id alone (the ids
// do not depend on --max-candidates), so the test takes about a minute
// on 2 cores (three minutes when it re-runs). It needs root and the
// cgroup v1 cpu controller, as the what-if check does, and skips without
// them; KUBECTL_APF_TUNE_KEEP=DIR keeps the recording, tune's output and
// the re-runs' logs in DIR.
func TestTuneFirstCandidateHoldsInARerun(t *testing.T) {
	if testing.Short() {
		t.Skip("the local control plane does not run with -short")
	}
	if err := testcluster.CheckCgroups(); err != nil {
		t.Skipf("%v: the re-run pins kube-apiserver's CPU so that it repeats the recording; run as root on a machine with the cgroup v1 cpu controller at %s", err, testcluster.CgroupRoot)
	}
	pluginBinary(t)
	ctx := context.Background()
	sc := recording.Noisy()
	const controller, storm = "load-7", "load-1"
	dir := t.TempDir()
	if keep := os.Getenv("KUBECTL_APF_TUNE_KEEP"); keep != "" {
		dir = keep
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	began := time.Now()
	phase := func(what string) { t.Logf("%s at %s", what, time.Since(began).Round(100*time.Millisecond)) }

	// the incident, recorded fresh; again, up to tuneRecordings times in
	// all, where the machine's other work starved kube-apiserver of the
	// CPU its cgroup gives it against lesser work (starvedByTheMachine)
	var (
		rec         *recording.Run
		recorded429 int
		kubeconfig  *testcluster.Cluster
	)
	logFile, auditFile := filepath.Join(dir, "apiserver.log"), filepath.Join(dir, "audit.log")
	bundle := filepath.Join(dir, "bundle")
	for attempt := 1; ; attempt++ {
		s, err := recording.Start(ctx, sc, 1, t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		a := s.Cluster.APIServers[0]
		logFrom, auditFrom := recording.Size(a.LogFile), recording.Size(a.AuditLog)
		rec, err = s.RunLoad(ctx)
		if err == nil {
			err = copyLogs(a.LogFile, logFrom, a.AuditLog, auditFrom, dir, "")
		}
		if err == nil {
			_ = os.RemoveAll(bundle)
			err = s.WriteBundle(ctx, bundle, dump.Manifest{Source: s.Cluster.URL()})
		}
		if err := errors.Join(err, s.Stop()); err != nil {
			t.Fatal(err)
		}
		kubeconfig = s.Cluster
		recorded429 = userRejections(t, auditFile, controller)
		phase(fmt.Sprintf("recording %d", attempt))
		t.Logf("recording %d: %d requests, 429s by level %v, %s answered %d 429s; kube-apiserver used %.2f cores, the machine was busy %.0f%%", attempt, rec.Sent, rec.Rejected429, controller, recorded429, rec.APIServerCPU, 100*rec.MachineBusy)
		if !starvedByTheMachine(sc, rec) {
			break
		}
		if attempt == tuneRecordings {
			t.Fatalf("the machine's other work starved kube-apiserver in %d recordings (%.2f cores of its %g, the machine busy %.0f%%): the scenario is of a server that gets its CPU, which a machine this busy with other pinned work does not give it", attempt, rec.APIServerCPU, sc.CPU.APIServer, 100*rec.MachineBusy)
		}
		t.Logf("the machine starved kube-apiserver: recorded again")
	}
	if recorded429 == 0 {
		t.Fatalf("the recording did not starve %s: 429s by level %v", controller, rec.Rejected429)
	}

	// the re-run's fresh server starts while tune searches
	type session struct {
		s   *recording.Session
		err error
	}
	fresh := make(chan session, 1)
	rerunDir := t.TempDir()
	go func() {
		rs, err := recording.Start(ctx, sc, 1, rerunDir, nil)
		fresh <- session{rs, err}
	}()
	var rs *recording.Session
	defer func() {
		if rs == nil {
			if f := <-fresh; f.s != nil {
				_ = f.s.Stop()
			}
		}
	}()

	// tune, from the recording (it reads the files alone; the kubeconfig
	// is the stopped recording server's)
	args := []string{"tune", "--from", bundle, "-w", logFile, "-w", auditFile, "--cpu-limit", strconv.FormatFloat(sc.CPU.APIServer, 'g', -1, 64),
		"--protect", "user=" + controller, "--ignore", "user=" + storm, "--progress", "never"}
	code, out, errOut := runLintPlugin(t, kubeconfig, append(args, "-o", "json")...)
	if code != 0 {
		t.Fatalf("tune: exit %d: %s", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "tune.json"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Verdict    string   `json:"verdict"`
		Why        []string `json:"why"`
		Candidates []struct {
			ID        int      `json:"id"`
			Changes   []string `json:"changes"`
			GoalMet   bool     `json:"goalMet"`
			Verified  bool     `json:"verified"`
			Protected struct {
				RejectedBefore int64 `json:"rejectedBefore"`
				RejectedAfter  int64 `json:"rejectedAfter"`
			} `json:"protected"`
			Slower *struct {
				GoalMet           bool  `json:"goalMet"`
				ProtectedRejected int64 `json:"protectedRejected"`
			} `json:"slowerServer"`
			Levels []struct {
				Name              string `json:"name"`
				NominalSeatsAfter *int   `json:"nominalSeatsAfter"`
				RejectedAfter     int64  `json:"rejectedAfter"`
			} `json:"levels"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("tune -o json: %v", err)
	}
	if len(rep.Candidates) == 0 || !rep.Candidates[0].GoalMet || !rep.Candidates[0].Verified {
		t.Fatalf("tune has no verified candidate that meets the goal: %s: %s", rep.Verdict, strings.Join(rep.Why, "; "))
	}
	first := rep.Candidates[0]
	t.Logf("tune: %s; candidate %d: %s (protected 429s %d → %d)", rep.Verdict, first.ID, strings.Join(first.Changes, "; "), first.Protected.RejectedBefore, first.Protected.RejectedAfter)
	// a candidate that meets the goal is checked on a server 10% slower
	if first.Slower == nil {
		t.Errorf("candidate %d meets the goal and was not checked on a slower server", first.ID)
	} else {
		t.Logf("on a server 10%% slower: goal met %v, the protected clients' 429s %d", first.Slower.GoalMet, first.Slower.ProtectedRejected)
	}
	id := strconv.Itoa(first.ID)
	code, y, errOut := runLintPlugin(t, kubeconfig, append(args, "-o", "yaml", "--candidate", id, "--max-candidates", id)...)
	if code != 0 {
		t.Fatalf("tune -o yaml --candidate %s: exit %d: %s", id, code, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "candidate.yaml"), y, 0o644); err != nil {
		t.Fatal(err)
	}
	phase("tuned")
	// the objects are those of the candidate -o json ranked first
	head := []string{fmt.Sprintf("# kubectl apf tune: candidate %d (", first.ID)}
	for _, c := range first.Changes {
		head = append(head, "#   "+c)
	}
	lines := strings.Split(string(y), "\n")
	for i, h := range head {
		if i >= len(lines) || !strings.HasPrefix(lines[i], h) {
			t.Fatalf("tune -o yaml --candidate %d does not print the candidate -o json ranked first (%q):\n%s", first.ID, strings.Join(first.Changes, "; "), y)
		}
	}
	change := recording.Change{About: fmt.Sprintf("tune's candidate %d: %s", first.ID, strings.Join(first.Changes, "; ")), Seats: map[string]int{}}
	dec := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(y)))
	for {
		doc, err := dec.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "PriorityLevelConfiguration":
			pl := &flowcontrolv1.PriorityLevelConfiguration{}
			if err := yaml.UnmarshalStrict(doc, pl); err != nil {
				t.Fatal(err)
			}
			change.Levels = append(change.Levels, pl)
		case "FlowSchema":
			fs := &flowcontrolv1.FlowSchema{}
			if err := yaml.UnmarshalStrict(doc, fs); err != nil {
				t.Fatal(err)
			}
			change.Schemas = append(change.Schemas, fs)
		case "":
		default:
			t.Fatalf("tune -o yaml printed a %s", meta.Kind)
		}
	}
	if len(change.Levels)+len(change.Schemas) == 0 {
		t.Fatalf("tune -o yaml printed no object:\n%s", y)
	}
	// the server is to give every level the nominal seats tune computed
	for _, l := range first.Levels {
		if l.NominalSeatsAfter != nil {
			change.Seats[l.Name] = *l.NominalSeatsAfter
		}
	}

	// the same load, re-run on a fresh server with the candidate applied
	// through its API; where a level misses the band, twice more on fresh
	// servers, and the prediction held to the three (the what-if check's
	// rule: recording.WhatIfAgreesRuns), so that the server's own noise
	// between two runs of one plan does not fail the check
	predicted := map[string]int64{}
	for _, l := range first.Levels {
		predicted[l.Name] = l.RejectedAfter
	}
	var reruns []recording.Run
	for n := 1; ; n++ {
		var fs session
		if n == 1 {
			fs = <-fresh
		} else {
			fs.s, fs.err = recording.Start(ctx, sc, 1, t.TempDir(), nil)
		}
		if fs.err != nil {
			t.Fatal(fs.err)
		}
		rs = fs.s
		if err := rs.ApplyChange(ctx, change); err != nil {
			_ = rs.Stop()
			t.Fatalf("applying tune's candidate %d to a fresh server: %v", first.ID, err)
		}
		prefix := fmt.Sprintf("rerun-%d-", n)
		rerun, err := rs.RerunLoad(ctx, keepLogs(dir, dir, prefix))
		if err := errors.Join(err, rs.Stop()); err != nil {
			t.Fatal(err)
		}
		phase(fmt.Sprintf("re-run %d", n))
		reruns = append(reruns, *rerun)
		real429 := userRejections(t, filepath.Join(dir, prefix+"audit.log"), controller)
		t.Logf("re-run %d with candidate %d: %d requests, 429s by level %v, %s answered %d 429s; kube-apiserver used %.2f cores, the machine was busy %.0f%%", n, first.ID, rerun.Sent, rerun.Rejected429, controller, real429, rerun.APIServerCPU, 100*rerun.MachineBusy)
		if real429 > 0 {
			t.Errorf("%s: tune predicted %d 429s with candidate %d, re-run %d answered it %d", controller, first.Protected.RejectedAfter, first.ID, n, real429)
		}
		if n == tuneReruns || agreesWithReruns(predicted, reruns) {
			break
		}
		t.Logf("a level misses the band of re-run %d: re-run on a fresh server again", n)
	}
	levels := map[string]bool{}
	for _, l := range recording.Levels(reruns...) {
		levels[l] = true
	}
	for l, n := range predicted {
		if n > 0 {
			levels[l] = true
		}
	}
	for _, l := range slicesSorted(levels) {
		var reals []int64
		for _, r := range reruns {
			reals = append(reals, int64(r.Rejected429[l]))
		}
		p, mean := predicted[l], recording.MeanRejected(reruns, l)
		ok := recording.WhatIfAgreesRuns(p, reals)
		t.Logf("  %-16s tune predicts %5d 429s, the re-runs got %v (mean %d, ratio %.2f)%s", l, p, reals, mean, float64(p)/float64(max(mean, 1)), outside(ok))
		if !ok {
			t.Errorf("%s: tune predicts %d 429s with candidate %d, the re-runs got %v", l, p, first.ID, reals)
		}
	}
}

// tuneRecordings is the most recordings of the incident.
const tuneRecordings = 2

// starvedByTheMachine says whether the machine's other work starved
// kube-apiserver over the recorded run: it used less than
// starvedShare of its CPU quota while the machine was busy all through.
// The storm keeps the one seat busy and kube-apiserver at about
// 0.8–1 of its one CPU on a machine that gives it its CPU (make test
// runs package tests beside it, whose cgroup weight is less); other tests
// that pin their own servers with the same weight can take it, and then
// the server records another incident, one of a server short of CPU, on
// which tune rightly finds no configuration to help.
func starvedByTheMachine(sc recording.Scenario, rec *recording.Run) bool {
	return rec.APIServerCPU < starvedShare*sc.CPU.APIServer && rec.MachineBusy >= 0.95
}

// starvedShare is the share of its CPU quota below which a recorded
// kube-apiserver on a busy machine was starved by it.
const starvedShare = 0.35

// tuneReruns is the most re-runs of tune's first candidate: one, and two
// more where a level misses the band.
const tuneReruns = 3

// agreesWithReruns says whether every level's predicted 429s agree with
// the re-runs' (recording.WhatIfAgreesRuns), those the re-runs got where
// nothing was predicted included.
func agreesWithReruns(predicted map[string]int64, reruns []recording.Run) bool {
	levels := recording.Levels(reruns...)
	for l, n := range predicted {
		if n > 0 {
			levels = append(levels, l)
		}
	}
	for _, l := range levels {
		var reals []int64
		for _, r := range reruns {
			reals = append(reals, int64(r.Rejected429[l]))
		}
		if !recording.WhatIfAgreesRuns(predicted[l], reals) {
			return false
		}
	}
	return true
}

// userRejections counts the audit log's ResponseComplete events of user
// answered 429.
func userRejections(t *testing.T, auditLog, user string) int {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	n := 0
	for sc.Scan() {
		var ev struct {
			Stage string `json:"stage"`
			User  struct {
				Username string `json:"username"`
			} `json:"user"`
			ResponseStatus *struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev.User.Username == user && ev.ResponseStatus != nil && ev.ResponseStatus.Code == 429 && ev.Stage == "ResponseComplete" {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}
