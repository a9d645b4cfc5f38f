// Package auditwrap wraps raw audit events (one JSON object a line) the
// way clouds and log pipelines hand them to their users, following the
// shape of the samples under pkg/input/testdata/wrapped (see its
// README): CloudWatch Logs' answers and exports, AKS diagnostic settings
// and Log Analytics, container runtimes' logs, Fluent Bit, Vector, the
// OpenTelemetry collector and Elasticsearch. Tests read the wrapped forms
// and require what the raw file gives.
package auditwrap

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Format is one way of wrapping audit events.
type Format struct {
	// Name of the format; File the path, relative to a test directory,
	// the wrapped events are written to (directories matter: an S3
	// export's log stream is its directory).
	Name, File string
	// Instance is the apiserver instance the wrapped form names (the
	// reader sets workload.Request.Instance to it), "" when it names
	// none.
	Instance string
	// Wrap wraps the events (lines of raw audit JSON).
	Wrap func(events [][]byte) []byte
}

// instance is the apiserver the wrappers name, as EKS names a log stream
// and AKS a pod.
const (
	eksStream = "kube-apiserver-audit-0a1b2c3d4e5f60718293a4b5c6d7e8f9"
	aksPod    = "kube-apiserver-7b9c5d4f8-x2lkq"
)

// Formats are every wrapping.
func Formats() []Format {
	return []Format{
		{"cloudwatch-filter-log-events", "filter-log-events.json", eksStream, cloudWatchFilter},
		{"cloudwatch-get-log-events", "get-log-events.json", "", cloudWatchGet},
		{"cloudwatch-insights-json", "insights.json", eksStream, insightsJSON},
		{"cloudwatch-insights-csv", "insights.csv", eksStream, insightsCSV},
		{"cloudwatch-s3-export", "exportedlogs/4c1e2a3b-9f7d-4e1a-8b6c-1d2e3f4a5b6c/" + eksStream + "/000000.gz", eksStream, s3Export},
		{"aks-storage-blob", "PT1H.json", aksPod, aksBlob},
		{"aks-event-hub", "eventhub.json", aksPod, aksEventHub},
		{"azurediagnostics-json", "azurediagnostics.json", aksPod, azureDiagnostics},
		{"aksaudit-json", "aksaudit.json", aksPod, aksAuditJSON},
		{"aksaudit-csv", "aksaudit.csv", aksPod, aksAuditCSV},
		{"cri", "kube-apiserver.log", "", func(ev [][]byte) []byte { return CRI(ev, splitAt) }},
		{"docker-json-file", "container-json.log", "", func(ev [][]byte) []byte { return Docker(ev, splitAt) }},
		{"fluent-bit-fields", "fluent-bit.jsonl", aksPod, fluentBitFields},
		{"fluent-bit-log", "fluent-bit-log.jsonl", aksPod, fluentBitLog},
		{"vector", "vector.jsonl", aksPod, vector},
		{"otel-collector", "otel.jsonl", aksPod, otel},
		{"otlp-json", "otlp.jsonl", aksPod, otlp},
		{"elasticsearch", "search.json", aksPod, elasticsearch},
		{"gzipped-docker", "container-json.log.gz", "", func(ev [][]byte) []byte { return gz(Docker(ev, splitAt)) }},
	}
}

// stamp is an event's stageTimestamp (when it was written).
func stamp(ev []byte) time.Time {
	var e struct {
		StageTimestamp time.Time `json:"stageTimestamp"`
	}
	_ = json.Unmarshal(ev, &e)
	return e.StageTimestamp
}

// str is the JSON string of s; html escapes <, > and & as encoding/json
// does by default (Python's json.dumps, which the AWS CLI uses, does not).
func str(s []byte, html bool) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(string(s))
	return bytes.TrimRight(b.Bytes(), "\n")
}

func millis(t time.Time) int64 { return t.UnixMilli() }

// cloudWatchFilter is `aws logs filter-log-events --output json`: the AWS
// CLI's indented JSON.
func cloudWatchFilter(events [][]byte) []byte {
	return CloudWatchFilterStreams([]Stream{{Name: eksStream, Events: events}})
}

