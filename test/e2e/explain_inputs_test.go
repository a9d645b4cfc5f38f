package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
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
