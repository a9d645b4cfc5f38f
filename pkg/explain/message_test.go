package explain

import (
	"strings"
	"testing"
)

func TestParseMessage(t *testing.T) {
	tests := []struct {
		name       string
		text       string
		wantKind   string
		wantAPF    bool
		wantMethod string
		wantPath   string
		// wantText is a part of the explanation (the EventRateLimit key
		// as read, the versions of a too-large resource version)
		wantText string
		wantErr  string
	}{
		{name: "client-go structured log", text: `I1121 10:00:00.000000 1 request.go:685] "Waited before sending request" delay="1.034s" reason="client-side throttling, not priority and fairness" verb="GET" URL="https://10.0.0.1:443/api/v1/namespaces/default/pods?limit=500"`,
			wantKind: MessageClientThrottling, wantMethod: "GET", wantPath: "/api/v1/namespaces/default/pods?limit=500"},
		{name: "client-go legacy log", text: `I0101 request.go:601] Waited for 1.195s due to client-side throttling, not priority and fairness, request: GET:https://api.example:6443/apis/apps/v1/deployments`,
			wantKind: MessageClientThrottling, wantMethod: "GET", wantPath: "/apis/apps/v1/deployments"},
		{name: "oldest client-go", text: `Throttling request took 1.5s, request: PUT:https://h/api/v1/namespaces/x/configmaps/y`,
			wantKind: MessageClientThrottling, wantMethod: "PUT", wantPath: "/api/v1/namespaces/x/configmaps/y"},
		{name: "retry-after wait is about the server", text: `"Waited before sending request" delay="2s" reason="retries: 1, retry-after: 2s - retry-reason: due to retryable error, error: Too many requests" verb="LIST" URL="https://h/api/v1/pods"`,
			wantKind: MessageAPF429, wantAPF: true},
		{name: "PDB eviction", text: `error when evicting pods/"web-0" -n "prod" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.`,
			wantKind: MessageEvictionPDB},
		{name: "watch cache", text: `Error from server (TooManyRequests): storage is (re)initializing`, wantKind: MessageStorageInitializing},
		{name: "APF body", text: `Error from server (TooManyRequests): the server has received too many requests and has asked us to try again later (get pods) Too many requests, please try again later.`,
			wantKind: MessageAPF429, wantAPF: true},
		// The EventRateLimit admission plugin's 429, as kubectl prints it:
		// apimachinery's NewTooManyRequestsError around limitenforcer.go's
		// "limit reached on type %v for key %v" (k8s.io/kubernetes
		// plugin/pkg/admission/eventratelimit).
		{name: "EventRateLimit", text: `Error from server (TooManyRequests): Too many requests: limit reached on type User for key system:serviceaccount:kube-system:replicaset-controller`,
			wantKind: MessageEventRateLimit},
		{name: "EventRateLimit, two limits", text: `Too many requests: [limit reached on type Server for key , limit reached on type Namespace for key prod]`,
			wantKind: MessageEventRateLimit},
		// The whole log line of a client whose Event was refused: client-go's
		// event recorder (tools/record/event.go:recordToSink) logs
		// klog.Error(err, "Server rejected event (will not retry!)", "event",
		// event), the error and the Event as quoted values. The key ends at
		// the error's closing quote, not in the Event's fields.
		{name: "EventRateLimit, the client's whole log line", text: `E1121 10:00:00.123456       1 event.go:365] "Server rejected event (will not retry!)" err="Too many requests: limit reached on type User for key system:serviceaccount:kube-system:replicaset-controller" event="&Event{ObjectMeta:{web-5d8f7c6b9.17a8c3e1d2f4b5a6  default    0 0001-01-01 00:00:00 +0000 UTC <nil> <nil> map[] map[] [] [] []},InvolvedObject:ObjectReference{Kind:ReplicaSet,Namespace:default,Name:web-5d8f7c6b9,UID:0f6e9a3c-1b2d-4e5f-8a9b-0c1d2e3f4a5b,APIVersion:apps/v1,ResourceVersion:4217,FieldPath:,},Reason:SuccessfulCreate,Message:Created pod: web-5d8f7c6b9-x2x4z,Source:EventSource{Component:replicaset-controller,Host:,},}"`,
			wantKind: MessageEventRateLimit, wantText: `per user "system:serviceaccount:kube-system:replicaset-controller" (limit type User)`},
		{name: "EventRateLimit, klog JSON line", text: `{"ts":1763719200123.456,"caller":"record/event.go:365","msg":"Server rejected event (will not retry!)","err":"Too many requests: limit reached on type Namespace for key prod","event":"&Event{ObjectMeta:{web.17a8 prod}}"}`,
			wantKind: MessageEventRateLimit, wantText: `per namespace "prod" (limit type Namespace)`},
		// 1.37's ConsistentListFromCacheSkipTimeoutFallback: the watch
		// cache's "Too large resource version" (storage/errors.go inside
		// NewTimeoutError's "Timeout: %s") answered with 429 by
		// storage/cacher/delegator.go, as kubectl prints a 429 Status.
		{name: "consistent LIST from cache, 1.37", text: `Error from server (TooManyRequests): Timeout: Too large resource version: 4217, current: 4210`,
			wantKind: MessageConsistentListCache, wantText: "needed resource version 4217 and the cache, at 4210,"},
		{name: "empty", text: "  ", wantErr: "empty message"},
		{name: "unknown", text: "connection refused", wantErr: "unrecognised message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseMessage(tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Kind != tt.wantKind || m.APF != tt.wantAPF || m.Explanation == "" {
				t.Errorf("got %+v, want kind %s apf %v", m, tt.wantKind, tt.wantAPF)
			}
			if !strings.Contains(m.Explanation, tt.wantText) {
				t.Errorf("explanation %q, want it to contain %q", m.Explanation, tt.wantText)
			}
			if tt.wantMethod != "" && (m.Method != tt.wantMethod || m.Path != tt.wantPath) {
				t.Errorf("request %s %s, want %s %s", m.Method, m.Path, tt.wantMethod, tt.wantPath)
			}
		})
	}
}

