package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The inputs of this file come from outside the project: a kubelet's httplog
// line, kubectl's 429 text, upstream's e2e objects and the documentation's
// examples. Each case is an input that was once mishandled; now an
// input is used, or refused with one line and exit 1; never silently
// dropped, never paired with something it does not belong to.

const (
	// A kubelet's ConfigMap GET, audit ID aaaa...1.
	kubeletLine = `I1121 14:15:17.980328       1 httplog.go:134] "HTTP" verb="GET" URI="/api/v1/namespaces/default/configmaps/app" latency="2.5ms" userAgent="kubelet/v1.37.1 (linux/amd64) kubernetes/abcdef" audit-ID="aaaaaaaa-0000-0000-0000-000000000001" srcIP="10.0.0.5:53422" apf_pl="system" apf_fs="system-nodes" apf_iseats=1 apf_fseats=0 apf_additionalLatency="0s" apf_execution_time="1.9ms" resp=200`
	// bob's pods LIST, audit ID bbbb...2: another request.
	bobAudit = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"bbbbbbbb-0000-0000-0000-000000000002","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/pods","verb":"list","user":{"username":"bob","groups":["system:authenticated"]},"sourceIPs":["10.0.0.9"],"userAgent":"kubectl/v1.37.1","objectRef":{"resource":"pods","namespace":"default","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-21T14:15:17.977828Z","stageTimestamp":"2026-11-21T14:15:17.980328Z"}`
	// The kubelet's own audit event for its GET, same audit ID as kubeletLine.
	kubeletAudit = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"aaaaaaaa-0000-0000-0000-000000000001","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/configmaps/app","verb":"get","user":{"username":"system:node:n1","groups":["system:nodes","system:authenticated"]},"sourceIPs":["10.0.0.5"],"userAgent":"kubelet/v1.37.1","objectRef":{"resource":"configmaps","namespace":"default","name":"app","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-21T14:15:17.977828Z","stageTimestamp":"2026-11-21T14:15:17.980328Z"}`
	// A line cut short after apf_pl.
	truncatedLine = `I1121 14:15:17.980328       1 httplog.go:134] "HTTP" verb="GET" URI="/api/v1/namespaces/default/configmaps/app" latency="2.5ms" userAgent="kubelet" audit-ID="cccccccc-0000-0000-0000-000000000003" srcIP="10.0.0.5:53422" apf_pl="system"`
	// A GET whose final seats no estimate can give (reads have none).
	fseatsLine = `I1121 14:15:17.990000       1 httplog.go:134] "HTTP" verb="GET" URI="/api/v1/namespaces/default/configmaps/app" latency="2.5ms" userAgent="kubelet" audit-ID="dddddddd-0000-0000-0000-000000000004" srcIP="10.0.0.5:53422" apf_pl="system" apf_fs="system-nodes" apf_iseats=1 apf_fseats=50 apf_additionalLatency="5ms" apf_execution_time="1.9ms" resp=200`
	// kubectl's text for APF's 429 (apimachinery errors.go:NewGenericServerResponse).
	kubectl429 = `Error from server (TooManyRequests): the server has received too many requests and has asked us to try again later (get pods)`
	// Another component's line that happens to carry the httplog marker.
	foreignLine = `I1121 14:15:17.985000       1 proxy.go:1] "HTTP" garbage without key values`

	deployYAML = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
`
	frobYAML = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: frob}
spec:
  priorityLevelConfiguration: {name: workload-low}
  matchingPrecedence: 1000
  rules:
  - subjects: [{kind: User, user: {name: alice}}]
    resourceRules: [{verbs: [frobnicate], apiGroups: ["*"], resources: ["*"], namespaces: ["*"]}]
`
	noNamespacesYAML = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: noscope}
spec:
  priorityLevelConfiguration: {name: workload-low}
  matchingPrecedence: 1000
  rules:
  - subjects: [{kind: User, user: {name: alice}}]
    resourceRules: [{verbs: [get], apiGroups: ["*"], resources: ["*"], clusterScope: false}]
`
	// The documentation's health-for-strangers example (v1beta3).
	healthForStrangersYAML = `apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: FlowSchema
metadata:
  name: health-for-strangers
