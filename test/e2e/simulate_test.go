package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// simulateLevel is the part of a level in "kubectl apf simulate -o json"
// that the test reads.
type simulateLevel struct {
	Name       string           `json:"name"`
	Dispatched int64            `json:"dispatched"`
	Rejected   map[string]int64 `json:"rejected"`
}

func (l simulateLevel) rejected() int64 {
	var n int64
	for _, v := range l.Rejected {
		n += v
	}
	return n
}

type simulateAgreement struct {
	Level         string `json:"level"`
	BothRejected  int64  `json:"bothRejected"`
	OnlyPredicted int64  `json:"onlyPredicted"`
	OnlyRecorded  int64  `json:"onlyRecorded"`
	BothServed    int64  `json:"bothServed"`
}

type simulateOutput struct {
	Levels []simulateLevel `json:"levels"`
	After  *struct {
		Levels []simulateLevel `json:"levels"`
	} `json:"after"`
	Workload struct {
		Records            int64 `json:"records"`
		UnknownIdentity    int64 `json:"unknownIdentity"`
		RecordedRejections int64 `json:"recordedRejections"`
	} `json:"workload"`
	Agreement               []simulateAgreement `json:"agreement"`
	ServerConcurrencyLimit  int                 `json:"serverConcurrencyLimit"`
	ServerConcurrencySource string              `json:"serverConcurrencySource"`
	Warnings                []string            `json:"warnings"`
	NotKnown                []string            `json:"notKnown"` // levels whose figures after the change are not known ("?")
	Calibration             *struct {
		CPU *struct {
			Level                   string  `json:"level"`
			ExecutionsPerCollection float64 `json:"executionsPerCollection"`
			Mark                    string  `json:"mark"`
			RunPerPeriod            string  `json:"runPerPeriod"`
		} `json:"cpu"`
		CPUWhy string `json:"cpuWhy"`
	} `json:"calibration"`
	CPUReplays *struct {
		Mean float64 `json:"mean"`
	} `json:"cpuReplays"`
}

func simLevel(ls []simulateLevel, name string) simulateLevel {
	for _, l := range ls {
		if l.Name == name {
			return l
		}
	}
	return simulateLevel{Name: name}
}

