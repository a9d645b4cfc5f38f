package input

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// httpLogReader parses kube-apiserver httplog "HTTP" lines.
type httpLogReader struct {
	ls    *lineScanner
	stats *workload.Stats
	httpDecoder
	// par is the parallel decoding's state, nil when the lines are
	// decoded one by one (httplogpar.go)
	par *httpPar
	*reorder
}

// httpDecoder turns httplog lines into requests, one at a time.
type httpDecoder struct {
	opts Options
	kv   kvs
	in   *interner
	buf  []byte // a line's URI and audit ID, made one string (fill)
}

// NewHTTPLogReader reads kube-apiserver httplog lines (klog text format,
// optionally prefixed, e.g. by a container runtime or kubectl logs
// --timestamps; or klog JSON format) from r, in arrival order. Other lines
// are skipped. name labels errors.
func NewHTTPLogReader(r io.Reader, name string, opts Options, stats *workload.Stats) workload.Reader {
	opts.defaults()
	if stats == nil {
		stats = &workload.Stats{}
	}
	h := &httpLogReader{ls: newLineScanner(r, name, opts.MaxLineBytes), stats: stats, httpDecoder: httpDecoder{opts: opts, in: newInterner()}}
	src := h.read
	if opts.tuning.parallel() {
		h.par, src = &httpPar{lines: opts.tuning.lines(), inline: opts.tuning.chunksInline}, h.readParallel
	}
	h.reorder = &reorder{src: src, window: opts.ReorderWindow, q: arrivalQueue{maxHeld: opts.MaxHeld}, stats: stats}
	return h
}

var httpMarker = []byte(`] "HTTP" `)

// read returns the next request in log order and its completion time.
func (h *httpLogReader) read(r *workload.Request) (time.Time, error) {
	for {
		ts, ok, err := h.readLine(r)
		if err != nil {
			var le lineError
			if !errors.As(err, &le) {
				return time.Time{}, err
			}
			if err := malformed(h.stats, h.opts.Lenient, workload.Reason{Noun: httplogLine, Problem: "that could not be read"}, err); err != nil {
				return time.Time{}, err
			}
			continue
		}
		if ok {
			return ts, nil
		}
	}
}

// httplogLine is the noun of the Reasons of httplog lines.
const httplogLine = "httplog line"

// lineError is a line that is not a readable request; the reader fails on it,
// or skips it when lenient.
type lineError struct{ error }

func (e lineError) Unwrap() error { return e.error }

// readLine reads one line; ok is false for a line that is not a request.
func (h *httpLogReader) readLine(r *workload.Request) (time.Time, bool, error) {
	line, err := h.ls.next()
	if err != nil {
		return time.Time{}, false, err
	}
	h.stats.Lines++
	if rest, ts, err := httpHead(line, &h.opts); rest != nil {
		where := h.ls.where()
		if err != nil {
			return time.Time{}, false, lineError{fmt.Errorf("%s: %w", where, err)}
		}
		if bytes.HasSuffix(rest, []byte("=<")) {
			// a multi-line value (addedInfo) follows: klog indents its lines
			// with a tab and closes it with a line " >"
			if err := h.skipMultiline(); err != nil {
				return time.Time{}, false, err
			}
		}
		return h.request(r, rest, ts, where)
	}
	ts, ok, err := h.other(r, line, h.ls.where)
	if !ok && err == nil {
		h.stats.Skipped++
	}
	return ts, ok, err
}

// httpHead finds the request of an httplog line: rest is what follows
// "HTTP" (nil for a line that is not an httplog line of the klog text
// format), ts the time of its klog header, err the header's error.
func httpHead(line []byte, opts *Options) (rest []byte, ts time.Time, err error) {
	i := bytes.Index(line, httpMarker)
	if i >= 0 {
		rest = line[i+len(httpMarker):]
	} else if t := bytes.TrimLeft(line, " \t"); opts.Headerless && bytes.HasPrefix(t, httpMarker[2:]) {
		// "HTTP" at the start: the line as published without its klog
		// header, so when it was logged is unknown (a zero ts)
		rest = t[len(httpMarker)-2:]
	}
	if rest != nil && i >= 0 {
		ts, err = parseKlogHeader(line[:i], *opts)
	}
	return rest, ts, err
}

