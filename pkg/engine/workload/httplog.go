package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// httpLogReader parses kube-apiserver httplog "HTTP" lines.
type httpLogReader struct {
	ls    *lineScanner
	opts  Options
	stats *Stats
	kv    map[string]string
	*reorder
}

// NewHTTPLogReader reads kube-apiserver httplog lines (klog text format,
// optionally prefixed, e.g. by a container runtime or kubectl logs
// --timestamps; or klog JSON format) from r, in arrival order. Other lines
// are skipped. name labels errors.
func NewHTTPLogReader(r io.Reader, name string, opts Options, stats *Stats) Reader {
	opts.defaults()
	if stats == nil {
		stats = &Stats{}
	}
	h := &httpLogReader{ls: newLineScanner(r, name, opts.MaxLineBytes), opts: opts, stats: stats, kv: map[string]string{}}
	h.reorder = &reorder{src: h.read, window: opts.ReorderWindow, stats: stats}
	return h
}

var httpMarker = []byte(`] "HTTP" `)

// read returns the next request in log order and its completion time.
func (h *httpLogReader) read(r *Request) (time.Time, error) {
	for {
		ts, ok, err := h.readLine(r)
		if err != nil {
			var le lineError
			if !errors.As(err, &le) {
				return time.Time{}, err
			}
			if err := h.stats.malformed(h.opts.Lenient, err); err != nil {
				return time.Time{}, err
			}
			continue
		}
		if ok {
			return ts, nil
		}
	}
}

// lineError is a line that is not a readable request; the reader fails on it,
// or skips it when lenient.
type lineError struct{ error }

func (e lineError) Unwrap() error { return e.error }

// readLine reads one line; ok is false for a line that is not a request.
func (h *httpLogReader) readLine(r *Request) (time.Time, bool, error) {
	line, err := h.ls.next()
	if err != nil {
		return time.Time{}, false, err
	}
	h.stats.Lines++
	bad := func(err error) (time.Time, bool, error) {
		return time.Time{}, false, lineError{fmt.Errorf("%s: %w", h.ls.where(), err)}
	}
	if i := bytes.Index(line, httpMarker); i >= 0 {
		where := h.ls.where()
		ts, err := parseKlogHeader(line[:i], h.opts)
		if err != nil {
			return bad(err)
		}
		rest := line[i+len(httpMarker):]
		if bytes.HasSuffix(rest, []byte("=<")) {
			// a multi-line value (addedInfo) follows: klog indents its lines
			// with a tab and closes it with a line " >"
			if err := h.skipMultiline(); err != nil {
				return time.Time{}, false, err
			}
		}
		if err := parseKV(rest, h.kv); err != nil {
			return time.Time{}, false, lineError{fmt.Errorf("%s: %w", where, err)}
		}
		if err := h.fill(r, ts, where); err != nil {
			return time.Time{}, false, lineError{err}
		}
		return ts, true, nil
	}
	if len(line) > 0 && line[0] == '{' && bytes.Contains(line, []byte(`"msg":"HTTP"`)) {
		ts, err := h.parseJSONLine(line)
		if err != nil {
			return bad(err)
		}
		if err := h.fill(r, ts, h.ls.where()); err != nil {
			return time.Time{}, false, lineError{err}
		}
		return ts, true, nil
	}
	h.stats.Skipped++
	return time.Time{}, false, nil
}

func (h *httpLogReader) skipMultiline() error {
	for {
		line, err := h.ls.next()
		if errors.Is(err, io.EOF) {
			return lineError{fmt.Errorf("%s: multi-line value not closed by a line \" >\"", h.ls.where())}
		}
		if err != nil {
			return err
		}
		h.stats.Lines++
		if bytes.Equal(line, []byte(" >")) {
			return nil
		}
	}
}

// parseKlogHeader finds "Lmmdd hh:mm:ss.uuuuuu threadid file:line" at the
// end of prefix (whatever precedes it is ignored).
func parseKlogHeader(prefix []byte, opts Options) (time.Time, error) {
	// walk back over "file:line", the thread id and the time
	s := string(prefix)
	fields := strings.Fields(s)
	if len(fields) < 4 {
		return time.Time{}, fmt.Errorf("httplog line without a klog header (Lmmdd hh:mm:ss.uuuuuu threadid file:line]) before \"HTTP\"")
	}
	n := len(fields)
	date, clock := fields[n-4], fields[n-3]
	if len(date) != 5 || !strings.ContainsRune("IWEF", rune(date[0])) {
		return time.Time{}, fmt.Errorf("klog header %q: expected a severity letter and mmdd, like I1121", date)
	}
	month, err1 := strconv.Atoi(date[1:3])
	day, err2 := strconv.Atoi(date[3:5])
	if err1 != nil || err2 != nil || month < 1 || month > 12 || day < 1 || day > 31 {
		return time.Time{}, fmt.Errorf("klog header %q: invalid month or day", date)
	}
	t, err := time.Parse("15:04:05.999999999", clock)
	if err != nil {
		return time.Time{}, fmt.Errorf("klog header time %q: %w", clock, err)
	}
	return time.Date(opts.Year, time.Month(month), day, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), opts.Location), nil
}

