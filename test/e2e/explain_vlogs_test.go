package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testvlogs"
)

// vlogsRecordings are the recordings the store tests load (two of the
// smallest; pkg/vlogs reads every recording back from a store).
var vlogsRecordings = []string{"quiet", "timeouts"}

// TestExplain429VictoriaLogs ships recorded audit logs into a real
// VictoriaLogs, a single node (as JSON lines) and a cluster of two storage
// nodes behind an insert and a select node (through the Elasticsearch bulk
// API), each event tagged with its recording as a pipeline tags its
// cluster. "explain 429 --victorialogs URL --victorialogs-query
// recording:=NAME --since ..." must print the report of "explain 429
// --workload FILE" on the same events; "explain request --victorialogs
// --audit-id" the explanation of --from-audit FILE, and "simulate
// --victorialogs" the prediction of --workload FILE. With one storage node
// down the answer says it is partial; with both down, and for a store that
// is down, a wrong URL, a query timeout, an empty window and a 403 through
// the service proxy, the command exits 1 with one line that says what to
// do.
func TestExplain429VictoriaLogs(t *testing.T) {
	c := cluster(t)
	kc := kubeconfig(t, c)
	dir := t.TempDir()
	var lines []byte
	files := map[string]string{}
	n := 0
	for _, name := range vlogsRecordings {
		raw := gunzipFile(t, filepath.Join("..", "..", "testdata", "simulate", "recordings", name, recording.AuditLogFile))
		files[name] = filepath.Join(dir, name+"-audit.log")
		if err := os.WriteFile(files[name], raw, 0o600); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines = fmt.Appendf(lines, `{"recording":%q,%s`+"\n", name, sc.Bytes()[1:])
			n++
		}
	}
	bundle := func(name string) string {
		return filepath.Join("..", "..", "testdata", "simulate", "recordings", name, recording.BundleFile)
	}
	// the window: the recordings' own times, never today's date
	since, until := fixtureWindow(t, lines)
	window := []string{"--since", since, "--until", until}

	for _, mode := range []struct {
		name    string
		cluster bool
	}{{"single", false}, {"cluster", true}} {
		t.Run(mode.name, func(t *testing.T) {
			store := testvlogs.StartT(t, mode.cluster)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			ingest := store.Ingest
			if mode.cluster {
				ingest = store.IngestBulk
			}
			if err := ingest(ctx, lines, "stageTimestamp", []string{"recording"}, n); err != nil {
				t.Fatal(err)
			}
			for _, name := range vlogsRecordings {
				from := []string{"explain", "429", "--from", bundle(name), "-o", "json"}
				want := runJSON(t, c, append(from, "--workload", files[name])...)
				got := runJSON(t, c, append(append(from, "--victorialogs", store.Select.URL, "--victorialogs-query", "recording:="+name), window...)...)
				if w, g := sameReport(t, want), sameReport(t, got); w != g {
					t.Errorf("%s: --victorialogs reports\n%s\n--workload\n%s", name, g, w)
				}
				if !strings.Contains(string(got), "counted") {
					t.Errorf("%s: the report does not say what the store counted and moved: %s", name, got)
				}
			}
			// explain request: a 429 of quiet, read by its audit ID
			var id string
			for _, l := range bytes.Split(gunzipFile(t, filepath.Join("..", "..", "testdata", "simulate", "recordings", "quiet", recording.AuditLogFile)), []byte{'\n'}) {
				if bytes.Contains(l, []byte(`"code":429`)) {
					var ev struct{ AuditID string }
					if err := json.Unmarshal(l, &ev); err != nil {
						t.Fatal(err)
					}
					id = ev.AuditID
				}
			}
			req := []string{"explain", "request", "--from", bundle("quiet"), "--audit-id", id, "-o", "json"}
			want := runJSON(t, c, append(req, "--from-audit", files["quiet"])...)
			got := runJSON(t, c, append(req, "--victorialogs", store.Select.URL, "--victorialogs-query", "recording:=quiet", "--victorialogs-since", since, "--victorialogs-until", until)...)
			if w, g := sameReport(t, want), sameReport(t, got); w != g || !strings.Contains(g, `"fate": "rejected"`) {
				t.Errorf("explain request %s: --victorialogs explains\n%s\n--from-audit\n%s", id, g, w)
			}
			// simulate: quiet's what-if replayed from the store
			sim := []string{"simulate", "--from", bundle("quiet"), "--set", "apf-load.queueLengthLimit=10", "-o", "json"}
			want = runJSON(t, c, append(sim, "--workload", files["quiet"])...)
			got = runJSON(t, c, append(sim, "--victorialogs", store.Select.URL, "--victorialogs-query", "recording:=quiet", "--victorialogs-since", since, "--victorialogs-until", until)...)
			if w, g := sameReport(t, want), sameReport(t, got); w != g {
				t.Errorf("simulate: --victorialogs predicts\n%s\n--workload\n%s", g, w)
			}
			if !mode.cluster {
				return
			}
			// one storage node down: a partial answer, said so
			if err := store.Storage[1].Stop(); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runLintPlugin(t, c, append([]string{"explain", "429", "--from", bundle("quiet"), "--victorialogs", store.Select.URL}, window...)...)
			if code != 0 || !strings.Contains(string(out), "partial: a storage node") {
				t.Errorf("one storage node down: exit %d, want 0 and a partial answer that says so:\n%s\n%s", code, out, errOut)
			}
			// both down: an error
			if err := store.Storage[0].Stop(); err != nil {
				t.Fatal(err)
			}
			code, out, errOut = runLintPlugin(t, c, append([]string{"explain", "429", "--from", bundle("quiet"), "--victorialogs", store.Select.URL}, window...)...)
			oneLineError(t, "every storage node down", code, string(out), errOut, "no storage node answered")
		})
	}

	t.Run("errors", func(t *testing.T) {
		store := testvlogs.StartT(t, false)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := store.Ingest(ctx, lines, "stageTimestamp", []string{"recording"}, n); err != nil {
			t.Fatal(err)
		}
		port, err := testcluster.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		base := []string{"explain", "429", "--from", bundle("quiet")}
		for _, tc := range []struct {
			name string
			args []string
			want string
		}{
			{"store down", append([]string{"--victorialogs", "http://127.0.0.1:" + strconv.Itoa(port)}, window...), "cannot reach VictoriaLogs"},
			{"wrong URL", append([]string{"--victorialogs", store.Select.URL + "/logs"}, window...), "give VictoriaLogs' base URL"},
			{"query timeout", append([]string{"--victorialogs", store.Select.URL, "--victorialogs-timeout", "1ns"}, window...), "timed out"},
			{"empty window", []string{"--victorialogs", store.Select.URL, "--since", "1h", "--until", "2020-01-01T00:00:00Z"}, "holds no audit event"},
			{"bad filter", append([]string{"--victorialogs", store.Select.URL, "--victorialogs-query", "recording:("}, window...), "check --victorialogs-query"},
		} {
			code, out, errOut := runLintPlugin(t, c, append(base, tc.args...)...)
			oneLineError(t, tc.name, code, string(out), errOut, tc.want)
		}
		// explain request of an audit ID the store does not hold, and
		// simulate over an empty window
		code, out, errOut := runLintPlugin(t, c, "explain", "request", "--from", bundle("quiet"), "--victorialogs", store.Select.URL, "--audit-id", "no-such-id", "--victorialogs-since", since, "--victorialogs-until", until)
		oneLineError(t, "unknown audit ID", code, string(out), errOut, "holds no completed request of audit ID no-such-id")
		code, out, errOut = runLintPlugin(t, c, "simulate", "--from", bundle("quiet"), "--victorialogs", store.Select.URL, "--victorialogs-until", "2020-01-01T00:00:00Z")
		oneLineError(t, "simulate, empty window", code, string(out), errOut, "holds no audit event")
		// a 403 through the apiserver's service proxy: carol may not get
		// services/proxy
		code, outs, errOuts := apf(t, "", append(append(base, window...), "--victorialogs-service", "logging/victorialogs:9428", "--kubeconfig", kc, "--context", "apf-local-carol")...)
		oneLineError(t, "403 through the proxy", code, outs, errOuts, "forbidden (403): the kubectl identity needs get on services/proxy")
	})
}

