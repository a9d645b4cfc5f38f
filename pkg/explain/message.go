package explain

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Message kinds recognised by ParseMessage.
const (
	// MessageClientThrottling: client-go's own rate limiter delayed the
	// request (k8s.io/client-go/rest/request.go:tryThrottleWithInfo); the
	// apiserver never saw it waiting.
	MessageClientThrottling = "client-side-throttling"
	// MessageEvictionPDB: a pod eviction refused because of a
	// PodDisruptionBudget (k8s.io/kubernetes pkg/registry/core/pod/storage/eviction.go),
	// answered with 429 but unrelated to APF.
	MessageEvictionPDB = "pod-disruption-budget"
	// MessageStorageInitializing: the watch cache of the resource is
	// (re)initializing (k8s.io/apiserver/pkg/storage/cacher/ready.go), which
	// answers 429 with Retry-After too.
	MessageStorageInitializing = "storage-initializing"
	// MessageEventRateLimit: the EventRateLimit admission plugin refused
	// an Event (k8s.io/kubernetes plugin/pkg/admission/eventratelimit:
	// limitenforcer.go:accept, wrapped by apimachinery's
	// NewTooManyRequestsError), a 429 that is not APF's.
	MessageEventRateLimit = "event-rate-limit"
	// MessageConsistentListCache: a consistent LIST the watch cache could
	// not serve in time ("Too large resource version"), answered 429 by
	// 1.37's ConsistentListFromCacheSkipTimeoutFallback
	// (k8s.io/apiserver pkg/storage/cacher/delegator.go); not APF's.
	MessageConsistentListCache = "consistent-list-from-cache"
	// MessageAPF429: the body APF writes with a 429
	// (server/filters/priority-and-fairness.go:tooManyRequests).
	MessageAPF429 = "apf-429"
	// MessagePFHeaders: a client's trace of a response APF classified
	// (X-Kubernetes-PF-*-UID headers), whatever its status.
	MessagePFHeaders = "apf-headers"
)

// Message is what ParseMessage understood of a pasted message.
type Message struct {
	// Kind is one of the Message* constants.
	Kind string `json:"kind"`
	// APF is true when the message is about API Priority and Fairness.
	APF bool `json:"apf"`
	// Method and Path are the request named in the message, if any
	// (Path without scheme and host, with its query).
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	// Resource is the resource a client-go error names, as "pods",
	// "deployments.apps" or "pods web" (with the object's name), when the
	// message does not give the path.
	Resource string `json:"resource,omitempty"`
	// Delay is the client-side wait quoted by client-go.
	Delay string `json:"delay,omitempty"`
	// Status and RetryAfter are the answer a client's trace shows
	// ("429 Too Many Requests", "32s"); FlowSchemaUID and PriorityLevelUID
	// its X-Kubernetes-PF-*-UID headers, which APF sets on every response
	// it classified, its rejections included (nil: not in the trace; empty:
	// a mandatory object the apiserver imagined).
	Status           string  `json:"status,omitempty"`
	RetryAfter       string  `json:"retryAfter,omitempty"`
	FlowSchemaUID    *string `json:"flowSchemaUID,omitempty"`
	PriorityLevelUID *string `json:"priorityLevelUID,omitempty"`
	// Explanation says what the message means and what to do.
	Explanation string `json:"explanation"`
}

