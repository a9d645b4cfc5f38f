package engine

import (
	"fmt"
	"strconv"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Release is the Kubernetes minor release (1.Minor) whose APF behaviour the
// engine replays. The engine is written against k8s.io/apiserver v0.37; the
// few places where an older release behaves differently are methods of
// Release, each naming the upstream file that differs. Releases from
// OldestRelease to NewestRelease are supported: from 1.29 on, every server
// serves flowcontrol.apiserver.k8s.io/v1, the API the engine reads.
type Release struct {
	// Minor is the minor version: 31 for 1.31.
	Minor int
}

// The range of releases the engine replays.
var (
	OldestRelease = Release{Minor: 29}
	NewestRelease = Release{Minor: 37}
)

// String is "1.31".
func (r Release) String() string { return fmt.Sprintf("1.%d", r.Minor) }

// IsZero is true for the zero Release, which callers use for "not known".
func (r Release) IsZero() bool { return r.Minor == 0 }

// ParseRelease reads a release as users and servers write it: "1.31",
// "v1.31", "v1.31.14", or a server's gitVersion with a vendor suffix such as
// "v1.31.14-eks-abcdef" or "v1.31.14+k3s1". The release must lie between
// OldestRelease and NewestRelease.
func ParseRelease(s string) (Release, error) {
	r, err := parseMinor(s)
	if err != nil {
		return Release{}, err
	}
	if r.Minor < OldestRelease.Minor || r.Minor > NewestRelease.Minor {
		return Release{}, fmt.Errorf("release %s is not supported: the engine replays %s to %s", r, OldestRelease, NewestRelease)
	}
	return r, nil
}

func parseMinor(s string) (Release, error) {
	v := strings.TrimPrefix(strings.TrimSpace(s), "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 || parts[0] != "1" {
		return Release{}, fmt.Errorf("%q is not a Kubernetes release (want 1.MINOR, e.g. 1.31)", s)
	}
	minor := parts[1]
	// A gitVersion's minor may carry a suffix only when no patch follows
	// ("v1.31+" of some managed offerings' /version minor fields).
	minor = strings.TrimRight(minor, "+")
	n, err := strconv.Atoi(minor)
	if err != nil || n < 0 {
		return Release{}, fmt.Errorf("%q is not a Kubernetes release (want 1.MINOR, e.g. 1.31)", s)
	}
	return Release{Minor: n}, nil
}

// ReleaseForServer picks the release to replay for a server whose /version
// gitVersion is given: that release when the engine knows it, the newest one
// for a server newer than NewestRelease (with a note saying so), and an error
// for a server older than OldestRelease or a gitVersion that is not a
// release.
func ReleaseForServer(gitVersion string) (Release, string, error) {
	r, err := parseMinor(gitVersion)
	if err != nil {
		return Release{}, "", err
	}
	switch {
	case r.Minor > NewestRelease.Minor:
		return NewestRelease, fmt.Sprintf("the server is %s, newer than the newest release the engine knows; replaying %s", strings.TrimSpace(gitVersion), NewestRelease), nil
	case r.Minor < OldestRelease.Minor:
		return Release{}, "", fmt.Errorf("the server is %s; the engine replays %s to %s", strings.TrimSpace(gitVersion), OldestRelease, NewestRelease)
	}
	return r, "", nil
}

// ExemptInBorrowingPool is true up to 1.30: the borrowing pass treated
// exempt levels like the others, as items of the fair-share problem with
// lower bound max(lower, min(nominal, high watermark)) and the high
// watermark unrounded. From 1.31 exempt levels reserve max(lower, high
// watermark) first and the rest is shared out in three branches
// (k8s.io/apiserver pkg/util/flowcontrol/apf_controller.go:
// updateBorrowingLocked, changed in v0.31.0).
func (r Release) ExemptInBorrowingPool() bool { return r.Minor <= 30 }

// MaxListSeats is the work estimator's cap on the seats of a LIST (and of a
// WATCH estimated like one): 10 up to 1.33; 100 from 1.34, where the
// SizeBasedListCostEstimate feature (on by default) also counts bytes
// instead of objects (pkg/util/flowcontrol/request/config.go:
// DefaultWorkEstimatorConfig, list_work_estimator.go).
func (r Release) MaxListSeats() uint64 {
	if r.Minor <= 33 {
		return 10
	}
	return 100
}

// MaxCachedListSeats caps a LIST or WATCH served from the watch cache, as
// every WATCH is: 10 seats in every supported release (up to 1.33 the LIST
// cap itself; from 1.34 the bytes of a cached list count at most
// cacheWithStreamingMaxMemoryUsage = 1MB, at 100kB a seat:
// list_work_estimator.go:seatsBasedOnObjectSize).
func (r Release) MaxCachedListSeats() uint64 { return min(r.MaxListSeats(), 10) }

// ConsistentListFromCache is true from 1.31, where the feature is on by
// default: a LIST without a resourceVersion is served from the watch cache
// when etcd supports progress notify, and a ?limit no longer sends a LIST
// with resourceVersion "" to etcd; up to 1.30 both did
// (list_work_estimator.go:shouldListFromStorage; pkg/features).
func (r Release) ConsistentListFromCache() bool { return r.Minor >= 31 }

// SizeBasedListEstimate is true from 1.34: a LIST takes ceil(bytes/100kB)
// seats; before, ceil(objects/100) (list_work_estimator.go).
func (r Release) SizeBasedListEstimate() bool { return r.Minor >= 34 }

// MaxMutatingSeats is the cap on a write's final seats: 10 in every
// supported release (request/config.go).
func (r Release) MaxMutatingSeats() uint64 { return 10 }

// WatchEstimatedAsList is true where the WatchList feature is on by
// default, 1.32 and from 1.34: the work estimator sends a WATCH to the LIST
// estimator (which gives 1 seat unless initial events are sent); where it is
// off, every WATCH takes 1 seat (request/width.go:(*workEstimator).estimate;
// the gate's defaults in pkg/features/kube_features.go: beta on in 1.32, off
// again in 1.33, on from 1.34).
func (r Release) WatchEstimatedAsList() bool { return r.Minor == 32 || r.Minor >= 34 }

// LegacyWatchEstimatedAsList is true from 1.35: a WATCH with
// resourceVersion "" or "0" (which sends initial events) is estimated like a
// LIST; before, only sendInitialEvents=true was, and any other WATCH took 1
// seat (list_work_estimator.go, changed in v0.35.0).
func (r Release) LegacyWatchEstimatedAsList() bool { return r.Minor >= 35 }

// DefaultFlowSchemas returns the FlowSchemas a fresh kube-apiserver of this
// release creates, mandatory then suggested. Up to 1.33 the suggested ones
// include endpoint-controller and workload-leader-election, removed in 1.34
// (pkg/apis/flowcontrol/bootstrap/default.go). Shared with
// DefaultFlowSchemas: do not modify them.
func (r Release) DefaultFlowSchemas() []*flowcontrolv1.FlowSchema {
	if r.Minor >= 34 || r.IsZero() {
		return DefaultFlowSchemas()
	}
	var out []*flowcontrolv1.FlowSchema
	for _, fs := range DefaultFlowSchemas() {
		out = append(out, fs)
		// v0.33's order: system-leader-election, workload-leader-election,
		// endpoint-controller, kube-controller-manager, ...
		if fs.Name == "system-leader-election" {
			out = append(out, workloadLeaderElection133, endpointController133)
		}
	}
	return out
}

// DefaultPriorityLevels returns the priority levels a fresh kube-apiserver
// of this release creates: the same in every supported release.
func (r Release) DefaultPriorityLevels() []*flowcontrolv1.PriorityLevelConfiguration {
	return DefaultPriorityLevels()
}

// DefaultConfig is the digested default configuration of the release.
func (r Release) DefaultConfig() *Config {
	return NewConfig(r.DefaultFlowSchemas(), r.DefaultPriorityLevels())
}

// The two suggested FlowSchemas of 1.29 to 1.33 that 1.34 removed, as
// k8s.io/apiserver v0.33 pkg/apis/flowcontrol/bootstrap/default.go defines
// them (SuggestedFlowSchemaWorkloadLeaderElection,
// SuggestedFlowSchemaEndpointsController).
var (
	workloadLeaderElection133 = suggestedFS133("workload-leader-election", "leader-election", 200,
		flowcontrolv1.PolicyRulesWithSubjects{
			Subjects: []flowcontrolv1.Subject{kubeSystemSA("*")},
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{
				{Verbs: []string{"get", "create", "update"}, APIGroups: []string{""}, Resources: []string{"endpoints", "configmaps"}, Namespaces: []string{"*"}},
				{Verbs: []string{"get", "create", "update"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Namespaces: []string{"*"}},
			},
		})
	endpointController133 = suggestedFS133("endpoint-controller", "workload-high", 150,
		flowcontrolv1.PolicyRulesWithSubjects{
			Subjects: []flowcontrolv1.Subject{
				{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "system:kube-controller-manager"}},
				kubeSystemSA("endpoint-controller"), kubeSystemSA("endpointslicemirroring-controller"),
			},
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{
				{Verbs: []string{"get", "create", "update"}, APIGroups: []string{""}, Resources: []string{"endpoints"}, Namespaces: []string{"*"}},
			},
		})
)

func kubeSystemSA(name string) flowcontrolv1.Subject {
	return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount,
		ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: "kube-system", Name: name}}
}

func suggestedFS133(name, level string, precedence int32, rules flowcontrolv1.PolicyRulesWithSubjects) *flowcontrolv1.FlowSchema {
	return &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"}},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
			MatchingPrecedence:         precedence,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules:                      []flowcontrolv1.PolicyRulesWithSubjects{rules},
		},
	}
}
