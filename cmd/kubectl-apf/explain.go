package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain/fromlog"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
)

// NewExplainCommand builds "kubectl apf explain" and its subcommands.
func NewExplainCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Explain a request's classification and fate, or the 429s a cluster answers now",
		Long: `Explain what API Priority and Fairness does.

  kubectl apf explain request   which FlowSchema and priority level a request
                                gets and why, its queues, and whether it runs,
                                waits or is rejected
  kubectl apf explain 429       which levels and flows are rejected now, why,
                                and the likely fix`,
		Args: cobra.NoArgs,
		Run:  func(cmd *cobra.Command, _ []string) { _ = cmd.Help() },
	}
	cmd.AddCommand(NewExplainRequestCommand(configFlags, streams), NewExplain429Command(configFlags, streams))
	return cmd
}

const explainRequestLong = `Explain which FlowSchema and priority level a request gets, and why.

The request is given as a Kubernetes verb (get, list, watch, create, update,
patch, delete, deletecollection) or an HTTP method, and a path with an
optional query; or as kubectl takes it, a verb and a resource type with an
object's name (get pods -n dev, get deploy/web, list pods -A -l app=web):
the request is then the one kubectl sends for it (get without a name is a
LIST with kubectl's --chunk-size of 500 as its limit, which sets its seats),
the type looked up in the cluster's resources (its CRDs included) or,
without a cluster, in the built-in resources of Kubernetes 1.37, and the
namespace is -n or the kubeconfig context's. The identity is given with
--user-name and --group, --service-account or --anonymous; the groups the
apiserver adds (system:authenticated, the service-account groups) are
implied.

The output shows the request as the apiserver sees it, every FlowSchema
before the winner with the reason it did not match, the winner with its
matching rule, the priority level with its limits, the seats the request
takes, the flow and its hand of queues with their current lengths, and the
verdict: runs now, queued (where, behind how much work, expected wait against
the wait limit), or rejected. Requests that bypass APF (exec, log,
port-forward, proxy) and messages that are not about APF (client-side
throttling, PodDisruptionBudget evictions, the EventRateLimit plugin, a
consistent LIST the watch cache answered 429) are recognised.

Configuration and live state come from the cluster, from a bundle (--from) or
from the upstream defaults (--defaults); -f applies FlowSchemas and
PriorityLevelConfigurations on top, to try a change before applying it. Each
apiserver has its own queues: --all-apiservers or --apiserver-urls gives the
verdict on each.

Instead of VERB PATH: --from-log takes a kube-apiserver httplog line (or a file
of them) and says whether the replay agrees with its apf_fs/apf_pl;
--from-audit takes an audit log (with --audit-id) for the request and its
identity; --from-message takes a pasted client-go or error message, or the
trace of kubectl -v=6 to -v=9 around a 429 (its request, Retry-After and
X-Kubernetes-PF-* UIDs) or around any response APF classified (kubectl get
-v=8 --as USER), or curl's output of a response (-i or -v): the trace's PF
UIDs are compared with the replay's, as --probe's are. When
--from-log or --from-audit names a file (and --workload adds more), the
verdict is the request's fate at its own moment, reconstructed from the log:
its hand's queues and who waited in them, who held the level's seats, and the
reason of a 429 or the wait before dispatch; otherwise it is the fate under
the state read now, and the output says so. --victorialogs URL with
--audit-id reads the request from the audit events a VictoriaLogs holds and
reconstructs its moment from the events within --victorialogs-margin of it.
--probe sends the request for real (GET, or LIST with limit=1) impersonating
the identity and compares the server's X-Kubernetes-PF-* headers with the
replay.`

