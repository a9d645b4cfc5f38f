package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
)

// uidNames maps the UIDs of the cluster's FlowSchemas and levels to names.
func uidNames(t *testing.T, c *testcluster.Cluster) map[string]string {
	t.Helper()
	ctx := context.Background()
	fc := c.Client(testcluster.Admin).FlowcontrolV1()
	m := map[string]string{}
	fss, err := fc.FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fss.Items {
		m[string(f.UID)] = f.Name
	}
	pls, err := fc.PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pls.Items {
		m[string(p.UID)] = p.Name
	}
	return m
}

// TestExplainProbe: --probe impersonates the identity with the admin's
// kubeconfig, and the server's headers agree with the replay; writes are
// refused before anything is sent.
func TestExplainProbe(t *testing.T) {
	c := cluster(t)
	cases := []struct {
		name   string
		args   []string
		wantFS string
	}{
		{"user with a group", []string{"--user-name", "alice", "--group", "dev", "list", "/api/v1/namespaces/default/secrets"}, "global-default"},
		{"service account", []string{"--service-account", "kube-system/coredns", "list", "/api/v1/endpoints"}, "kube-system-service-accounts"},
		{"node", []string{"--user-name", "system:node:n1", "--group", "system:nodes", "GET", "/api/v1/namespaces/default/configmaps/app"}, "system-nodes"},
		{"controller manager", []string{"--user-name", "system:kube-controller-manager", "get", "/api/v1/namespaces/kube-system/configmaps/x"}, "kube-controller-manager"},
		{"non-resource", []string{"--user-name", "carol", "get", "/version"}, "global-default"},
		{"probes are exempt", []string{"--user-name", "carol", "get", "/healthz"}, "probes"},
		{"anonymous", []string{"--anonymous", "list", "/api/v1/namespaces"}, "global-default"},
		{"masters are exempt", []string{"--user-name", "root", "--group", "system:masters", "list", "/api/v1/pods"}, "exempt"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex := runExplain(t, c, append([]string{"--probe"}, tc.args...)...)
			if ex.Recorded == nil || ex.Recorded.Source != "probe" {
				t.Fatalf("no probe result in the output: %+v", ex.Recorded)
			}
			if ex.Recorded.Agrees == nil || !*ex.Recorded.Agrees {
				t.Errorf("the probe disagrees: %s", ex.Recorded.Detail)
			}
			if ex.FlowSchema == nil || ex.FlowSchema.Name != tc.wantFS || ex.Recorded.FlowSchema != tc.wantFS {
				t.Errorf("FlowSchema: replay %+v, server %q; want %s", ex.FlowSchema, ex.Recorded.FlowSchema, tc.wantFS)
			}
		})
	}
	t.Run("bypassing request gets no headers", func(t *testing.T) {
		ex := runExplain(t, c, "--probe", "--user-name", "alice", "get", "/api/v1/namespaces/default/pods/missing/log")
		if ex.FlowSchema != nil || ex.Verdict.Kind != "bypass" {
			t.Errorf("want a bypass without flowSchema, got %+v / %+v", ex.FlowSchema, ex.Verdict)
		}
		if ex.Recorded == nil || ex.Recorded.Agrees == nil || !*ex.Recorded.Agrees {
			t.Errorf("the server should send no PF headers for pods/log: %+v", ex.Recorded)
		}
	})
	for _, w := range [][]string{{"create", "/api/v1/namespaces/default/configmaps"}, {"delete", "/api/v1/namespaces/default/configmaps/x"}, {"POST", "/api/v1/namespaces"}, {"watch", "/api/v1/pods"}} {
		t.Run("refuses "+w[0], func(t *testing.T) {
			code, _, errOut := runLintPlugin(t, c, append([]string{"explain", "request", "--probe", "--user-name", "alice"}, w...)...)
			if code != 1 || !strings.Contains(errOut, "--probe") || strings.Count(errOut, "error:") != 1 {
				t.Errorf("exit %d, stderr %q; want exit 1 and one error naming --probe", code, errOut)
			}
		})
	}
}

var auditIDRe = regexp.MustCompile(`audit-ID="([^"]+)"`)