// request fills r from the key/values of an httplog line of the klog text
// format that completed at ts.
func (h *httpDecoder) request(r *workload.Request, rest []byte, ts time.Time, where workload.Where) (time.Time, bool, error) {
	if err := parseKV(rest, &h.kv); err != nil {
		return time.Time{}, false, lineError{fmt.Errorf("%s: %w", where, because(httplogLine, "with an unreadable key/value list", err))}
	}
	if err := h.fill(r, ts, where); err != nil {
		return time.Time{}, false, lineError{err}
	}
	return ts, true, nil
}

// other reads a line that is not of the klog text format: an httplog line
// of klog's JSON format, or a line that is not a request (ok false, nil
// error). where says where the line is.
func (h *httpDecoder) other(r *workload.Request, line []byte, where func() workload.Where) (time.Time, bool, error) {
	if len(line) > 0 && line[0] == '{' && bytes.Contains(line, []byte(`"msg":"HTTP"`)) {
		ts, err := h.parseJSONLine(line)
		if err != nil {
			return time.Time{}, false, lineError{fmt.Errorf("%s: %w", where(), err)}
		}
		if err := h.fill(r, ts, where()); err != nil {
			return time.Time{}, false, lineError{err}
		}
		return ts, true, nil
	}
	return time.Time{}, false, nil
}

func (h *httpLogReader) skipMultiline() error {
	for {
		line, err := h.ls.next()
		if errors.Is(err, io.EOF) {
			return lineError{because(httplogLine, "with a multi-line value not closed", fmt.Errorf("%s: multi-line value not closed by a line \" >\"", h.ls.where()))}
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
	if t, ok := parseKlogHeaderFast(prefix, opts); ok {
		return t, nil
	}
	return parseKlogHeaderSlow(prefix, opts)
}

func parseKlogHeaderSlow(prefix []byte, opts Options) (time.Time, error) {
	// walk back over "file:line", the thread id and the time
	s := string(prefix)
	fields := strings.Fields(s)
	if len(fields) < 4 {
		return time.Time{}, because(httplogLine, "without a timestamp", fmt.Errorf("httplog line without a klog header (Lmmdd hh:mm:ss.uuuuuu threadid file:line]) before \"HTTP\""))
	}
	n := len(fields)
	date, clock := fields[n-4], fields[n-3]
	if len(date) != 5 || !strings.ContainsRune("IWEF", rune(date[0])) {
		return time.Time{}, because(httplogLine, "with an unreadable timestamp", fmt.Errorf("klog header %q: expected a severity letter and mmdd, like I1121", date))
	}
	month, err1 := strconv.Atoi(date[1:3])
	day, err2 := strconv.Atoi(date[3:5])
	if err1 != nil || err2 != nil || month < 1 || month > 12 || day < 1 || day > 31 {
		return time.Time{}, because(httplogLine, "with an unreadable timestamp", fmt.Errorf("klog header %q: invalid month or day", date))
	}
	t, err := time.Parse("15:04:05.999999999", clock)
	if err != nil {
		return time.Time{}, because(httplogLine, "with an unreadable timestamp", fmt.Errorf("klog header time %q: %w", clock, err))
	}
	return time.Date(opts.Year, time.Month(month), day, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), opts.Location), nil
}

// parseKlogHeaderFast is parseKlogHeader for a well-formed header
// ("I1121 14:15:17.977828 727 file.go:135"), without copies; ok is false
// for anything parseKlogHeader must look at (and perhaps refuse).
func parseKlogHeaderFast(prefix []byte, opts Options) (time.Time, bool) {
	// the last four space-separated fields
	var f [4][]byte
	end := len(prefix)
	for n := 3; n >= 0; n-- {
		for end > 0 && isSpace(prefix[end-1]) {
			end--
		}
		start := end
		for start > 0 && !isSpace(prefix[start-1]) {
			start--
		}
		if start == end {
			return time.Time{}, false
		}
		f[n], end = prefix[start:end], start
	}
	for _, c := range prefix[end:] {
		if c >= utf8.RuneSelf {
			return time.Time{}, false
		}
	}
	date, clock := f[0], f[1]
	if len(date) != 5 || (date[0] != 'I' && date[0] != 'W' && date[0] != 'E' && date[0] != 'F') {
		return time.Time{}, false
	}
	month, ok1 := digits(date[1:3])
	day, ok2 := digits(date[3:5])
	if !ok1 || !ok2 || month < 1 || month > 12 || day < 1 || day > 31 {
		return time.Time{}, false
	}
	// hh:mm:ss with an optional fraction of 1 to 9 digits
	if len(clock) < 8 || clock[2] != ':' || clock[5] != ':' {
		return time.Time{}, false
	}
	hh, ok1 := digits(clock[0:2])
	mm, ok2 := digits(clock[3:5])
	ss, ok3 := digits(clock[6:8])
	if !ok1 || !ok2 || !ok3 || hh > 23 || mm > 59 || ss > 59 {
		return time.Time{}, false
	}
	ns := 0
	if frac := clock[8:]; len(frac) > 0 {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return time.Time{}, false
		}
		v, ok := digits(frac[1:])
		if !ok {
			return time.Time{}, false
		}
		for range 10 - len(frac) {
			v *= 10
		}
		ns = v
	}
	return time.Date(opts.Year, time.Month(month), day, hh, mm, ss, ns, opts.Location), true
}