// FuzzParseMessage: any text gives a message or an error, never a panic,
// and a recognised request path is a path.
func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		`"Waited before sending request" delay="1s" reason="client-side throttling, not priority and fairness" verb="GET" URL="https://h/api/v1/pods"`,
		`Waited for 1.1s due to client-side throttling, not priority and fairness, request: GET:https://h/api`,
		`Throttling request took 1s, request: GET:%zz`,
		`Cannot evict pod as it would violate the pod's disruption budget.`,
		`Too many requests, please try again later.`,
		`E1121 event.go:365] "Server rejected event (will not retry!)" err="Too many requests: limit reached on type User for key u" event="&Event{}"`,
		`Timeout: Too large resource version: 2, current: 1`,
		"I1202 10:00:00.1 1 round_trippers.go:527] \"Request\" verb=\"GET\" url=\"https://h/api/v1/pods\"\nI1202 10:00:00.2 1 round_trippers.go:632] \"Response\" status=\"429 Too Many Requests\" headers=<\n\tRetry-After: 32\n\tX-Kubernetes-Pf-Flowschema-Uid: 7a6f0a3e-9b1c-4c1e-8b8a-2d1c0e9f4a11\n > milliseconds=3",
		`"Response" status="429 Too Many Requests" headers=< Retry-After: 32` + "\n" + `"Got a Retry-After response" delay="32s" attempt=1 url=".../api/v1/pods?x=y..."`,
		`{"msg":"Response","verb":"GET","url":"%zz","status":"429 Too Many Requests","headers":{"Retry-After":["2"]}}`,
		`GET https://h/api/v1/pods 429 Too Many Requests in 1 milliseconds`,
		"HTTP/2 200 \r\nx-kubernetes-pf-flowschema-uid: 7a6f0a3e-9b1c-4c1e-8b8a-2d1c0e9f4a11\r\n\r\n{}",
		"> GET /api/v1/pods HTTP/1.1\n< HTTP/1.1 429 Too Many Requests\n< Retry-After: 1\n< \nToo many requests",
		`Got a Retry-After 1s response for attempt 8 to ...`,
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMessage(s)
		if err != nil {
			if m != nil {
				t.Fatalf("message and error both set")
			}
			return
		}
		if m.Kind == "" || m.Explanation == "" {
			t.Fatalf("incomplete message %+v", m)
		}
		if m.Path != "" && !strings.HasPrefix(m.Path, "/") {
			t.Fatalf("path %q does not start with /", m.Path)
		}
	})
}