var (
	// client-go v0.27+: `"Waited before sending request" delay="1.03s"
	// reason="client-side throttling, not priority and fairness" verb="GET" URL="https://..."`.
	reStructured = regexp.MustCompile(`delay="([^"]*)"[^\n]*?reason="([^"]*)"[^\n]*?verb="([A-Z]+)"[^\n]*?URL="([^"]*)"`)
	// client-go before v0.27: `Waited for 1.03s due to client-side
	// throttling, not priority and fairness, request: GET:https://...`.
	reLegacy = regexp.MustCompile(`Waited for ([^ ]+) due to (client-side throttling[^,]*), not priority and fairness, request: ([A-Z]+):(\S+)`)
	// Older still: `Throttling request took 1.03s, request: GET:https://...`.
	reOldest = regexp.MustCompile(`Throttling request took ([^,]+), request: ([A-Z]+):(\S+)`)
	// client-go's text for a 429 whose body is not a Status
	// (k8s.io/apimachinery pkg/api/errors/errors.go:NewGenericServerResponse),
	// as kubectl prints it: `Error from server (TooManyRequests): the server
	// has received too many requests and has asked us to try again later
	// (get pods)`. The suffix is the HTTP method in lower case and the
	// resource, with the object's name if any.
	// The EventRateLimit admission plugin's refusal, inside
	// NewTooManyRequestsError's "Too many requests: %s"; several limits
	// reached at once are joined in brackets. In a client's log line the
	// error is a quoted value (client-go's event recorder logs
	// `"Server rejected event (will not retry!)" err="Too many requests:
	// ..." event="&Event{...}"`), so the key also ends at a quote.
	reEventRateLimit = regexp.MustCompile(`limit reached on type (Server|Namespace|User|SourceAndObject) for key ([^,\]\n"\\]*)`)
	// A consistent LIST the watch cache could not serve in time: the
	// cacher's "Too large resource version" (k8s.io/apiserver
	// pkg/storage/errors.go:NewTooLargeResourceVersionError, inside
	// apimachinery's NewTimeoutError "Timeout: %s"), which 1.37's
	// ConsistentListFromCacheSkipTimeoutFallback answers with 429
	// (pkg/storage/cacher/delegator.go:GetList) instead of reading etcd.
	reTooLargeRV = regexp.MustCompile(`Too large resource version: (\d+), current: (\d+)`)
	reGeneric429 = regexp.MustCompile(`the server has received too many requests and has asked us to try again later(?: \(([a-z]+) ([^()\s]+)(?: ([^()\s]+))?\))?`)
)

// ParseMessage recognises a message pasted by the user: a client-go
// throttling log line, a 429 error text, ... It returns an error when the
// message is none of the known kinds, so the user learns to paste
// something else rather than getting a guess.
func ParseMessage(text string) (*Message, error) {
	t := strings.TrimSpace(text)
	if t == "" {
		return nil, fmt.Errorf("empty message: paste a client-go log line or the text of an HTTP 429 error")
	}
	// A client's trace (kubectl -v=6 and up) may hold throttling lines
	// too: its 429 is the answer.
	if r := findResponse429(t); r != nil {
		return r.message(t), nil
	}
	if r := findPFResponse(t); r != nil {
		return r.classifiedMessage(), nil
	}
	if m := reStructured.FindStringSubmatch(t); m != nil {
		msg := &Message{Delay: m[1], Method: m[3]}
		msg.Path = pathOf(m[4])
		if strings.Contains(m[2], "client-side throttling") {
			msg.Kind = MessageClientThrottling
			msg.Explanation = throttlingText(msg.Delay)
		} else {
			// client-go waited the Retry-After of an earlier 429 before
			// retrying: that 429 may well be APF's.
			msg.Kind, msg.APF = MessageAPF429, true
			msg.Explanation = fmt.Sprintf("client-go waited %s before retrying because the server asked it to (%s): an earlier response was a 429 or 5xx with Retry-After; explain the request to see its level and queues", msg.Delay, m[2])
		}
		return msg, nil
	}
	if m := reLegacy.FindStringSubmatch(t); m != nil {
		msg := &Message{Kind: MessageClientThrottling, Delay: m[1], Method: m[3], Path: pathOf(m[4])}
		msg.Explanation = throttlingText(msg.Delay)
		return msg, nil
	}
	if m := reOldest.FindStringSubmatch(t); m != nil {
		msg := &Message{Kind: MessageClientThrottling, Delay: m[1], Method: m[2], Path: pathOf(m[3])}
		msg.Explanation = throttlingText(msg.Delay)
		return msg, nil
	}
	if msg := errorText(t); msg != nil {
		return msg, nil
	}
	if msg := retryWaitMessage(t); msg != nil {
		return msg, nil
	}
	return nil, fmt.Errorf("unrecognised message: paste a client-go \"Waited before sending request\" or \"Waited for ... due to client-side throttling\" line, a kubectl -v=8 trace or curl -i/-v output of the 429 (or of any response with X-Kubernetes-PF-* headers), or the text of a 429 error")
}