// isSpace is what strings.Fields splits at, for ASCII; a byte above ASCII
// makes parseKlogHeaderFast give up, as it might start a Unicode space.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// digits parses a short run of ASCII digits.
func digits(b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	v := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// The keys of an httplog line the reader uses, in the order kube-apiserver
// writes them (httplog.go:respLogger.Log, the apf_ keys added in
// priority-and-fairness.go): parseKV looks for the next key first where it
// expects it.
const (
	kVerb = iota
	kURI
	kLatency
	kUserAgent
	kAuditID
	kSrcIP
	kPL
	kFS
	kISeats
	kFSeats
	kAdditionalLatency
	kExecutionTime
	kFD
	kResp
	kHijacked
	nKeys
)

var keyNames = [nKeys]string{"verb", "URI", "latency", "userAgent", "audit-ID", "srcIP", "apf_pl", "apf_fs", "apf_iseats", "apf_fseats",
	"apf_additionalLatency", "apf_execution_time", "apf_fd", "resp", "hijacked"}

// keyOf is the index of k in keyNames, -1 for none. The names are tried
// from hint on (the keys come in httplog's order), then from the first.
func keyOf(k []byte, hint int) int {
	for i := hint; i < nKeys; i++ {
		if string(k) == keyNames[i] {
			return i
		}
	}
	for i := range min(hint, nKeys) {
		if string(k) == keyNames[i] {
			return i
		}
	}
	return -1
}

// kvs holds the values of the keys the reader uses, the last of each: a
// value is a slice of the line, or the unquoted copy of a quoted value
// with escapes, valid until the next line is read.
type kvs struct {
	v   [nKeys][]byte
	has [nKeys]bool
}

func (kv *kvs) reset() { *kv = kvs{} }

func (kv *kvs) set(k int, v []byte) {
	if k >= 0 {
		kv.v[k], kv.has[k] = v, true
	}
}

// str returns a value as a string, "" when absent.
func (kv *kvs) str(k int) string { return string(kv.v[k]) }

// parseKV parses klog's key=value pairs: strconv-quoted strings, bare
// tokens, and JSON arrays or objects. Only the keys the reader uses are
// kept, but every value is checked.
func parseKV(b []byte, kv *kvs) error {
	kv.reset()
	i, hint := 0, 0
	for {
		for i < len(b) && b[i] == ' ' {
			i++
		}
		if i >= len(b) {
			return nil
		}
		var key []byte
		k := -1
		// the key expected next, or the one after it: its name and "="
		// (no name holds a space, a quote or "=")
		for n := hint; n < min(hint+2, nKeys); n++ {
			if name := keyNames[n]; len(b)-i > len(name) && b[i+len(name)] == '=' && string(b[i:i+len(name)]) == name {
				key, k = b[i:i+len(name)], n
				break
			}
		}
		if k < 0 {
			eq := bytes.IndexByte(b[i:], '=')
			if eq <= 0 {
				return fmt.Errorf("malformed key/value list at %q", abbrev(b[i:]))
			}
			key = b[i : i+eq]
			for _, c := range key {
				if c == ' ' || c == '"' {
					return fmt.Errorf("malformed key %q", abbrev(key))
				}
			}
			k = keyOf(key, hint)
		}
		if k >= 0 {
			hint = k + 1
		}
		i += len(key) + 1
		if i >= len(b) {
			kv.set(k, nil)
			return nil
		}
		switch b[i] {
		case '"':
			j, plain, ascii := i+1, true, true
			// eight bytes at a time while none ends, escapes or is
			// not ASCII
			for j+8 <= len(b) && !kvSpecialIn(binary.LittleEndian.Uint64(b[j:])) {
				j += 8
			}
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
					plain = false
				} else if b[j] == '\n' {
					plain = false
				} else if b[j] >= utf8.RuneSelf {
					ascii = false
				}
				j++
			}
			if j >= len(b) {
				return fmt.Errorf("unterminated quoted value of %s", key)
			}
			if plain && (ascii || utf8.Valid(b[i+1:j])) {
				// what strconv.Unquote returns for a quoted string without
				// escapes or newlines, of valid UTF-8 (a latency in µs):
				// the string as it is
				kv.set(k, b[i+1:j])
			} else {
				v, err := strconv.Unquote(string(b[i : j+1]))
				if err != nil {
					return fmt.Errorf("quoted value of %s: %w", key, err)
				}
				kv.set(k, []byte(v))
			}
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
			kv.set(k, b[i:j+1])
			i = j + 1
		case '<':
			kv.set(k, nil) // multi-line value, skipped by the caller
			i++
		default:
			j := bytes.IndexByte(b[i:], ' ')
			if j < 0 {
				j = len(b) - i
			}
			kv.set(k, b[i:i+j])
			i += j
		}
	}
}