const explainRequestExample = `  # How does CoreDNS's endpoint LIST fare?
  kubectl apf explain request --service-account kube-system/coredns list /api/v1/endpoints

  # A kubelet reading a ConfigMap
  kubectl apf explain request --user-name system:node:n1 --group system:nodes GET /api/v1/namespaces/default/configmaps/app

  # The same, as kubectl takes it: "kubectl get endpoints -A" sends this request
  kubectl apf explain request --service-account kube-system/coredns get endpoints -A

  # A non-resource path
  kubectl apf explain request --user-name alice get /healthz

  # Try a FlowSchema before applying it, without a cluster
  kubectl apf explain request --defaults -f my-flowschema.yaml --user-name alice list /api/v1/pods

  # Replay a kube-apiserver log line and check it against apf_fs/apf_pl
  kubectl apf explain request --user-name alice --from-log 'I1121 ... "HTTP" verb="LIST" URI="/api/v1/pods" ... apf_pl="workload-low" apf_fs="service-accounts" ...'

  # A request from the audit log, with its user and groups, and its fate at its moment
  kubectl apf explain request --from-audit /var/log/kube-apiserver/audit.log --audit-id 3f1c...

  # Why did this request get 429? (the httplog joined to the audit log)
  kubectl apf explain request --from bundle.tar.gz --from-log apiserver.log --from-audit audit.log --audit-id 3f1c...

  # Send it for real (read-only) and compare with the server's headers
  kubectl apf explain request --probe --user-name alice --group dev get /api/v1/namespaces/default/pods

  # Which FlowSchema did the server give this request? kubectl's trace, compared with the replay
  kubectl get pods -v=8 --as system:serviceaccount:ci:deployer 2>&1 | kubectl apf explain request --service-account ci/deployer --from-message -

  # Is this message about APF?
  kubectl apf explain request --from-message 'Waited for 1.2s due to client-side throttling, not priority and fairness, request: GET:https://10.0.0.1/api/v1/pods'`

// ExplainRequestOptions holds the flags of "kubectl apf explain request".
type ExplainRequestOptions struct {
	// Options are the state flags: --from, --defaults, -f, -R,
	// --all-apiservers, --apiserver-urls.
	*load.Options
	configFlags *genericclioptions.ConfigFlags

	UserName       string
	Groups         []string
	ServiceAccount string
	Anonymous      bool

	FromLog     string
	FromAudit   string
	AuditID     string
	FromMessage string
	Probe       bool
	// Workloads are more log files the logged request's moment is
	// reconstructed from.
	Workloads []string
	// Instances say which apiserver instance served each file's requests.
	Instances instanceFlags
	// VLogs reads the request and its moment from VictoriaLogs instead.
	VLogs vlogsRequestFlags
	// Window is --since/--until over the log files: the request is
	// searched for, and its moment reconstructed, inside it alone.
	Window logWindowFlags
	// from and to are Window resolved over the files (zero: open).
	from, to time.Time

	// Server are --server-concurrency and --server-request-timeout.
	Server *load.ServerOptions
	// Flags are -o.
	*output.Flags

	// ProbeConfig is the client configuration --probe sends with; set by
	// Complete from the kubeconfig unless a test injected one.
	ProbeConfig *rest.Config

	// Resource are the flags of a request given by resource type (get
	// pods -n dev) instead of a path: -A, -l, --field-selector,
	// --chunk-size, --subresource; resourceType is the type argument.
	Resource     engine.ResourceArgs
	resourceType string
	// resourceNotes say which request the resource arguments are, and
	// where the type was looked up when the cluster's list failed.
	resourceNotes []string

	identity    *engine.Identity
	givenGroups []string
	verb, path  string
	// recorded is the request of --from-log, --from-audit or the store
	// (nil Request: none), with the lines skipped finding it.
	recorded fromlog.Recorded
	message  *explain.Message

	genericiooptions.IOStreams
}

// NewExplainRequestOptions returns the defaults of "kubectl apf explain request".
func NewExplainRequestOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *ExplainRequestOptions {
	return &ExplainRequestOptions{Options: newOptions(configFlags, load.Config|load.Instances), Flags: output.NewFlags(false, "", "json", "yaml"), configFlags: configFlags, Server: load.NewServerOptions(), IOStreams: streams}
}