// TestParseMessageTrace: a client's trace of a 429 (kubectl -v=6 to -v=9,
// in every form client-go's transport/round_trippers.go and
// rest/with_retry.go have logged it) gives the request, the status, the
// Retry-After and the PF UIDs of its last 429 (issue 58, S9: a -v=8 trace
// was unrecognised).
func TestParseMessageTrace(t *testing.T) {
	const (
		fs = "7a6f0a3e-9b1c-4c1e-8b8a-2d1c0e9f4a11"
		pl = "0c9d1f2a-4e5b-4a6c-9d7e-8f9a0b1c2d3e"
	)
	// -v=8 as client-go v0.37 writes it in klog's text form: the request's
	// verb and URL on its "Request" line, the response's status and
	// headers (one a line after a tab, sorted, closed by " >") on its own.
	v8 := `I1202 10:00:00.100218   41822 round_trippers.go:527] "Request" verb="GET" url="https://10.0.0.1:6443/api/v1/namespaces/default/pods?limit=500" headers=<
	Accept: application/json
 >
I1202 10:00:00.103402   41822 round_trippers.go:632] "Response" status="429 Too Many Requests" headers=<
	Retry-After: 32
	X-Kubernetes-Pf-Flowschema-Uid: ` + fs + `
	X-Kubernetes-Pf-Prioritylevel-Uid: ` + pl + `
 > milliseconds=3
I1202 10:00:00.103511   41822 with_retry.go:234] "Got a Retry-After response" delay="32s" attempt=1 url="https://10.0.0.1:6443/api/v1/namespaces/default/pods?limit=500"`
	tests := []struct {
		name                  string
		text                  string
		wantKind              string
		wantAPF               bool
		wantMethod, wantPath  string
		wantRetryAfter        string
		wantFS, wantPL        string // "-": absent
		wantDelay, wantStatus string
		wantText              string
	}{
		{name: "-v=8, text", text: v8, wantKind: MessageAPF429, wantAPF: true, wantMethod: "GET", wantPath: "/api/v1/namespaces/default/pods?limit=500",
			wantRetryAfter: "32s", wantFS: fs, wantPL: pl, wantDelay: "32s", wantText: "A Retry-After of 32 s is API Priority and Fairness's"},
		// -v=8 followed by a throttling wait of the retry: the 429 is the answer.
		{name: "-v=8 with client-side throttling after it", text: v8 + "\n" + `I1202 10:00:32.104000   41822 request.go:697] "Waited before sending request" delay="1.2s" reason="client-side throttling, not priority and fairness" verb="GET" URL="https://10.0.0.1:6443/api/v1/pods"`,
			wantKind: MessageAPF429, wantAPF: true, wantMethod: "GET", wantPath: "/api/v1/namespaces/default/pods?limit=500", wantRetryAfter: "32s", wantFS: fs, wantPL: pl, wantDelay: "32s"},
		// -v=6 and -v=9 give the verb and URL on the Response line.
		{name: "-v=6", text: `I1202 10:00:00.103402   41822 round_trippers.go:632] "Response" verb="GET" url="https://10.0.0.1:6443/api/v1/pods" status="429 Too Many Requests" milliseconds=3`,
			wantKind: MessageAPF429, wantAPF: true, wantMethod: "GET", wantPath: "/api/v1/pods", wantFS: "-", wantPL: "-", wantText: "without Retry-After client-go does not retry it"},
		{name: "-v=9, headers before the timings", text: `I1202 10:00:00.103402   41822 round_trippers.go:632] "Response" verb="LIST" url="https://h/apis/apps/v1/deployments" status="429 Too Many Requests" headers=<
	Retry-After: 4
	X-Kubernetes-Pf-Prioritylevel-Uid: ` + pl + `
 > milliseconds=3 getConnectionMilliseconds=0 serverProcessingMilliseconds=2`,
			wantKind: MessageAPF429, wantAPF: true, wantMethod: "LIST", wantPath: "/apis/apps/v1/deployments", wantRetryAfter: "4s", wantFS: "-", wantPL: pl,
			wantText: "so do the watch cache while it initializes"},
		// A JSON logger (zap, funcr) writes the same keys.
		{name: "-v=8, JSON", text: `{"ts":1764669600103.4,"caller":"transport/round_trippers.go:632","msg":"Response","verb":"GET","url":"https://h/api/v1/pods","status":"429 Too Many Requests","headers":{"Retry-After":["2"],"X-Kubernetes-Pf-Flowschema-Uid":["` + fs + `"]},"milliseconds":3}`,
			wantKind: MessageAPF429, wantAPF: true, wantMethod: "GET", wantPath: "/api/v1/pods", wantRetryAfter: "2s", wantFS: fs, wantPL: "-"},
		// client-go up to 1.26: one line per header, indented after klog's
		// header; an empty UID is a mandatory object the apiserver imagined.
		{name: "old client-go", text: `I0505 13:39:40.860920     281 round_trippers.go:444] GET https://h/api/v1/pods?limit=500 429 Too Many Requests in 1 milliseconds
I0505 13:39:40.860986     281 round_trippers.go:450] Response Headers:
I0505 13:39:40.861000     281 round_trippers.go:453]     Retry-After: 1
I0505 13:39:40.861000     281 round_trippers.go:453]     X-Kubernetes-Pf-Flowschema-Uid: 
I0505 13:39:40.861041     281 request.go:933] Got a Retry-After 1s response for attempt 1 to https://h/api/v1/pods?limit=500`,
			wantKind: MessageAPF429, wantAPF: true, wantMethod: "GET", wantPath: "/api/v1/pods?limit=500", wantRetryAfter: "1s", wantFS: "", wantPL: "-", wantDelay: "1s",
			wantText: "an empty FlowSchema UID"},
		{name: "old client-go, Response Status", text: `I0505 13:39:40.860920     281 round_trippers.go:449] Response Status: 429 Too Many Requests in 1 milliseconds`,
			wantKind: MessageAPF429, wantAPF: true, wantFS: "-", wantPL: "-"},
		// testdata/field/drill-9-kubectl-v8-429.txt: a paste that joined the
		// header block into its line and elided the URL.
		{name: "a collapsed paste, URL elided", text: `"Response" status="429 Too Many Requests" headers=< Retry-After: 32
"Got a Retry-After response" delay="32s" attempt=1 url=".../api/v1/namespaces/default/pods?labelSelector=app..."`,
			wantKind: MessageAPF429, wantAPF: true, wantPath: "/api/v1/namespaces/default/pods", wantRetryAfter: "32s", wantFS: "-", wantPL: "-", wantDelay: "32s"},
		// Two 429s, then client-go gives up and logs APF's body: the last
		// 429 is the answer, the body says it is APF's.
		{name: "two 429s and APF's body", text: `I1202 10:00:00.103402   41822 round_trippers.go:632] "Response" verb="GET" url="https://h/api/v1/pods" status="429 Too Many Requests" headers=<
	Retry-After: 1
 > milliseconds=3
I1202 10:00:01.104402   41822 round_trippers.go:632] "Response" verb="GET" url="https://h/api/v1/pods" status="429 Too Many Requests" headers=<
	Retry-After: 2
 > milliseconds=3
I1202 10:00:01.104500   41822 request.go:1208] "Response Body" body="Too many requests, please try again later.\n"`,
			wantKind: MessageAPF429, wantAPF: true, wantMethod: "GET", wantPath: "/api/v1/pods", wantRetryAfter: "2s", wantFS: "-", wantPL: "-",
			wantText: "Its body is the one API Priority and Fairness writes"},
		// The watch cache's 429 carries a Status body: not APF's.
		{name: "the watch cache's 429", text: `I1202 10:00:00.103402   41822 round_trippers.go:632] "Response" verb="GET" url="https://h/api/v1/pods" status="429 Too Many Requests" headers=<
	Retry-After: 1
 > milliseconds=3
I1202 10:00:00.103500   41822 request.go:1208] "Response Body" body="{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"storage is (re)initializing\",\"reason\":\"TooManyRequests\",\"details\":{\"retryAfterSeconds\":1},\"code\":429}"`,
			wantKind: MessageStorageInitializing, wantMethod: "GET", wantPath: "/api/v1/pods", wantRetryAfter: "1s", wantFS: "-", wantPL: "-"},
		// client-go's wait alone, structured and before 1.22.
		{name: "the retry's wait alone", text: `I1202 10:00:00.103511   41822 with_retry.go:234] "Got a Retry-After response" delay="32s" attempt=3 url="https://h/api/v1/pods"`,
			wantKind: MessageAPF429, wantAPF: true, wantPath: "/api/v1/pods", wantFS: "-", wantPL: "-", wantDelay: "32s", wantText: "client-go waited 32s before retry 3"},
		{name: "the retry's wait alone, before 1.22", text: `I0505 13:39:39.893993     281 request.go:933] Got a Retry-After 1s response for attempt 8 to https://34.85.25.72/version?timeout=32s`,
			wantKind: MessageAPF429, wantAPF: true, wantPath: "/version?timeout=32s", wantFS: "-", wantPL: "-", wantDelay: "1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseMessage(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if m.Kind != tt.wantKind || m.APF != tt.wantAPF || m.Method != tt.wantMethod || m.Path != tt.wantPath || m.RetryAfter != tt.wantRetryAfter || m.Delay != tt.wantDelay {
				t.Errorf("got kind %s apf %v request %q %q retry-after %q delay %q; want %s %v %q %q %q %q",
					m.Kind, m.APF, m.Method, m.Path, m.RetryAfter, m.Delay, tt.wantKind, tt.wantAPF, tt.wantMethod, tt.wantPath, tt.wantRetryAfter, tt.wantDelay)
			}
			for _, u := range []struct {
				what string
				got  *string
				want string
			}{{"FlowSchema", m.FlowSchemaUID, tt.wantFS}, {"priority level", m.PriorityLevelUID, tt.wantPL}} {
				switch {
				case u.want == "-" && u.got != nil:
					t.Errorf("%s UID %q, want none", u.what, *u.got)
				case u.want != "-" && (u.got == nil || *u.got != u.want):
					t.Errorf("%s UID %v, want %q", u.what, u.got, u.want)
				}
			}
			if !strings.Contains(m.Explanation, tt.wantText) {
				t.Errorf("explanation %q, want it to contain %q", m.Explanation, tt.wantText)
			}
		})
	}
	// A trace without a 429 is not one.
	if _, err := ParseMessage(`I0808 12:14:52.246168   13391 round_trippers.go:286] GET http://localhost:8080/api 200 OK in 1 milliseconds`); err == nil || !strings.Contains(err.Error(), "unrecognised message") {
		t.Errorf("a 200 response: error %v, want unrecognised", err)
	}
}

