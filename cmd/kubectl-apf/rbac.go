package main

import (
	"fmt"
	"slices"
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
	// StoreServices are the stores read through the apiserver's service
	// proxy, NAMESPACE/NAME:PORT each: a Role of each namespace grants get
	// on their services/proxy.
	StoreServices []string
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
for --all-apiservers. With --store-service, a Role in each store's namespace
grants get on services/proxy of that Service alone, which the other commands'
--prometheus-service and --victorialogs-service need. Nothing in it writes. kubectl apf only prints
it: review it, then apply it yourself.`,
		Example: `  # Print the ClusterRole
  kubectl apf rbac

  # With a binding for a group, applied by an admin
  kubectl apf rbac --group sre | kubectl apply -f -

  # And the in-cluster Prometheus that --prometheus-service reads
  kubectl apf rbac --group sre --store-service monitoring/prometheus-k8s:9090`,
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
	cmd.Flags().StringArrayVar(&o.StoreServices, "store-service", o.StoreServices, "A store read through the apiserver's service proxy, NAMESPACE/NAME:PORT as --prometheus-service or --victorialogs-service takes it (repeatable): add a Role in its namespace granting get on that Service's services/proxy.")
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
	_, _, err := o.storeServices()
	return err
}

// storeServices are the --store-service Services' names (NAME:PORT, as
// the proxy's path and so RBAC name them) by namespace, in the order the
// namespaces were first given.
func (o *RBACOptions) storeServices() (namespaces []string, names map[string][]string, err error) {
	names = map[string][]string{}
	for _, s := range o.StoreServices {
		svc, err := fetch.ParseService("--store-service", "monitoring/prometheus:9090", s)
		if err != nil {
			return nil, nil, err
		}
		if _, ok := names[svc.Namespace]; !ok {
			namespaces = append(namespaces, svc.Namespace)
		}
		if n := svc.Name + ":" + svc.Port; !slices.Contains(names[svc.Namespace], n) {
			names[svc.Namespace] = append(names[svc.Namespace], n)
		}
	}
	return namespaces, names, nil
}

// Manifest returns the YAML of the ClusterRole and, when subjects are
// given, its ClusterRoleBinding, marshalled from pkg/fetch's objects.
func (o *RBACOptions) Manifest() (string, error) {
	role, err := yaml.Marshal(fetch.ReaderRole(o.Name))
	if err != nil {
		return "", err
	}
	docs := []string{fetch.ReaderRBACComment + string(role)}
	bound := len(o.Users)+len(o.Groups)+len(o.ServiceAccounts) > 0
	var sas [][2]string
	for _, sa := range o.ServiceAccounts {
		ns, n, _ := strings.Cut(sa, ":")
		sas = append(sas, [2]string{ns, n})
	}
	add := func(comment string, obj any) error {
		y, err := yaml.Marshal(obj)
		docs = append(docs, comment+string(y))
		return err
	}
	if bound {
		if err := add("", fetch.ReaderBinding(o.Name, o.Users, o.Groups, sas)); err != nil {
			return "", err
		}
	}
	namespaces, names, err := o.storeServices()
	if err != nil {
		return "", err
	}
	for _, ns := range namespaces {
		if err := add(fetch.StoreProxyComment, fetch.StoreProxyRole(o.Name, ns, names[ns])); err != nil {
			return "", err
		}
		if bound {
			if err := add("", fetch.StoreProxyBinding(o.Name, ns, o.Users, o.Groups, sas)); err != nil {
				return "", err
			}
		}
	}
	return strings.Join(docs, "---\n"), nil
}
