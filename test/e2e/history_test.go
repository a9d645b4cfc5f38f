package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testprom"
	"github.com/kubectl-apf/kubectl-apf/pkg/history"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// counterWatch scrapes the apiserver's /metrics every 250 ms and keeps,
// per priority level, the rejected_requests_total sum and when it first
// and last changed: the truth the store's answers are held against.
type counterWatch struct {
	mu          sync.Mutex
	base, last  map[string]float64
	first, upd  map[string]time.Time
	scrapes     int
	scrapeError error
}

func (w *counterWatch) run(ctx context.Context, cfg *rest.Config) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		w.scrapeError = err
		return
	}
	for ctx.Err() == nil {
		resp, err := hc.Get(cfg.Host + "/metrics")
		at := time.Now()
		if err == nil {
			s, _, perr := metrics.ParseAPF(resp.Body, at)
			resp.Body.Close()
			if perr == nil {
				sums := s.SumBy(metrics.RejectedRequestsTotal, "priority_level")
				w.mu.Lock()
				w.scrapes++
				if w.base == nil {
					w.base, w.last, w.first, w.upd = map[string]float64{}, map[string]float64{}, map[string]time.Time{}, map[string]time.Time{}
					for k, v := range sums {
						w.base[k], w.last[k] = v, v
					}
				}
				for k, v := range sums {
					if v > w.last[k] {
						if w.first[k].IsZero() {
							w.first[k] = at
						}
						w.upd[k] = at
					}
					w.last[k] = v
				}
				w.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// TestHistoryFromPrometheus drives the load levels into 429s while a real
// Prometheus scrapes the apiserver every second, then checks that
// "explain 429 --prometheus" finds the incidents (start and end within two
// scrape intervals of when the apiserver's own counter moved, the level,
// FlowSchema and reason, the count within 10% of the counter), that
// "top levels --at" during the burst says what the live table said then,
// and the JSON of "top levels --since".
func TestHistoryFromPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the local control plane and Prometheus")
	}
	c := testcluster.StartT(t, testcluster.Options{})
	const scrape = time.Second
	prom := testprom.StartT(t, testprom.Options{Targets: testprom.TargetsOf(c), ScrapeInterval: scrape})
	ctx := context.Background()
	names, flows := loadgen.SetUpT(t, c, loadgen.FlowSetup{Flows: 6, Reject: true})
	if err := loadgen.WaitForLevel(ctx, flows[0], names, time.Minute); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runLintPlugin(t, c, "version"); code != 0 {
		t.Fatalf("kubectl apf version: exit %d: %s", code, errOut)
	}

	watchCtx, stopWatch := context.WithCancel(ctx)
	watch := &counterWatch{}
	var wwg sync.WaitGroup
	wwg.Add(1)
	go func() { defer wwg.Done(); watch.run(watchCtx, c.RESTConfig(testcluster.Admin)) }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		watch.mu.Lock()
		n := watch.scrapes
		watch.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no /metrics scrape in 30s: %v", watch.scrapeError)
		}
	}
	// A flight recorder beside the store (dump bundle --watch --keep),
	// ended after the quiet that follows the burst: explain 429 --from its
	// bundle explains the burst it recorded.
	bundle := filepath.Join(t.TempDir(), "recorder")
	recorder := exec.Command(pluginBinary(t), "dump", "bundle", "--kubeconfig", kubeconfig(t, c), "--watch", "10m", "--interval", "1s", "--keep", "5m", "--to", bundle)
	var recErr lockedBuffer
	recorder.Stderr = &recErr
	if err := recorder.Start(); err != nil {
		t.Fatal(err)
	}
	// Quiet before: the window starts with no rejection.
	time.Sleep(5 * scrape)
	windowStart := time.Now()

	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var rep *loadgen.Report
	var loadErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		rep, loadErr = loadgen.Run(loadCtx, loadgen.Options{Flows: flows, Burst: 10, Rounds: 100000, Duration: 40 * time.Second, Pause: 50 * time.Millisecond, Names: names})
	}()
	// The live table in the middle of the burst, with the time of its
	// second scrape (it ends the command's rate window).
	time.Sleep(15 * time.Second)
	code, liveOut, errOut := runLintPlugin(t, c, "top", "levels", "-o", "json", "--rate-window", "3s")
	liveAt := time.Now()
	if code != 0 {
		t.Fatalf("top levels: exit %d: %s", code, errOut)
	}
	wg.Wait()
	stopLoad()
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	// Quiet after, so that the store has scraped the end of the burst.
	time.Sleep(6 * scrape)
	stopWatch()
	wwg.Wait()
	windowEnd := time.Now()
	if err := recorder.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := recorder.Wait(); err != nil {
		t.Fatalf("dump bundle --watch: %v\n%s", err, recErr.String())
	}
	if rep.Rejected() == 0 {
		t.Fatal("the load generator got no 429; nothing to find")
	}
	watch.mu.Lock()
	truth := map[string]float64{}
	for k, v := range watch.last {
		truth[k] = v - watch.base[k]
	}
	first, last := watch.first, watch.upd
	watch.mu.Unlock()
	t.Logf("apiserver counters over the run: %v; first %v, last %v", truth, first, last)

	// The window ends when the test's did (--until), not at the plugin's
	// "now": make test-clock-ahead moves that a year ahead.
	since := windowEnd.Sub(windowStart).Round(time.Second) + 5*time.Second
	until := []string{"--until", windowEnd.UTC().Format(time.RFC3339Nano)}
	common := []string{"--prometheus", prom.URL, "--scrape-interval", scrape.String(), "--prometheus-selector", `job="apiserver"`}

	t.Run("explain 429", func(t *testing.T) {
		args := append(append([]string{"explain", "429", "--since", since.String(), "-o", "json"}, until...), common...)
		code, out, errOut := runLintPlugin(t, c, args...)
		if code != 0 {
			t.Fatalf("explain 429 --prometheus: exit %d: %s", code, errOut)
		}
		var r rejections.Report
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("decoding: %v\n%s", err, out)
		}
		found := map[string]rejections.Incident{}
		for _, inc := range r.Incidents {
			if _, dup := found[inc.Level]; dup {
				t.Errorf("two incidents of %s; the load was one burst: %+v", inc.Level, r.Incidents)
			}
			found[inc.Level] = inc
		}
		for _, want := range []struct{ level, schema, reason string }{
			{loadgen.Level, loadgen.FlowSchema, history.ReasonQueueFull},
			{loadgen.RejectLevel, loadgen.RejectFlow, history.ReasonConcurrencyLimit},
		} {
			inc, ok := found[want.level]
			if !ok {
				t.Errorf("no incident of %s: %s", want.level, out)
				continue
			}
			if len(inc.FlowSchemas) == 0 || inc.FlowSchemas[0].FlowSchema != want.schema || inc.FlowSchemas[0].Reason != want.reason {
				t.Errorf("%s: FlowSchemas %+v, want %s with %s first", want.level, inc.FlowSchemas, want.schema, want.reason)
			}
			if tr := truth[want.level]; math.Abs(inc.Rejected-tr) > 0.1*tr {
				t.Errorf("%s: %v rejections, the apiserver counted %v", want.level, inc.Rejected, tr)
			}
			// The store sees a change at the first scrape after it; the
			// watch within 250 ms of it.
			tol := 2*scrape + 250*time.Millisecond
			if inc.Start == nil || inc.End == nil {
				t.Fatalf("%s: an incident without start or end: %+v", want.level, inc)
			}
			if d := inc.Start.Sub(first[want.level]); d < -tol || d > tol {
				t.Errorf("%s: starts at %s, the counter first moved at %s", want.level, inc.Start.Format(time.RFC3339Nano), first[want.level].Format(time.RFC3339Nano))
			}
			if d := inc.End.Sub(last[want.level]); d < -tol || d > tol {
				t.Errorf("%s: ends at %s, the counter last moved at %s", want.level, inc.End.Format(time.RFC3339Nano), last[want.level].Format(time.RFC3339Nano))
			}
			if len(inc.Instances) != 1 || inc.Instances[0].Instance != strings.TrimPrefix(c.URL(), "https://") {
				t.Errorf("%s: instances %+v", want.level, inc.Instances)
			}
			// A failed scrape marks the series stale; the per-step counts
			// must not take the counter's whole value for new rejections.
			for _, p := range inc.Series[history.StateRejected] {
				if p.V > 0.5*truth[want.level] {
					t.Errorf("%s: %v rejections in the step to %s, more than half the run's %v", want.level, p.V, p.T.Format(time.RFC3339), truth[want.level])
				}
			}
			if len(inc.Series[history.StateSeats]) == 0 || len(inc.Causes) == 0 || inc.Causes[0].Kind == "" {
				t.Errorf("%s: no state series or diagnosis: %+v", want.level, inc.State)
			}
		}
		if c := found[loadgen.RejectLevel].Causes; len(c) == 0 || c[0].Kind != rejections.CauseNoQueues {
			t.Errorf("%s diagnosed %+v, want %s", loadgen.RejectLevel, c, rejections.CauseNoQueues)
		}
		for lvl := range found {
			if lvl != loadgen.Level && lvl != loadgen.RejectLevel {
				t.Errorf("incident of %s, which had no load", lvl)
			}
		}
		if r.Other429 == nil || *r.Other429 != 0 {
			t.Errorf("%v 429s not from APF; the load only got APF's", r.Other429)
		}
		// The text output draws the timelines.
		args = append(append([]string{"explain", "429", "--since", since.String()}, until...), common...)
		_, text, _ := runLintPlugin(t, c, args...)
		for _, want := range []string{"#1  ", loadgen.Level, "seats in use", "diagnosis:", "^"} {
			if !bytes.Contains(text, []byte(want)) {
				t.Errorf("the text output lacks %q:\n%s", want, text)
			}
		}
		t.Logf("explain 429 --prometheus:\n%s", text)
	})

	t.Run("explain 429 --from a watch", func(t *testing.T) {
		// the watch's latest scrapes are of the quiet after the burst:
		// the scrapes around the burst are explained, and agree with
		// the store's incidents and the apiserver's counters
		code, out, errOut := runLintPlugin(t, c, "explain", "429", "--from", bundle, "-o", "json")
		if code != 0 {
			t.Fatalf("explain 429 --from %s: exit %d: %s", bundle, code, errOut)
		}
		if !strings.Contains(errOut, "its latest two show no 429 from APF: explained is the burst of 429s it recorded") {
			t.Errorf("stderr does not say which burst is explained:\n%s", errOut)
		}
		var r rejections.Report
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("decoding: %v\n%s", err, out)
		}
		if r.Window.Start == nil || r.Window.End == nil {
			t.Fatalf("a window without start or end: %s", out)
		}
		span := r.Window.End.Sub(*r.Window.Start).Seconds()
		for _, want := range []struct{ level, reason string }{
			{loadgen.Level, history.ReasonQueueFull},
			{loadgen.RejectLevel, history.ReasonConcurrencyLimit},
		} {
			var inc *rejections.Incident
			for i := range r.Incidents {
				if r.Incidents[i].Level == want.level {
					inc = &r.Incidents[i]
				}
			}
			if inc == nil || inc.Reasons[want.reason] == 0 {
				t.Errorf("no %s rejections of %s explained: %s", want.reason, want.level, out)
				continue
			}
			got := r.Rejected[want.level]
			if r.Counts == rejections.CountsPerSecond {
				got *= span
			}
			if tr := truth[want.level]; math.Abs(got-tr) > 0.1*tr {
				t.Errorf("%s: %.0f rejections between the scrapes explained (%s over %.1fs), the apiserver counted %v", want.level, got, r.Counts, span, tr)
			}
			if os.Getenv("KUBECTL_APF_CLOCK_AHEAD") != "" {
				continue // the scrapes are stamped by the plugin's clock, moved ahead
			}
			// the counter watch sees a change at its next poll: the
			// last change came up to a poll before it was seen, and the
			// recorder's scrape a second apart holds it
			if r.Window.Start.After(first[want.level]) || r.Window.End.Before(last[want.level].Add(-scrape)) {
				t.Errorf("%s: the scrapes explained span %s–%s, and the counter moved from %s to %s", want.level, r.Window.Start.Format(time.RFC3339Nano), r.Window.End.Format(time.RFC3339Nano), first[want.level].Format(time.RFC3339Nano), last[want.level].Format(time.RFC3339Nano))
			}
		}
		t.Logf("explain 429 --from the watch's bundle:\n%s", errOut)
	})

	t.Run("top levels --at", func(t *testing.T) {
		at := func(when time.Time) []byte {
			args := append([]string{"top", "levels", "-o", "json", "--at", when.UTC().Format(time.RFC3339Nano), "--step", "3s"}, common...)
			code, out, errOut := runLintPlugin(t, c, args...)
			if code != 0 {
				t.Fatalf("top levels --at: exit %d: %s", code, errOut)
			}
			return out
		}
		out := at(liveAt)
		// A current limit moves with borrowing every 10 s: the live
		// table's second scrape and the store's last one before --at
		// (up to a scrape interval apart, more on a loaded machine)
		// may straddle a move. The store's tables a few scrapes before
		// and after tell the limits on either side of it.
		nearby := [][]byte{at(liveAt.Add(-3 * scrape)), at(liveAt.Add(3 * scrape))}
		// The fields of the JSON of top levels this test reads, by their
		// documented names (levels.TopFields).
		type topRow struct {
			Level        string             `json:"level"`
			NominalLimit float64            `json:"nominalLimit"`
			CurrentLimit float64            `json:"currentLimit"`
			SeatsInUse   float64            `json:"seatsInUse"`
			RejectedPerS map[string]float64 `json:"rejectedPerSecond"`
		}
		var live, past []topRow
		if err := json.Unmarshal(liveOut, &live); err != nil {
			t.Fatalf("%v: %s", err, liveOut)
		}
		if err := json.Unmarshal(out, &past); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		byName := map[string]topRow{}
		for _, r := range past {
			byName[r.Level] = r
		}
		// the current limits the store held around --at, by level
		currents := map[string][]float64{}
		for _, b := range nearby {
			var rows []topRow
			if err := json.Unmarshal(b, &rows); err != nil {
				t.Fatalf("%v: %s", err, b)
			}
			for _, r := range rows {
				currents[r.Level] = append(currents[r.Level], r.CurrentLimit)
			}
		}
		if len(past) != len(live) {
			t.Errorf("%d levels then, %d from the store", len(live), len(past))
		}
		for _, l := range live {
			p, ok := byName[l.Level]
			if !ok {
				t.Errorf("level %s missing from the store's table", l.Level)
				continue
			}
			if p.NominalLimit != l.NominalLimit || p.CurrentLimit != l.CurrentLimit && !slices.Contains(currents[l.Level], l.CurrentLimit) {
				t.Errorf("%s: limits %v/%v then, %v/%v from the store (current %v a few scrapes before and after)", l.Level, l.NominalLimit, l.CurrentLimit, p.NominalLimit, p.CurrentLimit, currents[l.Level])
			}
			if (len(l.RejectedPerS) > 0) != (len(p.RejectedPerS) > 0) {
				t.Errorf("%s: rejecting %v then, %v from the store", l.Level, l.RejectedPerS, p.RejectedPerS)
			}
			for reason := range l.RejectedPerS {
				if _, ok := p.RejectedPerS[reason]; !ok {
					t.Errorf("%s: rejected for %s then, not from the store: %v", l.Level, reason, p.RejectedPerS)
				}
			}
		}
		// Gauges are instants (the live scrape and the store's last one
		// before --at differ by up to a scrape interval); the busy level's
		// one seat can be free between two rounds, so only its bounds.
		if l := byName[loadgen.Level]; l.SeatsInUse < 0 || l.SeatsInUse > l.CurrentLimit {
			t.Errorf("%s: %v seats in use of %v", loadgen.Level, l.SeatsInUse, l.CurrentLimit)
		}
	})

	t.Run("through the service proxy", func(t *testing.T) {
		// A Service with no endpoints: the query reaches the apiserver's
		// service proxy, as a GET with the kubeconfig's identity, and its
		// answer is reported in one line. TestHistoryThroughServiceProxy
		// reads a store through a Service that has one.
		admin := c.Client(testcluster.Admin)
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "prometheus", Namespace: "default"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 9090}}}}
		if _, err := admin.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runLintPlugin(t, c, "explain", "429", "--since", "1m", "--prometheus-service", "default/prometheus:9090")
		if code == 0 || !strings.Contains(errOut, "service default/prometheus:9090 (through the apiserver)") || !strings.Contains(errOut, "no endpoints available") {
			t.Errorf("exit %d: %s; want the proxy's answer that the service has no endpoints", code, errOut)
		}
		if strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("want one line: %q", errOut)
		}
	})

	t.Run("top levels --since", func(t *testing.T) {
		args := append(append([]string{"top", "levels", "-o", "json", "--since", since.String()}, until...), common...)
		code, out, errOut := runLintPlugin(t, c, args...)
		if code != 0 {
			t.Fatalf("top levels --since: exit %d: %s", code, errOut)
		}
		var rows []struct {
			Name     string             `json:"name"`
			Rejected map[string]float64 `json:"rejected"`
		}
		if err := json.Unmarshal(out, &rows); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		got := map[string]map[string]float64{}
		for _, r := range rows {
			got[r.Name] = r.Rejected
		}
		if _, ok := got["exempt"]; !ok {
			t.Errorf("no row named exempt: %s", out)
		}
		for lvl, reason := range map[string]string{loadgen.Level: history.ReasonQueueFull, loadgen.RejectLevel: history.ReasonConcurrencyLimit} {
			if v, tr := got[lvl][reason], truth[lvl]; math.Abs(v-tr) > 0.1*tr {
				t.Errorf("%s: %v %s rejections over the window, the apiserver counted %v", lvl, v, reason, tr)
			}
		}
	})
}
