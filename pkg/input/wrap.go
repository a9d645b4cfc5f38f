package input

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/jsonstr"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// formatNoun names what a wrapped input is, for messages.
func formatNoun(f workload.Format) string {
	switch f {
	case workload.FormatCloudWatch:
		return "a CloudWatch Logs export"
	case workload.FormatCloudWatchS3:
		return "a CloudWatch Logs export to S3"
	case workload.FormatAzure:
		return "an Azure (AKS diagnostic settings or Log Analytics) export"
	case workload.FormatCSV:
		return "a CSV export"
	case workload.FormatGKE:
		return "a GKE Cloud Logging export"
	case workload.FormatCRI:
		return "a container log (CRI)"
	case workload.FormatDocker:
		return "a docker json-file log"
	case workload.FormatPipeline:
		return "a log pipeline's JSON"
	case workload.FormatJSON:
		return "a JSON document"
	case workload.FormatAudit:
		return "audit events"
	}
	return string(f)
}

// layout is how a wrapped input is cut into records.
type layout int

const (
	layoutLines layout = iota // one JSON record a line
	layoutDoc                 // a JSON document holding an array of records
	layoutCRI
	layoutS3
	layoutCSV
)

// detectWrapped decides from the start of an input (buf: what could be
// peeked; final: it is all of the input) whether it is a wrapped format,
// and how it is cut into records.
func detectWrapped(buf []byte, final bool) (workload.Format, layout, bool) {
	b := bytes.TrimLeft(buf, " \t\r\n\ufeff")
	b = bytes.TrimPrefix(b, []byte("\ufeff"))
	if len(b) == 0 {
		return "", 0, false
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	line = bytes.TrimSpace(line)
	switch b[0] {
	case '[':
		// a JSON array of records: the first record says what they are
		ds := newDocStream(bytes.NewReader(buf), "", len(buf)+1)
		rec, err := ds.next()
		if err != nil || len(rec) == 0 {
			if !final && !errors.Is(err, io.EOF) {
				// the first record is longer than what was peeked: look
				// at its start
				return formatOfRecordStart(b[1:]), layoutDoc, true
			}
			return workload.FormatJSON, layoutDoc, true
		}
		return formatOfDocRecord(rec), layoutDoc, true
	case '{':
		if final && !firstValueWhole(line) && len(bytes.TrimSpace(b)) == len(line) && compactObjectStart(line) {
			// one line, a compact object cut short: a line reader's, which
			// says what the line was meant to be
			return "", 0, false
		}
		if k := objectKeys(line, 1); len(k) == 0 || !jsonComplete(line) || !linesAreObjects(b) {
			// a document laid over several lines (pretty-printed), or
			// several on a line: its records say what it is, not its
			// first line
			return detectDoc(b, final)
		}
		if f, ok := formatOfDocument(line); ok {
			return f, layoutDoc, true
		}
		f, ok := formatOfRecord(line)
		if !ok {
			return "", 0, false
		}
		return f, layoutLines, true
	}
	// "<RFC 3339 time> ..." lines: CRI or an S3 export
	ts, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok || !looksRFC3339(ts) {
		if f, ok := detectCSV(line); ok {
			return f, layoutCSV, true
		}
		return "", 0, false
	}
	if content, _, _, ok := cutCRI(line); ok {
		if c := bytes.TrimSpace(content); len(c) > 0 && c[0] != '{' {
			// the apiserver's own klog lines in a container log: httplog,
			// whose reader takes the runtime's prefix (and its year) itself
			return "", 0, false
		}
		return workload.FormatCRI, layoutCRI, true
	}
	if r := bytes.TrimSpace(rest); len(r) > 0 && r[0] == '{' {
		return workload.FormatCloudWatchS3, layoutS3, true
	}
	return "", 0, false
}

// detectDoc tells what a JSON document (b, the start of an input that
// begins with an object) holds: an array of records under a known key, or
// records that are objects themselves, one after the other, each maybe
// over several lines.
func detectDoc(b []byte, final bool) (workload.Format, layout, bool) {
	if f, ok := formatOfDocument(b); ok {
		return f, layoutDoc, true
	}
	ds := newDocStream(bytes.NewReader(b), "", len(b)+1)
	if rec, err := ds.next(); err == nil && len(rec) > 0 {
		return formatOfDocRecord(rec), layoutDoc, true
	}
	// the first record does not end within what was peeked (or the
	// input is cut inside it): its first keys tell
	return formatOfRecordStart(b), layoutDoc, true
}

// formatOfDocRecord tells the format of a record of a JSON document: a
// wrapper's, a Logs Insights result row (an array of fields), an audit
// event itself, or none of these (FormatJSON).
func formatOfDocRecord(rec []byte) workload.Format {
	if rec[0] == '[' {
		if _, ok := insightsFields(rec); ok {
			return workload.FormatCloudWatch
		}
		return workload.FormatJSON
	}
	if f, ok := formatOfRecord(rec); ok {
		return f
	}
	if isAuditEvent(rec) {
		return workload.FormatAudit
	}
	return workload.FormatJSON
}

// isAuditEvent reports whether the object b is an audit event by its
// keys: kind Event of audit.k8s.io, or an auditID with a stage.
func isAuditEvent(b []byte) bool {
	var f [4]field
	if !topFields(b, []string{"kind", "apiVersion", "auditID", "stage"}, f[:]) {
		return false
	}
	return f[0].text() == "Event" && strings.HasPrefix(f[1].text(), "audit.k8s.io/") || f[2].set && f[3].set
}

// linesAreObjects reports whether b (whose first line is a whole JSON
// object) is JSON lines, one object a line, by its first lines (up to 16):
// most of them are whole objects, where an object laid over several lines
// has few. The last line is left out, which may be cut (the end of what
// was peeked, or a log still being written), and so are lines cut among
// others, which the line readers skip and count.
func linesAreObjects(b []byte) bool {
	var lines [][]byte
	for len(lines) < 17 && len(b) > 0 {
		line, rest, _ := bytes.Cut(b, []byte("\n"))
		b = rest
		if line = bytes.TrimSpace(line); len(line) > 0 {
			lines = append(lines, line)
		}
	}
	if len(lines) > 1 {
		lines = lines[:len(lines)-1]
	}
	good, bad := 0, 0
	for _, line := range lines {
		if line[0] == '{' && jsonComplete(line) {
			good++
		} else {
			bad++
		}
	}
	return 2*bad < good
}

// compactObjectStart reports whether line starts an object written
// compactly (its first key and value on the line, as a JSON line's are),
// not one laid over several lines.
func compactObjectStart(line []byte) bool {
	keys := objectKeysLoose(line, 2)
	return len(keys) == 2
}

// firstValueWhole reports whether the first JSON value of line ends on
// it (others may follow).
func firstValueWhole(line []byte) bool {
	s := jscan{b: line}
	return s.skipValue(0)
}

// jsonComplete reports whether line is one whole JSON value.
func jsonComplete(line []byte) bool {
	s := jscan{b: line}
	if !s.skipValue(0) {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

// formatOfDocument tells a JSON document holding an array of records by
// its first keys.
func formatOfDocument(b []byte) (workload.Format, bool) {
	for _, k := range objectKeysLoose(b, 6) {
		switch k {
		case "events", "searchedLogStreams", "nextForwardToken", "nextBackwardToken":
			return workload.FormatCloudWatch, true
		case "records":
			return workload.FormatAzure, true
		case "hits", "took", "_shards", "timed_out", "resourceLogs":
			return workload.FormatPipeline, true
		case "results", "statistics":
			// Logs Insights' get-query-results
			return workload.FormatCloudWatch, true
		}
	}
	return "", false
}

// objectKeysLoose lists the first keys of an object that may continue
// past b (a peeked prefix), stopping at the first value it cannot skip.
func objectKeysLoose(b []byte, max int) []string {
	var keys []string
	s := jscan{b: b}
	if s.peek() != '{' {
		return nil
	}
	s.i++
	for len(keys) < max && s.peek() == '"' {
		e := stringEnd(s.b, s.i)
		if e < 0 {
			break
		}
		keys = append(keys, field{raw: s.b[s.i+1 : e-1], isStr: true, set: true}.text())
		s.i = e
		if s.peek() != ':' {
			break
		}
		s.i++
		if c := s.peek(); c == '[' || c == '{' {
			// the array of records, or an object: the key is enough
			break
		}
		if !s.skipValue(1) || s.peek() != ',' {
			break
		}
		s.i++
	}
	return keys
}

// formatOfRecordStart guesses the format of a record whose end was not
// peeked, from the keys it starts with.
func formatOfRecordStart(b []byte) workload.Format {
	keys := objectKeysLoose(bytes.TrimLeft(b, " \t\r\n["), 16)
	for _, k := range keys {
		switch k {
		case "protoPayload":
			return workload.FormatGKE
		case "@message", "logStreamName":
			return workload.FormatCloudWatch
		case "properties", "log_s", "AuditId":
			return workload.FormatAzure
		case "field":
			return workload.FormatCloudWatch
		case "kubernetes", "_source", "log", "message", "body", "@timestamp", "scopeLogs":
			return workload.FormatPipeline
		}
	}
	for _, k := range keys {
		if k == "kind" || k == "auditID" || k == "stage" {
			return workload.FormatAudit
		}
	}
	return workload.FormatJSON
}

func looksRFC3339(b []byte) bool {
	return len(b) >= 20 && b[4] == '-' && b[7] == '-' && b[10] == 'T' && b[13] == ':' && b[0] >= '0' && b[0] <= '9'
}

// The keys a record is told by and read from.
const (
	kMessage = iota
	kLogStreamName
	kAtMessage
	kAtLogStream
	kProperties
	kCategory
	kCategoryCap
	kLogS
	kPodS
	kLog
	kBody
	kStream
	kTime
	kKubernetes
	kHost
	kHostname
	kProtoPayload
	kSource
	kAuditIdCap
	kKind
	kAuditIDKey
	kEventID
	kIngestionTime
	kResource
	kPodName
	kStage
	kScopeLogs
	kBigQueryAuditLog
	nRecordKeys
)

var recordKeys = [nRecordKeys]string{"message", "logStreamName", "@message", "@logStream", "properties", "category", "Category",
	"log_s", "pod_s", "log", "body", "stream", "time", "kubernetes", "host", "hostname", "protoPayload", "_source",
	"AuditId", "kind", "auditID", "eventId", "ingestionTime", "resource", "PodName", "stage", "scopeLogs", "protopayload_auditlog"}

// formatOfRecord tells the format of one JSON record.
func formatOfRecord(rec []byte) (workload.Format, bool) {
	var f [nRecordKeys]field
	if !topFields(rec, recordKeys[:], f[:]) {
		return "", false
	}
	switch {
	case f[kSource].set && !f[kSource].isStr:
		if g, ok := formatOfRecord(f[kSource].raw); ok {
			return g, true
		}
		return workload.FormatPipeline, true
	case f[kProtoPayload].set, f[kBigQueryAuditLog].set:
		return workload.FormatGKE, true
	case f[kScopeLogs].set:
		return workload.FormatPipeline, true
	case f[kAuditIdCap].set, f[kLogS].set, f[kProperties].set && (f[kCategory].set || f[kCategoryCap].set):
		return workload.FormatAzure, true
	case f[kAtMessage].set:
		return workload.FormatCloudWatch, true
	case f[kMessage].isStr && (f[kLogStreamName].set || f[kEventID].set || f[kIngestionTime].set):
		return workload.FormatCloudWatch, true
	case f[kKind].set || f[kAuditIDKey].set:
		if f[kKubernetes].set || f[kHost].set || f[kHostname].set {
			return workload.FormatPipeline, true
		}
		return "", false // a raw audit event: the audit reader's
	case f[kLog].isStr && f[kStream].set && f[kTime].set && !f[kKubernetes].set:
		return workload.FormatDocker, true
	case f[kLog].isStr, f[kMessage].isStr, f[kBody].set:
		return workload.FormatPipeline, true
	}
	return "", false
}

// record is what one wrapper record carries: an audit event as JSON (msg),
// the apiserver instance, or why it holds none (skip: a record of another
// kind, counted apart).
type record struct {
	msg      []byte
	instance string
	kind     workload.Format
	// ev, when not nil, is the event msg carries, already decoded: msg is
	// then the string's escaped contents
	ev   *auditEvent
	skip *workload.Reason
	gke  *gkeEntry
	// partial: a piece of a line split by the runtime (CRI's P, docker's
	// line without its newline); the next records complete it
	partial bool
	// more are the events of a record that holds several (an OTLP
	// resource's log records), read in turn
	more [][]byte
}

// recordOf reads one JSON record into rec; buf is scratch for an
// unescaped message (returned, to be reused). dec, when not nil, decodes
// an event carried as a string where it stands (escEvent).
func recordOf(b []byte, rec *record, buf []byte, dec *escEvent) ([]byte, error) {
	_, buf, err := recordAt(b, rec, buf, dec)
	return buf, err
}

// unescaped are the keys whose string values recordAt unescapes as it
// scans them: those that carry the event as a string.
const unescaped = 1<<kMessage | 1<<kAtMessage | 1<<kLogS | 1<<kLog | 1<<kBody

// recordAt is recordOf on a record at the start of b, followed by anything:
// it returns where the record ends.
func recordAt(b []byte, rec *record, buf []byte, dec *escEvent) (int, []byte, error) {
	var f [nRecordKeys]field
	buf = buf[:0]
	if dec != nil {
		dec.used = false
	}
	end, ok := scanFieldsDec(b, recordKeys[:], f[:], unescaped, &buf, dec)
	if !ok {
		return 0, buf, errNotRecord
	}
	buf, err := recordOfFields(b[:end], &f, rec, buf, dec)
	return end, buf, err
}

func recordOfFields(b []byte, f *[nRecordKeys]field, rec *record, buf []byte, dec *escEvent) ([]byte, error) {
	msgOf := func(v field) ([]byte, bool) {
		if !v.isStr {
			return nil, false
		}
		if v.decoded {
			if dec.lazy {
				rec.ev = &dec.ev
				return v.raw, true
			}
			var m []byte
			var ok bool
			buf, m, ok = unescapeField(v, buf)
			return m, ok
		}
		if v.plain {
			return v.raw, true
		}
		if bytes.IndexByte(v.raw, '\\') < 0 {
			return v.raw, true
		}
		var ok bool
		buf, ok = jsonstr.AppendContents(buf[:0], v.raw)
		return buf, ok
	}
	switch {
	case f[kSource].set && !f[kSource].isStr:
		return recordOf(f[kSource].raw, rec, buf, dec)
	case f[kScopeLogs].set:
		// OTLP JSON (the OpenTelemetry collector's file exporter): a
		// resource's log records, each event a string body
		rec.kind = workload.FormatPipeline
		var err error
		rec.instance, rec.more, err = otlpResourceLogs(b)
		return buf, err
	case f[kProtoPayload].set || f[kBigQueryAuditLog].set:
		rec.kind = workload.FormatGKE
		e, err := parseGKE(b)
		if err != nil {
			return buf, err
		}
		rec.gke = e
		return buf, nil
	case f[kAuditIdCap].set:
		rec.kind = workload.FormatAzure
		rec.instance = f[kPodName].text()
		var err error
		buf, err = aksAuditRow(buf[:0], func(col string) (field, bool) {
			var v [1]field
			topFields(b, []string{col}, v[:])
			return v[0], v[0].set
		})
		rec.msg = buf
		return buf, err
	case f[kLogS].set:
		rec.kind = workload.FormatAzure
		if cat := f[kCategoryCap].text(); cat != "" && !auditCategory(cat) {
			rec.skip = &workload.Reason{Noun: "Azure record", Problem: "of another category than kube-audit"}
			return buf, nil
		}
		rec.instance = f[kPodS].text()
		m, ok := msgOf(f[kLogS])
		if !ok {
			return buf, errBadString
		}
		rec.msg = m
		return buf, nil
	case f[kProperties].set && (f[kCategory].set || f[kCategoryCap].set):
		rec.kind = workload.FormatAzure
		cat := f[kCategory].text()
		if cat == "" {
			cat = f[kCategoryCap].text()
		}
		if !auditCategory(cat) {
			rec.skip = &workload.Reason{Noun: "AKS record", Problem: "of another category than kube-audit and kube-audit-admin"}
			return buf, nil
		}
		var p [2]field
		if _, ok := scanFields(f[kProperties].raw, []string{"log", "pod"}, p[:], 1, &buf); !ok || !p[0].set {
			return buf, errors.New("an AKS record without properties.log")
		}
		rec.instance = p[1].text()
		if !p[0].isStr {
			// the event as an object, not a string
			rec.msg = p[0].raw
			return buf, nil
		}
		m, ok := msgOf(p[0])
		if !ok {
			return buf, errBadString
		}
		rec.msg = m
		return buf, nil
	case f[kAtMessage].set:
		rec.kind = workload.FormatCloudWatch
		rec.instance = f[kAtLogStream].text()
		m, ok := msgOf(f[kAtMessage])
		if !ok {
			return buf, errBadString
		}
		rec.msg = m
		return buf, nil
	case f[kMessage].isStr && (f[kLogStreamName].set || f[kEventID].set || f[kIngestionTime].set):
		rec.kind = workload.FormatCloudWatch
		rec.instance = f[kLogStreamName].text()
		m, ok := msgOf(f[kMessage])
		if !ok {
			return buf, errBadString
		}
		rec.msg = m
		return buf, nil
	case f[kKind].set || f[kAuditIDKey].set:
		// the event's own fields, next to the pipeline's
		rec.kind = workload.FormatPipeline
		rec.instance = pipelineInstance(f)
		rec.msg = b
		return buf, nil
	case f[kLog].isStr && f[kStream].set && f[kTime].set && !f[kKubernetes].set:
		rec.kind = workload.FormatDocker
		m, ok := msgOf(f[kLog])
		if !ok {
			return buf, errBadString
		}
		if rec.ev != nil {
			// escaped: a whole line's ends with \n; a piece is joined to
			// the next unescaped
			if n := len(m); n >= 2 && m[n-2] == '\\' && m[n-1] == 'n' {
				rec.msg = m[:n-2]
				return buf, nil
			}
			rec.ev = nil
			if buf, m, ok = unescapeField(f[kLog], buf); !ok {
				return buf, errBadString
			}
		}
		if n := len(m); n > 0 && m[n-1] == '\n' {
			m = m[:n-1]
		} else {
			rec.partial = true
		}
		rec.msg = m
		return buf, nil
	case f[kLog].isStr, f[kMessage].isStr, f[kBody].set:
		rec.kind = workload.FormatPipeline
		rec.instance = pipelineInstance(f)
		v := f[kLog]
		if !v.isStr {
			v = f[kMessage]
		}
		if !v.isStr {
			v = f[kBody]
			if !v.isStr {
				// OpenTelemetry's AnyValue: {"stringValue": "..."}
				var s [1]field
				topFields(v.raw, []string{"stringValue"}, s[:])
				v = s[0]
			}
		}
		m, ok := msgOf(v)
		if !ok {
			return buf, errBadString
		}
		rec.msg = bytes.TrimRight(m, "\r\n")
		return buf, nil
	}
	return buf, errNotRecord
}

var (
	errNotRecord = errors.New("not a record of a known wrapper")
	errBadString = errors.New("a string with an invalid escape")
)

func auditCategory(c string) bool {
	return strings.EqualFold(c, "kube-audit") || strings.EqualFold(c, "kube-audit-admin")
}

// pipelineInstance is the apiserver instance a pipeline's record names:
// its kubernetes.pod_name (Fluent Bit, Vector), resource attribute
// k8s.pod.name (OpenTelemetry), or host.
func pipelineInstance(f *[nRecordKeys]field) string {
	if k := f[kKubernetes]; k.set && !k.isStr {
		var p [2]field
		topFields(k.raw, []string{"pod_name", "host"}, p[:])
		if s := p[0].text(); s != "" {
			return s
		}
		if s := p[1].text(); s != "" {
			return s
		}
	}
	if r := f[kResource]; r.set && !r.isStr {
		var p [1]field
		topFields(r.raw, []string{"k8s.pod.name"}, p[:])
		if s := p[0].text(); s != "" {
			return s
		}
	}
	if s := f[kHost].text(); s != "" {
		return s
	}
	if h := f[kHost]; h.set && !h.isStr {
		// Elastic Common Schema: host.name
		var p [1]field
		topFields(h.raw, []string{"name"}, p[:])
		if s := p[0].text(); s != "" {
			return s
		}
	}
	return f[kHostname].text()
}

// cutCRI splits a CRI log line: "<time> <stream> <tag> <content>", tag F
// (a full line) or P (a piece of one).
func cutCRI(line []byte) (content []byte, partial bool, ts []byte, ok bool) {
	t, rest, ok1 := bytes.Cut(line, []byte(" "))
	stream, rest, ok2 := bytes.Cut(rest, []byte(" "))
	tag, content, ok3 := bytes.Cut(rest, []byte(" "))
	if !ok1 || !ok2 || !looksRFC3339(t) || (string(stream) != "stdout" && string(stream) != "stderr") {
		return nil, false, nil, false
	}
	if !ok3 {
		// an empty line: "<time> stdout F"
		tag, content = rest, nil
	}
	// tags are ":"-separated; P or F comes first
	first, _, _ := bytes.Cut(tag, []byte(":"))
	switch string(first) {
	case "F":
		return content, false, t, true
	case "P":
		return content, true, t, true
	}
	return nil, false, nil, false
}

// wrapReader reads the audit events of a wrapped input.
type wrapReader struct {
	name     string
	format   workload.Format
	lay      layout
	ls       *lineScanner
	row      []byte // a Logs Insights row as an object
	doc      *docStream
	csv      *csvSource
	instance string // of the whole input (an S3 export's log stream)
	stats    *workload.Stats
	lenient  bool
	in       *interner
	dec      escEvent
	ev       auditEvent // the event being read, reused
	noSource bool       // the requests' Source is left empty (dropSource)
	// unescapedFirst decodes events once unescaped (tuning)
	unescapedFirst bool
	buf            []byte
	part           []byte // the pieces of a split line so far
	gke            *gkeSummary
	// more are the events of the last record still to be read, of
	// instance moreInstance
	more         [][]byte
	moreInstance string
	*reorder
}

// newWrapReader reads the wrapped input r (detected as f, cut by lay).
func newWrapReader(r io.Reader, name string, f workload.Format, lay layout, opts Options, stats *workload.Stats) workload.Reader {
	opts.defaults()
	if stats == nil {
		stats = &workload.Stats{}
	}
	w := &wrapReader{name: name, format: f, lay: lay, stats: stats, lenient: opts.Lenient, in: newInterner(), unescapedFirst: opts.tuning.unescapedFirst}
	w.dec.in = w.in
	switch lay {
	case layoutDoc:
		w.doc = newDocStream(r, name, opts.MaxLineBytes)
	case layoutCSV:
		w.csv = newCSVSource(r, name)
	default:
		w.ls = newLineScanner(r, name, opts.MaxLineBytes)
	}
	if lay == layoutS3 {
		// an S3 export's objects are <task>/<log stream>/000000.gz
		if d := filepath.Base(filepath.Dir(name)); strings.HasPrefix(d, "kube-apiserver") {
			w.instance = d
		}
	}
	w.reorder = &reorder{src: w.read, window: opts.ReorderWindow, q: arrivalQueue{maxHeld: opts.MaxHeld}, stats: stats}
	return w
}

func (w *wrapReader) where() workload.Where {
	switch {
	case w.doc != nil:
		return workload.At(w.name + ": record " + strconv.FormatInt(w.doc.line, 10))
	case w.csv != nil:
		return workload.Where{Name: w.name, Line: w.csv.line}
	}
	return w.ls.where()
}

// noun is what one record of the input is called in counts.
func (w *wrapReader) noun() string {
	switch w.format {
	case workload.FormatCloudWatch:
		return "CloudWatch event"
	case workload.FormatCloudWatchS3:
		return "S3 export line"
	case workload.FormatAzure:
		return "Azure record"
	case workload.FormatCSV:
		return "CSV row"
	case workload.FormatGKE:
		return "GKE log entry"
	case workload.FormatCRI:
		return "container log line"
	case workload.FormatDocker:
		return "docker log line"
	case workload.FormatAudit:
		return "audit event"
	case workload.FormatJSON:
		return "JSON value"
	}
	return "pipeline record"
}

// nextRecord reads the next record of the input into rec.
func (w *wrapReader) nextRecord(rec *record) error {
	*rec = record{kind: w.format}
	switch w.lay {
	case layoutDoc:
		var rerr error
		_, ok, err := w.doc.nextWith(func(b []byte) (int, bool) {
			*rec = record{kind: w.format}
			if len(b) > 0 && b[0] == '[' {
				// a Logs Insights result row: its fields as an object
				rerr = w.insightsRow(b, rec)
				return len(b), rerr == nil || !errors.Is(rerr, errNotRecord)
			}
			var end int
			end, w.buf, rerr = recordAt(b, rec, w.buf, w.decoder())
			return end, rerr == nil || !errors.Is(rerr, errNotRecord)
		})
		if err != nil {
			return err
		}
		if !ok && rerr == nil {
			rerr = errNotRecord
		}
		return rerr
	case layoutCSV:
		return w.csv.next(rec, &w.buf)
	}
	line, err := w.ls.next()
	if err != nil {
		return err
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		rec.skip = &workload.Reason{Noun: "line", Problem: "that is blank"}
		return nil
	}
	switch w.lay {
	case layoutCRI:
		content, partial, _, ok := cutCRI(line)
		if !ok {
			return errors.New("not a CRI log line (<time> <stream> <F|P> <line>)")
		}
		rec.msg, rec.partial = content, partial
		return nil
	case layoutS3:
		_, rest, ok := bytes.Cut(line, []byte(" "))
		if !ok {
			return errors.New("not a line of a CloudWatch export (<time> <message>)")
		}
		rec.msg, rec.instance = rest, w.instance
		return nil
	}
	var rerr error
	w.buf, rerr = recordOf(line, rec, w.buf, w.decoder())
	return rerr
}

func (w *wrapReader) read(r *workload.Request) (time.Time, error) {
	for {
		var rec record
		var err error
		if len(w.more) > 0 {
			rec = record{kind: w.format, msg: w.more[0], instance: w.moreInstance}
			w.more = w.more[1:]
		} else {
			err = w.nextRecord(&rec)
			if err == nil && rec.more != nil {
				w.more, w.moreInstance = rec.more, rec.instance
				continue
			}
		}
		if errors.Is(err, io.EOF) {
			if len(w.part) > 0 {
				w.part = w.part[:0]
				if err := malformed(w.stats, w.lenient, workload.Reason{Noun: w.noun(), Problem: "that was split and whose last piece is missing"},
					fmt.Errorf("%s: the input ends inside a line split by the runtime", w.where())); err != nil {
					return time.Time{}, err
				}
			}
			return time.Time{}, io.EOF
		}
		w.stats.Lines++
		if err != nil {
			var reasonErr error = because(w.noun(), "that could not be read", fmt.Errorf("%s: %s: %w", w.where(), formatNoun(w.format), err))
			if errors.Is(err, errNotRecord) {
				reasonErr = because("record", "of another kind than "+formatNoun(w.format)+"'s", fmt.Errorf("%s: not a record of %s", w.where(), formatNoun(w.format)))
			}
			if w.doc != nil && !errors.Is(err, errNotRecord) && !errors.Is(err, errBadString) {
				// the document itself is broken: nothing after can be read
				return time.Time{}, err
			}
			if err := malformed(w.stats, w.lenient, workload.Reason{}, reasonErr); err != nil {
				return time.Time{}, err
			}
			continue
		}
		if rec.skip != nil {
			skip(w.stats, *rec.skip)
			continue
		}
		if rec.gke != nil {
			if w.gke == nil {
				w.gke = &gkeSummary{}
			}
			w.gke.add(rec.gke)
			skip(w.stats, workload.Reason{Noun: "GKE audit log entry", Problem: "(no latency recorded: not reconstructed)"})
			continue
		}
		msg := rec.msg
		if rec.partial || len(w.part) > 0 {
			w.part = append(w.part, msg...)
			if rec.partial {
				w.stats.Skipped++
				continue
			}
			msg = w.part
		}
		t, err := w.event(msg, rec.ev, rec.instance, r)
		w.part = w.part[:0]
		if err != nil {
			if err := malformed(w.stats, w.lenient, workload.Reason{}, err); err != nil {
				return time.Time{}, err
			}
			continue
		}
		if t.IsZero() {
			continue // skipped: another stage
		}
		return t, nil
	}
}

// event decodes the audit event msg into r; a zero time when the event is
// of a stage that is skipped.
func (w *wrapReader) event(msg []byte, decoded *auditEvent, instance string, r *workload.Request) (time.Time, error) {
	ev := decoded
	if ev == nil {
		ev = &w.ev
		if err := w.decode(msg, ev); err != nil {
			return time.Time{}, err
		}
	}
	if ev.Kind != "Event" || !strings.HasPrefix(ev.APIVersion, "audit.k8s.io/") {
		return time.Time{}, because(w.noun(), "whose message is not an audit event", fmt.Errorf("%s: %s: a JSON message of kind %q apiVersion %q, not an audit.k8s.io Event", w.where(), formatNoun(w.format), ev.Kind, ev.APIVersion))
	}
	if ev.Stage != "ResponseComplete" && ev.Stage != "Panic" {
		skip(w.stats, reasonOtherStage)
		return time.Time{}, nil
	}
	if err := auditToRequest(ev, r); err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", w.where(), err)
	}
	r.Instance = instance
	if !w.noSource {
		r.Source = w.where()
	}
	return ev.StageTimestamp, nil
}

// decode decodes the audit event msg (unescaped) into ev.
func (w *wrapReader) decode(msg []byte, ev *auditEvent) error {
	msg = bytes.TrimSpace(msg)
	if len(msg) == 0 || msg[0] != '{' {
		what := "whose message is not an audit event"
		if len(msg) > 0 && (w.format == workload.FormatCRI || w.format == workload.FormatDocker) {
			what = "that is not an audit event (the apiserver's own log: give it as an httplog file)"
		}
		return because(w.noun(), what, fmt.Errorf("%s: %s: %q is not an audit event", w.where(), formatNoun(w.format), clip(msg, 60)))
	}
	if err := decodeAuditEvent(msg, ev, w.in); err != nil {
		return because(w.noun(), "whose message could not be decoded as an audit event (cut short?)", fmt.Errorf("%s: the audit event in %s: %w", w.where(), formatNoun(w.format), err))
	}
	return nil
}

// decoder is the escEvent of the next record: lazy while no split line
// is pending.
func (w *wrapReader) decoder() *escEvent {
	if w.unescapedFirst {
		return nil
	}
	w.dec.lazy = len(w.part) == 0
	return &w.dec
}

// dropSource leaves the requests' Source empty, as auditReader's does.
func (w *wrapReader) dropSource() { w.noSource = true }

// reasonOtherStage counts the audit events of the stages a replay does
// not use.
var reasonOtherStage = workload.Reason{Noun: "audit event", Problem: "of another stage than ResponseComplete and Panic"}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// skip counts a line that is not a request, by reason.
func skip(s *workload.Stats, r workload.Reason) {
	s.Skipped++
	if s.SkippedBy == nil {
		s.SkippedBy = map[workload.Reason]int64{}
	}
	s.SkippedBy[r]++
}

// csvSource reads a CSV export with a header: Logs Insights' (@message,
// @logStream), Log Analytics' AzureDiagnostics (log_s, pod_s, Category)
// or AKSAudit (the event's fields as columns).
type csvSource struct {
	r    *csv.Reader
	name string
	line int64
	cols map[string]int
}

// detectCSV tells a CSV export by its header line.
func detectCSV(line []byte) (workload.Format, bool) {
	cols, err := csv.NewReader(bytes.NewReader(line)).Read()
	if err != nil {
		return "", false
	}
	for _, c := range cols {
		switch csvColumn(c) {
		case "@message", "log_s", "AuditId":
			return workload.FormatCSV, true
		}
	}
	return "", false
}

// csvColumn is a column's name without Log Analytics' " [UTC]".
func csvColumn(c string) string {
	c = strings.TrimPrefix(strings.TrimSpace(c), "\ufeff")
	c, _, _ = strings.Cut(c, " [")
	return c
}

func newCSVSource(r io.Reader, name string) *csvSource {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	return &csvSource{r: cr, name: name}
}

func (c *csvSource) next(rec *record, buf *[]byte) error {
	if c.cols == nil {
		head, err := c.r.Read()
		if err != nil {
			return err
		}
		c.line++
		c.cols = map[string]int{}
		for i, h := range head {
			c.cols[csvColumn(h)] = i
		}
	}
	row, err := c.r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			c.line++
			return err
		}
		return fmt.Errorf("reading %s: %w", c.name, err)
	}
	c.line++
	col := func(name string) (string, bool) {
		i, ok := c.cols[name]
		if !ok || i >= len(row) {
			return "", false
		}
		return row[i], true
	}
	if m, ok := col("@message"); ok {
		rec.kind = workload.FormatCloudWatch
		rec.instance, _ = col("@logStream")
		rec.msg = []byte(m)
		return nil
	}
	if m, ok := col("log_s"); ok {
		rec.kind = workload.FormatAzure
		if cat, ok := col("Category"); ok && cat != "" && !auditCategory(cat) {
			rec.skip = &workload.Reason{Noun: "CSV row", Problem: "of another category than kube-audit"}
			return nil
		}
		rec.instance, _ = col("pod_s")
		rec.msg = []byte(m)
		return nil
	}
	if _, ok := col("AuditId"); ok {
		rec.kind = workload.FormatAzure
		rec.instance, _ = col("PodName")
		var err error
		*buf, err = aksAuditRow((*buf)[:0], func(name string) (field, bool) {
			v, ok := col(name)
			if !ok || v == "" {
				return field{}, false
			}
			// a cell is text: a dynamic column's is its JSON
			if t := strings.TrimSpace(v); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
				return field{raw: []byte(t), set: true}, true
			}
			return field{raw: []byte(v), isStr: true, set: true, plain: true}, true
		})
		rec.msg = *buf
		return err
	}
	return errNotRecord
}
