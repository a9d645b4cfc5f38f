package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testprom"
	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
	"github.com/kubectl-apf/kubectl-apf/pkg/history"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

func TestHistoryFlagErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"since without a store", []string{"explain", "429", "--since", "1h"}, "--since reads the past from a store: give --prometheus URL"},
		{"at without a store", []string{"top", "levels", "--at", "-1h"}, "--at reads the past from a store"},
		{"at and since", []string{"top", "levels", "--prometheus", "http://127.0.0.1:1", "--at", "-1h", "--since", "1h"}, "--at is one moment"},
		{"bad since", []string{"explain", "429", "--prometheus", "http://127.0.0.1:1", "--since", "1y"}, `unknown unit "y"`},
		{"bad at", []string{"top", "levels", "--prometheus", "http://127.0.0.1:1", "--at", "yesterday"}, "--at: time \"yesterday\" is neither RFC 3339"},
		{"future", []string{"explain", "429", "--prometheus", "http://127.0.0.1:1", "--until", "2999-01-01T00:00:00Z"}, "in the future"},
		{"bad URL", []string{"explain", "429", "--prometheus", "prometheus:9090"}, `--prometheus "prometheus:9090" is not a URL`},
		{"bad selector", []string{"explain", "429", "--prometheus", "http://127.0.0.1:1", "--prometheus-selector", "cluster=prod"}, "--prometheus-selector: selector: the value of cluster must be in double quotes"},
		{"bad header", []string{"explain", "429", "--prometheus", "http://127.0.0.1:1", "--prometheus-header", "X-Scope-OrgID"}, "want NAME=VALUE"},
		{"bad service", []string{"explain", "429", "--prometheus-service", "prometheus:9090"}, "want NAMESPACE/NAME:PORT"},
		{"both", []string{"explain", "429", "--prometheus", "http://127.0.0.1:1", "--prometheus-service", "m/p:9090"}, "mutually exclusive"},
		{"token file", []string{"explain", "429", "--prometheus", "http://127.0.0.1:1", "--prometheus-token-file", "/nonexistent/token"}, "--prometheus-token-file: open /nonexistent/token"},
		{"explain at", []string{"explain", "429", "--prometheus", "http://127.0.0.1:1", "--at", "-1h"}, "give --since (and --until), not --at"},
		{"watch", []string{"top", "levels", "--prometheus", "http://127.0.0.1:1", "--watch"}, "--watch, --from and --apiserver-urls do not apply"},
		{"unreachable", []string{"explain", "429", "--prometheus", "http://127.0.0.1:1", "--since", "1h"}, "querying http://127.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			streams, _, errb := testStreams("")
			code := run(tt.args, streams)
			if code == 0 || !strings.Contains(errb.String(), tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want an error with %q", code, errb, tt.wantErr)
			}
			if strings.Count(strings.TrimSpace(errb.String()), "\n") > 0 || strings.Contains(errb.String(), "goroutine") {
				t.Errorf("want one line, got %q", errb)
			}
		})
	}
}

// historyFleet is a store of two apiservers (one older than 1.28) with one
// incident in workload-low, at fixed times, so that the output is golden.
func historyFleet(t *testing.T) (*testprom.Prometheus, *testprom.Fleet) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Prometheus and promtool")
	}
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	f := &testprom.Fleet{
		Instances: 2, OldNames: func(i int) bool { return i == 1 },
		Levels: []string{"workload-low", "global-default"},
		Start:  start, End: start.Add(2 * time.Hour), Interval: 15 * time.Second,
		Incidents: []testprom.Incident{
			{Level: "workload-low", FlowSchema: "fs-a", Reason: "queue-full", Instances: []int{0},
				Start: start.Add(30*time.Minute + 7*time.Second), End: start.Add(40 * time.Minute), PerSecond: 10},
			{Level: "workload-low", FlowSchema: "fs-b", Reason: "time-out", Instances: []int{1},
				Start: start.Add(35*time.Minute + time.Second), End: start.Add(38 * time.Minute), PerSecond: 2},
		},
		Other429: []testprom.Incident{{Instances: []int{0}, Start: start.Add(80 * time.Minute), End: start.Add(85 * time.Minute), PerSecond: 3}},
	}
	dir := t.TempDir()
	if _, err := f.CreateBlocks(context.Background(), dir, filepath.Join(dir, "data")); err != nil {
		t.Fatal(err)
	}
	return testprom.StartT(t, testprom.Options{Dir: dir}), f
}

