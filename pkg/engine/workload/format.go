package workload

// Format is a workload input format.
type Format string

// The formats Detect recognises.
const (
	FormatHTTPLog Format = "httplog"
	FormatAudit   Format = "audit"
	FormatJSONL   Format = "jsonl"
)

// The formats of audit events wrapped by a cloud or a log pipeline, told
// apart by content (detectWrapped). Each yields the events it carries as
// the audit reader does, and sets Request.Instance from what it carries.
const (
	// FormatCloudWatch is CloudWatch Logs' filter-log-events or
	// get-log-events answer ({"events": [{"logStreamName", "message"}]}),
	// an array of Logs Insights results (@message, @logStream), or either
	// as JSON lines.
	FormatCloudWatch Format = "cloudwatch"
	// FormatCloudWatchS3 is a CloudWatch Logs export to S3: lines of
	// "<RFC 3339 time> <message>"; the log stream is the file's directory.
	FormatCloudWatchS3 Format = "cloudwatch-s3"
	// FormatAzure is an AKS diagnostic-settings record (category,
	// properties.log, properties.pod: storage blobs, Event Hubs'
	// {"records": [...]}) or a Log Analytics row of AzureDiagnostics
	// (log_s, pod_s) or AKSAudit (the event's fields as columns), as JSON.
	FormatAzure Format = "azure"
	// FormatCSV is a CSV export with a header: Logs Insights (@message,
	// @logStream) or Log Analytics (AzureDiagnostics' log_s, AKSAudit's
	// columns).
	FormatCSV Format = "csv"
	// FormatGKE is Cloud Logging's LogEntry with a k8s.io AuditLog
	// protoPayload (gcloud logging read --format=json, a Storage or
	// BigQuery sink). It carries no latency: it cannot be reconstructed.
	FormatGKE Format = "gke"
	// FormatCRI is a container runtime's log (CRI: "<time> <stream> <F|P>
	// <line>"), FormatDocker docker's json-file log ({"log": ...}).
	FormatCRI    Format = "cri"
	FormatDocker Format = "docker"
	// FormatPipeline is a log pipeline's JSON (Fluent Bit, Vector, the
	// OpenTelemetry collector, an Elasticsearch or OpenSearch _search
	// answer): the event's fields next to the pipeline's own (@timestamp,
	// kubernetes), or the event as a string under log, message or body.
	FormatPipeline Format = "pipeline"
	// FormatJSON is JSON laid out as no line-based reader takes it (an
	// object over several lines, objects one after the other on a line,
	// an array) whose records are none of the above: read as the others
	// are, record by record, to say what they hold.
	FormatJSON Format = "json"
)

// AuditFormat reports whether f is audit events: raw, or wrapped by a cloud
// or a log pipeline.
func AuditFormat(f Format) bool { return f == FormatAudit || Wrapped(f) }

// Wrapped reports whether f is one of the wrapped formats.
func Wrapped(f Format) bool {
	switch f {
	case FormatCloudWatch, FormatCloudWatchS3, FormatAzure, FormatCSV, FormatGKE, FormatCRI, FormatDocker, FormatPipeline, FormatJSON:
		return true
	}
	return false
}
