// Package tune searches APF configuration changes that would have
// prevented a recorded incident ("kubectl apf tune"): it writes
// candidates from the documented remedies (more nominal shares for the
// starved level, lending and borrowing, a FlowSchema that routes a noisy
// client to a level of its own, a FlowSchema moved to another level, the
// queues of a bursty level) and their combinations, keeps those the
// apiserver's validation and the linter accept, replays each through
// simulate's calibrated replay (calibrated once: simulate.Prepared) and
// ranks them by the goal they meet and what they cost the other flows.
//
// It is pure: the configuration and the prepared workload come in, the
// ranked candidates go out; it prints nothing and reads no clock.
package tune

import (
	"fmt"
	"strings"
	"time"
)

// TargetKind says what a --protect target names.
type TargetKind string

// The kinds of --protect.
const (
	TargetUser           TargetKind = "user"
	TargetServiceAccount TargetKind = "serviceaccount"
	TargetGroup          TargetKind = "group"
	TargetFlowSchema     TargetKind = "flowschema"
	TargetLevel          TargetKind = "level"
)

// Target is one --protect: the clients it names.
type Target struct {
	Kind TargetKind `json:"kind"`
	Name string     `json:"name"`
}

func (t Target) String() string { return string(t.Kind) + "=" + t.Name }

// ParseTarget reads KIND=NAME (user=alice, serviceaccount=ns/name,
// group=system:nodes, flowschema=global-default, level=workload-low), the
// value of --protect.
func ParseTarget(s string) (Target, error) { return ParseFlagTarget("--protect", s) }

// ParseFlagTarget reads KIND=NAME given to flag (--protect, --ignore).
func ParseFlagTarget(flag, s string) (Target, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || v == "" {
		return Target{}, fmt.Errorf("%s %q: give KIND=NAME, KIND one of user, serviceaccount, group, flowschema, level (e.g. %s serviceaccount=kube-system/my-controller)", flag, s, flag)
	}
	t := Target{Kind: TargetKind(strings.ToLower(k)), Name: v}
	switch t.Kind {
	case TargetUser, TargetGroup, TargetFlowSchema, TargetLevel:
	case "sa":
		t.Kind = TargetServiceAccount
		fallthrough
	case TargetServiceAccount:
		if ns, name, ok := strings.Cut(v, "/"); !ok || ns == "" || name == "" {
			return Target{}, fmt.Errorf("%s %q: a service account is NAMESPACE/NAME", flag, s)
		}
	default:
		return Target{}, fmt.Errorf("%s %q: unknown kind %q: use user, serviceaccount, group, flowschema or level", flag, s, k)
	}
	return t, nil
}

// ObjectKey names a configuration object: FlowSchema/NAME or
// PriorityLevelConfiguration/NAME.
type ObjectKey struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

func (k ObjectKey) String() string { return k.Kind + "/" + k.Name }

// ParseObjectKey reads a --keep: flowschema/NAME, prioritylevelconfiguration/NAME
// (fs/, plc/, pl/ and level/ too), or a bare NAME, which keeps both kinds.
func ParseObjectKey(s string) ([]ObjectKey, error) {
	k, v, ok := strings.Cut(s, "/")
	if !ok {
		if s == "" {
			return nil, fmt.Errorf("--keep: give KIND/NAME or NAME")
		}
		return []ObjectKey{{KindFlowSchema, s}, {KindPriorityLevel, s}}, nil
	}
	if v == "" {
		return nil, fmt.Errorf("--keep %q: give the object's name after the /", s)
	}
	switch strings.ToLower(k) {
	case "flowschema", "flowschemas", "fs":
		return []ObjectKey{{KindFlowSchema, v}}, nil
	case "prioritylevelconfiguration", "prioritylevelconfigurations", "plc", "pl", "level":
		return []ObjectKey{{KindPriorityLevel, v}}, nil
	}
	return nil, fmt.Errorf("--keep %q: the kind is flowschema or prioritylevelconfiguration", s)
}

// The kinds of ObjectKey.
const (
	KindFlowSchema    = "FlowSchema"
	KindPriorityLevel = "PriorityLevelConfiguration"
)

// Goal is what a candidate must achieve.
type Goal struct {
	// Protect names the clients that must be served; none: the clients
	// the incident answered 429.
	Protect []Target `json:"protect,omitempty"`
	// Ignore names other clients whose 429s and waits the goal does not
	// judge: the noisy client a remedy for its neighbours may well queue
	// longer (a controller moved off its level leaves the flood's queue to
	// the flood's own long requests). They still count among the others.
	Ignore []Target `json:"ignore,omitempty"`
	// Max429 is the most 429s a protected client may get (default 0).
	Max429 int64 `json:"max429"`
	// MaxWait, if not 0, is the longest p99 queue wait a protected client
	// may get.
	MaxWait time.Duration `json:"maxWait,omitempty"`
	// WaitTolerance is how much longer another client's p99 wait may be
	// than the replay of the recorded configuration gave it and still
	// count as no longer: the replay's quantiles are exact to within 1.6%,
	// and a wait of a few milliseconds moves with any change.
	WaitTolerance WaitTolerance `json:"waitTolerance"`
	// RejectTolerance is how many more 429s another client may get than
	// the replay of the recorded configuration gave it and still count as
	// none added: a change that moves the arrivals around a client the
	// recorded configuration rejects hundreds of times moves which of its
	// requests find the queue full, by a request or two either way.
	RejectTolerance RejectTolerance `json:"rejectTolerance"`
}

// RejectTolerance is the slack on "no more 429s": Fraction of the 429s
// the client got, rounded down (none for a client that got fewer than
// 1/Fraction).
type RejectTolerance struct {
	Fraction float64 `json:"fraction"`
}

// DefaultRejectTolerance is 1%: a client the recorded configuration
// rejects fewer than 100 times may get no more 429s at all.
var DefaultRejectTolerance = RejectTolerance{Fraction: 0.01}

// more says whether after is more 429s than before beyond the tolerance.
func (t RejectTolerance) more(before, after int64) bool {
	return after > before+int64(t.Fraction*float64(before))
}

// WaitTolerance is the slack on "no longer p99 wait": Fraction of the
// wait, and Absolute more.
type WaitTolerance struct {
	Fraction float64       `json:"fraction"`
	Absolute time.Duration `json:"absolute"`
}

// DefaultWaitTolerance is 5% and 5 ms.
var DefaultWaitTolerance = WaitTolerance{Fraction: 0.05, Absolute: 5 * time.Millisecond}

// longer says whether after is longer than before beyond the tolerance.
func (t WaitTolerance) longer(before, after float64) bool {
	return after > before*(1+t.Fraction)+t.Absolute.Seconds()
}