// kvSpecialIn reports whether any of the eight bytes of x is one a
// quoted value's scan stops at: a quote, a backslash, a newline or a byte
// above ASCII (specialIn's bit tricks).
func kvSpecialIn(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	return zero(x^(ones*'"'))|zero(x^(ones*'\\'))|zero(x^(ones*'\n'))|x&highs != 0
}

func abbrev(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

func (h *httpDecoder) parseJSONLine(line []byte) (time.Time, error) {
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		return time.Time{}, because(httplogLine, "with invalid JSON", fmt.Errorf("klog JSON line: %w", err))
	}
	h.kv.reset()
	for k, v := range m {
		switch v := v.(type) {
		case string:
			h.kv.set(keyOf([]byte(k), 0), []byte(v))
		case float64:
			h.kv.set(keyOf([]byte(k), 0), strconv.AppendFloat(nil, v, 'f', -1, 64))
		case bool:
			h.kv.set(keyOf([]byte(k), 0), strconv.AppendBool(nil, v))
		}
	}
	ts, ok := m["ts"].(float64)
	if !ok {
		return time.Time{}, because(httplogLine, "without a timestamp", fmt.Errorf("klog JSON line without a numeric \"ts\""))
	}
	sec := int64(ts / 1000)
	// klog's JSON format writes ts in milliseconds since the epoch
	return time.Unix(sec, int64((ts-float64(sec)*1000)*1e6)).In(h.opts.Location), nil
}

// fill builds a Request from the parsed key/values of a line that
// completed at ts.
func (h *httpDecoder) fill(r *workload.Request, ts time.Time, where workload.Where) error {
	kv := &h.kv
	if err := complete(kv); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	*r = workload.Request{Source: where}
	r.Verb = h.in.get(kv.v[kVerb])
	r.Method = methodOf(r.Verb)
	if r.Method == "" {
		return because(httplogLine, "with an unknown verb", fmt.Errorf("%s: unknown verb %q", where, r.Verb))
	}
	r.URI, r.AuditID = twoStrings(&h.buf, kv.v[kURI], kv.v[kAuditID])
	if r.URI == "" || r.URI[0] != '/' {
		return because(httplogLine, "with a URI that is not a path", fmt.Errorf("%s: URI %q must be a path starting with /", where, r.URI))
	}
	var err error
	if r.Latency, err = durationKV(kv, kLatency); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if ts.IsZero() {
		r.TimeUnknown = true
	} else {
		r.Arrival = ts.Add(-r.Latency)
	}
	r.UserAgent = h.in.get(kv.v[kUserAgent])
	r.SourceIP = h.in.get(kv.v[kSrcIP])
	r.FlowSchema, r.PriorityLevel = h.in.get(kv.v[kFS]), h.in.get(kv.v[kPL])
	r.FlowDistinguisher, r.HasFlowDistinguisher = kv.str(kFD), kv.has[kFD]
	if kv.has[kResp] {
		if r.Status, err = atoi(kv.v[kResp]); err != nil {
			return fmt.Errorf("%s: resp %q is not a status code", where, kv.v[kResp])
		}
	}
	if kv.has[kExecutionTime] {
		if r.ServiceTime, err = durationKV(kv, kExecutionTime); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		r.HasServiceTime = true
	}
	if kv.has[kISeats] {
		if r.InitialSeats, err = seatsKV(kv, kISeats); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if r.FinalSeats, err = seatsKV(kv, kFSeats); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if r.AdditionalLatency, err = durationKV(kv, kAdditionalLatency); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		r.HasSeats = true
	}
	return nil
}

