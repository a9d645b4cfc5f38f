package capacity

import (
	"fmt"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// Elephants are the numbers of heavy flows the collision table is computed
// for, as in the Kubernetes documentation's table.
var Elephants = []int{1, 4, 16}

// Level is the seat arithmetic of one priority level.
type Level struct {
	Name string `json:"name"`
	// Type is Exempt or Limited; LimitResponse is Queue or Reject for Limited.
	Type          string `json:"type"`
	LimitResponse string `json:"limitResponse,omitempty"`
	Shares        int32  `json:"nominalConcurrencyShares"`
	// LendablePercent and BorrowingLimitPercent are the spec values (nil:
	// unset; an unset borrowing limit means "up to the server limit").
	LendablePercent       *int32 `json:"lendablePercent,omitempty"`
	BorrowingLimitPercent *int32 `json:"borrowingLimitPercent,omitempty"`
	// The limits in seats, as engine.ComputeLimits (and the apiserver's
	// finishQueueSetReconfigsLocked) computes them.
	NominalCL   int `json:"nominalLimitSeats"`
	LendableCL  int `json:"lendableSeats"`
	BorrowingCL int `json:"borrowingLimitSeats"`
	LowerCL     int `json:"lowerLimitSeats"`
	UpperCL     int `json:"upperLimitSeats"`
	// ReachableCL is the most seats the level can reach by borrowing: its
	// nominal limit plus what every other level lends, within UpperCL. The
	// apiserver's upper limit (UpperCL, upper_limit_seats) assumes the
	// whole server can be borrowed, which overstates it
	// (kubernetes/kubernetes#129086, not fixed upstream): in
	// apf_controller.go's updateBorrowingLocked the levels share the sum of
	// the nominal limits, each kept at or above its lower limit. Exempt
	// levels are never limited: nil for them.
	ReachableCL *int `json:"reachableLimitSeats,omitempty"`
	// MaxSeats is the most seats one request can take here (0: none set, the
	// work estimator's global caps apply).
	MaxSeats uint64 `json:"maxSeatsPerRequest"`
	// EstimatorCap is, for a level without MaxSeats (a Reject level: no
	// hand) or with MaxSeats above it, the work estimator's own cap of the
	// release replayed, which then holds: the most a LIST can take there
	// (Release.MaxListSeats); 0 when MaxSeats holds.
	EstimatorCap uint64 `json:"estimatorCapSeats,omitempty"`
	// Queue configuration, for queuing levels.
	Queues           int32 `json:"queues,omitempty"`
	HandSize         int32 `json:"handSize,omitempty"`
	QueueLengthLimit int32 `json:"queueLengthLimit,omitempty"`
	// WaitLimit is how long a request with the default deadline may wait in
	// a queue of this level (0 for levels that never queue).
	WaitLimit time.Duration `json:"waitLimitNanoseconds"`
	// Crush holds, for queuing levels with queues, the probability that a
	// mouse flow is crushed by 1, 4 and 16 elephants (see CrushProbability).
	Crush []Collision `json:"crush,omitempty"`
}

// Collision is one entry of the shuffle-sharding collision table.
type Collision struct {
	Elephants   int     `json:"elephants"`
	Probability float64 `json:"probability"`
}

// Table is the seat arithmetic of a whole configuration.
type Table struct {
	ServerConcurrencyLimit int           `json:"serverConcurrencyLimit"`
	RequestTimeout         time.Duration `json:"requestTimeoutNanoseconds"`
	// NominalSum is the sum of the nominal limits; it can exceed the server
	// limit by a few seats because each is rounded up.
	NominalSum int     `json:"nominalLimitSeatsSum"`
	Levels     []Level `json:"levels"`
	// Ignored lists levels the apiserver would ignore (broken specs).
	Ignored []string `json:"ignored,omitempty"`
}

// Compute returns the seat table of the priority levels pls for a server
// concurrency limit and a server request timeout (--request-timeout, 60s by
// default). Missing mandatory levels are imagined and broken ones ignored, as
// the apiserver does (engine.NewConfig).
func Compute(pls []*flowcontrolv1.PriorityLevelConfiguration, serverConcurrencyLimit int, requestTimeout time.Duration) (Table, error) {
	if serverConcurrencyLimit <= 0 {
		return Table{}, fmt.Errorf("server concurrency limit must be positive, not %d", serverConcurrencyLimit)
	}
	// A request with no ?timeout= and not a watch: its deadline is the
	// server's request timeout (request_deadline.go:withRequestDeadline).
	wait, err := engine.RequestWaitLimit(engine.Request{
		Method: "GET", URL: "/api/v1/namespaces/default/pods",
		Info: request.RequestInfo{IsResourceRequest: true, Verb: "list", Resource: "pods", Namespace: "default"},
	}, requestTimeout)
	if err != nil {
		return Table{}, fmt.Errorf("computing the wait limit: %w", err)
	}
	cfg := engine.NewConfig(nil, pls)
	t := Table{ServerConcurrencyLimit: serverConcurrencyLimit, RequestTimeout: requestTimeout}
	for _, b := range cfg.Broken {
		t.Ignored = append(t.Ignored, fmt.Sprintf("%s: %s", b.Name, b.Reason))
	}
	for _, l := range cfg.Limits(serverConcurrencyLimit) {
		pl := cfg.PriorityLevels[l.Name]
		lv := Level{
			Name: l.Name, Type: string(pl.Spec.Type), Shares: l.Shares,
			NominalCL: l.NominalCL, LendableCL: l.LendableCL, BorrowingCL: l.BorrowingCL,
			LowerCL: l.LowerCL, UpperCL: l.UpperCL, MaxSeats: l.MaxSeats,
		}
		t.NominalSum += l.NominalCL
		if e := pl.Spec.Exempt; e != nil {
			lv.LendablePercent = e.LendablePercent
		}
		if lim := pl.Spec.Limited; lim != nil {
			lv.LendablePercent, lv.BorrowingLimitPercent = lim.LendablePercent, lim.BorrowingLimitPercent
			lv.LimitResponse = string(lim.LimitResponse.Type)
			if q := lim.LimitResponse.Queuing; q != nil && lim.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue {
				lv.Queues, lv.HandSize, lv.QueueLengthLimit = q.Queues, q.HandSize, q.QueueLengthLimit
				lv.WaitLimit = wait
				for _, e := range Elephants {
					p, err := CrushProbability(int(q.Queues), int(q.HandSize), e)
					if err != nil {
						return Table{}, fmt.Errorf("priority level %s: %w", l.Name, err)
					}
					lv.Crush = append(lv.Crush, Collision{Elephants: e, Probability: p})
				}
			}
		}
		t.Levels = append(t.Levels, lv)
	}
	lent := 0
	for _, l := range t.Levels {
		lent += l.LendableCL
	}
	for i, l := range t.Levels {
		if l.Type != string(flowcontrolv1.PriorityLevelEnablementExempt) {
			r := min(l.UpperCL, l.NominalCL+lent-l.LendableCL)
			t.Levels[i].ReachableCL = &r
		}
	}
	return t, nil
}

// UpperNote is the note on the UPPER column wherever it is shown: upstream's
// upper limit overstates what a level can borrow.
const UpperNote = "the apiserver's upper limit (apiserver_flowcontrol_upper_limit_seats), which overstates what a level can reach: it assumes the whole server can be borrowed, but a level borrows only what the other levels lend (kubernetes/kubernetes#129086, not fixed upstream)"
