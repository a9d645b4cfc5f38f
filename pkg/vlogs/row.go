package vlogs

import (
	"strconv"

	"github.com/kubectl-apf/kubectl-apf/internal/jsonstr"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// The fields of a row that an event is rebuilt from: the event's fields
// (eventFields, then annotationKeys, under Mapping.Prefix), the row's _time
// and the instance field (Mapping.Instance). The first six are the audit
// event's own, workload.AuditKind to workload.AuditVerb.
const (
	fUsername = workload.AuditVerb + 1 + iota
	fGroups
	fImpUsername
	fImpGroups
	fUserAgent
	fSourceIPs
	fResource
	fNamespace
	fName
	fAPIGroup
	fRefAPIVersion
	fSubresource
	fCode
	fRequestReceived
	fStageTimestamp
	fAnnotations // the first of len(annotationKeys)
)

const (
	rowTime     = fAnnotations + 4
	rowInstance = rowTime + 1
	rowFields   = rowInstance + 1
)

// rowFieldIndex maps a field name (without the prefix) to its index.
var rowFieldIndex = func() map[string]int {
	m := map[string]int{}
	for i, f := range eventFields {
		m[f] = i
	}
	for i, k := range annotationKeys {
		m["annotations."+k] = fAnnotations + i
	}
	return m
}()

// rowDecoder rebuilds an audit event from a row of the store's answer (a
// flat JSON object of strings) without encoding/json: one scan of the row
// that keeps the values of the fields it needs, then the event written
// out. It gives up (ok false) on what it does not read exactly as
// encoding/json does (a value that is not a string, an escape in a key, an
// array of strings it does not take as they are, a status code that is not
// a number; the strings are decoded as encoding/json decodes them,
// internal/jsonstr); Event then uses
// encoding/json, so the event never depends on the path. Its buffers are
// reused from row to row.
type rowDecoder struct {
	vals [rowFields][]byte
	has  [rowFields]bool
	// scratch holds the unescaped values
	scratch []byte
	spans   [rowFields][2]int
}

// val is a field's value, "" when absent.
func (d *rowDecoder) val(f int) []byte {
	if !d.has[f] {
		return nil
	}
	return d.vals[f]
}

// event appends to buf the event of row as one JSON line.
func (d *rowDecoder) event(m Mapping, row []byte, buf []byte) ([]byte, bool) {
	if !d.scan(m, row) {
		return nil, false
	}
	v := func(f int) []byte { return d.val(f) }
	out := append(buf, '{')
	first := true
	key := func(k string) {
		if !first {
			out = append(out, ',')
		}
		first = false
		out = appendString(out, k)
		out = append(out, ':')
	}
	str := func(k string, f int) {
		if s := v(f); len(s) > 0 {
			key(k)
			out = appendString(out, string(s))
		}
	}
	kind, apiVersion := v(workload.AuditKind), v(workload.AuditAPIVersion)
	if len(kind) == 0 && len(apiVersion) == 0 {
		// a pipeline may keep only the fields of the event, not its type
		key("kind")
		out = appendString(out, "Event")
		key("apiVersion")
		out = appendString(out, "audit.k8s.io/v1")
	} else {
		str("kind", workload.AuditKind)
		str("apiVersion", workload.AuditAPIVersion)
	}
	for _, f := range [...]struct {
		k string
		f int
	}{{"auditID", workload.AuditID}, {"stage", workload.AuditStage}, {"requestURI", workload.AuditRequestURI}, {"verb", workload.AuditVerb}, {"userAgent", fUserAgent}, {"requestReceivedTimestamp", fRequestReceived}} {
		str(f.k, f.f)
	}
	if len(v(fStageTimestamp)) > 0 {
		str("stageTimestamp", fStageTimestamp)
	} else {
		str("stageTimestamp", rowTime)
	}
	ok := true
	list := func(s []byte) {
		var listed bool
		out, listed = appendList(out, s)
		ok = ok && listed
	}
	key("user")
	out = append(out, '{')
	inner := func(k string, f int, list func([]byte), comma *bool) {
		s := v(f)
		if len(s) == 0 {
			return
		}
		if *comma {
			out = append(out, ',')
		}
		*comma = true
		out = appendString(out, k)
		out = append(out, ':')
		if list != nil {
			list(s)
		} else {
			out = appendString(out, string(s))
		}
	}
	comma := false
	inner("username", fUsername, nil, &comma)
	inner("groups", fGroups, list, &comma)
	out = append(out, '}')
	if len(v(fImpUsername)) > 0 {
		key("impersonatedUser")
		out = append(out, '{')
		comma = false
		inner("username", fImpUsername, nil, &comma)
		inner("groups", fImpGroups, list, &comma)
		out = append(out, '}')
	}
	if s := v(fSourceIPs); len(s) > 0 {
		key("sourceIPs")
		list(s)
	}
	refs := [...]struct {
		k string
		f int
	}{{"resource", fResource}, {"namespace", fNamespace}, {"name", fName}, {"apiGroup", fAPIGroup}, {"apiVersion", fRefAPIVersion}, {"subresource", fSubresource}}
	for _, r := range refs {
		if len(v(r.f)) > 0 {
			key("objectRef")
			out = append(out, '{')
			comma = false
			for _, r := range refs {
				inner(r.k, r.f, nil, &comma)
			}
			out = append(out, '}')
			break
		}
	}
	if c := v(fCode); len(c) > 0 {
		n, err := strconv.Atoi(string(c))
		if err != nil {
			return nil, false
		}
		key("responseStatus")
		out = append(out, `{"code":`...)
		out = strconv.AppendInt(out, int64(n), 10)
		out = append(out, '}')
	}
	for i := range annotationKeys {
		if len(v(fAnnotations+i)) > 0 {
			key("annotations")
			out = append(out, '{')
			comma = false
			for i, k := range annotationKeys {
				inner(k, fAnnotations+i, nil, &comma)
			}
			out = append(out, '}')
			break
		}
	}
	if !ok {
		return nil, false
	}
	return append(out, '}', '\n'), true
}

// scan reads the row's fields into d.
func (d *rowDecoder) scan(m Mapping, row []byte) bool {
	d.has = [rowFields]bool{}
	d.scratch = d.scratch[:0]
	i := skipWS(row, 0)
	if i >= len(row) || row[i] != '{' {
		return false
	}
	i = skipWS(row, i+1)
	if i < len(row) && row[i] == '}' {
		i++
	} else {
		for {
			if i >= len(row) || row[i] != '"' {
				return false
			}
			// a key: plain ASCII, no escapes
			j := i + 1
			for j < len(row) && row[j] != '"' {
				if c := row[j]; c == '\\' || c < 0x20 || c >= 0x80 {
					return false
				}
				j++
			}
			if j >= len(row) {
				return false
			}
			k := row[i+1 : j]
			i = skipWS(row, j+1)
			if i >= len(row) || row[i] != ':' {
				return false
			}
			i = skipWS(row, i+1)
			if i >= len(row) || row[i] != '"' {
				return false
			}
			start := len(d.scratch)
			var ok bool
			if i, d.scratch, ok = jsonstr.Append(d.scratch, row, i+1); !ok {
				return false
			}
			span := [2]int{start, len(d.scratch)}
			if string(k) == "_time" {
				d.has[rowTime], d.spans[rowTime] = true, span
			}
			if string(k) == m.Instance {
				d.has[rowInstance], d.spans[rowInstance] = true, span
			}
			if len(k) >= len(m.Prefix) && string(k[:len(m.Prefix)]) == m.Prefix {
				if f, ok := rowFieldIndex[string(k[len(m.Prefix):])]; ok {
					d.has[f], d.spans[f] = true, span
				}
			}
			i = skipWS(row, i)
			if i < len(row) && row[i] == ',' {
				i = skipWS(row, i+1)
				continue
			}
			if i < len(row) && row[i] == '}' {
				i++
				break
			}
			return false
		}
	}
	if skipWS(row, i) != len(row) {
		return false
	}
	for f := range d.vals {
		if d.has[f] {
			d.vals[f] = d.scratch[d.spans[f][0]:d.spans[f][1]]
		}
	}
	return true
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// appendList appends the JSON array of the strings s holds: the array
// itself when s is one of plain strings (VictoriaLogs stores arrays as
// their JSON text), a list of s alone when s is no array (stringList).
// Any other array is not ok (left to encoding/json).
func appendList(out, s []byte) ([]byte, bool) {
	if len(s) == 0 || s[0] != '[' {
		out = append(out, '[')
		out = appendString(out, string(s))
		return append(out, ']'), true
	}
	out = append(out, '[')
	i := skipWS(s, 1)
	if i < len(s) && s[i] == ']' {
		i++
	} else {
		for n := 0; ; n++ {
			if i >= len(s) || s[i] != '"' {
				return out, false
			}
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if c := s[j]; c == '\\' || c < 0x20 || c >= 0x80 {
					return out, false
				}
				j++
			}
			if j >= len(s) {
				return out, false
			}
			if n > 0 {
				out = append(out, ',')
			}
			out = append(out, s[i:j+1]...)
			i = skipWS(s, j+1)
			if i < len(s) && s[i] == ',' {
				i = skipWS(s, i+1)
				continue
			}
			if i < len(s) && s[i] == ']' {
				i++
				break
			}
			return out, false
		}
	}
	if skipWS(s, i) != len(s) {
		return out, false
	}
	return append(out, ']'), true
}

// appendString appends s as a JSON string: quotes, backslashes and
// control characters escaped, the rest (valid UTF-8) as it is.
func appendString(out []byte, s string) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c < 0x20:
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			out = append(out, c)
		}
	}
	return append(out, '"')
}
