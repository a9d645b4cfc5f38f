package lint

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
)

// TestPublicConfigurations lints what public projects ship
// (testdata/lint/public, origins in its README) over the 1.37 defaults and
// checks the errors and warnings, each worked out by hand from upstream's
// bootstrap objects (k8s.io/apiserver pkg/apis/flowcontrol/bootstrap).
func TestPublicConfigurations(t *testing.T) {
	// infos are findings of severity info that must be among a test's
	infos := map[string][]string{
		"openshift-network-operator": {"info client-in-system-level flowschema/openshift-sdn,prioritylevelconfiguration/system"},
	}
	tests := []struct {
		dirs []string
		want []string
	}{
		// Installed in its own namespace Karpenter's schemas take effect.
		{[]string{"karpenter-karpenter-ns"}, nil},
		// In kube-system, system-leader-election (100) already matches
		// every kube-system service account's leases, and
		// kube-system-service-accounts (900) everything else of theirs.
		{[]string{"karpenter-kube-system"}, []string{
			"error shadowed-flowschema flowschema/karpenter-leader-election,flowschema/system-leader-election",
			"error shadowed-flowschema flowschema/karpenter-workload,flowschema/kube-system-service-accounts",
		}},
		// The docs' examples: unauthenticated health checks exempted (as
		// upstream's probes does, so not reported), and the default
		// service account's event lists sent to the Reject level
		// catch-all.
		{[]string{"kubernetes-docs"}, []string{
			"warning reject-level-with-traffic flowschema/list-events-default-service-account,prioritylevelconfiguration/catch-all",
		}},
		// Kustomize sources: read despite their namespace; the level is
		// renamed only by the release build's name prefix.
		{[]string{"kueue"}, []string{
			"error dangling-priority-level flowschema/visibility,prioritylevelconfiguration/kueue-visibility",
			"warning unused-priority-level prioritylevelconfiguration/visibility",
		}},
		// The level openshift-apiserver-sar names is in neither manifest;
		// openshift-control-plane-operators is the kube-apiserver
		// operator's.
		{[]string{"openshift-apiserver-operator"}, []string{
			"error dangling-priority-level flowschema/openshift-apiserver-operator,prioritylevelconfiguration/openshift-control-plane-operators",
			"error dangling-priority-level flowschema/openshift-apiserver-sar,prioritylevelconfiguration/openshift-aggregated-api-delegated-auth",
		}},
		// OpenShift's SDN in system, beside the kubelets: a client other
		// than the cluster's own components by the rule's own test (its
		// service accounts are not kube-system's), but the platform's, as
		// the cluster-version operator's annotations say, so
		// client-in-system-level is information, not a warning.
		{[]string{"openshift-network-operator"}, nil},
		// OpenShift's probes exempts the health checks alone, as upstream's
		// does, but differs from it in distinguisherMethod (ByUser, where
		// upstream's has none) without opting out: each apiserver
		// rewrites it. With it edited the suggested set is no longer
		// intact, so kube-proxy's fall-through stays a warning.
		{[]string{"openshift-apiserver-operator", "openshift-kube-apiserver-operator"}, []string{
			"error dangling-priority-level flowschema/openshift-apiserver-sar,prioritylevelconfiguration/openshift-aggregated-api-delegated-auth",
			"warning suggested-object-differs flowschema/probes",
			"warning system-identity-falls-through flowschema/global-default",
		}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.dirs, "+"), func(t *testing.T) {
			var objs config.Objects
			for _, d := range tt.dirs {
				objs.Add(readDir(t, filepath.Join("..", "..", "testdata", "lint", "public", d)))
			}
			fss, pls := config.UpstreamDefaults()
			fss, pls = config.Overlay(fss, pls, objs)
			var got []string
			info := map[string]bool{}
			findings := Lint(Input{FlowSchemas: fss, PriorityLevels: pls, Reference: config.UpstreamReference(), Callbacks: objs.ResolvedCallbacks()}, DefaultOptions())
			checkSeverities(t, findings)
			for _, f := range findings {
				key := string(f.Severity) + " " + f.Rule + " " + refsKey(f.Objects)
				if f.Severity != SeverityInfo {
					got = append(got, key)
				} else {
					info[key] = true
				}
			}
			for _, k := range infos[strings.Join(tt.dirs, "+")] {
				if !info[k] {
					t.Errorf("no %s among the information", k)
				}
			}
			sort.Strings(got)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