// TestCompareTrace: a trace's PF UIDs are compared with the replay's, as a
// probe's (the demo cluster's kubectl -v=8 trace of a 429 gave only a
// note); a 429 the verdict of the state now does not repeat is said to be
// of its own time; objects without the server's UIDs compare nothing.
func TestCompareTrace(t *testing.T) {
	fs, pl := "053f2ee2-e8aa-4918-a3d8-8acfb9f1f129", "ff38894c-d67e-40a5-9f9b-ccaa9517e490"
	names := map[string]string{fs: "apf-load", pl: "apf-load"}
	m := &Message{Status: "429 Too Many Requests", FlowSchemaUID: &fs, PriorityLevelUID: &pl}
	ex := &Explanation{FlowSchema: &FlowSchemaView{Name: "apf-load", UID: fs}, PriorityLevel: &PriorityLevelView{Name: "apf-load", UID: pl},
		Verdict: Verdict{Kind: VerdictRuns}}
	CompareTrace(ex, m, names)
	if r := ex.Recorded; r == nil || r.Source != "trace" || r.Status != 429 || r.Agrees == nil || !*r.Agrees {
		t.Fatalf("recorded %+v, want the trace's 429 agreeing", ex.Recorded)
	}
	if len(ex.Notes) != 1 || !strings.Contains(ex.Notes[0], "the trace's answer was 429 at its own time; the verdict above (runs) is of the state read now") {
		t.Errorf("notes %q", ex.Notes)
	}

	other := "00000000-0000-4000-8000-000000000000"
	ex = &Explanation{FlowSchema: &FlowSchemaView{Name: "global-default", UID: other}, PriorityLevel: &PriorityLevelView{Name: "global-default", UID: pl},
		Verdict: Verdict{Kind: VerdictRejected}}
	CompareTrace(ex, m, names)
	if r := ex.Recorded; r == nil || r.Agrees == nil || *r.Agrees || len(ex.Notes) != 0 {
		t.Errorf("another FlowSchema: recorded %+v, notes %q; want a disagreement and no note (the verdict is a 429 too)", ex.Recorded, ex.Notes)
	}

	ex = &Explanation{FlowSchema: &FlowSchemaView{Name: "global-default"}, PriorityLevel: &PriorityLevelView{Name: "global-default"}}
	if CompareTrace(ex, m, names); ex.Recorded != nil {
		t.Errorf("the defaults (no UIDs): %+v, want nothing compared", ex.Recorded)
	}
}