// waitForLine returns the first line of path containing every needle.
func waitForLine(t *testing.T, path string, needles ...string) string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if f, err := os.Open(path); err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 16<<20)
			for sc.Scan() {
				line := sc.Text()
				ok := true
				for _, n := range needles {
					ok = ok && strings.Contains(line, n)
				}
				if ok {
					f.Close()
					return line
				}
			}
			f.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line with %q in %s after 20s", needles, path)
		}
	}
}

// TestExplainFromLogAndAudit replays real kube-apiserver httplog lines and
// audit events of requests sent by several identities, and checks the
// replay against the recorded apf_fs/apf_pl and the response headers.
func TestExplainFromLogAndAudit(t *testing.T) {
	c := cluster(t)
	names := uidNames(t, c)
	a := c.APIServers[0]
	tok, err := c.ServiceAccountToken(context.Background(), "e2e-explain-log", "reader")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		send  func(path string) (fsUID, plUID string)
		flags []string
		path  string
	}{
		{"alice", func(p string) (string, string) { _, f, l, _ := sendAs(t, c.RESTConfig("alice"), "GET", p); return f, l },
			[]string{"--user-name", "alice", "--group", "dev"}, "/api/v1/namespaces/default/secrets/from-log-%d"},
		{"node", func(p string) (string, string) {
			_, f, l, _ := sendAs(t, c.RESTConfig("system:node:n2"), "GET", p)
			return f, l
		}, []string{"--user-name", "system:node:n2", "--group", "system:nodes"}, "/api/v1/nodes/from-log-%d"},
		{"service account list", func(p string) (string, string) {
			_, f, l, _ := sendAs(t, c.TokenConfigFor(a, tok), "GET", p)
			return f, l
		}, []string{"--service-account", "e2e-explain-log/reader"}, "/api/v1/namespaces/e2e-explain-log/secrets?limit=7&labelSelector=from-log-%d"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := fmt.Sprintf(tc.path, time.Now().UnixNano()+int64(i))
			fsUID, plUID := tc.send(path)
			wantFS, wantPL := names[fsUID], names[plUID]
			if wantFS == "" || wantPL == "" {
				t.Fatalf("the server's headers %q/%q name no object", fsUID, plUID)
			}
			uri := path
			line := waitForLine(t, a.LogFile, `"HTTP"`, `URI="`+uri+`"`)
			m := auditIDRe.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("no audit-ID in %q", line)
			}
			auditID := m[1]

			// One line given on the command line.
			ex := runExplain(t, c, append([]string{"--from-log", line}, tc.flags...)...)
			checkRecorded(t, "--from-log LINE", ex, "httplog", wantFS, wantPL)

			// The whole log file, the line chosen by its audit ID.
			ex = runExplain(t, c, append([]string{"--from-log", a.LogFile, "--audit-id", auditID}, tc.flags...)...)
			checkRecorded(t, "--from-log FILE", ex, "httplog", wantFS, wantPL)

			// The audit log gives the identity: no identity flags.
			waitForLine(t, a.AuditLog, auditID, "ResponseComplete")
			ex = runExplain(t, c, "--from-audit", a.AuditLog, "--audit-id", auditID)
			if ex.FlowSchema == nil || ex.FlowSchema.Name != wantFS || ex.PriorityLevel.Name != wantPL {
				t.Errorf("--from-audit: replay %+v/%+v, server %s/%s", ex.FlowSchema, ex.PriorityLevel, wantFS, wantPL)
			}
			wantUser := tc.flags[1]
			if tc.flags[0] == "--service-account" {
				wantUser = "system:serviceaccount:" + strings.Replace(tc.flags[1], "/", ":", 1)
			}
			if ex.Request["user"] != wantUser {
				t.Errorf("--from-audit: user %v, want %s", ex.Request["user"], wantUser)
			}

			// Both: the log's classification checked with the audit's identity.
			ex = runExplain(t, c, "--from-log", a.LogFile, "--from-audit", a.AuditLog, "--audit-id", auditID)
			checkRecorded(t, "--from-log with --from-audit", ex, "httplog", wantFS, wantPL)
		})
	}
	t.Run("a log line needs an identity", func(t *testing.T) {
		line := waitForLine(t, a.LogFile, `"HTTP"`, `apf_fs=`)
		code, _, errOut := runLintPlugin(t, c, "explain", "request", "--from-log", line)
		if code != 1 || !strings.Contains(errOut, "carries no user") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
}

func checkRecorded(t *testing.T, what string, ex explainJSON, source, wantFS, wantPL string) {
	t.Helper()
	if ex.Recorded == nil || ex.Recorded.Source != source {
		t.Fatalf("%s: no %s comparison in the output: %+v", what, source, ex.Recorded)
	}
	if ex.Recorded.FlowSchema != wantFS || ex.Recorded.PriorityLevel != wantPL {
		t.Errorf("%s: recorded %s/%s, the server's headers said %s/%s", what, ex.Recorded.FlowSchema, ex.Recorded.PriorityLevel, wantFS, wantPL)
	}
	if ex.Recorded.Agrees == nil || !*ex.Recorded.Agrees {
		t.Errorf("%s: the replay disagrees: %s", what, ex.Recorded.Detail)
	}
	// The server's seat estimate (apf_iseats) lies in the replay's range.
	if ex.Recorded.InitialSeats == nil || ex.Seats == nil || *ex.Recorded.InitialSeats < ex.Seats.Initial || *ex.Recorded.InitialSeats > ex.Seats.Max {
		t.Errorf("%s: server seats %v outside the replay's range %+v", what, ex.Recorded.InitialSeats, ex.Seats)
	}
}

// TestInputsRawFromAndStdin: what a user saves or pastes from "kubectl get
// --raw" (the server's dump bodies as sent, /metrics | grep flowcontrol)
// is read with --from FILE, --from DIR and --from - as the same bodies are
// read from a live capture; what the input lacks is said in one note, and a
// command that needs the objects refuses with one line (issue 26).
func TestInputsRawFromAndStdin(t *testing.T) {
	c := cluster(t)
	stop := startLoad(t, c)
	defer stop()
	src := &fetch.ClusterSource{Config: c.RESTConfig(testcluster.Admin)}
	var live *dump.Snapshot
	for i := 0; i < 40; i++ {
		capture, err := src.Capture(context.Background(), dump.CaptureOptions{Parts: dump.PartAll})
		if err != nil {
			t.Fatal(err)
		}
		live = capture.Snapshots[0]
		if len(live.RequestDump) > 1 {
			break
		}
	}
	if len(live.RequestDump) < 2 {
		t.Fatalf("%d requests in the dump under load", len(live.RequestDump))
	}
	// "kubectl get --raw /metrics | grep flowcontrol", from the server.
	body, err := c.Client(testcluster.Admin).CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var grep strings.Builder
	for _, l := range strings.Split(string(body), "\n") {
		if strings.Contains(l, "flowcontrol") {
			grep.WriteString(l + "\n")
		}
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	raw := filepath.Join(dir, "raw")
	os.Mkdir(raw, 0o755)
	pl := string(live.Raw[dump.FilePriorityLevels])
	q := string(live.Raw[dump.FileQueues])
	r := string(live.Raw[dump.FileRequests])
	write("raw/levels.out", pl)
	write("raw/queues.out", q)
	write("raw/requests.out", r)
	write("raw/flowcontrol.metrics", grep.String())

	// The dumps alone, as a live capture of the same bodies shows them
	// without the objects (no TYPE, no UID).
	bare := &dump.Snapshot{Instance: live.Instance, CapturedAt: live.CapturedAt,
		PriorityLevelDump: live.PriorityLevelDump, QueueDump: live.QueueDump, RequestDump: live.RequestDump}
	var wantLevels, wantQueues bytes.Buffer
	render.PrintLevels(&wantLevels, render.Flags("table"), []*dump.Snapshot{bare}, "")
	render.PrintQueues(&wantQueues, render.Flags("table"), []*dump.Snapshot{bare}, "", true)
	noObjects := "no FlowSchemas or PriorityLevelConfigurations"

	t.Run("a dump file", func(t *testing.T) {
		code, out, errs := apf(t, "", "dump", "levels", "--from", write("pl.txt", pl))
		if code != 0 || out != wantLevels.String() {
			t.Errorf("exit %d, stderr %q\n--- from the file\n%s--- live\n%s", code, errs, out, wantLevels.String())
		}
		if strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "dump_priority_levels") || !strings.Contains(errs, noObjects) {
			t.Errorf("want one note on what was read, got %q", errs)
		}
	})
	t.Run("standard input", func(t *testing.T) {
		code, out, errs := apf(t, q, "dump", "queues", "--all", "--from", "-")
		if code != 0 || out != wantQueues.String() {
			t.Errorf("exit %d, stderr %q\n--- from stdin\n%s--- live\n%s", code, errs, out, wantQueues.String())
		}
		if !strings.Contains(errs, "read standard input as raw input") {
			t.Errorf("note %q", errs)
		}
	})
	t.Run("a pasted session with an elision", func(t *testing.T) {
		lines := strings.Split(strings.TrimRight(pl, "\n"), "\n")
		if len(lines) < 4 {
			t.Fatalf("dump of %d lines", len(lines))
		}
		cut := lines[2]
		session := "$ kubectl get --raw /debug/api_priority_and_fairness/dump_priority_levels\n" + strings.Join(lines[:2], "\n") + "\n...\n" + strings.Join(lines[3:], "\n") +
			"\n$ kubectl get --raw /metrics | grep flowcontrol\n" + grep.String()
		code, out, errs := apf(t, session, "top", "levels", "--from", "-")
		if code != 0 || !strings.Contains(errs, "skipped 1 elision line and 2 command lines") || !strings.Contains(errs, "metrics (") || !strings.Contains(out, loadgen.Level) {
			t.Errorf("exit %d, stderr %q\n%s", code, errs, out)
		}
		code, out, _ = apf(t, session, "dump", "levels", "--from", "-")
		name := strings.TrimSpace(strings.SplitN(cut, ",", 2)[0])
		if code != 0 || strings.Contains(out, "\n"+name+" ") {
			t.Errorf("the elided row %s is shown:\n%s", name, out)
		}
	})
	t.Run("a directory", func(t *testing.T) {
		code, out, errs := apf(t, "", "top", "levels", "--from", raw)
		if code != 0 || !strings.Contains(out, loadgen.Level) || !strings.Contains(errs, "dump_priority_levels") || !strings.Contains(errs, "metrics (") {
			t.Errorf("exit %d\n%s\n%s", code, out, errs)
		}
		code, out, errs = apf(t, "", "dump", "requests", "-o", "json", "--from", raw)
		var rows []map[string]any
		if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != len(live.RequestDump) {
			t.Errorf("exit %d, %v: %d requests, the capture has %d\n%s", code, err, len(rows), len(live.RequestDump), errs)
		}
	})
	t.Run("explain request needs the FlowSchemas", func(t *testing.T) {
		code, out, errs := apf(t, "", "explain", "request", "--from", raw, "--user-name", "alice", "list", "/api/v1/pods")
		if code != 1 || len(out) != 0 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "so requests cannot be classified") {
			t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
		}
		for _, rr := range live.RequestDump {
			if !strings.Contains(errs, rr.FlowSchema) {
				t.Errorf("the error does not name FlowSchema %s of the request dump: %q", rr.FlowSchema, errs)
			}
		}
	})
	t.Run("explain 429 does not call the levels deleted", func(t *testing.T) {
		code, out, errs := apf(t, "", "explain", "429", "--from", raw)
		if code != 0 || strings.Contains(out, "deleted, or being drained") || !strings.Contains(errs, noObjects) {
			t.Errorf("exit %d\n%s\n%s", code, out, errs)
		}
		// The load made apf-load reject: its cause names what is missing.
		if !strings.Contains(out, "Level "+loadgen.Level+":") || !strings.Contains(out, "the input holds no PriorityLevelConfiguration objects") {
			t.Errorf("apf-load's rejections are not explained:\n%s", out)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		code, out, errs := apf(t, "<html><body>Forbidden</body></html>\n", "dump", "levels", "--from", "-")
		if code != 1 || len(out) != 0 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "is neither a debug dump") {
			t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
		}
	})
}
