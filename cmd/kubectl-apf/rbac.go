package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

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
		Args: noArgs("bind the role with --user NAME or --group NAME"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			m, err := o.Manifest()
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(o.Out, m)
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
// given, its ClusterRoleBinding, marshalled from pkg/fetch's objects.
func (o *RBACOptions) Manifest() (string, error) {
	role, err := yaml.Marshal(fetch.ReaderRole(o.Name))
	if err != nil {
		return "", err
	}
	out := fetch.ReaderRBACComment + string(role)
	if len(o.Users)+len(o.Groups)+len(o.ServiceAccounts) == 0 {
		return out, nil
	}
	var sas [][2]string
	for _, sa := range o.ServiceAccounts {
		ns, n, _ := strings.Cut(sa, ":")
		sas = append(sas, [2]string{ns, n})
	}
	binding, err := yaml.Marshal(fetch.ReaderBinding(o.Name, o.Users, o.Groups, sas))
	if err != nil {
		return "", err
	}
	return out + "---\n" + string(binding), nil
}