// TestSimulateReplaysRecordedLoad drives a fresh local control plane into
// queue-full and concurrency-limit 429s with the load generator, then runs
// the built "kubectl apf simulate" against that cluster's configuration
// (the server concurrency limit inferred from its metrics) with the
// apiserver's own httplog and audit log as the workload. The predicted
// rejections per level are compared with the 429s the load generator
// received and with apiserver_flowcontrol_rejected_requests_total; a longer
// queue given with --set must reject fewer. The test starts its own cluster
// so that the logs hold only this traffic under this configuration; where
// the replay agrees with the server on fewer than minAgreement of a
// level's requests, it records the load once more on another
// (replayRecordings), and fails when that one misses too.
func TestSimulateReplaysRecordedLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("the local control plane does not run with -short")
	}
	const inflight, mutating = 10, 5
	ctx := context.Background()
	var (
		c                 *testcluster.Cluster
		logFile, auditLog string
		got               simulateOutput
		raw               []byte
		report            []string
	)
	simulate := func(extra ...string) (simulateOutput, []byte) {
		t.Helper()
		args := append([]string{"simulate", "--workload", logFile, "--workload", auditLog, "-o", "json"}, extra...)
		code, out, errOut := runLintPlugin(t, c, args...)
		if code != 0 {
			t.Fatalf("kubectl apf %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
		}
		if errOut != "" {
			t.Logf("kubectl apf simulate diagnostics:\n%s", errOut)
		}
		var got simulateOutput
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("simulate -o json: %v\n%s", err, out)
		}
		return got, out
	}
	// the load is recorded on a fresh control plane, and again on another
	// (at most replayRecordings in all) when the replay of the recording
	// agrees with the server on fewer than minAgreement of a level's
	// requests: the counts are checked on every recording
	for attempt := 1; ; attempt++ {
		c = testcluster.StartT(t, testcluster.Options{MaxRequestsInflight: inflight, MaxMutatingRequestsInflight: mutating})
		names, flows := loadgen.SetUpT(t, c, loadgen.FlowSetup{Flows: testcluster.NumLoadUsers - 1, Reject: true, Wait: true})
		scrapeBefore := scrapeAPF(t, c)
		rep, err := loadgen.Run(ctx, loadgen.Options{Flows: flows, Burst: 8, Rounds: 4, Duration: time.Minute, Pause: 300 * time.Millisecond, Names: names})
		if err != nil {
			t.Fatal(err)
		}
		var buf strings.Builder
		rep.Print(&buf)
		if use, ok := metrics.CPUUseBetween(scrapeBefore, scrapeAPF(t, c)); ok {
			fmt.Fprintf(&buf, "kube-apiserver used %.2f cores over the load (its goroutines waited %v to run, on average); load average %s\n", use.Cores(), use.RunnableWait, recording.LoadAverage())
		}
		t.Logf("recording %d: load report:\n%s", attempt, buf.String())
		if rep.Rejected() == 0 {
			t.Fatal("the load got no 429: nothing to compare")
		}
		server := map[string]float64{
			loadgen.Level:       rejectedRequests(t, c, loadgen.Level, "queue-full") + rejectedRequests(t, c, loadgen.Level, "time-out"),
			loadgen.RejectLevel: rejectedRequests(t, c, loadgen.RejectLevel, "concurrency-limit"),
		}
		if total := server[loadgen.Level] + server[loadgen.RejectLevel]; int(total) != rep.Rejected() {
			t.Logf("note: the server counted %v APF rejections, the load generator received %d 429s", total, rep.Rejected())
		}
		time.Sleep(time.Second) // let the audit backend flush its last batch

		// the plugin's own requests land in the logs too: replay a copy
		// taken now, so that every run below reads the same workload
		a := c.APIServers[0]
		logFile, auditLog = copyFile(t, a.LogFile), copyFile(t, a.AuditLog)
		got, raw = simulate()
		if got.ServerConcurrencyLimit != inflight+mutating || got.ServerConcurrencySource != "metrics" {
			t.Errorf("server concurrency limit %d from %s, want the cluster's %d from its metrics", got.ServerConcurrencyLimit, got.ServerConcurrencySource, inflight+mutating)
		}
		if got.Workload.RecordedRejections < int64(rep.Rejected()) {
			t.Errorf("the workload holds %d recorded 429s, the load generator received %d", got.Workload.RecordedRejections, rep.Rejected())
		}
		report = nil
		var disagree []string
		for _, level := range []string{loadgen.Level, loadgen.RejectLevel} {
			predicted := simLevel(got.Levels, level).rejected()
			var ag simulateAgreement
			for _, x := range got.Agreement {
				if x.Level == level {
					ag = x
				}
			}
			n := ag.BothRejected + ag.OnlyPredicted + ag.OnlyRecorded + ag.BothServed
			agreement := 1.0
			if n > 0 {
				agreement = float64(ag.BothRejected+ag.BothServed) / float64(n)
			}
			line := fmt.Sprintf("%-16s server 429s (metric) %4.0f  recorded in the log %4d  predicted %4d  request-by-request agreement %.1f%% of %d",
				level, server[level], ag.BothRejected+ag.OnlyRecorded, predicted, 100*agreement, n)
			report = append(report, line)
			if server[level] == 0 {
				t.Errorf("%s: the server rejected nothing", level)
				continue
			}
			if d := (float64(predicted) - server[level]) / server[level]; d > 0.25 || d < -0.25 {
				t.Errorf("%s: predicted %d rejections, the server rejected %v", level, predicted, server[level])
			}
			if agreement < minAgreement {
				disagree = append(disagree, fmt.Sprintf("%s: prediction and server agree on only %.1f%% of the requests", level, 100*agreement))
			}
		}
		if len(disagree) == 0 {
			break
		}
		if attempt == replayRecordings {
			for _, d := range disagree {
				t.Errorf("recording %d: %s", attempt, d)
			}
			break
		}
		// the first recording's replay, in full, for the log
		_, table, _ := runLintPlugin(t, c, "simulate", "--workload", logFile, "--workload", auditLog, "--max-flows", "7")
		t.Logf("recording %d: %s; recorded again on a fresh control plane. Its replay:\n%s\n%s", attempt, strings.Join(disagree, "; "), strings.Join(report, "\n"), table)
	}

	// a queue 50 long instead of 3: the same traffic is rejected less
	longer, _ := simulate("--set", loadgen.Level+".queueLengthLimit=50")
	if longer.After == nil {
		t.Fatal("--set gave no after run")
	}
	before, after := simLevel(longer.Levels, loadgen.Level), simLevel(longer.After.Levels, loadgen.Level)
	report = append(report, fmt.Sprintf("--set %s.queueLengthLimit=50: %s rejections %d -> %d (%v -> %v)", loadgen.Level, loadgen.Level, before.rejected(), after.rejected(), before.Rejected, after.Rejected))
	if before.rejected() != simLevel(got.Levels, loadgen.Level).rejected() {
		t.Errorf("the before run of --set predicted %d rejections, the plain run %d", before.rejected(), simLevel(got.Levels, loadgen.Level).rejected())
	}
	if after.Rejected["queue-full"] >= before.Rejected["queue-full"] {
		t.Errorf("queueLengthLimit 50 rejects %v, queueLengthLimit 3 %v: want fewer queue-full", after.Rejected, before.Rejected)
	}
	if after.Dispatched <= before.Dispatched {
		t.Errorf("queueLengthLimit 50 dispatches %d, queueLengthLimit 3 %d: want more", after.Dispatched, before.Dispatched)
	}

	// a bundle of the same cluster gives the same replay, the server
	// concurrency limit read from the bundle's metrics
	capture, err := (&fetch.ClusterSource{Config: c.RESTConfig(testcluster.Admin)}).Capture(ctx,
		dump.CaptureOptions{Parts: dump.PartObjects | dump.PartVersion | dump.PartMetrics})
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(t.TempDir(), "bundle")
	if err := dump.WriteBundle(bundle, capture, dump.Manifest{Source: c.URL()}); err != nil {
		t.Fatal(err)
	}
	if _, fromBundle := simulate("--from", bundle); !bytes.Equal(fromBundle, raw) {
		t.Errorf("simulate --from the bundle differs from the live simulate:\n%s\n--- live ---\n%s", fromBundle, raw)
	}

	// the httplog alone has no users: the recorded FlowSchemas are kept,
	// and the command says so on stderr
	code, logOnly, errOut := runLintPlugin(t, c, "simulate", "--workload", logFile, "-o", "json")
	if code != 0 || !strings.Contains(errOut, "without a user kept their recorded FlowSchema") {
		t.Errorf("simulate with the httplog alone: exit %d, stderr %q", code, errOut)
	}
	var lo simulateOutput
	if err := json.Unmarshal(logOnly, &lo); err != nil {
		t.Fatal(err)
	}
	if lo.Workload.UnknownIdentity == 0 || lo.Workload.Records != got.Workload.Records {
		t.Errorf("httplog alone: %+v, with the audit log: %+v", lo.Workload, got.Workload)
	}
	report = append(report, fmt.Sprintf("httplog alone: %s predicted %d rejections, %s %d",
		loadgen.Level, simLevel(lo.Levels, loadgen.Level).rejected(), loadgen.RejectLevel, simLevel(lo.Levels, loadgen.RejectLevel).rejected()))

	t.Logf("simulate against the server:\n%s", strings.Join(report, "\n"))

	// the table names the levels and puts the recorded 429s next to the
	// prediction
	code, table, errOut := runLintPlugin(t, c, "simulate", "--workload", logFile, "--workload", auditLog, "--set", loadgen.Level+".queueLengthLimit=50", "--max-flows", "3")
	if code != 0 {
		t.Fatalf("kubectl apf simulate (table): exit %d\n%s", code, errOut)
	}
	t.Logf("kubectl apf simulate --set %s.queueLengthLimit=50:\n%s", loadgen.Level, table)
	for _, want := range []string{loadgen.Level + " ", loadgen.RejectLevel + " ", "Recorded 429 answers", fmt.Sprintf("%d->0", before.Rejected["queue-full"])} {
		if !strings.Contains(string(table), want) {
			t.Errorf("the table does not show %q", want)
		}
	}
}

func copyFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// replayRecordings is the most recordings TestSimulateReplaysRecordedLoad
// makes: one, and one more where a level's request-by-request agreement
// is under minAgreement. On 2026-12-02 one recording in make test agreed
// on 67.1% of apf-load's requests, its 429s counted right (136 of 136),
// where seven made that day beside other work (package tests, six busy
// loops) agreed on 96.4–100%. The cause is not shown; a hypothesis: the
// audit log stamps a request's arrival before authentication and
// authorization, which a burst of 8 requests sent at once may pass in
// another order. A replay that is wrong by design fails both recordings.
const replayRecordings = 2

// minAgreement is the least share of a level's requests whose fate (429
// or served) the replay of the recording must give as the server did.
const minAgreement = 0.8