// TestParseMessagePFHeaders: a trace of a response APF let through (kubectl
// -v=8 as klog writes it; the form of round_trippers.go's "Response" line
// with its header block) is a message about APF with the response's
// status and both UIDs, and the request of its "Request" line.
func TestParseMessagePFHeaders(t *testing.T) {
	const trace = `I1205 04:26:24.730000   17530 round_trippers.go:527] "Request" verb="GET" url="https://127.0.0.1:6443/api/v1/namespaces/default/configmaps?limit=500" headers=<
	Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json
	User-Agent: kubectl/v1.37.1 (linux/amd64) kubernetes/$Format
 >
I1205 04:26:24.733000   17530 round_trippers.go:632] "Response" status="403 Forbidden" headers=<
	Audit-Id: 6b1e0c9a-0f3c-4a7e-9a55-3c2c2b1f0d11
	Content-Type: application/json
	X-Kubernetes-Pf-Flowschema-Uid: 2af6c47d-ded9-4cad-99ba-0062c8ae806d
	X-Kubernetes-Pf-Prioritylevel-Uid: 32c87fd9-7600-4abb-9483-d3ac9e11c2c0
 > milliseconds=3`
	m, err := ParseMessage(trace)
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind != MessagePFHeaders || !m.APF || m.Status != "403 Forbidden" || m.Method != "GET" || m.Path != "/api/v1/namespaces/default/configmaps?limit=500" ||
		m.FlowSchemaUID == nil || *m.FlowSchemaUID != "2af6c47d-ded9-4cad-99ba-0062c8ae806d" || m.PriorityLevelUID == nil || *m.PriorityLevelUID != "32c87fd9-7600-4abb-9483-d3ac9e11c2c0" {
		t.Errorf("parsed %+v", m)
	}
	// the headers alone, as grep -i x-kubernetes-pf leaves them
	m, err = ParseMessage("\tX-Kubernetes-Pf-Flowschema-Uid: 2af6c47d-ded9-4cad-99ba-0062c8ae806d\n\tX-Kubernetes-Pf-Prioritylevel-Uid: 32c87fd9-7600-4abb-9483-d3ac9e11c2c0")
	if err != nil || m.Kind != MessagePFHeaders || m.Status != "" || m.Path != "" || m.FlowSchemaUID == nil || m.PriorityLevelUID == nil {
		t.Errorf("headers alone: %+v, %v", m, err)
	}
	// a bare UID is whois's, not a message
	if _, err := ParseMessage("2af6c47d-ded9-4cad-99ba-0062c8ae806d"); err == nil {
		t.Error("a bare UID was recognised as a message")
	}
	// without the headers it is no message this knows
	if _, err := ParseMessage(strings.ReplaceAll(trace, "X-Kubernetes-Pf-", "X-Other-")); err == nil {
		t.Error("a trace without PF headers was recognised")
	}
}

