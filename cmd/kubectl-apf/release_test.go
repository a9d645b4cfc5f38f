package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestKubeVersionDefaults runs capacity, lint, explain and simulate on a
// release's defaults (--defaults --kube-version): each says which release
// it replays, and explain classifies a kube-system service account's
// ConfigMap update as that release does (workload-leader-election up to
// 1.33, removed in 1.34; kube-system-service-accounts after).
func TestKubeVersionDefaults(t *testing.T) {
	for _, tc := range []struct {
		version, wantFS string
	}{
		{"1.29", "workload-leader-election"},
		{"1.31", "workload-leader-election"},
		{"1.33", "workload-leader-election"},
		{"1.35", "kube-system-service-accounts"},
		{"", "kube-system-service-accounts"},
	} {
		flags := []string{"--defaults"}
		want := "1.37 (default)"
		if tc.version != "" {
			flags = append(flags, "--kube-version", tc.version)
			want = tc.version + " (--kube-version)"
		}
		code, out, errOut := runPlugin(append([]string{"explain", "request", "-o", "json", "--service-account", "kube-system/x", "update", "/api/v1/namespaces/kube-system/configmaps/lock"}, flags...)...)
		if code != 0 {
			t.Fatalf("explain %v: exit %d: %s", flags, code, errOut)
		}
		var ex struct {
			Release, ReleaseFrom string
			FlowSchema           struct{ Name string }
		}
		if err := json.Unmarshal([]byte(out), &ex); err != nil {
			t.Fatal(err)
		}
		if ex.FlowSchema.Name != tc.wantFS || ex.Release+" ("+ex.ReleaseFrom+")" != want {
			t.Errorf("explain %v: FlowSchema %s, release %s (%s); want %s, %s", flags, ex.FlowSchema.Name, ex.Release, ex.ReleaseFrom, tc.wantFS, want)
		}
		for _, cmd := range [][]string{{"capacity"}, {"lint"}, {"simulate", "--workload", "../../testdata/simulate/burst.jsonl", "--server-concurrency", "15"}} {
			code, out, errOut := runPlugin(append(cmd, flags...)...)
			if code != 0 {
				t.Fatalf("%v %v: exit %d: %s", cmd, flags, code, errOut)
			}
			if !strings.Contains(out, "Kubernetes "+want) {
				t.Errorf("%v %v does not say it replays Kubernetes %s:\n%s", cmd, flags, want, out)
			}
		}
	}
	for _, bad := range []string{"1.27", "1.38", "latest"} {
		for _, cmd := range []string{"capacity", "lint", "explain", "simulate"} {
			args := []string{cmd, "--defaults", "--kube-version", bad}
			if cmd == "explain" {
				args = []string{"explain", "request", "--defaults", "--kube-version", bad, "--user-name", "u", "get", "/api/v1/pods"}
			}
			if cmd == "simulate" {
				args = append(args, "--workload", "../../testdata/simulate/burst.jsonl")
			}
			code, _, errOut := runPlugin(args...)
			if code == 0 || !strings.Contains(errOut, "--kube-version") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("%v: exit %d, stderr %q; want one line about --kube-version", args, code, errOut)
			}
		}
	}
}
