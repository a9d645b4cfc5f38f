package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The inputs of this file are the public artifacts of testdata/field
// (origins in its README): what users save or paste from "kubectl get
// --raw" and "kubectl -v=8", read with --from, from files, directories and
// standard input (issue 26).

func fieldPath(name string) string { return filepath.Join("..", "..", "testdata", "field", name) }

func fieldText(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(fieldPath(name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runWithStdin runs the plugin in-process with stdin.
func runWithStdin(stdin string, args ...string) (int, string, string) {
	streams, out, errOut := testStreams(stdin)
	code := run(args, streams)
	return code, out.String(), errOut.String()
}

func TestRawInputs(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"docs-dump_priority_levels.txt", "docs-dump_queues.txt", "docs-dump_requests-details.txt"} {
		os.WriteFile(filepath.Join(dir, strings.TrimPrefix(n, "docs-")+".saved"), []byte(fieldText(t, n)), 0o644)
	}
	garbage := filepath.Join(t.TempDir(), "page.html")
	os.WriteFile(garbage, []byte("<html>\n<body>Forbidden</body>\n</html>\n"), 0o644)
	tests := []struct {
		name     string
		stdin    string
		args     []string
		wantCode int
		want     []string
		notWant  []string
	}{
		{name: "dump levels from stdin", stdin: fieldText(t, "docs-dump_priority_levels.txt"), args: []string{"dump", "levels", "--from", "-"},
			want: []string{"workload-high", "500", "note: read standard input as raw input: dump_priority_levels (8 levels)", "skipped 1 command line"}},
		{name: "dump queues from a directory of raw files", args: []string{"dump", "queues", "--from", dir},
			want: []string{"workload-low   14", "dump_priority_levels (8 levels), dump_queues (6 queues), dump_requests (3 requests)", "skipped 2 elision lines"}},
		{name: "1.20 queues: TOTAL-WORK absent", args: []string{"dump", "queues", "-o", "wide", "--all", "--from", filepath.Join("..", "..", "testdata", "dump", "v1.20-layout", "dump_queues.txt")},
			want: []string{"TOTAL-WORK"}, notWant: []string{"0.000000ss\n"}},
		{name: "top flows of a 1.27 request dump: executing unknown", args: []string{"top", "flows", "--from", filepath.Join("..", "..", "testdata", "dump", "v1.27.4-load", "dump_requests.txt")},
			want:    []string{"apf-load   apf-load     load-4   5         5               -           -", "its dump_requests is of a layout before 1.28, which lists the waiting requests only"},
			notWant: []string{"   0           0\n"}},
		{name: "explain 429 on a paste that starts with a sentence", stdin: "Here is what the apiserver showed:\n" + fieldText(t, "docs-dump_priority_levels.txt"), args: []string{"explain", "429", "--from", "-"},
			want: []string{"skipped 1 command line and 1 line of text"}, notWant: []string{"standard input is empty", "is neither a debug dump"}},
		{name: "explain 429 on garbage after a sentence says why twice alike", stdin: "The page said:\n<html>\n", args: []string{"explain", "429", "--from", "-"}, wantCode: 1,
			want: []string{`standard input line 2: "<html>" is neither a debug dump`}, notWant: []string{"standard input is empty"}},
		{name: "the same grep pasted twice is not summed", stdin: fieldText(t, "eks-rejected-inqueue.txt") + fieldText(t, "eks-rejected-inqueue.txt"), args: []string{"top", "levels", "--from", "-"},
			want:    []string{"workload-low   245       245       145", "4 metrics series read again (two scrapes of one server, or a paste repeated) counted once, from the last read (standard input from line 22)"},
			notWant: []string{"490"}},
		{name: "top levels from a Prometheus UI table pasted as Markdown", args: []string{"top", "levels", "--from", fieldPath("k8s-106085-prometheus-table.txt")},
			want: []string{"node-high         105       105", "catch-all         14        14", "skipped 2 table header lines"}},
		{name: "the note of a command without -f does not suggest it", args: []string{"dump", "levels", "--from", fieldPath("docs-dump_priority_levels.txt")},
			want: []string{"classification and configured limits need the cluster or a bundle;"}, notWant: []string{"-f"}},
		{name: "the note of a command with -f suggests it", args: []string{"capacity", "--from", fieldPath("docs-dump_priority_levels.txt")},
			want: []string{"classification and configured limits need the cluster, a bundle or -f"}},
		{name: "dump requests says where AGE counts from", args: []string{"dump", "requests", "--from", fieldPath("docs-dump_requests-details.txt")},
			want: []string{"does not say when it was taken: AGE counts from the newest arrival or start in its dump_requests (2023-07-18T00:13:09.086476021Z), so each request had waited or run at least that long"}},
		{name: "dump requests says where AGE counts from, a 1.20 dump", args: []string{"dump", "requests", "--from", filepath.Join("..", "..", "testdata", "dump", "v1.20.0-inprocess", "dump_requests.txt")},
			want: []string{"AGE counts from"}},
		{name: "pre-1.20 phantom request row", args: []string{"dump", "requests", "--from", fieldPath("k8s-93376-dump_requests-none.txt")},
			want: []string{"dump_requests (0 requests)"}, notWant: []string{"exempt"}},
		{name: "a dump the input lacks", args: []string{"dump", "levels", "--from", fieldPath("eks-concurrency-limit.txt")}, wantCode: 1,
			want: []string{"holds no dump_priority_levels"}},
		// a bundle of metrics alone: "live state of" beside "without live
		// state", and "all 1 seats are busy"
		{name: "explain request over a bundle without dumps", args: []string{"explain", "request", "--from", filepath.Join("..", "..", "testdata", "simulate", "recordings", "crowded-30", "bundle.tar.gz"), "--user-name", "load-1", "list", "configmaps", "-n", "apf-load"},
			want: []string{"state of https://127.0.0.1:24740 in " + filepath.Join("..", "..", "testdata", "simulate", "recordings", "crowded-30", "bundle.tar.gz") + ", captured 20",
				": its metrics and objects, no debug dump (the seats in use and the queues are not known)", "gets 429 (queue-full) when its 1 seat is busy and that queue already holds 2 requests"},
			notWant: []string{"live state of", "all 1 seats"}},
		// a watch's bundle with dumps said "live state of" the apiserver it
		// was taken from hours before
		{name: "explain request over a bundle says when it was captured", args: []string{"explain", "request", "--from", filepath.Join("..", "..", "testdata", "simulate", "demo-watch", "bundle.tar.gz"), "--user-name", "load-1", "--group", "apf-load", "list", "configmaps", "-n", "apf-load"},
			want:    []string{"  state of https://127.0.0.1:25029 in " + filepath.Join("..", "..", "testdata", "simulate", "demo-watch", "bundle.tar.gz") + ", captured 2026-12-06T01:00:40Z\n"},
			notWant: []string{"live state of"}},
		// top flows of metrics alone printed a bare header and exited 0
		{name: "top flows of an input without a request dump", args: []string{"top", "flows", "--from", fieldPath("eks-concurrency-limit.txt")}, wantCode: 1,
			want: []string{"holds no dump_requests: give a bundle that holds it (kubectl apf dump bundle takes every dump)"}, notWant: []string{"LEVEL"}},
		{name: "garbage", args: []string{"dump", "levels", "--from", garbage}, wantCode: 1,
			want: []string{`line 1: "<html>" is neither a debug dump`}},
		{name: "top levels from pasted metrics", args: []string{"top", "levels", "--from", fieldPath("eks-rejected-inqueue.txt")},
			want: []string{"workload-low", "245", "145", "metrics (4 APF families)"}},
		{name: "explain 429 does not blame a deleted level for missing objects", args: []string{"explain", "429", "--from", fieldPath("eks-rejected-inqueue.txt")},
			want: []string{"workload-low", "time-out", "the input holds no PriorityLevelConfiguration objects"}, notWant: []string{"deleted, or being drained"}},
		{name: "explain request refuses to classify without FlowSchemas", args: []string{"explain", "request", "--from", fieldPath("docs-dump_requests-details.txt"),
			"--service-account", "default/loadtest", "list", "/api/v1/namespaces/kube-stress/configmaps"}, wantCode: 1,
			want: []string{"holds no FlowSchemas or PriorityLevelConfigurations, so requests cannot be classified", "FlowSchema exempt, service-accounts"}, notWant: []string{"catch-all"}},
		// a dump_requests pasted alone read "without live state", its
		// two waiting loadtest LISTs beside it; this paste (the docs'
		// example) lists no executing request beside them, which a whole
		// dump never does
		{name: "explain request over a dump_requests alone reads its rows", args: []string{"explain", "request", "--from", fieldPath("docs-dump_requests-details.txt"), "--defaults",
			"--service-account", "default/loadtest", "list", "configmaps", "-n", "kube-stress"},
			want: []string{"  state of " + fieldPath("docs-dump_requests-details.txt") + ", captured 2023-07-18T00:13:09Z (the newest arrival or start in its dump_requests): its dump_requests alone",
				"dump_requests shows 2 requests waiting in workload-low and none executing, which a whole dump never shows", "queue 14 holds 2 and queues 74, 109, 18, 115 and 113 of its hand hold none"},
			notWant: []string{"without live state", " in " + fieldPath("docs-dump_requests-details.txt")}},
		{name: "capacity says the input has no objects, and reads the metrics' levels", args: []string{"capacity", "--from", fieldPath("eks-concurrency-limit.txt")},
			want:    []string{"no FlowSchemas or PriorityLevelConfigurations", "workload-low", "245", "No configured limits: the input holds no PriorityLevelConfigurations"},
			notWant: []string{"Server concurrency limit: 600", "catch-all  Reject"}},
		{name: "lint has nothing to lint", args: []string{"lint", "--from", fieldPath("eks-rejected-inqueue.txt")}, wantCode: 2,
			want: []string{"so there is no configuration to lint"}, notWant: []string{"flowschema/catch-all"}},
		{name: "a piped top reads stdin", stdin: fieldText(t, "eks-rejected-inqueue.txt"), args: []string{"top", "--from", "-"},
			want: []string{"workload-low", "245"}},
		{name: "whois needs the objects", args: []string{"whois", "--from", fieldPath("docs-dump_queues.txt"), "11111111-1111-1111-1111-111111111111"}, wantCode: 1,
			want: []string{"holds no FlowSchemas or PriorityLevelConfigurations, whose UIDs whois looks up"}},
		{name: "whois on a trace without PF headers", stdin: fieldText(t, "cabin-34-kubectl-v99-trace.txt"), args: []string{"whois", "-"}, wantCode: 1,
			want: []string{"holds no X-Kubernetes-PF-FlowSchema-UID or X-Kubernetes-PF-PriorityLevel-UID header at all",
				// kubectl v1.2.0's User-Agent: the server predates APF
				"likeliest causes first: (1) the client is kubectl 1.2, so the server is at most 1.3", "older than 1.20"},
			notWant: []string{`"$" is neither`, "below -v=8"}},
		// kubectl v1.21.0 against a server whose exempt responses carried no
		// PF headers (the issue that kubernetes/kubernetes#106827 fixed)
		{name: "whois on an exempt request's trace of a server before 1.24", stdin: fieldText(t, "k8s-106826-kubectl-v10-exempt-trace.txt"), args: []string{"whois", "-"}, wantCode: 1,
			want:    []string{"likeliest causes first: (1) the client is kubectl 1.21, so the server is at most 1.22", "exempt responses carried no PF header before kubernetes/kubernetes#106827"},
			notWant: []string{"below -v=8"}},
		{name: "whois and --from both on stdin", stdin: "x", args: []string{"whois", "--from", "-", "-"}, wantCode: 1,
			want: []string{"both read standard input"}},
		{name: "EventRateLimit's 429 is not APF's", args: []string{"explain", "request", "--defaults", "--from-message",
			"Error from server (TooManyRequests): Too many requests: limit reached on type User for key system:serviceaccount:kube-system:replicaset-controller"},
			want: []string{"event-rate-limit", "EventRateLimit admission plugin", `user "system:serviceaccount:kube-system:replicaset-controller"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runWithStdin(tt.stdin, tt.args...)
			all := out + errOut
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d\n%s", code, tt.wantCode, all)
			}
			if tt.wantCode != 0 && strings.Count(errOut, "\n") != 1 {
				t.Errorf("want one error line, got %q", errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(all, w) {
					t.Errorf("output has %q:\n%s", w, all)
				}
			}
		})
	}
}

// TestLiveViewKeepsStdin: the live view reads its keys from stdin, so it
// cannot read --from - there too.
func TestLiveViewKeepsStdin(t *testing.T) {
	streams, _, _ := testStreams("")
	o := NewTopTUIOptions(nil, streams)
	o.From, o.Force = "-", true
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "the live view reads its keys from standard input") {
		t.Errorf("err = %v", err)
	}
}
