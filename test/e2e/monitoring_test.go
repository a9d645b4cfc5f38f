package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/promunit"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
	"github.com/kubectl-apf/kubectl-apf/pkg/monitoring"
)

// TestMonitoringDashboardRowsMatchServerLevels: the dashboard made from the
// live cluster has one row per PriorityLevelConfiguration the server holds.
func TestMonitoringDashboardRowsMatchServerLevels(t *testing.T) {
	c := cluster(t)
	code, out, errOut := runLintPlugin(t, c, "monitoring", "dashboard")
	if code != 0 {
		t.Fatalf("monitoring dashboard exited %d: %s", code, errOut)
	}
	var d monitoring.Dashboard
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatalf("decoding the dashboard: %v", err)
	}
	pls, err := c.Client(testcluster.Admin).FlowcontrolV1().PriorityLevelConfigurations().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, pl := range pls.Items {
		want = append(want, pl.Name)
	}
	sort.Strings(want)
	var got []string
	for _, r := range d.Rows() {
		if name, ok := strings.CutPrefix(r, "Level "); ok {
			name, _, _ = strings.Cut(name, ":")
			got = append(got, name)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("dashboard rows %v, server's levels %v", got, want)
	}
	t.Logf("%d rows for the server's %d levels: %v", len(got), len(want), got)
}

// TestMonitoringRulesOnRealSeries evaluates the rules with promtool on the
// series the real kube-apiserver v1.37.1 exports, after the load generator
// made its level reject requests: every level the server reports gets its
// recorded limits and seats, equal to what pkg/metrics reads from the same
// scrape, the rejection rate is the counters' increase, and the rejection
// alert fires for the loaded level and no other. A metric or label name the
// rules get wrong for this release would leave a recorded series missing.
func TestMonitoringRulesOnRealSeries(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	names, flows := loadgen.SetUpT(t, c, loadgen.FlowSetup{Flows: 6, Wait: true})
	before := scrapeAPF(t, c)
	rep, err := loadgen.Run(ctx, loadgen.Options{Flows: flows, Burst: 10, Rounds: 3, Duration: time.Minute, Pause: 100 * time.Millisecond, Names: names})
	if err != nil {
		t.Fatal(err)
	}
	after := scrapeAPF(t, c)
	rej := func(s *metrics.Scrape) float64 {
		return s.SumBy2(metrics.RejectedRequestsTotal, "priority_level", "reason")[[2]string{loadgen.Level, "queue-full"}]
	}
	rejected := rej(after) - rej(before)
	t.Logf("the load generator got %d 429s; queue-full of %s rose by %v", rep.Rejected(), loadgen.Level, rejected)
	if rejected < 4 {
		t.Fatalf("only %v queue-full rejections; the alert test needs at least 4 a minute", rejected)
	}

	// The two scrapes become series one minute apart, counters growing
	// linearly from the first to the second for 20 minutes, gauges as the
	// second scrape says, all from one instance.
	const steps = 20
	var in strings.Builder
	fmt.Fprintf(&in, "rule_files: [rules.yaml]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n")
	const extra = `cluster="e2e", instance="apiserver-0"`
	nSeries := promunit.WriteSeries(&in, before, after, steps, extra)

	// Expectations from the same scrape, read by pkg/metrics.
	const pl = "priority_level"
	nominal := after.SumBy(metrics.NominalLimitSeats, pl)
	if _, ok := nominal[loadgen.Level]; !ok || len(nominal) < 8 {
		t.Fatalf("the scrape has levels %v", nominal)
	}
	fmt.Fprintf(&in, "    promql_expr_test:\n")
	expect := func(expr string, values map[string]float64) {
		promunit.ExpectSamples(&in, expr, steps-1, extra, pl, values)
	}
	// Aggregating drops the recorded name, so that the expected samples
	// are the labels alone.
	expect("max without () ("+monitoring.RecNominal+")", nominal)
	expect("max without () ("+monitoring.RecCurrent+")", after.SumBy(metrics.CurrentLimitSeats, pl))
	expect("max without () ("+monitoring.RecLower+")", after.SumBy(metrics.LowerLimitSeats, pl))
	expect("max without () ("+monitoring.RecUpper+")", after.SumBy(metrics.UpperLimitSeats, pl))
	expect("max without () ("+monitoring.RecSeatsInUse+")", after.SumBy(metrics.CurrentExecutingSeats, pl))
	expect("max without () ("+monitoring.RecWaiting+")", after.SumBy(metrics.CurrentInqueueRequests, pl))
	fmt.Fprintf(&in, `      - expr: 'round(60 * %s5m{priority_level="%s", reason="queue-full"})'
        eval_time: %dm
        exp_samples:
          - labels: '{cluster="e2e", instance="apiserver-0", priority_level="%s", reason="queue-full"}'
            value: %v
`, monitoring.RecRejected, loadgen.Level, steps-1, loadgen.Level, rejected)
	// The rejection alert: every level whose queue-full and
	// concurrency-limit rejections rose by more than 0.05/s x 60s.
	fmt.Fprintf(&in, "    alert_rule_test:\n      - eval_time: %dm\n        alertname: %s\n        exp_alerts:\n", steps-1, monitoring.AlertRejected)
	rise := map[string]float64{}
	b2 := before.SumBy2(metrics.RejectedRequestsTotal, pl, "reason")
	for k, v := range after.SumBy2(metrics.RejectedRequestsTotal, pl, "reason") {
		if k[1] == "queue-full" || k[1] == "concurrency-limit" {
			rise[k[0]] += v - b2[k]
		}
	}
	var alerting []string
	for level, d := range rise {
		if d/60 > monitoring.DefaultOptions().Rejected.Threshold {
			alerting = append(alerting, level)
		}
	}
	sort.Strings(alerting)
	if !slices.Contains(alerting, loadgen.Level) {
		t.Fatalf("levels expected to alert %v lack %s", alerting, loadgen.Level)
	}
	for _, level := range alerting {
		fmt.Fprintf(&in, "          - exp_labels: {severity: warning, cluster: e2e, priority_level: %s}\n", level)
	}
	t.Logf("expecting %s for %v", monitoring.AlertRejected, alerting)

	f := monitoring.Rules(monitoring.DefaultOptions())
	for gi := range f.Groups {
		for ri := range f.Groups[gi].Rules {
			f.Groups[gi].Rules[ri].Annotations = nil
		}
	}
	rules, err := monitoring.MarshalYAML(f)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "real_test.yaml"), []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	promtool, err := testcluster.Binary("promtool")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(promtool, "test", "rules", "real_test.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules on %d real series: %v\n%s", nSeries, err, out)
	}
	t.Logf("promtool test rules on %d real series of %d levels: %s", nSeries, len(nominal), bytes.TrimSpace(out))
}

func scrapeAPF(t *testing.T, c *testcluster.Cluster) *metrics.Scrape {
	t.Helper()
	body, err := c.Client(testcluster.Admin).CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	s, _, err := metrics.ParseAPF(bytes.NewReader(body), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
