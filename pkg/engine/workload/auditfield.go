package workload

// The top-level fields of an audit event (audit.k8s.io/v1 Event) that the
// readers take a request from, in one order: the audit reader's scan
// (pkg/input) indexes its fields by them, and the VictoriaLogs rows
// (pkg/vlogs) share the first six, AuditKind to AuditVerb, before the
// flattened fields of their own.
const (
	AuditKind = iota
	AuditAPIVersion
	AuditID
	AuditStage
	AuditRequestURI
	AuditVerb
	AuditUser
	AuditImpersonatedUser
	AuditUserAgent
	AuditSourceIPs
	AuditObjectRef
	AuditResponseStatus
	AuditRequestReceivedTimestamp
	AuditStageTimestamp
	AuditAnnotations
	// AuditFields counts the fields above.
	AuditFields
)

// AuditFieldNames are the fields' JSON names, indexed by the constants
// above.
var AuditFieldNames = [AuditFields]string{
	AuditKind:                     "kind",
	AuditAPIVersion:               "apiVersion",
	AuditID:                       "auditID",
	AuditStage:                    "stage",
	AuditRequestURI:               "requestURI",
	AuditVerb:                     "verb",
	AuditUser:                     "user",
	AuditImpersonatedUser:         "impersonatedUser",
	AuditUserAgent:                "userAgent",
	AuditSourceIPs:                "sourceIPs",
	AuditObjectRef:                "objectRef",
	AuditResponseStatus:           "responseStatus",
	AuditRequestReceivedTimestamp: "requestReceivedTimestamp",
	AuditStageTimestamp:           "stageTimestamp",
	AuditAnnotations:              "annotations",
}
