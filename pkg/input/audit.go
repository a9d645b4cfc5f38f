package input

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// auditEvent is the subset of audit.k8s.io/v1 Event
// (k8s.io/apiserver/pkg/apis/audit/v1/types.go) the replay needs.
type auditEvent struct {
	Kind                     string            `json:"kind"`
	APIVersion               string            `json:"apiVersion"`
	AuditID                  string            `json:"auditID"`
	Stage                    string            `json:"stage"`
	RequestURI               string            `json:"requestURI"`
	Verb                     string            `json:"verb"`
	User                     auditUser         `json:"user"`
	ImpersonatedUser         *auditUser        `json:"impersonatedUser"`
	UserAgent                string            `json:"userAgent"`
	SourceIPs                []string          `json:"sourceIPs"`
	ObjectRef                *auditObjectRef   `json:"objectRef"`
	ResponseStatus           *auditStatus      `json:"responseStatus"`
	RequestReceivedTimestamp time.Time         `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time         `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations"`
}

type auditUser struct {
	Username string   `json:"username"`
	Groups   []string `json:"groups"`
}

type auditObjectRef struct {
	Resource    string `json:"resource"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	APIGroup    string `json:"apiGroup"`
	APIVersion  string `json:"apiVersion"`
	Subresource string `json:"subresource"`
}

type auditStatus struct {
	Code int `json:"code"`
}

// The latency annotations of audit events
// (k8s.io/apiserver pkg/endpoints/request/webhook_duration.go:
// AuditAnnotationsFromLatencyTrackers, filters/audit.go).
const (
	annotationQueueWait      = "apiserver.latency.k8s.io/apf-queue-wait"
	annotationAuthentication = "apiserver.latency.k8s.io/authentication"
	annotationImpersonation  = "apiserver.latency.k8s.io/impersonation"
	annotationTotal          = "apiserver.latency.k8s.io/total"
)

// latencyAnnotations fills r's queue wait and pre-APF time from the
// event's latency annotations, when the apiserver wrote them. A value that
// is not a Go duration is ignored.
func latencyAnnotations(ann map[string]string, r *workload.Request) {
	total, ok := ann[annotationTotal]
	if !ok {
		return
	}
	d, err := time.ParseDuration(total)
	if err != nil {
		return
	}
	r.TotalLatency, r.HasLatencyAnnotations = d, true
	for _, k := range []string{annotationAuthentication, annotationImpersonation} {
		if d, err := time.ParseDuration(ann[k]); err == nil && d > 0 {
			r.PreAPF += d
		}
	}
	if d, err := time.ParseDuration(ann[annotationQueueWait]); err == nil && d >= 0 {
		r.QueueWait, r.HasQueueWait = d, true
	}
}

type auditReader struct {
	ls      *lineScanner
	stats   *workload.Stats
	lenient bool
	in      *interner
	// ev is the event being read, reused from line to line
	ev auditEvent
	// noSource: the requests' Source is left empty, their URI "/"
	// (dropSource)
	noSource bool
	// par is the parallel decoding's state, nil when the lines are
	// decoded one by one (auditpar.go)
	par *auditPar
	*reorder
}

// dropSource leaves the requests' Source empty, and their URI "/" where
// the event's requestURI is a path: a join takes only their identity, and
// the line and the path, as strings of their own, would be made for every
// event only to be dropped. Errors still say where they are, and the
// events refused are the same.
func (a *auditReader) dropSource() { a.noSource = true }

// NewAuditReader reads audit.k8s.io/v1 Events, one JSON object per line,
// from r in arrival order. Only the ResponseComplete and Panic stages are
// used; the other stages of the same request are skipped.
//
// APF classifies the impersonated identity (WithImpersonation runs before
// WithPriorityAndFairness in DefaultBuildHandlerChain), so the
// impersonated user wins when present.
func NewAuditReader(r io.Reader, name string, opts Options, stats *workload.Stats) workload.Reader {
	opts.defaults()
	if stats == nil {
		stats = &workload.Stats{}
	}
	a := &auditReader{ls: newLineScanner(r, name, opts.MaxLineBytes), stats: stats, lenient: opts.Lenient, in: newInterner()}
	src := a.read
	if opts.tuning.parallel() {
		a.par, src = &auditPar{lines: opts.tuning.lines(), inline: opts.tuning.chunksInline}, a.readParallel
	}
	a.reorder = &reorder{src: src, window: opts.ReorderWindow, q: arrivalQueue{maxHeld: opts.MaxHeld}, stats: stats}
	return a
}

func (a *auditReader) read(r *workload.Request) (time.Time, error) {
	for {
		line, err := a.ls.next()
		if err != nil {
			return time.Time{}, err
		}
		a.stats.Lines++
		if len(bytes.TrimSpace(line)) == 0 {
			a.stats.Skipped++
			continue
		}
		ev := &a.ev
		var bad error
		switch err := decodeAuditEventAs(line, ev, a.in, a.noSource); {
		case err != nil:
			bad = because("line", "that could not be decoded as an audit event", fmt.Errorf("%s: not an audit event: %w", a.ls.where(), err))
		case ev.Kind != "Event" || !strings.HasPrefix(ev.APIVersion, "audit.k8s.io/"):
			bad = because("JSON line", "of another kind than audit.k8s.io Event", fmt.Errorf("%s: kind %q apiVersion %q is not an audit.k8s.io Event", a.ls.where(), ev.Kind, ev.APIVersion))
		case ev.Stage != "ResponseComplete" && ev.Stage != "Panic":
			skip(a.stats, reasonOtherStage)
			continue
		default:
			if err := auditToRequest(ev, r); err != nil {
				bad = fmt.Errorf("%s: %w", a.ls.where(), err)
			}
		}
		if bad != nil {
			if err := malformed(a.stats, a.lenient, workload.Reason{Noun: auditEventNoun, Problem: "that could not be read"}, bad); err != nil {
				return time.Time{}, err
			}
			continue
		}
		if !a.noSource {
			r.Source = a.ls.where()
		}
		return ev.StageTimestamp, nil
	}
}

// decodeAuditEvent decodes one line: by scanAuditEvent, or by
// encoding/json where the scan gives up (and for the error of a line that
// is not an event).
func decodeAuditEvent(line []byte, ev *auditEvent, in *interner) error {
	return decodeAuditEventAs(line, ev, in, false)
}

// decodeAuditEventAs is decodeAuditEvent; with pathOnly, the scan keeps a
// requestURI that is a path as "/" (scanAuditEventAs).
func decodeAuditEventAs(line []byte, ev *auditEvent, in *interner, pathOnly bool) error {
	if scanAuditEventAs(line, ev, in, pathOnly) {
		return nil
	}
	*ev = auditEvent{}
	return json.Unmarshal(line, ev)
}

// auditEventNoun is the noun of the Reasons of audit events.
const auditEventNoun = "audit event"

// auditToRequest fills r from an audit event (any stage).
func auditToRequest(ev *auditEvent, r *workload.Request) error {
	*r = workload.Request{AuditID: ev.AuditID, Verb: ev.Verb, UserAgent: ev.UserAgent, Arrival: ev.RequestReceivedTimestamp}
	if ev.RequestReceivedTimestamp.IsZero() {
		return because(auditEventNoun, "without a timestamp", fmt.Errorf("audit event %s has no requestReceivedTimestamp", ev.AuditID))
	}
	r.User, r.Groups, r.UserKnown = ev.User.Username, ev.User.Groups, true
	if len(ev.SourceIPs) > 0 {
		r.SourceIP = ev.SourceIPs[0]
	}
	if iu := ev.ImpersonatedUser; iu != nil {
		r.User, r.Groups = iu.Username, iu.Groups
	}
	r.URI = ev.RequestURI
	if r.URI == "" {
		r.URI = uriFromObjectRef(ev)
	}
	if r.URI == "" || r.URI[0] != '/' {
		return because(auditEventNoun, "with a requestURI that is not a path", fmt.Errorf("audit event %s: requestURI %q must be a path starting with /", ev.AuditID, r.URI))
	}
	r.Method = methodOf(ev.Verb)
	if r.Method == "" {
		return because(auditEventNoun, "with an unknown verb", fmt.Errorf("audit event %s: unknown verb %q", ev.AuditID, ev.Verb))
	}
	if !ev.StageTimestamp.IsZero() && (ev.Stage == "ResponseComplete" || ev.Stage == "Panic") {
		r.Latency = max(ev.StageTimestamp.Sub(ev.RequestReceivedTimestamp), 0)
	}
	if ev.ResponseStatus != nil {
		r.Status = ev.ResponseStatus.Code
	}
	latencyAnnotations(ev.Annotations, r)
	return nil
}

// uriFromObjectRef rebuilds a path from objectRef when requestURI is absent.
func uriFromObjectRef(ev *auditEvent) string {
	o := ev.ObjectRef
	if o == nil || o.Resource == "" {
		return ""
	}
	var b strings.Builder
	if o.APIGroup == "" {
		b.WriteString("/api/")
	} else {
		b.WriteString("/apis/" + o.APIGroup + "/")
	}
	v := o.APIVersion
	if v == "" {
		v = "v1"
	}
	b.WriteString(v)
	if o.Namespace != "" {
		b.WriteString("/namespaces/" + url.PathEscape(o.Namespace))
	}
	b.WriteString("/" + o.Resource)
	if o.Name != "" {
		b.WriteString("/" + url.PathEscape(o.Name))
	}
	if o.Subresource != "" {
		b.WriteString("/" + o.Subresource)
	}
	if ev.Verb == "watch" {
		b.WriteString("?watch=true")
	}
	return b.String()
}