// NewExplainRequestCommand builds "kubectl apf explain request".
func NewExplainRequestCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewExplainRequestOptions(configFlags, streams)
	cmd := &cobra.Command{
		Use:     "request [--user-name NAME] [--group G]... [--service-account NS/NAME] [--anonymous] (VERB_OR_METHOD PATH | VERB TYPE[/NAME] [NAME])",
		Short:   "Explain which FlowSchema and priority level a request gets and whether it runs, waits or gets 429",
		Long:    explainRequestLong + workloadInstancesHelp + explainRequestWindowHelp,
		Example: explainRequestExample,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 3 {
				return fmt.Errorf("explain request takes VERB_OR_METHOD PATH, or VERB TYPE[/NAME] [NAME] as kubectl does, not %d arguments (%q)", len(args), strings.Join(args, " "))
			}
			return nil
		},
		RunE: runOptions(o),
		// the verb, then the resource type, as kubectl get completes them
		// (the built-in types: completion asks no cluster)
		ValidArgsFunction: completeRequestArgs,
	}
	f := cmd.Flags()
	f.BoolVarP(&o.Resource.AllNamespaces, "all-namespaces", "A", false, "With a resource type: the collection of every namespace (list, watch).")
	f.StringVarP(&o.Resource.LabelSelector, "selector", "l", "", "With a resource type: the label selector of the collection (-l app=web), as kubectl sends it.")
	f.StringVar(&o.Resource.FieldSelector, "field-selector", "", "With a resource type: the field selector of the collection, as kubectl sends it.")
	f.Int64Var(&o.Resource.ChunkSize, "chunk-size", 500, "With a resource type: the limit of a LIST, as kubectl get sends it (its --chunk-size; 0 lists at once). It sets the seats of the LIST.")
	f.StringVar(&o.Resource.Subresource, "subresource", "", "With a resource type and a name: the subresource (status, scale).")
	f.StringVar(&o.UserName, "user-name", "", "User name of the request (system:serviceaccount:NS:NAME and system:anonymous are understood).")
	f.StringArrayVar(&o.Groups, "group", nil, "A group of the user (repeatable); system:authenticated is implied.")
	f.StringVar(&o.ServiceAccount, "service-account", "", "Service account NAMESPACE/NAME making the request; its groups are implied.")
	f.BoolVar(&o.Anonymous, "anonymous", false, "The request is anonymous (system:anonymous in system:unauthenticated).")
	o.Options.AddFlags(f)
	f.StringVar(&o.FromLog, "from-log", "", "A kube-apiserver httplog line, or a file of them (the last one, or the one with --audit-id), to replay.")
	f.StringVar(&o.FromAudit, "from-audit", "", "An audit log file (JSON lines); the request (--audit-id, or the last one) is replayed with its user and groups.")
	f.StringVar(&o.AuditID, "audit-id", "", "The audit ID of the request in --from-audit or --from-log.")
	o.VLogs.addFlags(f, configFlags)
	f.StringArrayVarP(&o.Workloads, "workload", "w", nil, "More log files (httplog, audit) of the time of the --from-log/--from-audit request: its moment is reconstructed from them with the files those flags name.")
	o.Instances.addFlags(f)
	o.Window.addFlags(f, "--from-log, --from-audit or --workload files")
	f.StringVar(&o.FromMessage, "from-message", "", "A pasted client-go log line, 429 error text, or kubectl -v=8 trace or curl -i/-v output of a 429 (or of any response with X-Kubernetes-PF-* headers, compared with the replay) to explain; '-' reads it from standard input.")
	f.BoolVar(&o.Probe, "probe", false, "Send the request for real (read-only: GET, or LIST with limit=1) impersonating the identity, and compare the server's X-Kubernetes-PF-* headers with the replay.")
	o.Server.AddFlags(f)
	o.Flags.AddFlags(f)
	return cmd
}

// completeRequestArgs offers explain request's verbs, then the built-in
// resource types (a type two groups serve, after the first, with its
// group: events.events.k8s.io); a path is not completed.
func completeRequestArgs(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var out []string
	switch len(args) {
	case 0:
		out = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	case 1:
		seen := map[string]bool{}
		for _, r := range engine.BuiltinResources {
			name := r.Resource
			if seen[name] {
				name = r.GroupResource()
			}
			seen[r.Resource] = true
			out = append(out, name)
		}
	}
	var match []string
	for _, c := range out {
		if strings.HasPrefix(c, toComplete) {
			match = append(match, c)
		}
	}
	return match, cobra.ShellCompDirectiveNoFileComp
}