// errorText recognises the text of an error answer (or of a client's log
// line quoting it), nil when it is none it knows.
func errorText(t string) *Message {
	if m := reEventRateLimit.FindStringSubmatch(t); m != nil && strings.Contains(strings.ToLower(t), "too many requests") {
		key := strings.TrimSpace(m[2])
		per := map[string]string{"Server": "the whole apiserver", "Namespace": "namespace " + strconv.Quote(key),
			"User": "user " + strconv.Quote(key), "SourceAndObject": "the source and object " + strconv.Quote(key)}[m[1]]
		return &Message{Kind: MessageEventRateLimit, Explanation: fmt.Sprintf("this 429 comes from the EventRateLimit admission plugin, not from API Priority and Fairness: creating Events is limited per %s (limit type %s) and the limit was reached. The client (often a controller in a loop) should emit fewer Events; the cluster admin sets the plugin's qps, burst and cacheSize in its configuration (EventRateLimit in the --admission-control-config-file of kube-apiserver)", per, m[1])}
	}
	if m := reTooLargeRV.FindStringSubmatch(t); m != nil {
		return &Message{Kind: MessageConsistentListCache, Explanation: fmt.Sprintf("this comes from the apiserver's watch cache, not from API Priority and Fairness: a consistent LIST (no resourceVersion) needed resource version %s and the cache, at %s, did not catch up with etcd in time. With the feature gate ConsistentListFromCacheSkipTimeoutFallback (1.37, alpha, off by default) the server answers such a LIST 429 with Retry-After: 1 instead of reading etcd; the same text with a 504 answers a request for an explicit resourceVersion the cache has not reached. Retrying is right; if it lasts, check the apiserver's watch of etcd (etcd latency, apiserver_watch_cache_* metrics)", m[1], m[2])}
	}
	if m := reGeneric429.FindStringSubmatch(t); m != nil {
		// APF answers its rejections with a plain-text body
		// (priority-and-fairness.go:tooManyRequests), which client-go cannot
		// decode as a Status and so replaces with this text; the watch
		// cache's and the Eviction API's 429s carry a Status with their own
		// message.
		msg := &Message{Kind: MessageAPF429, APF: true, Method: strings.ToUpper(m[1]), Resource: strings.TrimSpace(m[2] + " " + m[3])}
		req := "the request"
		if msg.Method != "" {
			req = fmt.Sprintf("the %s request on %s", msg.Method, msg.Resource)
		}
		msg.Explanation = fmt.Sprintf("this is how client-go and kubectl report a 429 whose body is plain text, which is what API Priority and Fairness answers when it rejects a request (concurrency-limit, queue-full or time-out): %s was rejected by its priority level. Explain the request with its path and identity, or run 'kubectl apf explain 429' to see which levels reject now and why", req)
		return msg
	}
	low := strings.ToLower(t)
	switch {
	case strings.Contains(low, "disruption budget"):
		return &Message{Kind: MessageEvictionPDB, Explanation: "this 429 comes from the Eviction API: evicting the pod would violate its PodDisruptionBudget (or the budget is not processed yet). API Priority and Fairness is not involved; wait for more pods to be ready, or check 'kubectl get pdb' for disruptionsAllowed"}
	case strings.Contains(low, "storage is (re)initializing"):
		return &Message{Kind: MessageStorageInitializing, Explanation: "this 429 comes from the apiserver's watch cache, which is (re)initializing for the resource (after a start or a lost etcd watch); it is not API Priority and Fairness. It passes once the cache is ready; if it lasts, check the apiserver's connection to etcd"}
	case strings.Contains(low, "too many requests, please try again later"):
		return &Message{Kind: MessageAPF429, APF: true, Explanation: "this is the body API Priority and Fairness writes with its 429: the request was rejected by its priority level (concurrency-limit, queue-full or time-out). Explain the request with its identity, or run 'kubectl apf explain 429' to see which levels reject now and why"}
	}
	return nil
}