// fixtureWindow is the window that holds the audit events of lines (JSON
// lines with a stageTimestamp): --since and --until from the events' own
// times, a minute wider on each side, so that no test depends on today's
// date.
func fixtureWindow(t *testing.T, lines []byte) (since, until string) {
	t.Helper()
	var first, last time.Time
	for _, l := range bytes.Split(lines, []byte{'\n'}) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var ev struct{ StageTimestamp time.Time }
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatalf("an audit event of the fixture: %v", err)
		}
		if first.IsZero() || ev.StageTimestamp.Before(first) {
			first = ev.StageTimestamp
		}
		if ev.StageTimestamp.After(last) {
			last = ev.StageTimestamp
		}
	}
	if first.IsZero() {
		t.Fatal("the fixture holds no audit event")
	}
	end := last.Add(time.Minute).Truncate(time.Second).Add(time.Second)
	return end.Sub(first.Add(-time.Minute)).Round(time.Second).String(), end.UTC().Format(time.RFC3339)
}

// oneLineError checks an exit of 1 with nothing on stdout and one line on
// stderr holding want.
func oneLineError(t *testing.T, what string, code int, out, errOut, want string) {
	t.Helper()
	if code != 1 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, want) || strings.Contains(errOut, "goroutine") {
		t.Errorf("%s: exit %d, stdout %q, stderr %q; want 1, nothing, and one line with %q", what, code, out, errOut, want)
	} else {
		t.Logf("%s: %s", what, strings.TrimSpace(errOut))
	}
}

