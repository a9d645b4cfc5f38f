package input

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// CloudWatch Logs Insights answers a query with rows of fields: `aws logs
// get-query-results` prints {"results": [[{"field": "@timestamp",
// "value": "..."}, {"field": "@message", "value": "<the event>"}, ...],
// ...], "statistics": {...}, "status": "Complete"}, every value a string.
// A row of a query that keeps @message carries the event whole; a query
// that lists the event's own fields (fields verb, requestURI,
// user.username, ...) carries its parts, named by their paths, arrays
// flattened by index (user.groups.0); a query that aggregates (stats
// count(*) by userAgent) carries no event.

// insightField is one field of a Logs Insights row.
type insightField struct {
	Field string          `json:"field"`
	Value json.RawMessage `json:"value"`
}

// insightsFields decodes a Logs Insights row; false when b is not one.
func insightsFields(b []byte) ([]insightField, bool) {
	var row []insightField
	if err := json.Unmarshal(b, &row); err != nil || len(row) == 0 {
		return nil, false
	}
	for _, f := range row {
		if f.Field == "" {
			return nil, false
		}
	}
	return row, true
}

// insightsEventFields are the fields of an audit event a row must hold
// to be read as one, when it has no @message.
var insightsEventFields = []string{"stage", "requestReceivedTimestamp", "stageTimestamp"}

// insightsRow reads the Logs Insights row b into rec, as the record
// {"@message": ..., "@logStream": ...} of an exported result.
func (w *wrapReader) insightsRow(b []byte, rec *record) error {
	row, ok := insightsFields(b)
	if !ok {
		return errNotRecord
	}
	names := make([]string, len(row))
	var msg, stream json.RawMessage
	for i, f := range row {
		names[i] = f.Field
		switch f.Field {
		case "@message":
			msg = f.Value
		case "@logStream":
			stream = f.Value
		}
	}
	w.row = w.row[:0]
	if msg != nil {
		w.row = append(w.row, `{"@message":`...)
		w.row = append(w.row, msg...)
		if stream != nil {
			w.row = append(w.row, `,"@logStream":`...)
			w.row = append(w.row, stream...)
		}
		w.row = append(w.row, '}')
		var err error
		_, w.buf, err = recordAt(w.row, rec, w.buf, w.decoder())
		return err
	}
	// the event's parts, or no event
	parts := 0
	for _, n := range names {
		if !strings.HasPrefix(n, "@") {
			parts++
		}
	}
	var missing []string
	for _, n := range insightsEventFields {
		if !slices.Contains(names, n) {
			missing = append(missing, n)
		}
	}
	if parts == 0 || len(missing) == len(insightsEventFields) {
		rec.skip = &workload.Reason{Noun: "Logs Insights row", Problem: "without @message or an audit event's fields (its fields: " + strings.Join(names, ", ") +
			"; a query that keeps the events is fields @timestamp, @message, @logStream)"}
		return nil
	}
	if len(missing) > 0 {
		rec.skip = &workload.Reason{Noun: "Logs Insights row", Problem: "of an audit event's fields without " + strings.Join(missing, ", ") +
			", which a replay needs (add them to the query's fields, or keep @message)"}
		return nil
	}
	ev := map[string]any{"kind": "Event", "apiVersion": "audit.k8s.io/v1"}
	for _, f := range row {
		if strings.HasPrefix(f.Field, "@") {
			continue
		}
		var v any
		if json.Unmarshal(f.Value, &v) != nil {
			return errBadString
		}
		if s, ok := v.(string); ok && numericField(f.Field) {
			if n, err := strconv.ParseFloat(s, 64); err == nil {
				v = n
			}
		}
		setPath(ev, strings.Split(f.Field, "."), v)
	}
	event, err := json.Marshal(arrays(ev))
	if err != nil {
		return errBadString
	}
	rec.kind = workload.FormatCloudWatch
	rec.msg = event
	if stream != nil {
		var s string
		if json.Unmarshal(stream, &s) == nil {
			rec.instance = s
		}
	}
	return nil
}

// numericField reports whether an audit event's field at path is a
// number, which Logs Insights gives as a string.
func numericField(path string) bool {
	return path == "responseStatus.code"
}

// setPath sets m's value at the path of keys, making the objects on the
// way.
func setPath(m map[string]any, path []string, v any) {
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

// arrays turns the objects whose keys are all indexes 0..n-1 (Logs
// Insights' flattening of an array: user.groups.0) back into arrays.
func arrays(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	for k, x := range m {
		m[k] = arrays(x)
	}
	if len(m) == 0 {
		return m
	}
	out := make([]any, len(m))
	for k, x := range m {
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i >= len(m) || strconv.Itoa(i) != k {
			return m
		}
		out[i] = x
	}
	return out
}
