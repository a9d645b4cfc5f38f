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
