package explain

import (
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// Verdict kinds: what the apiserver does with the request.
const (
	// VerdictRuns: the request is dispatched at once.
	VerdictRuns = "runs"
	// VerdictQueued: the request waits in a queue of its level.
	VerdictQueued = "queued"
	// VerdictRejected: the request gets HTTP 429 from APF.
	VerdictRejected = "rejected"
	// VerdictExempt: the level is exempt: never queued, never rejected.
	VerdictExempt = "exempt"
	// VerdictBypass: kube-apiserver serves the request without APF.
	VerdictBypass = "bypass"
	// VerdictNotAPF: what the user showed is not about APF (client-side
	// throttling, an eviction blocked by a PodDisruptionBudget, ...).
	VerdictNotAPF = "not-apf"
	// VerdictUnknown: no live state was available (--defaults, or a bundle
	// without dumps); the request runs at once if its level is idle.
	VerdictUnknown = "unknown"
)

// Rejection reasons, as in apiserver_flowcontrol_rejected_requests_total
// (fairqueuing/queueset/queueset.go:StartRequest and (*request).wait).
const (
	ReasonConcurrencyLimit = rejections.ReasonConcurrencyLimit
	ReasonQueueFull        = rejections.ReasonQueueFull
	ReasonTimeOut          = rejections.ReasonTimeOut
)

// Explanation is the answer of "kubectl apf explain request". Its JSON form
// is the stable -o json structure; FlowSchema and PriorityLevel are absent
// for a request that bypasses APF or is not about APF.
type Explanation struct {
	// Request is the request as the apiserver sees it.
	Request RequestView `json:"request"`
	// Release is the Kubernetes release replayed ("1.31"), ReleaseFrom
	// where it came from.
	Release     string `json:"release"`
	ReleaseFrom string `json:"releaseFrom,omitempty"`
	// FlowSchema is the FlowSchema that matched.
	FlowSchema *FlowSchemaView `json:"flowSchema,omitempty"`
	// PriorityLevel is its priority level with its limits.
	PriorityLevel *PriorityLevelView `json:"priorityLevel,omitempty"`
	// FlowDistinguisher is the user name, the namespace or "" (see
	// FlowDistinguisherMethod).
	FlowDistinguisher string `json:"flowDistinguisher"`
	// FlowDistinguisherMethod is ByUser, ByNamespace or "" (none, or no
	// flow computed because the level is exempt, Reject or has one queue).
	FlowDistinguisherMethod string `json:"flowDistinguisherMethod,omitempty"`
	// FlowHash is the flow's hash in hexadecimal ("" when none is computed).
	FlowHash string `json:"flowHash,omitempty"`
	// Trace explains each FlowSchema considered, in matching order, up to
	// the winner.
	Trace []TraceEntry `json:"trace"`
	// Seats is the work estimate of the request.
	Seats *Seats `json:"seats,omitempty"`
	// Queues is the hand of queues and their current state.
	Queues *QueuesView `json:"queues,omitempty"`
	// Verdict says whether the request runs, waits or is rejected.
	Verdict Verdict `json:"verdict"`
	// Notes are other things worth knowing (fallback to catch-all, a
	// dangling schema skipped, a pod eviction, ...).
	Notes []string `json:"notes,omitempty"`
	// Advice lists suggested changes, some with ready-to-apply YAML.
	Advice []Advice `json:"advice,omitempty"`
	// Recorded compares the replay with what the server recorded or
	// answered (--from-log, --from-audit, --probe).
	Recorded *Recorded `json:"recorded,omitempty"`
	// Past is the request's moment reconstructed from the log it came
	// from (the verdict is then that moment's); nil otherwise.
	Past *Past `json:"past,omitempty"`
	// Instance names the apiserver whose live state was used.
	Instance string `json:"instance,omitempty"`
	// StateFrom names the input that state was read from, and when it
	// was captured, when that was not the cluster now (--from: "bundle
	// apf.tar.gz, captured 2026-11-23T03:10:00Z"); empty for the live
	// state read now.
	StateFrom string `json:"stateFrom,omitempty"`
	// NoDumps says that its state held no debug dump (a bundle or an
	// input of metrics and objects alone): the seats in use and the
	// queues are not known, and the verdict says what the request's fate
	// depends on.
	NoDumps bool `json:"noDumps,omitempty"`
	// RequestsOnly says that its state was a dump_requests alone (a paste
	// from an issue): the requests waiting and executing are known, the
	// levels' current limits and the queues' work are not.
	RequestsOnly bool `json:"requestsOnly,omitempty"`
	// RequestsWaitingOnly says that dump_requests is of a layout before
	// 1.28, which lists the waiting requests alone.
	RequestsWaitingOnly bool `json:"requestsWaitingOnly,omitempty"`
	// Instances holds the verdict on every apiserver read, when more than
	// one was (each has its own limits, queues and load; the configuration
	// is shared). Verdict and Queues above are those of the first.
	Instances []InstanceVerdict `json:"instances,omitempty"`
}

// InstanceVerdict is the fate of the request on one apiserver.
type InstanceVerdict struct {
	Instance string      `json:"instance"`
	Verdict  Verdict     `json:"verdict"`
	Queues   *QueuesView `json:"queues,omitempty"`
}

// RequestView is the request as kube-apiserver's RequestInfoFactory sees it.
type RequestView struct {
	Method            string   `json:"method,omitempty"`
	URL               string   `json:"url,omitempty"`
	Verb              string   `json:"verb,omitempty"`
	IsResourceRequest bool     `json:"isResourceRequest"`
	APIGroup          string   `json:"apiGroup,omitempty"`
	APIVersion        string   `json:"apiVersion,omitempty"`
	Resource          string   `json:"resource,omitempty"`
	Subresource       string   `json:"subresource,omitempty"`
	Namespace         string   `json:"namespace,omitempty"`
	Name              string   `json:"name,omitempty"`
	Path              string   `json:"path,omitempty"`
	User              string   `json:"user,omitempty"`
	Groups            []string `json:"groups,omitempty"`
	// ImpliedGroups are the groups the apiserver adds (system:authenticated,
	// service-account groups) that the user did not give.
	ImpliedGroups []string `json:"impliedGroups,omitempty"`
}

// FlowSchemaView names the matching FlowSchema and the rule that matched.
type FlowSchemaView struct {
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Precedence int32  `json:"matchingPrecedence"`
	// Rule is the index of the matching rule in spec.rules (-1 on fallback).
	Rule int `json:"rule"`
	// Imagined is true for a mandatory schema the server supplies itself
	// (it has no UID).
	Imagined bool `json:"imagined,omitempty"`
	// Fallback is true when no schema matched and the server fell back to
	// catch-all.
	Fallback bool `json:"fallback,omitempty"`
}

// PriorityLevelView is the level with its limits.
type PriorityLevelView struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
	// Type is Exempt or Limited.
	Type string `json:"type"`
	// Imagined is true for a mandatory level the server supplies itself
	// (it has no UID).
	Imagined bool `json:"imagined,omitempty"`
	// LimitResponse is Queue or Reject for a Limited level.
	LimitResponse string `json:"limitResponse,omitempty"`
	// NominalLimit .. UpperLimit are in seats (engine.LevelLimits).
	NominalLimit int `json:"nominalLimit"`
	LowerLimit   int `json:"lowerLimit"`
	UpperLimit   int `json:"upperLimit"`
	// CurrentLimit is the limit after borrowing, from the live metrics
	// (current_limit_seats); absent without live state.
	CurrentLimit *float64 `json:"currentLimit,omitempty"`
	// MaxSeats is the most seats one request may take in this level.
	MaxSeats         uint64 `json:"maxSeats,omitempty"`
	Queues           int32  `json:"queues,omitempty"`
	HandSize         int32  `json:"handSize,omitempty"`
	QueueLengthLimit int32  `json:"queueLengthLimit,omitempty"`
	// WaitLimit is how long this request may wait in a queue.
	WaitLimit Duration `json:"waitLimit,omitempty"`
	// ServerConcurrencyLimit is the limit the nominal limits were computed
	// from.
	ServerConcurrencyLimit int `json:"serverConcurrencyLimit"`
}