// TestParseMessageCurl: curl's output of a response, -i (the status line
// and the headers before the body) and -v (each line after "< ", the
// request after "> "), HTTP/2's lowercase headers and HTTP/1.1's, CRLF
// line ends as curl writes them.
func TestParseMessageCurl(t *testing.T) {
	const fs, pl = "7a6f0a3e-9b1c-4c1e-8b8a-2d1c0e9f4a11", "0c9d1f2a-4e5b-4a6c-9d7e-8f9a0b1c2d3e"
	for _, c := range []struct {
		name, text                string
		kind, status, retry, path string
	}{
		{"-i HTTP/2 200", "HTTP/2 200 \r\naudit-id: x\r\nx-kubernetes-pf-flowschema-uid: " + fs + "\r\nx-kubernetes-pf-prioritylevel-uid: " + pl + "\r\n\r\n{\"kind\":\"PodList\"}",
			MessagePFHeaders, "200", "", ""},
		{"-i HTTP/1.1 429", "HTTP/1.1 429 Too Many Requests\nRetry-After: 4\nX-Kubernetes-Pf-Flowschema-Uid: " + fs + "\nX-Kubernetes-Pf-Prioritylevel-Uid: " + pl + "\n\nToo many requests, please try again later.\n",
			MessageAPF429, "429 Too Many Requests", "4s", ""},
		{"-v HTTP/2 429", "* Connected\n> GET /api/v1/namespaces/d/pods?limit=5 HTTP/2\n> accept: */*\n> \n< HTTP/2 429 \n< retry-after: 32\n< x-kubernetes-pf-flowschema-uid: " + fs + "\n< x-kubernetes-pf-prioritylevel-uid: " + pl + "\n< \n{ [43 bytes data]",
			MessageAPF429, "429", "32s", "/api/v1/namespaces/d/pods?limit=5"},
	} {
		m, err := ParseMessage(c.text)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if m.Kind != c.kind || m.Status != c.status || m.RetryAfter != c.retry || m.Path != c.path ||
			m.FlowSchemaUID == nil || *m.FlowSchemaUID != fs || m.PriorityLevelUID == nil || *m.PriorityLevelUID != pl {
			t.Errorf("%s: %+v", c.name, m)
		}
		if !strings.Contains(m.Explanation, "curl's output shows the server answered") {
			t.Errorf("%s: %s", c.name, m.Explanation)
		}
	}
}
