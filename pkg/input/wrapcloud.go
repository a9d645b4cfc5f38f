package input

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
)

// aksAuditColumns map the columns of Log Analytics' AKSAudit and
// AKSAuditAdmin tables (learn.microsoft.com/azure/azure-monitor/reference/
// tables/aksaudit) to the fields of the audit event they were parsed from.
var aksAuditColumns = [...]struct {
	col, key string
	dynamic  bool // an object or array (or its JSON as a string)
	time     bool
}{
	{"AuditId", "auditID", false, false},
	{"Stage", "stage", false, false},
	{"Level", "level", false, false},
	{"RequestUri", "requestURI", false, false},
	{"Verb", "verb", false, false},
	{"UserAgent", "userAgent", false, false},
	{"User", "user", true, false},
	{"ImpersonatedUser", "impersonatedUser", true, false},
	{"SourceIps", "sourceIPs", true, false},
	{"ObjectRef", "objectRef", true, false},
	{"ResponseStatus", "responseStatus", true, false},
	{"Annotations", "annotations", true, false},
	{"RequestReceivedTime", "requestReceivedTimestamp", false, true},
	{"StageReceivedTime", "stageTimestamp", false, true},
}

// aksAuditRow appends to dst the audit event an AKSAudit row was parsed
// from: col returns a column's value.
func aksAuditRow(dst []byte, col func(name string) (field, bool)) ([]byte, error) {
	dst = append(dst, `{"kind":"Event","apiVersion":"audit.k8s.io/v1"`...)
	for _, c := range aksAuditColumns {
		v, ok := col(c.col)
		if !ok || len(v.raw) == 0 && !v.isStr {
			continue
		}
		dst = append(dst, ',', '"')
		dst = append(dst, c.key...)
		dst = append(dst, '"', ':')
		switch {
		case c.dynamic && v.isStr:
			// the dynamic column's JSON as a string (az monitor
			// log-analytics query, a CSV cell)
			t := []byte(v.text())
			if !jsonComplete(t) {
				return dst, fmt.Errorf("AKSAudit column %s is not JSON", c.col)
			}
			dst = append(dst, t...)
		case c.dynamic:
			dst = append(dst, v.raw...)
		case c.time:
			t, err := azureTime(v.text())
			if err != nil {
				return dst, fmt.Errorf("AKSAudit column %s: %w", c.col, err)
			}
			dst = append(dst, '"')
			dst = t.AppendFormat(dst, time.RFC3339Nano)
			dst = append(dst, '"')
		case v.isStr && !v.plain:
			dst = append(dst, '"')
			dst = append(dst, v.raw...)
			dst = append(dst, '"')
		default:
			b, _ := json.Marshal(v.text())
			dst = append(dst, b...)
		}
	}
	return append(dst, '}'), nil
}

// azureTime parses a Log Analytics datetime: RFC 3339 (JSON, the API), or
// the portal's CSV export ("6/25/2024, 9:53:23.918 AM", UTC).
func azureTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, l := range []string{"1/2/2006, 3:04:05.000 PM", "1/2/2006, 3:04:05 PM", "2006-01-02 15:04:05.000000", "2006-01-02T15:04:05.999999999"} {
		if t, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time", s)
}

// gkeEntry is what a GKE Cloud Audit Logs entry (a LogEntry whose
// protoPayload is a google.cloud.audit.AuditLog of serviceName k8s.io)
// carries of a request.
type gkeEntry struct {
	Timestamp    time.Time `json:"timestamp"`
	ProtoPayload struct {
		ServiceName        string `json:"serviceName"`
		MethodName         string `json:"methodName"`
		ResourceName       string `json:"resourceName"`
		AuthenticationInfo struct {
			PrincipalEmail string `json:"principalEmail"`
		} `json:"authenticationInfo"`
		RequestMetadata struct {
			CallerIP                string `json:"callerIp"`
			CallerSuppliedUserAgent string `json:"callerSuppliedUserAgent"`
		} `json:"requestMetadata"`
		Status struct {
			Code int `json:"code"`
		} `json:"status"`
	} `json:"protoPayload"`
	Operation *struct {
		ID    string `json:"id"`
		First bool   `json:"first"`
		Last  bool   `json:"last"`
	} `json:"operation"`
}