// TraceEntry is one FlowSchema of the trace.
type TraceEntry struct {
	FlowSchema    string `json:"flowSchema"`
	Precedence    int32  `json:"matchingPrecedence"`
	PriorityLevel string `json:"priorityLevel"`
	Matched       bool   `json:"matched"`
	Dangling      bool   `json:"dangling,omitempty"`
	Imagined      bool   `json:"imagined,omitempty"`
	// Reason says why the schema did not match, or which rule did.
	Reason string `json:"reason"`
	// TiedWith names the schemas of the same precedence: the server orders
	// them by name, which is fragile.
	TiedWith []string `json:"tiedWith,omitempty"`
}

// Seats is the work estimate of one request
// (k8s.io/apiserver/pkg/util/flowcontrol/request/width.go).
type Seats struct {
	// Initial is the seats taken while executing, as estimated here.
	Initial uint64 `json:"initial"`
	// Max is the most it can be for this verb and level (a LIST depends on
	// the number and size of the objects, a write on the watchers).
	Max uint64 `json:"max"`
	// MaxFinal is the most final seats (held for the additional latency
	// after a write, for its watch events) it can take: 0 for every request
	// but writes.
	MaxFinal uint64 `json:"maxFinal"`
	// Note says what the estimate depends on.
	Note string `json:"note,omitempty"`
}

