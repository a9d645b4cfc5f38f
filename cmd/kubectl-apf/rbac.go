package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
)

// RBACOptions holds the flags of "kubectl apf rbac".
type RBACOptions struct {
	Name            string
	Users           []string
	Groups          []string
	ServiceAccounts []string
	genericiooptions.IOStreams
}

// NewRBACCommand builds "kubectl apf rbac".
func NewRBACCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &RBACOptions{Name: "kubectl-apf-reader", IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "rbac",
		Short: "Print a minimal read-only ClusterRole (and binding) for kubectl apf",
		Long: `Print the smallest ClusterRole that lets kubectl apf read everything it uses:
the APF debug dumps and /metrics (non-resource URLs, verb get), FlowSchemas and
PriorityLevelConfigurations (get, list, watch), and the apiserver EndpointSlices
for --all-apiservers. Nothing in it writes. kubectl apf only prints it: review
it, then apply it yourself.`,
		Example: `  # Print the ClusterRole
  kubectl apf rbac

  # With a binding for a group, applied by an admin
  kubectl apf rbac --group sre | kubectl apply -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			_, err := fmt.Fprint(o.Out, o.Manifest())
			return err
		},
	}
	cmd.Flags().StringVar(&o.Name, "name", o.Name, "Name of the ClusterRole and ClusterRoleBinding.")
	cmd.Flags().StringSliceVar(&o.Users, "user", o.Users, "Bind the role to these users.")
	cmd.Flags().StringSliceVar(&o.Groups, "group", o.Groups, "Bind the role to these groups.")
	cmd.Flags().StringSliceVar(&o.ServiceAccounts, "serviceaccount", o.ServiceAccounts, "Bind the role to these service accounts (NAMESPACE:NAME).")
	return cmd
}

// Validate checks the flags.
func (o *RBACOptions) Validate() error {
	if o.Name == "" {
		return fmt.Errorf("--name must not be empty")
	}
	for _, sa := range o.ServiceAccounts {
		if ns, n, ok := strings.Cut(sa, ":"); !ok || ns == "" || n == "" {
			return fmt.Errorf("--serviceaccount: %q is not NAMESPACE:NAME", sa)
		}
	}
	return nil
}

// Manifest returns the YAML of the ClusterRole and, when subjects are
// given, its ClusterRoleBinding.
func (o *RBACOptions) Manifest() string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: %s
rules:
# The APF debug dumps and the metrics (kubectl apf dump, top, bundle).
- nonResourceURLs: [%q, "/metrics"]
  verbs: ["get"]
# The APF configuration (names for UIDs, explain, lint).
- apiGroups: ["flowcontrol.apiserver.k8s.io"]
  resources: ["flowschemas", "prioritylevelconfigurations"]
  verbs: ["get", "list", "watch"]
# The apiserver instances, for --all-apiservers.
- apiGroups: ["discovery.k8s.io"]
  resources: ["endpointslices"]
  verbs: ["list"]
`, o.Name, fetch.DebugURLPattern)
	if len(o.Users)+len(o.Groups)+len(o.ServiceAccounts) == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: %s
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: %s
subjects:
`, o.Name, o.Name)
	for _, u := range o.Users {
		fmt.Fprintf(&b, "- kind: User\n  apiGroup: rbac.authorization.k8s.io\n  name: %q\n", u)
	}
	for _, g := range o.Groups {
		fmt.Fprintf(&b, "- kind: Group\n  apiGroup: rbac.authorization.k8s.io\n  name: %q\n", g)
	}
	for _, sa := range o.ServiceAccounts {
		ns, n, _ := strings.Cut(sa, ":")
		fmt.Fprintf(&b, "- kind: ServiceAccount\n  namespace: %q\n  name: %q\n", ns, n)
	}
	return b.String()
}
