package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
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
optional query. The identity is given with --user-name and --group,
--service-account or --anonymous; the groups the apiserver adds
(system:authenticated, the service-account groups) are implied.

The output shows the request as the apiserver sees it, every FlowSchema
before the winner with the reason it did not match, the winner with its
matching rule, the priority level with its limits, the seats the request
takes, the flow and its hand of queues with their current lengths, and the
verdict: runs now, queued (where, behind how much work, expected wait against
the wait limit), or rejected. Requests that bypass APF (exec, log,
port-forward, proxy) and messages that are not about APF (client-side
throttling, PodDisruptionBudget evictions) are recognised.

Configuration and live state come from the cluster, from a bundle (--from) or
from the upstream defaults (--defaults); -f applies FlowSchemas and
PriorityLevelConfigurations on top, to try a change before applying it. Each
apiserver has its own queues: --all-apiservers or --apiserver-urls gives the
verdict on each.

Instead of VERB PATH: --from-log takes a kube-apiserver httplog line (or a file
of them) and says whether the replay agrees with its apf_fs/apf_pl;
--from-audit takes an audit log (with --audit-id) for the request and its
identity; --from-message takes a pasted client-go or error message.
--probe sends the request for real (GET, or LIST with limit=1) impersonating
the identity and compares the server's X-Kubernetes-PF-* headers with the
replay.`

const explainRequestExample = `  # How does CoreDNS's endpoint LIST fare?
  kubectl apf explain request --service-account kube-system/coredns list /api/v1/endpoints

  # A kubelet reading a ConfigMap
  kubectl apf explain request --user-name system:node:n1 --group system:nodes GET /api/v1/namespaces/default/configmaps/app

  # A non-resource path
  kubectl apf explain request --user-name alice get /healthz

  # Try a FlowSchema before applying it, without a cluster
  kubectl apf explain request --defaults -f my-flowschema.yaml --user-name alice list /api/v1/pods

  # Replay a kube-apiserver log line and check it against apf_fs/apf_pl
  kubectl apf explain request --user-name alice --from-log 'I1121 ... "HTTP" verb="LIST" URI="/api/v1/pods" ... apf_pl="workload-low" apf_fs="service-accounts" ...'

  # A request from the audit log, with its user and groups
  kubectl apf explain request --from-audit /var/log/kube-apiserver/audit.log --audit-id 3f1c...

  # Send it for real (read-only) and compare with the server's headers
  kubectl apf explain request --probe --user-name alice --group dev get /api/v1/namespaces/default/pods

  # Is this message about APF?
  kubectl apf explain request --from-message 'Waited for 1.2s due to client-side throttling, not priority and fairness, request: GET:https://10.0.0.1/api/v1/pods'`

// ExplainRequestOptions holds the flags of "kubectl apf explain request".
type ExplainRequestOptions struct {
	// Options are the state flags: --from, --defaults, -f, -R,
	// --all-apiservers, --apiserver-urls.
	*state.Options
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

	ServerConcurrency    int
	ServerRequestTimeout time.Duration
	// Flags are -o.
	*output.Flags

	// ProbeConfig is the client configuration --probe sends with; set by
	// Complete from the kubeconfig unless a test injected one.
	ProbeConfig *rest.Config

	identity    *engine.Identity
	givenGroups []string
	verb, path  string
	recorded    *workload.Request
	message     *explain.Message

	genericiooptions.IOStreams
}

// NewExplainRequestOptions returns the defaults of "kubectl apf explain request".
func NewExplainRequestOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *ExplainRequestOptions {
	return &ExplainRequestOptions{Options: state.NewOptions(configFlags, state.Config|state.Instances), Flags: output.NewFlags(false, "", "json", "yaml"), configFlags: configFlags, ServerRequestTimeout: time.Minute, IOStreams: streams}
}

// NewExplainRequestCommand builds "kubectl apf explain request".
func NewExplainRequestCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewExplainRequestOptions(configFlags, streams)
	cmd := &cobra.Command{
		Use:     "request [--user-name NAME] [--group G]... [--service-account NS/NAME] [--anonymous] VERB_OR_METHOD PATH",
		Short:   "Explain which FlowSchema and priority level a request gets and whether it runs, waits or gets 429",
		Long:    explainRequestLong,
		Example: explainRequestExample,
		Args:    cobra.MaximumNArgs(2),
		RunE:    runOptions(o),
	}
	f := cmd.Flags()
	f.StringVar(&o.UserName, "user-name", "", "User name of the request (system:serviceaccount:NS:NAME and system:anonymous are understood).")
	f.StringArrayVar(&o.Groups, "group", nil, "A group of the user (repeatable); system:authenticated is implied.")
	f.StringVar(&o.ServiceAccount, "service-account", "", "Service account NAMESPACE/NAME making the request; its groups are implied.")
	f.BoolVar(&o.Anonymous, "anonymous", false, "The request is anonymous (system:anonymous in system:unauthenticated).")
	o.Options.AddFlags(f)
	f.StringVar(&o.FromLog, "from-log", "", "A kube-apiserver httplog line, or a file of them (the last one, or the one with --audit-id), to replay.")
	f.StringVar(&o.FromAudit, "from-audit", "", "An audit log file (JSON lines); the request (--audit-id, or the last one) is replayed with its user and groups.")
	f.StringVar(&o.AuditID, "audit-id", "", "The audit ID of the request in --from-audit or --from-log.")
	f.StringVar(&o.FromMessage, "from-message", "", "A pasted client-go log line or 429 error text to explain.")
	f.BoolVar(&o.Probe, "probe", false, "Send the request for real (read-only: GET, or LIST with limit=1) impersonating the identity, and compare the server's X-Kubernetes-PF-* headers with the replay.")
	f.IntVar(&o.ServerConcurrency, "server-concurrency", 0, "Server concurrency limit (max-requests-inflight + max-mutating-requests-inflight); 0 infers it from the metrics, or uses 600.")
	f.DurationVar(&o.ServerRequestTimeout, "server-request-timeout", o.ServerRequestTimeout, "The apiserver's --request-timeout, which sets the wait limit (a quarter of it, at most 1m).")
	o.Flags.AddFlags(f)
	return cmd
}

// Complete turns the flags and arguments into an identity and a request.
func (o *ExplainRequestOptions) Complete(cmd *cobra.Command, args []string) error {
	if err := o.completeRequest(args); err != nil {
		return err
	}
	id, given, err := o.identityFromFlags()
	if err != nil {
		return err
	}
	if id == nil && o.recorded != nil && o.recorded.UserKnown {
		rid := recordedIdentity(o.recorded)
		id, given = &rid, o.recorded.Groups
	}
	o.identity, o.givenGroups = id, given

	if err := o.Options.Validate(); err != nil {
		return err
	}
	if !o.messageOnly() {
		if err := o.Options.Complete(); err != nil {
			return err
		}
	}
	if o.Probe && o.ProbeConfig == nil && !o.Defaults && o.From == "" {
		cfg, err := o.configFlags.ToRESTConfig()
		if err != nil {
			return fmt.Errorf("--probe: reading the kubeconfig: %w", err)
		}
		o.ProbeConfig = cfg
	}
	return nil
}

// completeRequest reads the request from the arguments, --from-message,
// --from-log and --from-audit.
func (o *ExplainRequestOptions) completeRequest(args []string) error {
	if len(args) == 2 {
		o.verb, o.path = args[0], args[1]
	} else if len(args) == 1 {
		return fmt.Errorf("give both VERB_OR_METHOD and PATH, e.g. 'get /api/v1/namespaces/default/pods/web'")
	}
	if err := explain.CheckRequestInputs(explain.RequestInputs{Args: len(args) == 2, FromLog: o.FromLog != "", FromAudit: o.FromAudit != "",
		FromMessage: o.FromMessage != "", IdentityFlags: o.UserName != "" || o.ServiceAccount != "" || o.Anonymous || len(o.Groups) > 0,
		LogStdin: o.FromLog == "-", AuditStdin: o.FromAudit == "-"}); err != nil {
		return err
	}
	if o.FromMessage != "" {
		m, err := explain.ParseMessage(o.FromMessage)
		if err != nil {
			return fmt.Errorf("--from-message: %w", err)
		}
		o.message = m
		if m.Method != "" && m.Path != "" {
			if o.verb != "" && (!strings.EqualFold(o.verb, m.Method) || o.path != m.Path) {
				return fmt.Errorf("--from-message names %s %s, the arguments %s %s: give one request", m.Method, m.Path, o.verb, o.path)
			}
			o.verb, o.path = m.Method, m.Path
		}
	}
	if o.FromLog != "" || o.FromAudit != "" {
		r, err := readRecorded(o.FromLog, o.FromAudit, o.AuditID, o.In)
		if err != nil {
			return err
		}
		o.recorded = r
	}
	if o.recorded != nil && o.verb == "" {
		o.verb, o.path = o.recorded.Method, o.recorded.URI
	}
	return nil
}

// identityFromFlags builds the identity from --user-name, --group,
// --service-account and --anonymous; nil when none is given.
func (o *ExplainRequestOptions) identityFromFlags() (*engine.Identity, []string, error) {
	n := 0
	for _, set := range []bool{o.UserName != "", o.ServiceAccount != "", o.Anonymous} {
		if set {
			n++
		}
	}
	if n > 1 {
		return nil, nil, fmt.Errorf("--user-name, --service-account and --anonymous each name the identity; give one")
	}
	switch {
	case o.Anonymous:
		if len(o.Groups) > 0 {
			return nil, nil, fmt.Errorf("--anonymous requests carry only group %s; drop --group", user.AllUnauthenticated)
		}
		id := engine.AnonymousIdentity()
		return &id, nil, nil
	case o.ServiceAccount != "":
		ns, name, ok := strings.Cut(o.ServiceAccount, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return nil, nil, fmt.Errorf("--service-account %q: want NAMESPACE/NAME, e.g. kube-system/coredns", o.ServiceAccount)
		}
		id, err := engine.ParseIdentity("system:serviceaccount:"+ns+":"+name, o.Groups...)
		if err != nil {
			return nil, nil, fmt.Errorf("--service-account: %w", err)
		}
		return &id, o.Groups, nil
	case o.UserName != "":
		id, err := engine.ParseIdentity(o.UserName, o.Groups...)
		if err != nil {
			return nil, nil, fmt.Errorf("--user-name: %w", err)
		}
		return &id, o.Groups, nil
	case len(o.Groups) > 0:
		return nil, nil, fmt.Errorf("--group needs --user-name or --service-account")
	}
	return nil, nil, nil
}

// recordedIdentity is the identity of an audit record, with the groups the
// impersonation filter adds when the record is of an impersonated user
// (filters/impersonation.go adds system:authenticated to every
// non-anonymous user).
func recordedIdentity(r *workload.Request) engine.Identity {
	id := engine.Identity{User: r.User, Groups: append([]string(nil), r.Groups...)}
	if r.User == user.Anonymous {
		return id
	}
	for _, g := range id.Groups {
		if g == user.AllAuthenticated || g == user.AllUnauthenticated {
			return id
		}
	}
	id.Groups = append(id.Groups, user.AllAuthenticated)
	return id
}

// Validate checks the flags.
func (o *ExplainRequestOptions) Validate() error {
	if err := o.Options.Validate(); err != nil {
		return err
	}
	if err := o.Flags.Validate(); err != nil {
		return err
	}
	if o.ServerConcurrency < 0 {
		return fmt.Errorf("--server-concurrency must be positive, not %d", o.ServerConcurrency)
	}
	if o.ServerRequestTimeout <= 0 {
		return fmt.Errorf("--server-request-timeout must be positive, not %v", o.ServerRequestTimeout)
	}
	if o.AuditID != "" && o.FromAudit == "" && o.FromLog == "" {
		return fmt.Errorf("--audit-id selects a record of --from-audit or --from-log; give one of them")
	}
	if o.messageOnly() {
		return nil
	}
	if o.verb == "" {
		return fmt.Errorf("give the request as VERB_OR_METHOD PATH (e.g. 'list /api/v1/pods'), or --from-log, --from-audit or --from-message")
	}
	if o.identity == nil {
		if o.recorded != nil && !o.recorded.UserKnown {
			return fmt.Errorf("the log line carries no user: give --user-name (and --group), --service-account or --anonymous, or --from-audit with the same audit ID")
		}
		return fmt.Errorf("give the identity: --user-name NAME [--group G]..., --service-account NS/NAME or --anonymous")
	}
	if o.Probe {
		if o.Defaults || o.From != "" {
			return fmt.Errorf("--probe sends the request to the cluster: it cannot be combined with --defaults or --from")
		}
		if len(o.Files) > 0 {
			return fmt.Errorf("--probe compares with the cluster's live configuration: drop -f (the server does not know the files)")
		}
		if err := probeAllowed(o.verb, o.path); err != nil {
			return err
		}
	}
	return nil
}

// messageOnly is true when the explanation is the pasted message's alone:
// it is not about APF, or it names no request to classify and none was given.
func (o *ExplainRequestOptions) messageOnly() bool {
	return o.message != nil && (!o.message.APF || o.verb == "")
}

// probeAllowed refuses every request that could change the cluster.
func probeAllowed(verb, path string) error {
	switch verb {
	case "get", "list", "GET", "HEAD":
	default:
		return fmt.Errorf("--probe sends only read-only requests (get, or list with limit=1): %s %s could change the cluster; explain it without --probe", verb, path)
	}
	u, err := url.ParseRequestURI(path)
	if err == nil && (u.Query().Get("watch") == "1" || u.Query().Get("watch") == "true") {
		return fmt.Errorf("--probe does not send watches (long-running): explain it without --probe, or probe the LIST")
	}
	return nil
}

// Run explains the request and prints the explanation.
func (o *ExplainRequestOptions) Run(ctx context.Context) error {
	if o.messageOnly() {
		if o.message.APF {
			// about APF, but naming no request to classify: say what the
			// message means, and what to add for the request's level
			fmt.Fprintf(o.ErrOut, "note: %s\n", explain.MessageNeedsRequest(o.message))
		}
		return o.print(o.message, func(w io.Writer) error { return explain.WriteMessageText(w, o.message) })
	}
	r, err := engine.ParseRequest(o.verb, o.path, *o.identity)
	if err != nil {
		return err
	}
	st, err := o.Load(ctx, state.Request{Parts: dump.PartPriorityLevels | dump.PartQueues | dump.PartRequests | dump.PartMetrics,
		ConfigOnlyFallback: true, ServerConcurrency: o.ServerConcurrency, InferConcurrency: true, Stdin: o.In, NeedObjects: "requests cannot be classified"})
	if err != nil {
		return err
	}
	for _, n := range st.Notes {
		fmt.Fprintln(o.ErrOut, sanitize.Line(n))
	}
	in := explain.Input{Config: st.Config(), ServerConcurrencyLimit: st.ServerConcurrency, ServerRequestTimeout: o.ServerRequestTimeout,
		Release: st.Release, ReleaseFrom: st.ReleaseFrom}
	ex := explain.ExplainOnEach(in, st.Live, r, o.givenGroups)
	if o.message != nil {
		ex.Notes = append(ex.Notes, o.message.Explanation)
	}
	if o.recorded != nil && o.FromLog != "" {
		ex.CompareNames("httplog", o.recorded.FlowSchema, o.recorded.PriorityLevel, o.recorded.Status)
		rw := o.recorded
		ex.CompareWork(explain.RecordedWork{HasSeats: rw.HasSeats, InitialSeats: rw.InitialSeats, FinalSeats: rw.FinalSeats, AdditionalLatency: rw.AdditionalLatency,
			HasExecution: rw.HasServiceTime, ExecutionTime: rw.ServiceTime, Latency: rw.Latency})
	} else if o.recorded != nil {
		ex.Recorded = &explain.Recorded{Source: "audit", Status: o.recorded.Status,
			Detail: "audit events do not record the classification; use --probe to compare with the server"}
	}
	if o.Probe {
		if err := o.probe(ctx, r, ex, namesByUID(st.BaseFlowSchemas, st.BasePriorityLevels)); err != nil {
			return err
		}
	}
	return o.print(ex, func(w io.Writer) error { return explain.WriteText(w, ex) })
}

func (o *ExplainRequestOptions) print(v any, text func(io.Writer) error) error {
	return printObject(o.Out, o.Flags, v, text)
}

// probe sends r impersonating its identity and records the server's
// classification headers in ex.
func (o *ExplainRequestOptions) probe(ctx context.Context, r engine.Request, ex *explain.Explanation, names map[string]string) error {
	cfg := rest.CopyConfig(o.ProbeConfig)
	// client-go impersonation (kubectl --as/--as-group): the server's
	// WithImpersonation adds system:authenticated (or, for system:anonymous,
	// system:unauthenticated) itself.
	imp := rest.ImpersonationConfig{UserName: r.Identity.User}
	if r.Identity.User != user.Anonymous {
		for _, g := range r.Identity.Groups {
			if g != user.AllAuthenticated {
				imp.Groups = append(imp.Groups, g)
			}
		}
	}
	cfg.Impersonate = imp
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("--probe: building a client: %w", err)
	}
	u, err := url.Parse(strings.TrimRight(cfg.Host, "/") + cfg.APIPath)
	if err != nil {
		return fmt.Errorf("--probe: parsing the server URL %q: %w", cfg.Host, err)
	}
	ru, err := url.ParseRequestURI(r.URL)
	if err != nil {
		return fmt.Errorf("--probe: %w", err)
	}
	u.Path = strings.TrimRight(u.Path, "/") + ru.Path
	q := ru.Query()
	if r.Info.Verb == "list" {
		// Read-only and small: one object is enough to be classified.
		q.Set("limit", "1")
	}
	u.RawQuery = q.Encode()
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return fmt.Errorf("--probe: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("--probe: sending %s %s to %s: %w", method, r.URL, cfg.Host, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	fsUID := resp.Header.Get(dump.HeaderFlowSchemaUID)
	plUID := resp.Header.Get(dump.HeaderPriorityLevelUID)
	_, present := resp.Header[http.CanonicalHeaderKey(dump.HeaderFlowSchemaUID)]
	// A refused impersonation is answered by WithImpersonation, before APF,
	// with "... cannot impersonate resource ...".
	if resp.StatusCode == http.StatusForbidden && !present && strings.Contains(string(body), "cannot impersonate") {
		return fmt.Errorf("--probe: the server refused to impersonate %q (403): the kubeconfig's user needs RBAC verb impersonate on users and groups", r.Identity.User)
	}
	ex.CompareUIDs(fsUID, plUID, present, resp.StatusCode, names)
	return nil
}

// readRecorded reads the request of --from-log and/or --from-audit: each
// value is a file name, "-" for stdin, or (for --from-log) the line itself.
// With both, the log line is joined to the audit event of the same audit ID
// (workload.PickJoined), never to another one.
func readRecorded(fromLog, fromAudit, auditID string, stdin io.Reader) (*workload.Request, error) {
	var logRd, auditRd workload.Reader
	var logName, auditName string
	if fromLog != "" {
		rd, name, closeFn, err := openRecordReader(fromLog, true, stdin)
		if err != nil {
			return nil, fmt.Errorf("--from-log: %w", err)
		}
		defer closeFn()
		logRd, logName = rd, name
	}
	if fromAudit != "" {
		rd, name, closeFn, err := openRecordReader(fromAudit, false, stdin)
		if err != nil {
			return nil, fmt.Errorf("--from-audit: %w", err)
		}
		defer closeFn()
		auditRd, auditName = rd, name
	}
	if logRd != nil && auditRd != nil {
		r, err := workload.PickJoined(logRd, auditRd, auditID)
		if err != nil {
			return nil, fmt.Errorf("--from-log %s with --from-audit %s: %w", logName, auditName, err)
		}
		return r, nil
	}
	flag, rd, name, kind := "--from-log", logRd, logName, "kube-apiserver httplog (\"HTTP\" lines, -v=3)"
	if rd == nil {
		flag, rd, name, kind = "--from-audit", auditRd, auditName, "audit event (ResponseComplete stage)"
	}
	r, _, err := workload.Pick(rd, auditID)
	if errors.Is(err, workload.ErrNoRecord) {
		if auditID != "" {
			return nil, fmt.Errorf("%s: no request %s", flag, strings.TrimPrefix(err.Error(), workload.ErrNoRecord.Error()+" "))
		}
		return nil, fmt.Errorf("%s: no %s request found in %s", flag, kind, name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return r, nil
}

// openRecordReader opens one value of --from-log or --from-audit.
func openRecordReader(value string, httplog bool, stdin io.Reader) (workload.Reader, string, func(), error) {
	var in io.Reader
	name, closeFn := value, func() {}
	switch {
	case value == "-":
		in, name = stdin, "stdin"
	default:
		if f, err := os.Open(value); err == nil {
			in, closeFn = f, func() { f.Close() }
		} else if httplog && strings.Contains(value, "\"HTTP\"") {
			in, name = strings.NewReader(value), "the line given"
		} else {
			return nil, "", nil, fmt.Errorf("reading %s: %w", value, err)
		}
	}
	// Arrival order does not matter here (one record is kept), so the
	// smallest re-ordering window keeps the reader's memory at one record
	// however long the file is.
	opts := workload.Options{ReorderWindow: time.Nanosecond}
	if httplog {
		return workload.NewHTTPLogReader(in, name, opts, nil), name, closeFn, nil
	}
	return workload.NewAuditReader(in, name, opts, nil), name, closeFn, nil
}