// QueuesView is the flow's hand of queues and what they hold now.
type QueuesView struct {
	// Hand is the flow's queues in deal order.
	Hand []QueueState `json:"hand"`
	// Candidates are the queues of the hand a new request would go to now
	// (the least loaded; upstream picks the first of them from a rotating
	// offset).
	Candidates []int `json:"candidates,omitempty"`
	// Live is true when the lengths come from a dump.
	Live bool `json:"live"`
}

// QueueState is one queue of the hand.
type QueueState struct {
	Index     int `json:"index"`
	Waiting   int `json:"waiting"`
	Executing int `json:"executing"`
	// WaitingSeats is the seats the waiting requests ask for.
	WaitingSeats int `json:"waitingSeats"`
	// WaitingWork is the queue's TotalWorkSum in seat-seconds.
	WaitingWork float64 `json:"waitingWork"`
}

// Verdict is what happens to the request.
type Verdict struct {
	// Kind is one of the Verdict* constants.
	Kind string `json:"kind"`
	// Reason explains the verdict in one sentence.
	Reason string `json:"reason"`
	// RejectReason is the rejected_requests_total reason for a rejection
	// (or the one at risk for a queued request).
	RejectReason string `json:"rejectReason,omitempty"`
	// Queue is the queue the request would wait in.
	Queue *int `json:"queue,omitempty"`
	// Ahead is the number of requests ahead in that queue.
	Ahead int `json:"ahead,omitempty"`
	// ExpectedWait is the estimated wait; absent when unknown.
	ExpectedWait *Duration `json:"expectedWait,omitempty"`
	// WaitLimit is the wait limit the estimate is compared with.
	WaitLimit Duration `json:"waitLimit,omitempty"`
}

// Advice is one suggestion.
type Advice struct {
	Text string `json:"text"`
	// YAML is a ready-to-apply manifest, validated by a test.
	YAML string `json:"yaml,omitempty"`
}

// Recorded compares the replay with a recorded or answered classification.
type Recorded struct {
	// Source is "httplog", "audit", "probe" or "trace" (the response
	// headers of a client's trace given with --from-message).
	Source string `json:"source"`
	// FlowSchema and PriorityLevel are the names recorded (resolved from
	// UIDs for a probe; "" when not recorded or not resolvable).
	FlowSchema    string `json:"flowSchema,omitempty"`
	PriorityLevel string `json:"priorityLevel,omitempty"`
	// FlowDistinguisher is the flow distinguisher the server logged
	// (httplog apf_fd), when it did.
	FlowDistinguisher *string `json:"flowDistinguisher,omitempty"`
	// FlowSchemaUID and PriorityLevelUID are the response headers of a probe
	// or a trace.
	FlowSchemaUID    string `json:"flowSchemaUID,omitempty"`
	PriorityLevelUID string `json:"priorityLevelUID,omitempty"`
	// Status is the HTTP status recorded or answered, 0 if unknown.
	Status int `json:"status,omitempty"`
	// InitialSeats is the seats the server estimated (httplog apf_iseats),
	// when recorded.
	InitialSeats *uint64 `json:"initialSeats,omitempty"`
	// FinalSeats and AdditionalLatency are the rest of the server's work
	// estimate (apf_fseats, apf_additionalLatency), when recorded.
	FinalSeats        *uint64   `json:"finalSeats,omitempty"`
	AdditionalLatency *Duration `json:"additionalLatency,omitempty"`
	// ExecutionTime (apf_execution_time) and Latency are the times the
	// server recorded, when it did.
	ExecutionTime *Duration `json:"executionTime,omitempty"`
	Latency       *Duration `json:"latency,omitempty"`
	// Agrees is set when there was something to compare: true when the
	// replay's FlowSchema and priority level equal the recorded ones.
	Agrees *bool `json:"agrees,omitempty"`
	// FateAgrees is set when the fate was reconstructed from the log and
	// the server's answer is known: true when both served the request or
	// both rejected it. FateDetail explains it.
	FateAgrees *bool  `json:"fateAgrees,omitempty"`
	FateDetail string `json:"fateDetail,omitempty"`
	// Detail explains the comparison.
	Detail string `json:"detail"`
}

// Duration marshals as a Go duration string ("15s").
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// String formats like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// Input is everything Explain needs besides the request.
type Input struct {
	// Config is the digested configuration (engine.NewConfig).
	Config *engine.Config
	// ServerConcurrencyLimit is --max-requests-inflight plus
	// --max-mutating-requests-inflight (engine.DefaultServerConcurrencyLimit
	// when unknown).
	ServerConcurrencyLimit int
	// ServerRequestTimeout is the apiserver's --request-timeout (60s by
	// default), which sets the wait limit.
	ServerRequestTimeout time.Duration
	// Live is the state of one apiserver instance, nil when unknown.
	Live *dump.Snapshot
	// Release is the Kubernetes release whose behaviour is replayed (the
	// server's, from /version or a bundle, or --kube-version); zero means
	// engine.NewestRelease. ReleaseFrom says where it came from.
	Release     engine.Release
	ReleaseFrom string
}