// parseGKE decodes a GKE audit log entry (encoding/json: these entries
// are not reconstructed, only counted).
func parseGKE(b []byte) (*gkeEntry, error) {
	var e gkeEntry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, err
	}
	// a BigQuery sink's row: the payload under protopayload_auditlog
	var bq struct {
		Payload *json.RawMessage `json:"protopayload_auditlog"`
	}
	if json.Unmarshal(b, &bq) == nil && bq.Payload != nil {
		if err := json.Unmarshal(*bq.Payload, &e.ProtoPayload); err != nil {
			return nil, err
		}
	}
	if e.ProtoPayload.ServiceName != "" && e.ProtoPayload.ServiceName != "k8s.io" {
		return nil, fmt.Errorf("a Cloud Audit Logs entry of service %q, not k8s.io", e.ProtoPayload.ServiceName)
	}
	if e.Timestamp.IsZero() {
		return nil, errors.New("a GKE log entry without a timestamp")
	}
	return &e, nil
}

// gkeSummary is what GKE audit log entries support: who sent how many
// requests, and when.
type gkeSummary struct {
	n           int64
	first, last time.Time
	principals  map[string]int64
	// exhausted counts entries with status RESOURCE_EXHAUSTED (gRPC code
	// 8, what an HTTP 429 maps to)
	exhausted int64
}

func (g *gkeSummary) add(e *gkeEntry) {
	if g.principals == nil {
		g.principals = map[string]int64{}
	}
	g.n++
	if g.first.IsZero() || e.Timestamp.Before(g.first) {
		g.first = e.Timestamp
	}
	if e.Timestamp.After(g.last) {
		g.last = e.Timestamp
	}
	p := e.ProtoPayload.AuthenticationInfo.PrincipalEmail
	if p == "" {
		p = "(no principal)"
	}
	g.principals[p]++
	if e.ProtoPayload.Status.Code == 8 {
		g.exhausted++
	}
}

// gkeLacks says what a GKE Cloud Audit Logs entry lacks for a
// reconstruction of APF.
const gkeLacks = "GKE's Cloud Audit Logs entries carry one timestamp per request and no latency (no requestReceivedTimestamp and stageTimestamp pair), " +
	"no user groups (FlowSchemas match on them) and no APF classification, and they hold reads (get, list, watch) only when Data Access logging is on: " +
	"APF cannot be reconstructed from them"

// describe gives the answer the entries support: the requests per
// client over their time span.
func (g *gkeSummary) describe() string {
	top := slices.SortedFunc(maps.Keys(g.principals), func(a, b string) int {
		return cmp.Or(cmp.Compare(g.principals[b], g.principals[a]), cmp.Compare(a, b))
	})
	var parts []string
	for i, p := range top {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(top)-5))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", p, g.principals[p]))
	}
	return fmt.Sprintf("%d %s from %s to %s, %d with status RESOURCE_EXHAUSTED (the code of HTTP 429); requests by principal: %s",
		g.n, textfmt.Plural(g.n, "entry", "entries"), g.first.UTC().Format(time.RFC3339), g.last.UTC().Format(time.RFC3339), g.exhausted, strings.Join(parts, ", "))
}

// otlpResourceLogs reads one element of OTLP JSON's resourceLogs: the
// apiserver instance its resource names (k8s.pod.name, else host.name)
// and the string body of each of its log records (encoding/json: the
// records nest three deep).
func otlpResourceLogs(b []byte) (string, [][]byte, error) {
	type kv struct {
		Key   string `json:"key"`
		Value struct {
			StringValue string `json:"stringValue"`
		} `json:"value"`
	}
	var rl struct {
		Resource struct {
			Attributes []kv `json:"attributes"`
		} `json:"resource"`
		ScopeLogs []struct {
			LogRecords []struct {
				Body struct {
					StringValue *string `json:"stringValue"`
				} `json:"body"`
			} `json:"logRecords"`
		} `json:"scopeLogs"`
	}
	if err := json.Unmarshal(b, &rl); err != nil {
		return "", nil, err
	}
	var instance, host string
	for _, a := range rl.Resource.Attributes {
		switch a.Key {
		case "k8s.pod.name":
			instance = a.Value.StringValue
		case "host.name":
			host = a.Value.StringValue
		}
	}
	if instance == "" {
		instance = host
	}
	more := [][]byte{}
	for _, sl := range rl.ScopeLogs {
		for _, lr := range sl.LogRecords {
			if lr.Body.StringValue != nil {
				more = append(more, []byte(*lr.Body.StringValue))
			} else {
				more = append(more, nil) // counted as not an audit event
			}
		}
	}
	return instance, more, nil
}