// Stream is the raw audit events (lines of JSON) of one log stream: on
// EKS, one apiserver instance's (kube-apiserver-audit-<id>).
type Stream struct {
	Name   string
	Events [][]byte
}

// CloudWatchFilterStreams is `aws logs filter-log-events --output json`
// over a log group of several streams: the events of all of them in one
// answer, interleaved in the order of their timestamps (milliseconds) as
// CloudWatch returns them, the events of a stream that share a timestamp
// in the stream's order.
func CloudWatchFilterStreams(streams []Stream) []byte {
	type event struct {
		stream string
		at     int64
		ev     []byte
	}
	var events []event
	for _, s := range streams {
		for _, ev := range s.Events {
			events = append(events, event{s.Name, millis(stamp(ev)), ev})
		}
	}
	slices.SortStableFunc(events, func(a, b event) int { return cmp.Compare(a.at, b.at) })
	var b bytes.Buffer
	b.WriteString("{\n    \"events\": [\n")
	for i, e := range events {
		fmt.Fprintf(&b, "        {\n            \"logStreamName\": %q,\n            \"timestamp\": %d,\n            \"message\": %s,\n            \"ingestionTime\": %d,\n            \"eventId\": \"%056d\"\n        }",
			e.stream, e.at, str(e.ev, false), e.at+812, i)
		if i < len(events)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("    ],\n    \"searchedLogStreams\": [\n")
	for i, s := range streams {
		fmt.Fprintf(&b, "        {\n            \"logStreamName\": %q,\n            \"searchedCompletely\": true\n        }", s.Name)
		if i < len(streams)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("    ]\n}\n")
	return b.Bytes()
}

// cloudWatchGet is `aws logs get-log-events --output json`, as one
// document per page written one after the other (no logStreamName: the
// stream was named on the command line).
func cloudWatchGet(events [][]byte) []byte {
	var b bytes.Buffer
	for start := 0; start < len(events); start += 1000 {
		page := events[start:min(start+1000, len(events))]
		b.WriteString(`{"events": [`)
		for i, ev := range page {
			if i > 0 {
				b.WriteString(", ")
			}
			t := stamp(ev)
			fmt.Fprintf(&b, `{"timestamp": %d, "message": %s, "ingestionTime": %d}`, millis(t), str(ev, false), millis(t)+640)
		}
		fmt.Fprintf(&b, "], \"nextForwardToken\": \"f/%056d\", \"nextBackwardToken\": \"b/%056d\"}\n", start, start)
	}
	return b.Bytes()
}

// insightsTime is Logs Insights' @timestamp.
func insightsTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") }

// insightsJSON is Logs Insights' results exported as JSON.
func insightsJSON(events [][]byte) []byte {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, ev := range events {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `  {"@timestamp": %q, "@logStream": %q, "@message": %s}`, insightsTime(stamp(ev)), eksStream, str(ev, true))
	}
	b.WriteString("\n]\n")
	return b.Bytes()
}

// insightsCSV is Logs Insights' results exported as CSV.
func insightsCSV(events [][]byte) []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"@timestamp", "@logStream", "@message"})
	for _, ev := range events {
		_ = w.Write([]string{insightsTime(stamp(ev)), eksStream, string(ev)})
	}
	w.Flush()
	return b.Bytes()
}

// s3Export is a CloudWatch Logs export to S3: "<time> <message>" lines,
// gzipped.
func s3Export(events [][]byte) []byte {
	var b bytes.Buffer
	for _, ev := range events {
		fmt.Fprintf(&b, "%s %s\n", stamp(ev).UTC().Format("2006-01-02T15:04:05.000Z"), ev)
	}
	return gz(b.Bytes())
}

func gz(b []byte) []byte {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return out.Bytes()
}

const aksResource = "/SUBSCRIPTIONS/00000000-0000-0000-0000-000000000000/RESOURCEGROUPS/RG/PROVIDERS/MICROSOFT.CONTAINERSERVICE/MANAGEDCLUSTERS/AKS1"

