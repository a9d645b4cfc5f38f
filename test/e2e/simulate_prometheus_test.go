package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testprom"
)

// TestSimulateFromPrometheus records a short load of the local control
// plane while a real Prometheus scrapes it every second and dump bundle
// --watch records it, then predicts the load's window of the server's
// logs twice: with the bundle's scrapes as CPU evidence, and with
// --prometheus beside the bundle. The store's samples are the evidence
// read (the output names the store and its scrape interval, and says that
// the store is preferred to the bundle), they bracket the window to
// within a scrape, and the two predictions (the fit of the recorded
// configuration and a what-if of thirty shares instead of one, which
// runs more at once than the recording did) agree within the band the
// what-if check holds predictions to (0.75–1.25, or 10 429s on small
// counts): the two pairs of scrapes are taken by different clients at
// moments up to a second apart, so their CPU figures differ by that much.
// About 40 s of wall time, 20 of them the load.
func TestSimulateFromPrometheus(t *testing.T) {
	c := cluster(t)
	prom := testprom.StartT(t, testprom.Options{Targets: testprom.TargetsOf(c), ScrapeInterval: time.Second})
	kc := kubeconfig(t, c)
	bin := pluginBinary(t)
	names, flows := loadgen.SetUpT(t, c, loadgen.FlowSetup{Flows: 6, Wait: true})
	// the store's first samples, before the load
	for deadline := time.Now().Add(time.Minute); !promHas(t, prom.URL, "process_cpu_seconds_total"); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Prometheus holds no process_cpu_seconds_total of the apiserver after a minute")
		}
	}

	bundle := filepath.Join(t.TempDir(), "watch.tar.gz")
	watch := exec.Command(bin, "dump", "bundle", "--kubeconfig", kc, "--watch", "5m", "--interval", "1s", "--to", bundle)
	var errOut lockedBuffer
	watch.Stdout, watch.Stderr = &lockedBuffer{}, &errOut
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(errOut.String(), ": 2 scrapes,"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = watch.Process.Kill()
			t.Fatalf("the watch took no scrape in 2 minutes; stderr:\n%s", errOut.String())
		}
	}
	start := time.Now().UTC()
	rep, err := loadgen.Run(t.Context(), loadgen.Options{Flows: flows, Burst: 10, Rounds: 100000, Duration: 15 * time.Second, Pause: 50 * time.Millisecond, Names: names})
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().UTC()
	// a scrape after the load, by the watch and by the store
	time.Sleep(3 * time.Second)
	if err := watch.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := watch.Wait(); err != nil {
		t.Fatalf("dump bundle --watch: %v\n%s", err, errOut.String())
	}
	t.Logf("load: %d requests, %d 429s", rep.Sent, rep.ByStatus[429])
	time.Sleep(time.Second) // the audit backend's last batch
	a := c.APIServers[0]
	logFile, auditLog := copyFile(t, a.LogFile), copyFile(t, a.AuditLog)

	type result struct {
		Levels []struct {
			Name     string           `json:"name"`
			Rejected map[string]int64 `json:"rejected"`
		} `json:"levels"`
		After *struct {
			Levels []struct {
				Name     string           `json:"name"`
				Rejected map[string]int64 `json:"rejected"`
			} `json:"levels"`
		} `json:"after"`
		Evidence *struct {
			Metrics struct {
				From time.Time `json:"from"`
				To   time.Time `json:"to"`
			} `json:"metrics"`
			Store    string `json:"store"`
			Interval string `json:"interval"`
			Requests int64  `json:"requests"`
			Total    int64  `json:"total"`
		} `json:"evidence"`
		Calibration struct {
			Uncovered any             `json:"uncovered"`
			CPU       json.RawMessage `json:"cpu"`
			Shared    *struct {
				Capacity     float64  `json:"capacity"`
				Share        float64  `json:"share"`
				Used         *float64 `json:"used"`
				RunnableWait string   `json:"runnableWait"`
				MetricsSpan  string   `json:"metricsSpan"`
			} `json:"sharedCPU"`
			SharedCPUWhy string `json:"sharedCPUWhy"`
			Levels       []struct {
				Level    string `json:"level"`
				Measured *struct {
					Executions int64     `json:"executions"`
					Logged     int64     `json:"logged"`
					Gathering  *[2]int64 `json:"gathering"`
					Time       string    `json:"time"`
					Estimated  string    `json:"estimated"`
					Ratio      float64   `json:"ratio"`
					Why        string    `json:"why"`
				} `json:"measured"`
			} `json:"levels"`
		} `json:"calibration"`
	}
	args := []string{"simulate", "--from", bundle, "--workload", logFile, "--workload", auditLog,
		"--since", start.Format(time.RFC3339Nano), "--until", end.Format(time.RFC3339Nano),
		"--set", loadgen.Level + ".nominalConcurrencyShares=30", "-o", "json"}
	run := func(extra ...string) (result, string) {
		t.Helper()
		code, out, errs := apf(t, "", append(args, extra...)...)
		if code != 0 {
			t.Fatalf("simulate %v: exit %d\n%s", extra, code, errs)
		}
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("simulate -o json: %v\n%s", err, out)
		}
		return r, errs
	}
	fromBundle, _ := run()
	fromStore, notes := run("--prometheus", prom.URL)
	text := mustApf(t, append(slices.Clone(args[:len(args)-2]), "--prometheus", prom.URL)...)
	t.Logf("simulate --prometheus:\n%s", text)
	t.Logf("simulate --prometheus notes:\n%s", notes)
	// make test-clock-ahead moves the plugin's clock, which stamps the
	// bundle's scrapes, and not the server's nor Prometheus's, which stamp
	// the logs and the store's samples: the bundle's scrapes are then a
	// year from the window, and only the store's evidence is checked
	ahead := os.Getenv("KUBECTL_APF_CLOCK_AHEAD")
	if ahead == "" && (fromBundle.Evidence == nil || fromBundle.Evidence.Store != "") {
		t.Fatalf("the bundle's evidence: %+v", fromBundle.Evidence)
	}
	e := fromStore.Evidence
	if e == nil || e.Store == "" || !aboutOneSecond(e.Interval) || e.Requests != e.Total {
		// the store's interval is the median time between its samples
		t.Fatalf("the store's evidence: %+v; want the store's samples, scraped every 1s, covering the window", e)
	}
	if e.Metrics.From.After(start) || e.Metrics.To.Before(end) || start.Sub(e.Metrics.From) > 2*time.Second || e.Metrics.To.Sub(end) > 2*time.Second {
		t.Errorf("the store's scrapes at %v and %v do not bracket the window %v–%v to within a scrape", e.Metrics.From, e.Metrics.To, start, end)
	}
	if fromStore.Calibration.Uncovered != nil {
		t.Errorf("the store's evidence was refused: %v", fromStore.Calibration.Uncovered)
	}
	// the interval as the evidence gives it: "1.01s" on a busy machine
	if !strings.Contains(notes, "given both, the store is preferred") || !strings.Contains(notes, "scraped the apiserver every "+e.Interval) {
		t.Errorf("simulate --prometheus does not say that the store is preferred and what its scrape interval limits:\n%s", notes)
	}
	sum := func(r result, after bool) int64 {
		ls := r.Levels
		if after {
			if r.After == nil {
				t.Fatal("no prediction after the change")
			}
			ls = r.After.Levels
		}
		var n int64
		for _, l := range ls {
			if l.Name == loadgen.Level {
				for _, v := range l.Rejected {
					n += v
				}
			}
		}
		return n
	}
	for _, r := range []struct {
		name string
		res  result
	}{{"bundle", fromBundle}, {"store", fromStore}} {
		if sh := r.res.Calibration.Shared; sh != nil && sh.Used != nil {
			t.Logf("the %s's evidence: the shared-CPU model's process CPU %.3f cores over %s, runnable wait %s; capacity %.2f cores, share %.2f; CFS model %s",
				r.name, *sh.Used, sh.MetricsSpan, sh.RunnableWait, sh.Capacity, sh.Share, r.res.Calibration.CPU)
		} else {
			t.Logf("the %s's evidence: no shared-CPU model with the process's CPU (%s); CFS model %s", r.name, r.res.Calibration.SharedCPUWhy, r.res.Calibration.CPU)
		}
	}
	// the audit log alone, with the store and with the watch: APF's
	// execution histogram between their scrapes counts the level's
	// executions the log holds, and the estimates are set beside its
	// time; for the load's window, and for one cut inside it, which the
	// scrapes around it do not measure and the widest pair inside it does
	inner := []string{"--since", start.Add(4 * time.Second).Format(time.RFC3339Nano), "--until", end.Add(-4 * time.Second).Format(time.RFC3339Nano)}
	for _, c := range []struct {
		name  string
		extra []string
	}{
		{"the store", []string{"--prometheus", prom.URL}},
		{"the store, a window inside the load", append([]string{"--prometheus", prom.URL}, inner...)},
		{"the watch, a window inside the load", inner},
	} {
		if ahead != "" && !strings.HasPrefix(c.name, "the store") {
			continue
		}
		auditOnly := slices.Clone(args)
		auditOnly = slices.Delete(auditOnly, 3, 5) // --workload LOGFILE
		code, out, errs := apf(t, "", append(auditOnly, c.extra...)...)
		if code != 0 {
			t.Fatalf("simulate of the audit log alone, %s: exit %d\n%s", c.name, code, errs)
		}
		var ao result
		if err := json.Unmarshal([]byte(out), &ao); err != nil {
			t.Fatalf("simulate -o json: %v\n%s", err, out)
		}
		measured := false
		for _, l := range ao.Calibration.Levels {
			if l.Level != loadgen.Level {
				continue
			}
			if m := l.Measured; m == nil || m.Ratio == 0 {
				t.Errorf("the audit log alone, %s: %s's executions not set beside APF's: %+v", c.name, l.Level, m)
			} else {
				measured = true
				gathering := "the scrapes tell no time of their own"
				if g := m.Gathering; g != nil {
					gathering = fmt.Sprintf("%d, %d more ended while the scrapes at its ends gathered", g[0], g[1])
				}
				t.Logf("the audit log alone, %s: %s's %d executions (%d in the log; %s) took %s by APF's measure, %s by the estimates (%.3f per execution)", c.name, l.Level, m.Executions, m.Logged, gathering, m.Time, m.Estimated, m.Ratio)
				if (m.Gathering != nil) != strings.HasPrefix(c.name, "the store") {
					t.Errorf("the audit log alone, %s: gathering %v: the store's scrapes tell how long they took (scrape_duration_seconds), the watch's do not", c.name, m.Gathering)
				}
			}
		}
		if !measured {
			t.Errorf("the audit log alone, %s: no check of %s's executions against APF's", c.name, loadgen.Level)
		}
	}
	if ahead != "" {
		t.Skipf("KUBECTL_APF_CLOCK_AHEAD=%s: the bundle's scrapes are stamped by the plugin's clock, moved ahead, the logs and the store's samples by the server's and Prometheus's: the store's evidence is checked, the comparison with the bundle's runs without it", ahead)
	}
	// the store's evidence is what the CPU model read, if the bundle's was
	if b, s := fromBundle.Calibration.Shared, fromStore.Calibration.Shared; b != nil && b.Used != nil && (s == nil || s.Used == nil) {
		t.Errorf("the bundle's evidence gives the shared-CPU model the process's CPU, the store's does not")
	}
	for _, after := range []bool{false, true} {
		b, s := sum(fromBundle, after), sum(fromStore, after)
		t.Logf("%s 429s (after thirty shares: %v): recorded %d; predicted %d from the bundle's scrapes (%v–%v), %d from the store's (%v–%v)",
			loadgen.Level, after, rep.ByStatus[429], b, fromBundle.Evidence.Metrics.From, fromBundle.Evidence.Metrics.To, s, e.Metrics.From, e.Metrics.To)
		if d := math.Abs(float64(s - b)); d > 10 && (float64(s) < 0.75*float64(b) || float64(s) > 1.25*float64(b)) {
			t.Errorf("after the change: %v: the store's evidence predicts %d 429s, the bundle's %d", after, s, b)
		}
	}
}

// promHas reports whether the Prometheus at url holds a sample of the
// series now.
func promHas(t *testing.T, url, series string) bool {
	t.Helper()
	return promAnswers(url, series)
}

// promAnswers reports whether the Prometheus at url answers the instant
// query with at least one series.
func promAnswers(url, query string) bool {
	resp, err := http.Get(url + "/api/v1/query?query=" + neturl.QueryEscape(query))
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var ans struct {
		Data struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	return json.NewDecoder(resp.Body).Decode(&ans) == nil && len(ans.Data.Result) > 0
}

// aboutOneSecond says whether interval, the median time between a store's
// samples as simulate prints it, is the test's scrape interval of 1s: a
// scrape on a busy machine starts a little late ("1.01s" in a make test
// whose other steps ran beside it).
func aboutOneSecond(interval string) bool {
	d, err := time.ParseDuration(interval)
	return err == nil && d >= 900*time.Millisecond && d <= 1100*time.Millisecond
}