// parseKV parses klog's key=value pairs: strconv-quoted strings, bare
// tokens, and JSON arrays or objects.
func parseKV(b []byte, kv map[string]string) error {
	clear(kv)
	i := 0
	for {
		for i < len(b) && b[i] == ' ' {
			i++
		}
		if i >= len(b) {
			return nil
		}
		eq := bytes.IndexByte(b[i:], '=')
		if eq <= 0 {
			return fmt.Errorf("malformed key/value list at %q", abbrev(b[i:]))
		}
		key := string(b[i : i+eq])
		if bytes.ContainsAny([]byte(key), " \"") {
			return fmt.Errorf("malformed key %q", abbrev([]byte(key)))
		}
		i += eq + 1
		if i >= len(b) {
			kv[key] = ""
			return nil
		}
		switch b[i] {
		case '"':
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(b) {
				return fmt.Errorf("unterminated quoted value of %s", key)
			}
			v, err := strconv.Unquote(string(b[i : j+1]))
			if err != nil {
				return fmt.Errorf("quoted value of %s: %w", key, err)
			}
			kv[key] = v
			i = j + 1
		case '[', '{':
			j, depth, inStr := i, 0, false
			for ; j < len(b); j++ {
				c := b[j]
				switch {
				case inStr && c == '\\':
					j++
				case c == '"':
					inStr = !inStr
				case !inStr && (c == '[' || c == '{'):
					depth++
				case !inStr && (c == ']' || c == '}'):
					depth--
				}
				if depth == 0 && !inStr {
					break
				}
			}
			if j >= len(b) {
				return fmt.Errorf("unterminated value of %s", key)
			}
			kv[key] = string(b[i : j+1])
			i = j + 1
		case '<':
			kv[key] = "" // multi-line value, skipped by the caller
			i++
		default:
			j := bytes.IndexByte(b[i:], ' ')
			if j < 0 {
				j = len(b) - i
			}
			kv[key] = string(b[i : i+j])
			i += j
		}
	}
}

func abbrev(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

func (h *httpLogReader) parseJSONLine(line []byte) (time.Time, error) {
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		return time.Time{}, fmt.Errorf("klog JSON line: %w", err)
	}
	clear(h.kv)
	for k, v := range m {
		switch v := v.(type) {
		case string:
			h.kv[k] = v
		case float64:
			h.kv[k] = strconv.FormatFloat(v, 'f', -1, 64)
		case bool:
			h.kv[k] = strconv.FormatBool(v)
		}
	}
	ts, ok := m["ts"].(float64)
	if !ok {
		return time.Time{}, fmt.Errorf("klog JSON line without a numeric \"ts\"")
	}
	sec := int64(ts / 1000)
	// klog's JSON format writes ts in milliseconds since the epoch
	return time.Unix(sec, int64((ts-float64(sec)*1000)*1e6)).In(h.opts.Location), nil
}

// fill builds a Request from the parsed key/values of a line that
// completed at ts.
func (h *httpLogReader) fill(r *Request, ts time.Time, where string) error {
	kv := h.kv
	if err := complete(kv); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	*r = Request{Source: where}
	r.Verb = kv["verb"]
	r.Method = methodOf(r.Verb)
	if r.Method == "" {
		return fmt.Errorf("%s: unknown verb %q", where, r.Verb)
	}
	r.URI = kv["URI"]
	if r.URI == "" || r.URI[0] != '/' {
		return fmt.Errorf("%s: URI %q must be a path starting with /", where, r.URI)
	}
	var err error
	if r.Latency, err = durationKV(kv, "latency"); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	r.Arrival = ts.Add(-r.Latency)
	r.UserAgent = kv["userAgent"]
	r.SourceIP = kv["srcIP"]
	r.AuditID = kv["audit-ID"]
	r.FlowSchema, r.PriorityLevel = kv["apf_fs"], kv["apf_pl"]
	if v, ok := kv["resp"]; ok {
		if r.Status, err = strconv.Atoi(v); err != nil {
			return fmt.Errorf("%s: resp %q is not a status code", where, v)
		}
	}
	if _, ok := kv["apf_execution_time"]; ok {
		if r.ServiceTime, err = durationKV(kv, "apf_execution_time"); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		r.HasServiceTime = true
	}
	if _, ok := kv["apf_iseats"]; ok {
		if r.InitialSeats, err = seatsKV(kv, "apf_iseats"); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if r.FinalSeats, err = seatsKV(kv, "apf_fseats"); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if r.AdditionalLatency, err = durationKV(kv, "apf_additionalLatency"); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		r.HasSeats = true
	}
	return nil
}

// complete checks that a line has the fields kube-apiserver always writes
// together (httplog.go:respLogger.Log ends every line with resp= or
// hijacked=; priority-and-fairness.go adds apf_pl with apf_fs, and
// apf_iseats with apf_fseats and apf_additionalLatency): a line missing one
// was cut short, and what it does carry cannot be trusted.
func complete(kv map[string]string) error {
	_, resp := kv["resp"]
	_, hijacked := kv["hijacked"]
	if !resp && !hijacked {
		return fmt.Errorf("httplog line without resp= (cut short?)")
	}
	for _, group := range [][]string{{"apf_pl", "apf_fs"}, {"apf_iseats", "apf_fseats", "apf_additionalLatency"}} {
		var have, missing []string
		for _, k := range group {
			if _, ok := kv[k]; ok {
				have = append(have, k)
			} else {
				missing = append(missing, k)
			}
		}
		if len(have) > 0 && len(missing) > 0 {
			return fmt.Errorf("httplog line with %s but without %s (cut short?)", strings.Join(have, ", "), strings.Join(missing, ", "))
		}
	}
	return nil
}

func durationKV(kv map[string]string, key string) (time.Duration, error) {
	v, ok := kv[key]
	if !ok {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a duration: %w", key, v, err)
	}
	if d < 0 {
		return 0, fmt.Errorf("%s %q is negative", key, v)
	}
	return d, nil
}

func seatsKV(kv map[string]string, key string) (uint64, error) {
	v, ok := kv[key]
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a seat count: %w", key, v, err)
	}
	return n, nil
}