func TestHistoryCommands(t *testing.T) {
	prom, f := historyFleet(t)
	store := []string{"--prometheus", prom.URL, "--scrape-interval", "15s", "--until", f.End.Format(time.RFC3339)}
	golden := func(t *testing.T, name string, args ...string) string {
		t.Helper()
		streams, out, errb := testStreams("")
		if code := run(args, streams); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb)
		}
		checkGolden(t, filepath.Join("history", name), out.Bytes())
		return out.String()
	}
	t.Run("explain 429", func(t *testing.T) {
		golden(t, "explain-429.txt", append([]string{"explain", "429", "--since", "2h"}, store...)...)
		// The JSON holds the counts and the series (checked here rather than
		// as a golden file of a thousand points).
		streams, out, errb := testStreams("")
		if code := run(append([]string{"explain", "429", "--since", "2h", "-o", "json"}, store...), streams); code != 0 {
			t.Fatalf("exit %d: %s", code, errb)
		}
		var rep rejections.Report
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Schema != rejections.Schema || rep.Source.Kind != rejections.SourcePrometheus || rep.Counts != rejections.CountsInWindow {
			t.Errorf("schema %q, source %+v, counts %q", rep.Schema, rep.Source, rep.Counts)
		}
		truth := f.Rejected("workload-low", f.Start, f.End)
		if len(rep.Incidents) != 1 {
			t.Fatalf("%d incidents, want 1: %+v", len(rep.Incidents), rep.Incidents)
		}
		if rep.Incidents[0].Level != "workload-low" || rep.Incidents[0].Rejected != truth ||
			len(rep.Incidents[0].FlowSchemas) != 2 || rep.Incidents[0].FlowSchemas[0].FlowSchema != "fs-a" {
			t.Errorf("incidents: %+v; want one of workload-low with %v rejections by fs-a and fs-b", rep.Incidents, truth)
		}
		for _, name := range []string{history.StateRejected, history.StateSeats, history.StateCurrent, history.StateWaiting, history.StateWaitP99} {
			if s := rep.Incidents[0].Series[name]; len(s) < 30 {
				t.Errorf("series %s has %d points, want the 41 of 00:25 to 00:45 every 30s", name, len(s))
			}
		}
	})
	t.Run("top levels", func(t *testing.T) {
		golden(t, "top-levels-since.txt", append([]string{"top", "levels", "--since", "2h"}, store...)...)
		golden(t, "top-levels-since-per-instance.json", append([]string{"top", "levels", "--since", "2h", "--all-apiservers", "-o", "json"}, store...)...)
		at := []string{"top", "levels", "--prometheus", prom.URL, "--scrape-interval", "15s", "--step", "2m", "--at", f.Start.Add(37*time.Minute + 30*time.Second).Format(time.RFC3339)}
		golden(t, "top-levels-at.txt", at...)
		golden(t, "top-levels-at-per-instance.txt", append(at, "--all-apiservers")...)
	})
	t.Run("capacity", func(t *testing.T) {
		out := golden(t, "capacity.txt", append([]string{"capacity", "--defaults", "--server-concurrency", "600", "--since", "2h"}, store...)...)
		if !strings.Contains(out, "Seats used from 2026-11-01T00:00:00Z to 2026-11-01T02:00:00Z") {
			t.Errorf("capacity --prometheus lacks the observed seats:\n%s", out)
		}
	})
	t.Run("live view over the store", func(t *testing.T) {
		streams, _, _ := testStreams("")
		o := NewTopTUIOptions(genericclioptions.NewConfigFlags(false), streams)
		o.Store.URL, o.Store.ScrapeInterval, o.Interval = prom.URL, 15*time.Second, 500*time.Millisecond
		o.Store.Clock = clocktesting.NewFakePassiveClock(f.End.Add(time.Hour))
		o.Store.Complete(true)
		if err := o.Store.Validate(); err != nil {
			t.Fatal(err)
		}
		// The store's "now" is during the incident.
		o.Source = &load.StoreSource{Store: o.Store, Clock: clocktesting.NewFakePassiveClock(f.Start.Add(37 * time.Minute))}
		out := runView(t, o, "q", 1500*time.Millisecond)
		for _, want := range []string{"workload-low", "apiserver-0:6443"} {
			if !strings.Contains(out, want) {
				t.Errorf("the live view over the store does not show %q", want)
			}
		}
		if strings.Contains(out, "REPLAY") {
			t.Errorf("the live view over the store says REPLAY")
		}
	})
	t.Run("live view with the store's past", func(t *testing.T) {
		// With a cluster in the kubeconfig (never contacted here), a bare
		// --prometheus reads the cluster live with the store's past behind.
		kc := filepath.Join(t.TempDir(), "kubeconfig")
		if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\n"+
			"users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		newOpts := func(kubeconfig string) *TopTUIOptions {
			streams, _, _ := testStreams("")
			cf := genericclioptions.NewConfigFlags(false)
			cf.KubeConfig = &kubeconfig
			o := NewTopTUIOptions(cf, streams)
			o.Interval = 500 * time.Millisecond
			o.Store.URL, o.Store.ScrapeInterval, o.Store.Step = prom.URL, 15*time.Second, time.Minute
			cmd := &cobra.Command{}
			cmd.Flags().Duration("interval", 0, "")
			if err := o.Complete(cmd, nil); err != nil {
				t.Fatal(err)
			}
			return o
		}
		if o := newOpts(filepath.Join(t.TempDir(), "none")); o.livePast {
			t.Error("without a cluster the view does not fall back to the store's table")
		} else if _, ok := o.Source.(*load.StoreSource); !ok {
			t.Errorf("without a cluster the source is %T, want the store", o.Source)
		}
		o := newOpts(kc)
		if _, ok := o.Source.(*fetch.ClusterSource); !ok || !o.livePast {
			t.Fatalf("--prometheus without a time flag reads %T (live past %v), want the cluster with the store's past", o.Source, o.livePast)
		}
		// The store's last 30 minutes end at 00:40, the incident's end.
		o.Clock = clocktesting.NewFakeClock(f.Start.Add(40 * time.Minute))
		if err := o.Store.Open(); err != nil {
			t.Fatal(err)
		}
		past, err := o.recentPast(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n := len(past.Recording.Frames); n != 31 || !past.Recording.Frames[n-1].At.Equal(f.Start.Add(40*time.Minute)) {
			t.Errorf("%d frames, the last at %s; want 31, one a minute to 00:40", n, past.Recording.Frames[n-1].At)
		}
		if want := "workload-low 00:30:"; !strings.HasPrefix(past.Incident, want) || !strings.Contains(past.Incident, "(queue-full, FlowSchema fs-a)") {
			t.Errorf("incident line %q, want it to start %q and name fs-a's queue-full", past.Incident, want)
		}
		// Live from the repository's load capture; left twice, then quit
		// a while later (left waits for the past when it has not come).
		o.Source = &staticSource{t: t, now: f.Start.Add(40 * time.Minute)}
		out := runViewKeys(t, o, &slowKeys{delay: 1500 * time.Millisecond, keys: "\x1b[D\x1b[D", next: &slowKeys{delay: 2 * time.Second, keys: "q"}})
		// The two steps may draw once (30/31) or twice (31/31, then only
		// the digit that changed).
		if !regexp.MustCompile(`◀ HISTORY 3[01]/31 from the store · → back to live`).MatchString(out) {
			t.Errorf("left does not show the store's frames:\n%q", out)
		}
		for _, want := range []string{"apf-load", "last incident in the store: workload-low"} {
			if !strings.Contains(out, want) {
				t.Errorf("the live view with the store's past does not show %q:\n%q", want, out)
			}
		}
	})
	t.Run("live view over the window", func(t *testing.T) {
		streams, _, _ := testStreams("")
		o := NewTopTUIOptions(genericclioptions.NewConfigFlags(false), streams)
		o.Store.URL, o.Store.ScrapeInterval, o.Store.Until, o.Store.Step = prom.URL, 15*time.Second, f.End.Format(time.RFC3339), 5*time.Minute
		if err := o.Store.Since.Set("2h"); err != nil {
			t.Fatal(err)
		}
		o.Store.Clock = clocktesting.NewFakePassiveClock(f.End.Add(time.Hour))
		o.Store.Complete(false)
		if err := o.Store.Validate(); err != nil {
			t.Fatal(err)
		}
		o.Source = &load.StoreSource{Store: o.Store, Clock: clock.RealClock{}}
		// Pause, step back twice, quit.
		out := runView(t, o, " \x1b[D\x1b[Dq", 1500*time.Millisecond)
		for _, want := range []string{"REPLAY", "workload-low", "history from http://127.0.0.1"} {
			if !strings.Contains(out, want) {
				t.Errorf("the view over the window does not show %q", want)
			}
		}
	})
}
