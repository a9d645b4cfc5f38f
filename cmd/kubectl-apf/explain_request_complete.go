package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain/fromlog"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
)

// Complete turns the flags and arguments into an identity and a request.
func (o *ExplainRequestOptions) Complete(cmd *cobra.Command, args []string) error {
	if err := o.completeRequest(args); err != nil {
		return err
	}
	id, given, err := o.identityFromFlags()
	if err != nil {
		return err
	}
	if id == nil && o.recorded.Request != nil && o.recorded.Request.UserKnown {
		rid := fromlog.RecordedIdentity(o.recorded.Request)
		id, given = &rid, o.recorded.Request.Groups
	}
	o.identity, o.givenGroups = id, given

	if !o.messageOnly() {
		if err := o.Options.Complete(); err != nil {
			return err
		}
	}
	if o.resourceType != "" {
		if err := o.completeResource(); err != nil {
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
	switch {
	case len(args) >= 2 && !strings.HasPrefix(args[1], "/") && !strings.Contains(args[1], "://"):
		if err := o.resourceArgs(args); err != nil {
			return err
		}
	case len(args) == 3:
		return fmt.Errorf("a path names its object: give VERB_OR_METHOD PATH, or VERB TYPE NAME (get pods web)")
	case len(args) == 2:
		o.verb, o.path = args[0], args[1]
	case len(args) == 1:
		return fmt.Errorf("give both VERB_OR_METHOD and PATH, e.g. 'get /api/v1/namespaces/default/pods/web', or VERB TYPE[/NAME] as kubectl takes them ('get pods -n default')")
	}
	if err := o.resourceFlagsNeedType(); err != nil {
		return err
	}
	if err := explain.CheckRequestInputs(explain.RequestInputs{Args: len(args) >= 2, FromLog: o.FromLog != "", FromAudit: o.FromAudit != "" || o.VLogs.enabled(),
		FromMessage: o.FromMessage != "", IdentityFlags: o.UserName != "" || o.ServiceAccount != "" || o.Anonymous || len(o.Groups) > 0,
		LogStdin: o.FromLog == "-", AuditStdin: o.FromAudit == "-"}); err != nil {
		return err
	}
	if err := o.messageFromStdin(); err != nil {
		return err
	}
	if o.FromMessage != "" {
		m, err := explain.ParseMessage(o.FromMessage)
		if err != nil {
			if st, serr := os.Stat(o.FromMessage); serr == nil && st.Mode().IsRegular() {
				return fmt.Errorf("--from-message takes the message's text, and %q is a file: give --from-message - < %s", o.FromMessage, o.FromMessage)
			}
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
	if err := o.resolveWindow(); err != nil {
		return err
	}
	if o.FromLog != "" || o.FromAudit != "" {
		r, skipped, err := input.ReadRecorded(o.FromLog, o.FromAudit, o.AuditID, o.pastFiles(), o.In, o.from, o.to, o.Window.Year())
		if err != nil {
			return err
		}
		o.recorded.Request, o.recorded.Skipped = r, skipped
	} else if o.VLogs.enabled() {
		if err := o.recordedFromVLogs(); err != nil {
			return err
		}
	}
	if o.recorded.Request != nil && o.verb == "" {
		o.verb, o.path = o.recorded.Request.Method, o.recorded.Request.URI
	}
	return nil
}

// resourceFlagsNeedType refuses the flags of a request given by resource
// type (-A, -l, --field-selector, --subresource) with a path.
func (o *ExplainRequestOptions) resourceFlagsNeedType() error {
	if o.resourceType != "" {
		return nil
	}
	r := o.Resource
	for _, f := range []struct {
		flag string
		set  bool
	}{{"-A", r.AllNamespaces}, {"-l", r.LabelSelector != ""}, {"--field-selector", r.FieldSelector != ""}, {"--subresource", r.Subresource != ""}} {
		if f.set {
			return fmt.Errorf("%s goes with a resource type (get pods %s ...); a path carries its namespace, selectors and subresource itself", f.flag, f.flag)
		}
	}
	return nil
}

// maxMessage is the most --from-message - reads: a trace, not a log.
const maxMessage = 16 << 20

// messageFromStdin reads --from-message - from standard input: a trace
// piped in (kubectl get po -v=8 2>&1 | kubectl apf explain request ...
// --from-message -).
func (o *ExplainRequestOptions) messageFromStdin() error {
	if o.FromMessage != "-" {
		return nil
	}
	text, err := io.ReadAll(io.LimitReader(o.In, maxMessage+1))
	if err != nil {
		return fmt.Errorf("--from-message -: reading standard input: %w", err)
	}
	if len(text) > maxMessage {
		return fmt.Errorf("--from-message -: standard input holds more than %d MiB: give the trace around the request, not a whole log (--from-log reads logs)", maxMessage>>20)
	}
	o.FromMessage = string(text)
	return nil
}

// resourceArgs reads VERB TYPE[/NAME] [NAME], kubectl's form; the type is
// looked up once the source is known (completeResource).
func (o *ExplainRequestOptions) resourceArgs(args []string) error {
	o.Resource.Verb = args[0]
	typ, name, slash := strings.Cut(args[1], "/")
	if len(args) == 3 {
		if slash {
			return fmt.Errorf("%s names its object already: drop %q", args[1], args[2])
		}
		name = args[2]
	}
	if typ == "" || (slash && name == "") || strings.Contains(name, "/") {
		return fmt.Errorf("%q: give TYPE, TYPE/NAME or TYPE NAME, as kubectl takes them (pods, pods/web, deployments.apps web)", args[1])
	}
	o.resourceType, o.Resource.Name = typ, name
	if o.configFlags != nil {
		ns, _, err := o.configFlags.ToRawKubeConfigLoader().Namespace()
		if err == nil {
			o.Resource.Namespace = ns
		}
	}
	return nil
}

// completeResource looks the resource type up in the cluster's resources
// (the built-in ones without a cluster) and turns the arguments into the
// verb and the path kubectl would send; Run prints its notes once the
// state is read.
func (o *ExplainRequestOptions) completeResource() error {
	rs, from, notes := o.Options.APIResources()
	r, err := engine.LookupResource(rs, o.resourceType)
	if err != nil {
		return fmt.Errorf("%w: not among %s; give the request's path instead (list /apis/GROUP/VERSION/namespaces/NS/RESOURCE)", err, from)
	}
	verb, path, err := o.Resource.Request(r)
	if err != nil {
		return err
	}
	if m := o.message; m != nil && m.Path != "" && m.Path != path {
		return fmt.Errorf("--from-message names %s %s, the arguments %s %s (%s): give one request", m.Method, m.Path, o.Resource.Verb, o.resourceArg(), path)
	}
	o.verb, o.path = verb, path
	if verb == "watch" {
		// kubectl get --watch (and an informer) LISTs first and watches
		// from the LIST's resourceVersion: a WATCH of 1 seat, where one from
		// no resourceVersion starts with every object and is estimated as
		// a LIST ("as kubectl sends it" said otherwise)
		o.resourceNotes = append(notes, fmt.Sprintf("note: %s %s is WATCH %s?watch=1 from no resourceVersion, which starts with every object; kubectl get --watch and informers LIST first and watch from that LIST's resourceVersion (1 seat): give the path with ?watch=1&resourceVersion=N for that WATCH", o.Resource.Verb, o.resourceArg(), path))
		return nil
	}
	o.resourceNotes = append(notes, fmt.Sprintf("note: %s %s is %s %s, as kubectl sends it", o.Resource.Verb, o.resourceArg(), strings.ToUpper(verb), path))
	return nil
}

// resourceArg is the resource as the arguments gave it.
func (o *ExplainRequestOptions) resourceArg() string {
	if o.Resource.Name == "" {
		return o.resourceType
	}
	return o.resourceType + " " + o.Resource.Name
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

// Validate checks the flags.
func (o *ExplainRequestOptions) Validate() error {
	if err := o.Options.Validate(); err != nil {
		return err
	}
	if err := o.Flags.Validate(); err != nil {
		return err
	}
	if err := o.Server.Validate(); err != nil {
		return err
	}
	if o.AuditID != "" && o.FromAudit == "" && o.FromLog == "" && !o.VLogs.enabled() {
		return fmt.Errorf("--audit-id selects a record of --from-audit or --from-log; give one of them")
	}
	if err := o.Instances.validate(o.pastFiles()); err != nil {
		return err
	}
	if o.messageOnly() {
		return nil
	}
	if o.verb == "" {
		return fmt.Errorf("give the request as VERB_OR_METHOD PATH (e.g. 'list /api/v1/pods'), or --from-log, --from-audit or --from-message")
	}
	if o.identity == nil {
		if o.recorded.Request != nil && !o.recorded.Request.UserKnown {
			return fmt.Errorf("the log line carries no user: give --user-name (and --group), --service-account or --anonymous, or --from-audit with the same audit ID")
		}
		if as := o.impersonated(); as != "" {
			// kubectl -v=8 --as USER is how users see a request's PF headers
			return fmt.Errorf("give the identity: --user-name %s (--as impersonates the reader of the cluster, not the request explained), --service-account NS/NAME or --anonymous", as)
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

// impersonated is the kubeconfig flags' --as, "" without it.
func (o *ExplainRequestOptions) impersonated() string {
	if o.configFlags == nil || o.configFlags.Impersonate == nil {
		return ""
	}
	return *o.configFlags.Impersonate
}

// messageOnly is true when the explanation is the pasted message's alone:
// it is not about APF, or it names no request to classify and none was
// given, or no identity to classify it with.
func (o *ExplainRequestOptions) messageOnly() bool {
	return o.message != nil && (!o.message.APF || (o.verb == "" && o.resourceType == "") || o.identity == nil)
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

// explainRequestWindowHelp is added to explain request's help.
const explainRequestWindowHelp = `

--since and --until cut a window out of the log files of --from-log,
--from-audit and --workload: the request (the last one, or --audit-id's)
is searched for among the requests that arrived inside it, and its moment
is reconstructed from them alone. --until is RFC 3339
(2026-11-23T03:10:00Z), or relative to the log's own last request ("-2h",
"2h ago", "now" for the last request itself), never to the wall clock;
--since is the window's length before --until (10m, 2h, 1d), or its start
as a time (RFC 3339, "-2h", "2h ago").`

// resolveWindow resolves --since/--until over the log files (reading them
// once when the window is relative to their end).
func (o *ExplainRequestOptions) resolveWindow() error {
	if o.Window.IsZero() {
		return nil
	}
	if err := o.Window.Validate(); err != nil {
		return err
	}
	if o.VLogs.enabled() {
		return fmt.Errorf("--since/--until cut log files: the window of --victorialogs is --victorialogs-since/--victorialogs-until")
	}
	paths := o.pastFiles()
	if len(paths) == 0 {
		return fmt.Errorf("--since/--until cut the log files of --from-log, --from-audit or --workload: give one of them as a file (not a line, nor - for standard input)")
	}
	spec, err := o.Instances.spec(paths)
	if err != nil {
		return err
	}
	o.from, o.to, err = o.Window.ResolveFiles(context.Background(), input.Logs{}, spec)
	return err
}