// aksRecord is one diagnostic-settings record of category kube-audit.
func aksRecord(ev []byte) []byte {
	return fmt.Appendf(nil, `{ "attrs": "{\"annotation.io.kubernetes.container.hash\":\"3ef1dc8d\",\"io.kubernetes.container.name\":\"kube-apiserver\"}", "category": "kube-audit", "ccpNamespace": "65a1b2c3d4e5f60001a2b3c4", "operationName": "Microsoft.ContainerService/managedClusters/diagnosticLogs/Read", "properties": {"log": %s, "stream": "stdout", "pod": %q, "containerID": "0c7a2e5b9d1f"}, "resourceId": %q, "time": %q, "Cloud": "AzureCloud", "Environment": "prod", "UnderlayClass": "hcp-underlay", "UnderlayName": "hcp-underlay-eastus-cx-1"}`,
		str(ev, true), aksPod, aksResource, stamp(ev).UTC().Format(time.RFC3339Nano))
}

// aksBlob is a diagnostic-settings blob in a storage account (PT1H.json):
// one record a line, with a record of another category among them.
func aksBlob(events [][]byte) []byte {
	var b bytes.Buffer
	for i, ev := range events {
		b.Write(aksRecord(ev))
		b.WriteByte('\n')
		if i == 0 {
			fmt.Fprintf(&b, `{ "category": "kube-apiserver", "operationName": "Microsoft.ContainerService/managedClusters/diagnosticLogs/Read", "properties": {"log": "I1127 10:00:00.000000       1 controller.go:615] quota admission added evaluator for: leases.coordination.k8s.io", "stream": "stderr", "pod": %q}, "resourceId": %q, "time": %q}`+"\n",
				aksPod, aksResource, stamp(ev).UTC().Format(time.RFC3339Nano))
		}
	}
	return b.Bytes()
}

// aksEventHub is the same records as Event Hubs delivers them:
// {"records": [...]} per message, one message a line.
func aksEventHub(events [][]byte) []byte {
	var b bytes.Buffer
	for start := 0; start < len(events); start += 500 {
		b.WriteString(`{"records": [`)
		for i, ev := range events[start:min(start+500, len(events))] {
			if i > 0 {
				b.WriteString(",")
			}
			b.Write(aksRecord(ev))
		}
		b.WriteString("]}\n")
	}
	return b.Bytes()
}

// azureDiagnostics is a Log Analytics query over AzureDiagnostics
// exported as JSON (az monitor log-analytics query).
func azureDiagnostics(events [][]byte) []byte {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, ev := range events {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `  {"Category": "kube-audit", "ResourceId": %q, "TableName": "PrimaryResult", "TimeGenerated": %q, "log_s": %s, "pod_s": %q, "stream_s": "stdout"}`,
			aksResource, stamp(ev).UTC().Format("2006-01-02T15:04:05.000000Z"), str(ev, false), aksPod)
	}
	b.WriteString("\n]\n")
	return b.Bytes()
}

// aksColumns are the columns of AKSAudit an event's fields are parsed
// into, with the event's key.
var aksColumns = [][2]string{{"AuditId", "auditID"}, {"Level", "level"}, {"Stage", "stage"}, {"RequestUri", "requestURI"}, {"Verb", "verb"},
	{"User", "user"}, {"ImpersonatedUser", "impersonatedUser"}, {"SourceIps", "sourceIPs"}, {"UserAgent", "userAgent"}, {"ObjectRef", "objectRef"},
	{"ResponseStatus", "responseStatus"}, {"RequestReceivedTime", "requestReceivedTimestamp"}, {"StageReceivedTime", "stageTimestamp"}, {"Annotations", "annotations"}}

// aksRow is an event's AKSAudit row: the value of each column (a dynamic
// column's as JSON text, as az monitor log-analytics query prints it).
func aksRow(ev []byte) map[string]string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(ev, &m)
	row := map[string]string{"PodName": aksPod, "TimeGenerated": stamp(ev).UTC().Format(time.RFC3339Nano), "Type": "AKSAudit"}
	for _, c := range aksColumns {
		v, ok := m[c[1]]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			row[c[0]] = s
		} else {
			row[c[0]] = string(v)
		}
	}
	return row
}