func throttlingText(delay string) string {
	return fmt.Sprintf("the client delayed the request by %s with its own rate limiter (client-go's QPS and Burst, by default 5 and 10): the apiserver never saw it waiting, and API Priority and Fairness is not involved. Raise the client's QPS/Burst (rest.Config.QPS and Burst), or make fewer requests (informers, label selectors)", delay)
}

// pathOf strips scheme and host from a URL as logged by client-go. A URL
// elided in a paste (".../api/v1/pods?labelSelector=app...") keeps its
// path; a query cut short is dropped, a path cut short gives none.
func pathOf(raw string) string {
	for _, dots := range []string{"...", "…"} {
		if rest, ok := strings.CutPrefix(raw, dots); ok && strings.HasPrefix(rest, "/") {
			raw = rest
		}
		if rest, ok := strings.CutSuffix(raw, dots); ok {
			p, _, hasQuery := strings.Cut(rest, "?")
			if !hasQuery {
				return ""
			}
			raw = p
		}
	}
	u, err := url.Parse(raw)
	if err != nil || !strings.HasPrefix(u.Path, "/") {
		// Not a URL client-go would log (found by FuzzParseMessage).
		return ""
	}
	p := u.EscapedPath()
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	return p
}

// MessageNeedsRequest says what to add when an APF message does not name the
// whole request (its path and identity), which the explanation needs.
func MessageNeedsRequest(m *Message) string {
	what := "the message is about API Priority and Fairness but does not name the request"
	add := "add VERB_OR_METHOD PATH and the identity (e.g. 'list /api/v1/namespaces/NS/pods --user-name NAME')"
	switch {
	case m.Method != "" && m.Path != "":
		what = fmt.Sprintf("the message is about API Priority and Fairness and names %s %s, but not who sent it", m.Method, m.Path)
		add = "add the identity (--user-name NAME [--group G]..., --service-account NS/NAME or --anonymous)"
	case m.Path != "":
		what = fmt.Sprintf("the message is about API Priority and Fairness and names the path %s, but not its method nor who sent it", m.Path)
	case m.Method != "" && m.Resource != "":
		what = fmt.Sprintf("the message is about API Priority and Fairness and names %s %s, but not the request's path", m.Method, m.Resource)
	}
	return what + ": " + add + " for its FlowSchema, level and queues, or run 'kubectl apf explain 429' to see which levels reject now and why"
}

// CompareTrace compares the classification of ex with the
// X-Kubernetes-PF-*-UID headers of a client's trace (m), as a probe's are:
// the server's own answer for the request, at the trace's time. A trace
// answered 429 while the verdict, of the state read now, is not a 429
// says so in a note. Objects without the server's UIDs (--defaults, files)
// give nothing to compare.
func CompareTrace(ex *Explanation, m *Message, names map[string]string) {
	if m == nil || m.FlowSchemaUID == nil || m.PriorityLevelUID == nil {
		return
	}
	if ex.FlowSchema != nil && ex.FlowSchema.UID == "" {
		// the defaults or files: no UID of the server's objects to
		// compare with (whois names the trace's, with the cluster)
		return
	}
	status, _ := strconv.Atoi(strings.Fields(m.Status + " 0")[0])
	ex.CompareUIDs("trace", *m.FlowSchemaUID, *m.PriorityLevelUID, true, status, names)
	if status == 429 && ex.Verdict.Kind != VerdictRejected {
		ex.Notes = append(ex.Notes, fmt.Sprintf("the trace's answer was 429 at its own time; the verdict above (%s) is of the state read now: the level's load has moved since (kubectl apf explain 429 --prometheus, or the apiserver's logs, tell that moment)", ex.Verdict.Kind))
	}
}