spec:
  matchingPrecedence: 1000
  priorityLevelConfiguration:
    name: exempt
  rules:
    - nonResourceRules:
      - nonResourceURLs:
          - "/healthz"
          - "/livez"
          - "/readyz"
        verbs:
          - "*"
      subjects:
        - kind: Group
          group:
            name: "system:unauthenticated"
`
	// upstream's e2e priority level, in v1beta1 with assuredConcurrencyShares.
	v1beta1LevelYAML = `apiVersion: flowcontrol.apiserver.k8s.io/v1beta1
kind: PriorityLevelConfiguration
metadata: {name: e2e-testing-prioritylevel}
spec:
  type: Limited
  limited:
    assuredConcurrencyShares: 7
    limitResponse: {type: Reject}
`
)

func writeInputs(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestInputsUsedOrRefused(t *testing.T) {
	var recent strings.Builder
	// 100 served requests and one recorded 429 on an idle server: nothing
	// should be predicted rejected, so the 429 is missed.
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&recent, `{"offset":"%dms","user":"alice","groups":["system:authenticated"],"verb":"list","path":"/api/v1/pods","serviceTime":"1ms","status":200}`+"\n", i*10)
	}
	recent.WriteString(`{"offset":"1s","user":"alice","groups":["system:authenticated"],"verb":"list","path":"/api/v1/pods","serviceTime":"1ms","status":429}` + "\n")
	dir := writeInputs(t, map[string]string{
		"kubelet.log":       kubeletLine + "\n",
		"bob.jsonl":         bobAudit + "\n",
		"both.jsonl":        bobAudit + "\n" + kubeletAudit + "\n",
		"truncated.log":     truncatedLine + "\n",
		"sim-truncated.log": kubeletLine + "\n" + truncatedLine + "\n" + kubeletLine + "\n",
		"interleaved.log":   kubeletLine + "\n" + foreignLine + "\n" + fseatsLine + "\n",
		"fseats.log":        fseatsLine + "\n",
		"empty.txt":         "",
		"random.bin":        "\x8f\x01\xfe binary\n\x00\x13\x37 noise\n",
		"deploy.yaml":       deployYAML,
		"frob.yaml":         frobYAML,
		"noscope.yaml":      noNamespacesYAML,
		"health.yaml":       healthForStrangersYAML,
		"beta1.yaml":        v1beta1LevelYAML,
		"missed-429.jsonl":  recent.String(),
	})
	in := func(name string) string { return filepath.Join(dir, name) }
	tests := []struct {
		defect   int
		name     string
		args     []string
		wantCode int
		// every string must appear in stdout+stderr; none of notWant may
		wantOut, notWant []string
	}{
		{1, "log and audit of different requests are not joined", []string{"explain", "request", "--defaults", "--from-log", in("kubelet.log"), "--from-audit", in("bob.jsonl")}, 1,
			[]string{`no event with the httplog line's audit ID "aaaaaaaa-0000-0000-0000-000000000001"`, "audit IDs present: bbbbbbbb-0000-0000-0000-000000000002"}, []string{"user bob"}},
		{1, "log and audit of the same request are joined", []string{"explain", "request", "--defaults", "--from-log", in("kubelet.log"), "--from-audit", in("both.jsonl")}, 0,
			[]string{"user system:node:n1", "AGREES"}, []string{"user bob"}},
		{1, "simulate reports the audit events no httplog line joined", []string{"simulate", "--defaults", "--workload", in("kubelet.log"), "--workload", in("bob.jsonl")}, 0,
			[]string{"1 audit event had no httplog line with its audit ID and was not replayed"}, nil},
		{1, "simulate with audit events only, none joined, says why nothing was replayed", []string{"simulate", "--defaults", "--workload", in("bob.jsonl"), "--workload", in("random.bin")}, 1,
			[]string{`random.bin: no line is an httplog "HTTP" line, an audit event or a record of a log wrapper this reads`}, nil},
		{2, "kubectl's 429 text is APF's", []string{"explain", "request", "--from-message", kubectl429}, 0,
			[]string{"apf-429", "request GET pods", "add VERB_OR_METHOD PATH and the identity"}, nil},
		{2, "APF's body does not ask for --from-message again", []string{"explain", "request", "--defaults", "--from-message", "Too many requests, please try again later."}, 0,
			[]string{"apf-429", "add VERB_OR_METHOD PATH"}, []string{"or --from-message"}},
		{3, "a truncated line is an error in explain", []string{"explain", "request", "--defaults", "--user-name", "alice", "--from-log", in("truncated.log")}, 1,
			[]string{"truncated.log:1: httplog line without resp= (cut short?)"}, []string{"DISAGREES"}},
		{3, "a truncated line is a counted skip in simulate", []string{"simulate", "--defaults", "--workload", in("sim-truncated.log")}, 0,
			[]string{"skipped 1 line that could not be read as a request", "sim-truncated.log:2: httplog line without resp=", "Workload: 2 requests replayed"}, nil},
		{4, "VERB PATH with --from-log", []string{"explain", "request", "--defaults", "--user-name", "alice", "--from-log", in("kubelet.log"), "GET", "/api/v1/pods"}, 1,
			[]string{"VERB_OR_METHOD PATH and --from-log both give the request"}, nil},
		{4, "--from-message with --from-log", []string{"explain", "request", "--defaults", "--user-name", "alice", "--from-log", in("kubelet.log"), "--from-message",
			"Waited for 1.2s due to client-side throttling, not priority and fairness, request: GET:https://10.0.0.1/api/v1/pods"}, 1,
			[]string{"--from-message and --from-log both give the request"}, nil},
		{4, "identity flags with --from-audit", []string{"explain", "request", "--defaults", "--user-name", "alice", "--from-audit", in("bob.jsonl")}, 1,
			[]string{"--from-audit gives the request's identity"}, nil},
		{5, "an unsupported verb", []string{"lint", "--defaults", "-f", in("frob.yaml")}, 2,
			[]string{`FlowSchema frob is invalid (kube-apiserver would reject it): spec.rules[0].resourceRules[0].verbs: Unsupported value: ["frobnicate"]`}, nil},
		{5, "a namespaced rule without namespaces", []string{"lint", "--defaults", "-f", in("noscope.yaml")}, 2,
			[]string{"spec.rules[0].resourceRules[0].namespaces: Required value"}, nil},
		{5, "explain refuses the same object", []string{"explain", "request", "--defaults", "-f", in("frob.yaml"), "--user-name", "alice", "list", "/api/v1/pods"}, 1,
			[]string{"FlowSchema frob is invalid"}, nil},
		{6, "simulate on an empty workload", []string{"simulate", "--defaults", "--workload", in("empty.txt")}, 1,
			[]string{"empty.txt: the file is empty: no audit event, httplog line or workload record in it"}, nil},
		{6, "simulate on random bytes", []string{"simulate", "--defaults", "--workload", in("random.bin")}, 1,
			[]string{`random.bin: no line is an httplog "HTTP" line`}, nil},
		// tune's first step closed the nil it returned on any error:
		// every refusal of its workload was a panic
		{15, "tune on an empty workload", []string{"tune", "--defaults", "--workload", in("empty.txt")}, 1,
			[]string{"empty.txt: the file is empty: no audit event, httplog line or workload record in it"}, []string{"panic"}},
		{15, "tune on random bytes", []string{"tune", "--defaults", "--workload", in("random.bin")}, 1,
			[]string{`random.bin: no line is an httplog "HTTP" line`}, []string{"panic"}},
		{15, "tune on a workload that is not there", []string{"tune", "--defaults", "--workload", in("absent.log")}, 1,
			[]string{"absent.log: no such file or directory"}, []string{"panic"}},
		{7, "explain -f without APF objects", []string{"explain", "request", "--defaults", "-f", in("deploy.yaml"), "--user-name", "alice", "list", "/api/v1/pods"}, 1,
			[]string{"deploy.yaml holds no FlowSchema or PriorityLevelConfiguration (1 other object)"}, nil},
		{7, "simulate -f without APF objects", []string{"simulate", "--defaults", "-f", in("deploy.yaml"), "--workload", in("kubelet.log")}, 1,
			[]string{"deploy.yaml holds no FlowSchema or PriorityLevelConfiguration"}, nil},
		{7, "capacity -f without APF objects", []string{"capacity", "--defaults", "-f", in("deploy.yaml")}, 1,
			[]string{"deploy.yaml holds no FlowSchema or PriorityLevelConfiguration"}, nil},
		{7, "lint -f without APF objects", []string{"lint", "--defaults", "-f", in("deploy.yaml")}, 2,
			[]string{"deploy.yaml holds no FlowSchema or PriorityLevelConfiguration"}, nil},
		{7, "lint -f on an empty file", []string{"lint", "--defaults", "-f", in("empty.txt")}, 2,
			[]string{"empty.txt holds no FlowSchema or PriorityLevelConfiguration"}, nil},
		{7, "explain -f on an empty file", []string{"explain", "request", "--defaults", "-f", in("empty.txt"), "--user-name", "alice", "list", "/api/v1/pods"}, 1,
			[]string{"empty.txt holds no FlowSchema or PriorityLevelConfiguration"}, nil},
		// It exempts the health checks alone, which lint does not flag;
		// its overlap with the suggested probes shows it is used.
		{8, "the docs' v1beta3 example is converted and used", []string{"lint", "--defaults", "--min-severity=info", "-f", in("health.yaml")}, 0,
			[]string{"FlowSchema health-for-strangers converted from flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema health-for-strangers is partly shadowed: rule 0 overlaps probes rule 0"}, nil},
		{8, "v1beta1 assuredConcurrencyShares becomes nominalConcurrencyShares", []string{"capacity", "--defaults", "-f", in("beta1.yaml"), "-o", "json"}, 0,
			[]string{"converted from flowcontrol.apiserver.k8s.io/v1beta1", "assuredConcurrencyShares is nominalConcurrencyShares in v1", `"name": "e2e-testing-prioritylevel",
        "type": "Limited",
        "limitResponse": "Reject",
        "nominalConcurrencyShares": 7`}, nil},
		{12, "agreement on rejections and dispatches apart", []string{"simulate", "--defaults", "--workload", in("missed-429.jsonl")}, 0,
			[]string{"0/1 (0.0%)", "100/100 (100.0%)", "arriving over 1s"}, []string{"99.0%", "of simulated time"}},
		{12, "the columns are explained", []string{"simulate", "--defaults", "--workload", in("missed-429.jsonl")}, 0,
			[]string{"PEAK-QUEUE: most requests in the queues at once"}, nil},
		{13, "final seats no estimate gives are flagged", []string{"explain", "request", "--defaults", "--user-name", "system:node:n1", "--group", "system:nodes", "--from-log", in("fseats.log")}, 0,
			[]string{"the server estimated 50 final seats, above the replay's maximum of 0", "then 50 final seats for 5ms", "latency 2.5ms, execution 1.9ms"}, nil},
		{14, "another component's line is skipped and counted", []string{"simulate", "--defaults", "--workload", in("interleaved.log")}, 0,
			[]string{"skipped 1 line", "interleaved.log:2: malformed key/value list", "Workload: 2 requests replayed"}, nil},
		{14, "--strict fails on it", []string{"simulate", "--defaults", "--strict", "--workload", in("interleaved.log")}, 1,
			[]string{"interleaved.log:2: malformed key/value list"}, nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("defect %d: %s", tt.defect, tt.name), func(t *testing.T) {
			code, out, errOut := runPlugin(tt.args...)
			all := out + errOut
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, out, errOut)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q\nstdout: %s\nstderr: %s", w, out, errOut)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(all, w) {
					t.Errorf("output has %q\nstdout: %s\nstderr: %s", w, out, errOut)
				}
			}
			if code != 0 && strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Errorf("a refusal takes one line, got:\n%s", errOut)
			}
		})
	}
}

// TestJoinedIdentityJSON: the identity of a joined request is the audit
// event's of the same ID, in the JSON too.
func TestJoinedIdentityJSON(t *testing.T) {
	dir := writeInputs(t, map[string]string{"kubelet.log": kubeletLine + "\n", "both.jsonl": kubeletAudit + "\n" + bobAudit + "\n"})
	code, out, errOut := runPlugin("explain", "request", "--defaults", "-o", "json", "--from-log", filepath.Join(dir, "kubelet.log"), "--from-audit", filepath.Join(dir, "both.jsonl"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var ex struct {
		Request struct {
			User string `json:"user"`
		} `json:"request"`
	}
	if err := json.Unmarshal([]byte(out), &ex); err != nil {
		t.Fatal(err)
	}
	if ex.Request.User != "system:node:n1" {
		t.Errorf("user %q, want the kubelet's", ex.Request.User)
	}
}
