package dump

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Header names of the classification response headers
// (k8s.io/api/flowcontrol/v1 types.go: ResponseHeaderMatchedFlowSchemaUID,
// ResponseHeaderMatchedPriorityLevelConfigurationUID).
const (
	HeaderFlowSchemaUID    = "X-Kubernetes-PF-FlowSchema-UID"
	HeaderPriorityLevelUID = "X-Kubernetes-PF-PriorityLevel-UID"
)

// UID kinds of a UIDRef.
const (
	KindFlowSchema    = "FlowSchema"
	KindPriorityLevel = "PriorityLevelConfiguration"
)

// UIDRef is one UID to resolve: from a header line (Kind known) or given
// bare (Kind empty: either kind).
type UIDRef struct {
	Kind string `json:"kind,omitempty"`
	UID  string `json:"uid"`
}

var (
	// A header as curl, kubectl -v=8 or a browser prints it: the name,
	// optionally quoted, then ":" or "=", then the value, optionally quoted.
	headerRE = regexp.MustCompile(`(?i)x-kubernetes-pf-(flowschema|prioritylevel)-uid["'\]]?\s*[:=]\s*(?:\[\s*)?["']?([0-9a-z-]*)`)
	uidRE    = regexp.MustCompile(`(?i)^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	// The marks of a client's HTTP trace or log: a klog line prefix
	// ("I0808 12:14:52.246188"), client-go's round_trippers lines, curl's
	// "< HTTP/1.1 200 OK".
	traceRE = regexp.MustCompile(`(?im)^\s*([IWEF]\d{4} \d{2}:\d{2}:\d{2}|[<>] HTTP/|HTTP/[12](\.\d)? \d{3})|round_trippers\.go|response (headers|status):`)
)

// ErrNoPFHeader is wrapped by the error of ParseUIDRefs for a trace that
// holds no X-Kubernetes-PF-*-UID header at all.
var ErrNoPFHeader = errors.New("no X-Kubernetes-PF-FlowSchema-UID or X-Kubernetes-PF-PriorityLevel-UID header")

// ParseUIDRefs extracts the UIDs of pasted text: header lines (such as the
// output of "kubectl get pods -v=8 2>&1 | grep -i x-kubernetes-pf") and bare
// UIDs, in order, without duplicates. When the text holds any header line,
// its other lines are ignored (they are the rest of a pasted log). An empty header value is kept: it
// means the apiserver used a mandatory object it imagined (no API object,
// hence no UID; apf_controller.go: imaginePL). A word that is neither is an
// error quoting it.
func ParseUIDRefs(text string) ([]UIDRef, error) {
	var out []UIDRef
	seen := map[UIDRef]bool{}
	add := func(r UIDRef) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	// Pasted log output carries other lines too: when any header is present,
	// lines without one are context, not input.
	pasted := headerRE.MatchString(text)
	if !pasted && traceRE.MatchString(text) {
		// The apiserver sets both headers on every response API Priority
		// and Fairness classified (priority-and-fairness.go:
		// setResponseHeaders), exempt ones included.
		return nil, fmt.Errorf("the input is an HTTP trace that holds %w at all: its responses were not classified by API Priority and Fairness (a long-running request such as logs, exec, attach, port-forward or proxy; a server with APF off or older than 1.20), or the trace was taken below -v=8, which prints no response headers", ErrNoPFHeader)
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	// where names a line of the input in an error: its number and text,
	// what of them says more than the word quoted before it
	where := func(n int, line, word string) string {
		switch {
		case len(lines) == 1 && line == word:
			return ""
		case len(lines) == 1:
			return " in " + quoteLine(line)
		case line == word:
			return fmt.Sprintf(" (line %d)", n+1)
		}
		return fmt.Sprintf(" in line %d, %s", n+1, quoteLine(line))
	}
	for n, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if ms := headerRE.FindAllStringSubmatch(line, -1); len(ms) > 0 {
			for _, m := range ms {
				kind := KindFlowSchema
				if strings.EqualFold(m[1], "prioritylevel") {
					kind = KindPriorityLevel
				}
				if m[2] != "" && !uidRE.MatchString(m[2]) {
					return nil, fmt.Errorf("%q is not a UID%s", m[2], where(n, line, m[2]))
				}
				add(UIDRef{Kind: kind, UID: strings.ToLower(m[2])})
			}
			continue
		}
		if pasted {
			continue
		}
		for _, w := range strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '"' || r == '\'' }) {
			if !uidRE.MatchString(w) {
				return nil, fmt.Errorf("%q is neither a UID nor an X-Kubernetes-PF-*-UID header%s", w, where(n, line, w))
			}
			add(UIDRef{UID: strings.ToLower(w)})
		}
	}
	return out, nil
}

// Resolution is what a UID names in one snapshot.
type Resolution struct {
	UIDRef
	// Kind and Name of the object with that UID; empty when none.
	FoundKind string `json:"foundKind,omitempty"`
	Name      string `json:"name,omitempty"`
	// Note explains an empty UID or a UID not found.
	Note string `json:"note,omitempty"`
}

// Resolve looks refs up in the snapshot's objects.
func Resolve(s *Snapshot, refs []UIDRef) []Resolution {
	names := s.NamesByUID()
	out := make([]Resolution, 0, len(refs))
	for _, r := range refs {
		res := Resolution{UIDRef: r}
		switch {
		case r.UID == "":
			res.Note = "empty UID: the apiserver used a mandatory object (exempt or catch-all) it imagined because the API object is missing"
		case r.Kind != KindPriorityLevel && names.FlowSchemas[r.UID] != "":
			res.FoundKind, res.Name = KindFlowSchema, names.FlowSchemas[r.UID]
		case r.Kind != KindFlowSchema && names.PriorityLevels[r.UID] != "":
			res.FoundKind, res.Name = KindPriorityLevel, names.PriorityLevels[r.UID]
		default:
			res.Note = "no such object now: it was deleted (and perhaps recreated with a new UID) since the request, or the UID is from another cluster"
		}
		out = append(out, res)
	}
	return out
}