// runJSON runs the plugin and returns its stdout, failing on a non-zero
// exit.
func runJSON(t *testing.T, c *testcluster.Cluster, args ...string) []byte {
	t.Helper()
	code, out, errOut := runLintPlugin(t, c, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut)
	}
	return out
}

// sameReport is an explain 429 report without what names its source
// (source, instances, notes), its numbers to 12 significant digits (the
// shares are sums in the order of the requests, and requests of the same
// microsecond come from the store in another order than the file's).
func sameReport(t *testing.T, b []byte) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	delete(v, "source")
	delete(v, "instances")
	delete(v, "notes")
	out, err := json.MarshalIndent(testvlogs.Rounded(v), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func gunzipFile(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExplain429VictoriaLogsThroughServiceProxy reads a VictoriaLogs that
// runs "in the cluster" through the apiserver's service proxy
// (--victorialogs-service), and checks it reports what --victorialogs URL
// reports. As for TestHistoryThroughServiceProxy, the proxy only goes to an
// EndpointSlice endpoint that is a pod of the namespace holding that
// address, never to loopback: VictoriaLogs runs in a network namespace,
// on the namespace's side of a veth pair, and the test writes the pod, a
// selector-less Service and its EndpointSlice.
func TestExplain429VictoriaLogsThroughServiceProxy(t *testing.T) {
	c := cluster(t)
	netns := newNetns(t, "the service proxy's 403 is covered by TestExplain429VictoriaLogs")
	_, there := vethHost(t, netns)
	store := testvlogs.StartSingleIn(t, netns, there)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw := gunzipFile(t, filepath.Join("..", "..", "testdata", "simulate", "recordings", "quiet", recording.AuditLogFile))
	if err := store.Ingest(ctx, raw, "stageTimestamp", nil, bytes.Count(raw, []byte{'\n'})); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(store.Select.URL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	admin := c.Client(testcluster.Admin)
	ns, name := fmt.Sprintf("logging-%d", os.Getpid()), "victorialogs"
	t.Cleanup(func() { _ = admin.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	netnsService(t, admin, ns, name, "victoriametrics/victoria-logs", "http", 9428, port, "", there)
	since, until := fixtureWindow(t, raw)
	base := []string{"explain", "429", "--from", filepath.Join("..", "..", "testdata", "simulate", "recordings", "quiet", recording.BundleFile), "--since", since, "--until", until, "-o", "json"}
	direct := runJSON(t, c, append(base, "--victorialogs", store.Select.URL)...)
	proxied := runJSON(t, c, append(base, "--victorialogs-service", ns+"/"+name+":9428")...)
	if d, p := sameReport(t, direct), sameReport(t, proxied); d != p {
		t.Errorf("--victorialogs-service reports\n%s\n--victorialogs\n%s", p, d)
	}
	if !strings.Contains(string(proxied), "service "+ns+"/"+name+":9428 (through the apiserver)") {
		t.Errorf("the proxied report does not name the service: %s", proxied)
	}
}