// atoi is strconv.Atoi without a copy for the common case of a few digits.
func atoi(b []byte) (int, error) {
	if n := len(b); n > 0 && n <= 9 {
		v := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return strconv.Atoi(string(b))
			}
			v = v*10 + int(c-'0')
		}
		return v, nil
	}
	return strconv.Atoi(string(b))
}

// complete checks that a line has the fields kube-apiserver always writes
// together (httplog.go:respLogger.Log ends every line with resp= or
// hijacked=; priority-and-fairness.go adds apf_pl with apf_fs, and
// apf_iseats with apf_fseats and apf_additionalLatency): a line missing one
// was cut short, and what it does carry cannot be trusted.
func complete(kv *kvs) error {
	if !kv.has[kResp] && !kv.has[kHijacked] {
		return because(httplogLine, "without resp= (cut short?)", fmt.Errorf("httplog line without resp= (cut short?)"))
	}
	for _, group := range [][]int{{kPL, kFS}, {kISeats, kFSeats, kAdditionalLatency}} {
		n := 0
		for _, k := range group {
			if kv.has[k] {
				n++
			}
		}
		if n == 0 || n == len(group) {
			continue
		}
		var have, missing []string
		for _, k := range group {
			if kv.has[k] {
				have = append(have, keyNames[k])
			} else {
				missing = append(missing, keyNames[k])
			}
		}
		return because(httplogLine, "with apf_ fields missing (cut short?)", fmt.Errorf("httplog line with %s but without %s (cut short?)", strings.Join(have, ", "), strings.Join(missing, ", ")))
	}
	return nil
}

func durationKV(kv *kvs, key int) (time.Duration, error) {
	if !kv.has[key] {
		return 0, nil
	}
	v := kv.v[key]
	d, err := parseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a duration: %w", keyNames[key], v, err)
	}
	if d < 0 {
		return 0, fmt.Errorf("%s %q is negative", keyNames[key], v)
	}
	return d, nil
}

func seatsKV(kv *kvs, key int) (uint64, error) {
	if !kv.has[key] {
		return 0, nil
	}
	v := kv.v[key]
	if n := len(v); n > 0 && n <= 9 {
		var x uint64
		for _, c := range v {
			if c < '0' || c > '9' {
				x = 1 << 63
				break
			}
			x = x*10 + uint64(c-'0')
		}
		if x <= 1<<32-1 {
			return x, nil
		}
	}
	n, err := strconv.ParseUint(string(v), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a seat count: %w", keyNames[key], v, err)
	}
	return n, nil
}

// parseDuration is time.ParseDuration for a number with one unit
// ("36.994839ms", "0s"), computed as time.ParseDuration does, without a
// copy of b; anything else goes to time.ParseDuration.
func parseDuration(b []byte) (time.Duration, error) {
	i, v := 0, uint64(0)
	for i < len(b) && b[i] >= '0' && b[i] <= '9' && i < 15 {
		v = v*10 + uint64(b[i]-'0')
		i++
	}
	pre := i > 0
	var f uint64
	scale := 1.0
	post := false
	if i < len(b) && b[i] == '.' {
		i++
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' && i-j < 15 {
			f = f*10 + uint64(b[i]-'0')
			scale *= 10
			i++
		}
		post = i > j
	}
	var unit uint64
	switch string(b[i:]) {
	case "ns":
		unit = uint64(time.Nanosecond)
	case "us":
		unit = uint64(time.Microsecond)
	case "ms":
		unit = uint64(time.Millisecond)
	case "s":
		unit = uint64(time.Second)
	case "m":
		unit = uint64(time.Minute)
	case "h":
		unit = uint64(time.Hour)
	}
	if unit == 0 || !pre && !post || v > 1<<63/unit {
		return time.ParseDuration(string(b))
	}
	v *= unit
	if f > 0 {
		v += uint64(float64(f) * (float64(unit) / scale))
	}
	if v > 1<<63-1 {
		return time.ParseDuration(string(b))
	}
	return time.Duration(v), nil
}
