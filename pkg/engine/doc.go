// Package engine replays the classification, flow identity, shuffle sharding
// and concurrency arithmetic of Kubernetes API Priority and Fairness (APF)
// exactly as k8s.io/apiserver v0.37 does, as pure functions over
// k8s.io/api/flowcontrol/v1 objects. It never talks to a cluster and never
// reads the wall clock; differential tests hold it to the real upstream
// controller (see the *_diff_test.go files).
//
// # Requests
//
// An Identity is a user name with groups: NewUserIdentity (adds
// system:authenticated), NewServiceAccountIdentity (system:serviceaccount:NS:NAME
// in system:serviceaccounts, system:serviceaccounts:NS, system:authenticated),
// AnonymousIdentity, or ParseIdentity for the textual forms the commands take.
//
// ParseRequest(verbOrMethod, pathWithQuery, id) derives the upstream
// request.RequestInfo with k8s.io/apiserver's RequestInfoFactory configured
// like kube-apiserver (prefixes api and apis, api groupless). Upper-case
// words are HTTP methods, lower-case words Kubernetes verbs; a verb the path
// contradicts is an error that says what the server would derive. Requests
// kube-apiserver serves without APF (log, exec, attach, portforward, proxy,
// /debug/pprof/: k8s.io/kubernetes pkg/controlplane/apiserver/config.go's
// BasicLongRunningRequestCheck, minus watches) carry a Request.Bypass reason.
//
// # Classification
//
// NewConfig(flowSchemas, priorityLevels) digests objects like the server's
// config controller: defaults applied (DefaultFlowSchema,
// DefaultPriorityLevel), broken levels dropped (Config.Broken), FlowSchemas
// whose level is missing or broken dropped (Config.Dangling), the rest
// sorted by matchingPrecedence then name, and the mandatory exempt and
// catch-all objects imagined with empty UIDs when absent (Config.Imagined).
// DefaultConfig, DefaultFlowSchemas and DefaultPriorityLevels give the
// objects of k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap.
//
// (*Config).Classify is the fast path: the winning FlowSchema, priority
// level, rule index, Flow (distinguisher method and value, hash) and Hand.
// (*Config).ClassifyWithTrace adds Trace: one TraceStep per FlowSchema in
// matching order up to the winner, with per-rule RuleTrace and per-policy
// PolicyTrace naming the first failing Clause (subject, rule kind, verb,
// resource, apiGroup, clusterScope, namespace, nonResourceURL) or the
// clauses that matched, and dangling schemas marked where they would sort.
//
// # Flows and queues
//
// HashFlowID mirrors apf_controller.go:hashFlowID; NewDealer, Deal,
// DealIntoHand, RequiredEntropyBits and MaxHashBits mirror
// k8s.io/apiserver/pkg/util/shufflesharding bit for bit. CandidateQueues
// names the queues of a hand a new request could join given the queues'
// TotalWorkSum from dump_queues (the server's rotating tie-break offset is
// not observable, so all minimal queues are candidates).
//
// # Concurrency arithmetic
//
// ComputeLimits / (*Config).Limits give per level the nominal, lendable,
// borrowing, lower and upper limits and max seats of
// finishQueueSetReconfigsLocked. InferServerConcurrencyLimit recovers the
// server limit from nominal_limit_seats and upper_limit_seats of a level
// without borrowingLimitPercent. RequestWaitLimit is getRequestWaitContext's
// queue wait limit. AllocateCurrentLimits is one pass of
// updateBorrowingLocked (current limits, targets, seat_fair_frac, branch),
// built on ComputeConcurrencyAllocation; Integrator and SeatDemandStats are
// the seat-demand smoothing, with time passed in, for a simulator to call
// every BorrowingAdjustmentPeriod.
package engine