// aksAuditJSON is a Log Analytics query over AKSAudit exported as JSON
// (az monitor log-analytics query): an array of rows.
func aksAuditJSON(events [][]byte) []byte {
	var rows []map[string]string
	for _, ev := range events {
		rows = append(rows, aksRow(ev))
	}
	b, _ := json.MarshalIndent(rows, "", "  ")
	return append(b, '\n')
}

// aksAuditCSV is the same query exported as CSV from the portal.
func aksAuditCSV(events [][]byte) []byte {
	cols := []string{"TenantId", "TimeGenerated [UTC]"}
	for _, c := range aksColumns {
		cols = append(cols, c[0])
	}
	cols = append(cols, "PodName", "Type")
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(cols)
	for _, ev := range events {
		row := aksRow(ev)
		row["TenantId"] = "00000000-0000-0000-0000-000000000000"
		row["TimeGenerated [UTC]"] = stamp(ev).UTC().Format("1/2/2006, 3:04:05.000 PM")
		var rec []string
		for _, c := range cols {
			rec = append(rec, row[c])
		}
		_ = w.Write(rec)
	}
	w.Flush()
	return b.Bytes()
}

// RuntimeSplit is where container runtimes cut a long line (16 KiB); the
// Formats cut at splitAt, to exercise the joining of the pieces on events
// of ordinary length.
const (
	RuntimeSplit = 16 << 10
	splitAt      = 700
)

// CRI is a container runtime's log of an apiserver that writes its audit
// log to standard output (--audit-log-path=-), lines longer than split cut
// in P pieces.
func CRI(events [][]byte, split int) []byte {
	var b bytes.Buffer
	for _, ev := range events {
		ts := stamp(ev).UTC().Format(time.RFC3339Nano)
		for len(ev) > split {
			fmt.Fprintf(&b, "%s stdout P %s\n", ts, ev[:split])
			ev = ev[split:]
		}
		fmt.Fprintf(&b, "%s stdout F %s\n", ts, ev)
	}
	return b.Bytes()
}

// Docker is docker's json-file log of the same, lines longer than split
// cut into pieces without their newline.
func Docker(events [][]byte, split int) []byte {
	var b bytes.Buffer
	for _, ev := range events {
		ts := stamp(ev).UTC().Format(time.RFC3339Nano)
		for len(ev) > split {
			fmt.Fprintf(&b, "{\"log\":%s,\"stream\":\"stdout\",\"time\":%q}\n", str(ev[:split], true), ts)
			ev = ev[split:]
		}
		fmt.Fprintf(&b, "{\"log\":%s,\"stream\":\"stdout\",\"time\":%q}\n", str(append(ev[:len(ev):len(ev)], '\n'), true), ts)
	}
	return b.Bytes()
}

// kubernetesMeta is Fluent Bit's kubernetes filter's metadata.
const kubernetesMeta = `{"pod_name":"` + aksPod + `","namespace_name":"kube-system","pod_id":"5f0c7c9e-8f4e-4b5e-9a53-0a7d2c1e9b11","labels":{"component":"kube-apiserver","tier":"control-plane"},"host":"aks-nodepool1-12345678-vmss000000","container_name":"kube-apiserver","docker_id":"0c7a2e5b9d1f","container_hash":"registry.k8s.io/kube-apiserver@sha256:00","container_image":"registry.k8s.io/kube-apiserver:v1.37.1"}`

// fluentBitFields is Fluent Bit with the JSON parser: the event's fields
// next to @timestamp and kubernetes (es or file output, json_lines).
func fluentBitFields(events [][]byte) []byte {
	var b bytes.Buffer
	for _, ev := range events {
		fmt.Fprintf(&b, `{"@timestamp":%q,"stream":"stdout","_p":"F",`, stamp(ev).UTC().Format("2006-01-02T15:04:05.000Z"))
		b.Write(bytes.TrimPrefix(bytes.TrimSpace(ev), []byte("{")))
		b.Truncate(b.Len() - 1)
		fmt.Fprintf(&b, `,"kubernetes":%s}`+"\n", kubernetesMeta)
	}
	return b.Bytes()
}

// fluentBitLog is Fluent Bit without a parser: the event under log.
func fluentBitLog(events [][]byte) []byte {
	var b bytes.Buffer
	for _, ev := range events {
		fmt.Fprintf(&b, `{"date":%d.%06d,"time":%q,"stream":"stdout","_p":"F","log":%s,"kubernetes":%s}`+"\n",
			stamp(ev).Unix(), stamp(ev).Nanosecond()/1000, stamp(ev).UTC().Format(time.RFC3339Nano), str(ev, false), kubernetesMeta)
	}
	return b.Bytes()
}

// vector is Vector's kubernetes_logs source: the event under message.
func vector(events [][]byte) []byte {
	var b bytes.Buffer
	for _, ev := range events {
		fmt.Fprintf(&b, `{"file":"/var/log/pods/kube-system_%s_5f0c7c9e/kube-apiserver/0.log","kubernetes":{"container_name":"kube-apiserver","pod_name":%q,"pod_namespace":"kube-system","pod_node_name":"node-1","pod_uid":"5f0c7c9e-8f4e-4b5e-9a53-0a7d2c1e9b11"},"message":%s,"source_type":"kubernetes_logs","stream":"stdout","timestamp":%q}`+"\n",
			aksPod, aksPod, str(ev, false), stamp(ev).UTC().Format(time.RFC3339Nano))
	}
	return b.Bytes()
}

// otel is the OpenTelemetry collector's file exporter after a flattening
// of its records (body, attributes, resource).
func otel(events [][]byte) []byte {
	var b bytes.Buffer
	for _, ev := range events {
		fmt.Fprintf(&b, `{"timestamp":%q,"body":%s,"attributes":{"log.iostream":"stdout","log.file.path":"/var/log/pods/kube-system_%s/kube-apiserver/0.log"},"resource":{"k8s.pod.name":%q,"k8s.namespace.name":"kube-system","k8s.container.name":"kube-apiserver"}}`+"\n",
			stamp(ev).UTC().Format(time.RFC3339Nano), str(ev, false), aksPod, aksPod)
	}
	return b.Bytes()
}

// elasticsearch is a _search answer over Fluent Bit's records.
func elasticsearch(events [][]byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"took":12,"timed_out":false,"_shards":{"total":1,"successful":1,"skipped":0,"failed":0},"hits":{"total":{"value":%d,"relation":"eq"},"max_score":1.0,"hits":[`, len(events))
	recs := bytes.Split(bytes.TrimSpace(fluentBitFields(events)), []byte("\n"))
	for i, r := range recs {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"_index":"kube-audit-2026.11.27","_id":"%s","_score":1.0,"_source":%s}`, strings.Repeat("x", 4)+fmt.Sprint(i), r)
	}
	b.WriteString("]}}\n")
	return b.Bytes()
}

// otlp is the OpenTelemetry collector's file exporter: OTLP JSON, one
// {"resourceLogs": [...]} a line per batch, the pod a resource attribute
// and each event a log record's string body.
func otlp(events [][]byte) []byte {
	var b bytes.Buffer
	for start := 0; start < len(events); start += 100 {
		fmt.Fprintf(&b, `{"resourceLogs":[{"resource":{"attributes":[{"key":"k8s.namespace.name","value":{"stringValue":"kube-system"}},{"key":"k8s.pod.name","value":{"stringValue":%q}},{"key":"k8s.container.name","value":{"stringValue":"kube-apiserver"}}]},"scopeLogs":[{"scope":{},"logRecords":[`, aksPod)
		for i, ev := range events[start:min(start+100, len(events))] {
			if i > 0 {
				b.WriteString(",")
			}
			t := stamp(ev)
			fmt.Fprintf(&b, `{"timeUnixNano":"%d","observedTimeUnixNano":"%d","body":{"stringValue":%s},"attributes":[{"key":"log.iostream","value":{"stringValue":"stdout"}},{"key":"log.file.path","value":{"stringValue":"/var/log/pods/kube-system_%s/kube-apiserver/0.log"}}],"traceId":"","spanId":""}`,
				t.UnixNano(), t.UnixNano()+1000, str(ev, true), aksPod)
		}
		b.WriteString("]}]}]}\n")
	}
	return b.Bytes()
}
