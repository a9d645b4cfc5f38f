package input

import (
	"bytes"
	"encoding/binary"
	"time"
	"unsafe"

	"github.com/kubectl-apf/kubectl-apf/internal/utctime"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// scanAuditEvent is a fast path for json.Unmarshal(line, ev): a single
// scan over the line that fills only the fields of auditEvent, validates
// the JSON syntax of everything it skips, and allocates only the strings
// it keeps (interned through in where they repeat). It gives up, returning
// false, on anything it does not handle exactly as encoding/json does (a
// string with escapes or non-ASCII bytes among the fields it keeps, a key
// that only case-insensitively matches a field, a duplicate field, a
// number that is not a plain integer, any syntax error): the caller then
// uses encoding/json, so the result never depends on the path.
func scanAuditEvent(line []byte, ev *auditEvent, in *interner) bool {
	return scanAuditEventAs(line, ev, in, false)
}

// scanAuditEventAs is scanAuditEvent; with pathOnly, a requestURI that is a
// path (starts with /) is kept as "/" alone, not copied: for a join, which
// takes only the event's identity, and would drop a string made for every
// event. The URI's checks (auditToRequest) see the same first byte.
func scanAuditEventAs(line []byte, ev *auditEvent, in *interner, pathOnly bool) bool {
	s := jscan{b: line, pathOnly: pathOnly}
	if !s.event(ev, in) {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

// scanEscapedEvent is scanAuditEvent on an event carried as a JSON string
// (a docker log's "log", CloudWatch's "message", a pipeline's "log",
// "message" or "body"), read where it stands, escaped: b[i:] is the
// string's contents, after its opening quote. It returns the index just
// past the string's closing quote. The event's quotes come as \" and its
// white space may be \n, \t or \r; anything else escaped (an escape inside
// a field it keeps, a \u or \/ of the string itself, a control character)
// makes it give up, returning false: the caller then unescapes the string
// and decodes it as before (jsonstr.Append, then decodeAuditEvent), so the
// result never depends on the path. Where it succeeds, it gives the fields
// that path gives.
func scanEscapedEvent(b []byte, i int, ev *auditEvent, in *interner) (int, bool) {
	s := jscan{b: b, i: i, esc: true}
	if !s.event(ev, in) {
		return 0, false
	}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '"' {
		return s.i + 1, true
	}
	return 0, false
}

// event scans an audit event's object into ev.
func (s *jscan) event(ev *auditEvent, in *interner) bool {
	*ev = auditEvent{}
	it := fieldIter{names: workload.AuditFieldNames[:], n: -1}
	for {
		f, ok := s.nextField(&it)
		if !ok {
			return false
		}
		switch f {
		case -1:
			return true
		// the IDs and paths, unique, are not interned; a join's IDs are
		// cut from blocks (interner.idOf)
		case workload.AuditID:
			if s.pathOnly && in != nil {
				ok = s.id(&ev.AuditID, in)
			} else {
				ok = s.str(&ev.AuditID, nil)
			}
		case workload.AuditRequestURI:
			if s.pathOnly {
				ok = s.path(&ev.RequestURI)
			} else {
				ok = s.str(&ev.RequestURI, nil)
			}
		case workload.AuditKind:
			ok = s.str(&ev.Kind, in)
		case workload.AuditAPIVersion:
			ok = s.str(&ev.APIVersion, in)
		case workload.AuditStage:
			ok = s.str(&ev.Stage, in)
		case workload.AuditVerb:
			ok = s.str(&ev.Verb, in)
		case workload.AuditUserAgent:
			ok = s.str(&ev.UserAgent, in)
		case workload.AuditUser:
			ok = s.user(&ev.User.Username, &ev.User.Groups, in, false)
		case workload.AuditImpersonatedUser:
			if s.null() {
				break
			}
			ev.ImpersonatedUser = &auditUser{}
			ok = s.user(&ev.ImpersonatedUser.Username, &ev.ImpersonatedUser.Groups, in, true)
		case workload.AuditSourceIPs:
			ok = s.strings(&ev.SourceIPs, in)
		case workload.AuditObjectRef:
			ok = s.objectRef(ev, in)
		case workload.AuditResponseStatus:
			ok = s.responseStatus(ev, in)
		case workload.AuditRequestReceivedTimestamp:
			ok = s.time(&ev.RequestReceivedTimestamp, in)
		case workload.AuditStageTimestamp:
			ok = s.time(&ev.StageTimestamp, in)
		case workload.AuditAnnotations:
			ok = s.annotations(&ev.Annotations)
		default:
			ok = false
		}
		if !ok {
			return false
		}
	}
}

// fieldUnknownFolded is a key that equals a field's name only when case is
// ignored, which encoding/json would decode into that field. The fields of
// auditEvent are workload.AuditKind to workload.AuditAnnotations, as bits
// of a set.
const fieldUnknownFolded = 31

// the fields and fieldUnknownFolded are bits of one uint32
var _ [fieldUnknownFolded - workload.AuditFields]struct{}

// members scans an object whose keys of interest are names: fn is called
// with the index of each such key, the scanner at its value, which fn must
// consume; other keys' values are skipped (checked, at depth). A key that
// matches a name only when case is ignored, or comes twice, makes it give
// up, as encoding/json would decode it into the same field.
func (s *jscan) members(names []string, depth int, fn func(f int) bool) bool {
	it := fieldIter{names: names, depth: depth, n: -1}
	for {
		f, ok := s.nextField(&it)
		if !ok {
			return false
		}
		if f < 0 {
			return true
		}
		if !fn(f) {
			return false
		}
	}
}

// fieldIter walks the members of an object whose keys of interest are
// names (members, without a function call per member).
type fieldIter struct {
	names []string
	depth int
	seen  uint32
	// hint is where the next key is looked for first: the fields come in
	// an order (the apiserver's)
	hint int
	// n is the number of members read, -1 before the object's brace
	n int
}

// nextField moves to the value of the object's next key of interest and
// returns its index, or -1 past the object's end; other keys' values are
// skipped (checked). ok is false where the object is not one members
// takes.
func (s *jscan) nextField(it *fieldIter) (f int, ok bool) {
	for {
		switch {
		case it.n < 0:
			if s.peek() != '{' {
				return -1, false
			}
			s.i++
			it.n = 0
			if s.peek() == '}' {
				s.i++
				return -1, true
			}
		default:
			switch s.peek() {
			case ',':
				s.i++
			case '}':
				s.i++
				return -1, true
			default:
				return -1, false
			}
		}
		it.n++
		// the key expected next, or the one after it, as it stands in
		// compact JSON: "name": (its bytes are the key's, which has no
		// escape)
		for f := it.hint; f < min(it.hint+2, len(it.names)) && !s.esc; f++ {
			if !s.keyAt(it.names[f]) {
				continue
			}
			if it.seen&(1<<f) != 0 {
				return -1, false
			}
			it.seen |= 1 << f
			it.hint = f + 1
			return f, true
		}
		key, ok := s.rawString()
		if !ok || s.peek() != ':' {
			return -1, false
		}
		s.i++
		f := fieldOf(key, it.names, it.hint)
		if f < 0 {
			if !s.skipValue(it.depth) {
				return -1, false
			}
			continue
		}
		if f == fieldUnknownFolded || it.seen&(1<<f) != 0 {
			return -1, false
		}
		it.seen |= 1 << f
		it.hint = f + 1
		return f, true
	}
}

// keyAt consumes "name": when it comes next, as it is; name holds no quote,
// backslash or control character.
func (s *jscan) keyAt(name string) bool {
	b, i := s.b, s.i
	if e := i + len(name) + 3; e <= len(b) && b[i] == '"' && b[e-2] == '"' && b[e-1] == ':' && string(b[i+1:e-2]) == name {
		s.i = e
		return true
	}
	return false
}

// fieldOf returns the index of key in names, -1 for none, or
// fieldUnknownFolded. The names are tried from hint on, then from the
// first.
func fieldOf(key []byte, names []string, hint int) int {
	for i := hint; i < len(names); i++ {
		if string(key) == names[i] {
			return i
		}
	}
	for i := range min(hint, len(names)) {
		if string(key) == names[i] {
			return i
		}
	}
	for _, n := range names {
		if len(n) == len(key) && bytes.EqualFold(key, []byte(n)) {
			return fieldUnknownFolded
		}
	}
	return -1
}

// jscan is a JSON scanner over one value.
type jscan struct {
	b []byte
	i int
	// esc: the value is read inside a JSON string, escaped (its quotes are
	// \", its white space may be \n, \t, \r); a bare quote ends the string
	esc bool
	// pathOnly: a requestURI that is a path is kept as "/" (scanAuditEventAs)
	pathOnly bool
}

func (s *jscan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ':
			s.i++
		case '\t', '\n', '\r':
			// escaped, a raw control character is one encoding/json
			// refuses in the string (jsonstr)
			if s.esc {
				return
			}
			s.i++
		case '\\':
			if !s.esc || s.i+1 >= len(s.b) {
				return
			}
			switch s.b[s.i+1] {
			case 'n', 't', 'r':
				s.i += 2
			default:
				return
			}
		default:
			return
		}
	}
}

// peek skips white space and returns the next byte (0 at the end). When
// escaped, an escaped quote is '"' and a bare quote, the end of the
// string, is 0.
func (s *jscan) peek() byte {
	if s.i < len(s.b) {
		// no white space (compact JSON): no need to skip it
		if c := s.b[s.i]; c > ' ' && c != '\\' && (c != '"' || !s.esc) {
			return c
		}
	}
	return s.peekSlow()
}

// peekSlow is peek past white space, or at an escape.
func (s *jscan) peekSlow() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	c := s.b[s.i]
	if s.esc {
		switch {
		case c == '"':
			return 0
		case c == '\\':
			if s.i+1 < len(s.b) && s.b[s.i+1] == '"' {
				return '"'
			}
			return 0
		}
	}
	return c
}

// quoteLen is the length of a quote of the value: 2 when escaped (\").
func (s *jscan) quoteLen() int {
	if s.esc {
		return 2
	}
	return 1
}

// null consumes a null if one comes next.
func (s *jscan) null() bool {
	if s.peek() == 'n' && bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// object scans an object, calling member for every key with the scanner
// at its value, which member must consume.
func (s *jscan) object(member func(key []byte) bool) bool {
	if s.peek() != '{' {
		return false
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		key, ok := s.rawString()
		if !ok || s.peek() != ':' {
			return false
		}
		s.i++
		if !member(key) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// rawString scans a string without escapes or bytes above ASCII and
// returns its contents.
func (s *jscan) rawString() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	start := s.i + s.quoteLen()
	b := s.b
	j := start
	// the plain bytes, eight at a time
	for j+8 <= len(b) && !specialIn(binary.LittleEndian.Uint64(b[j:])) {
		j += 8
	}
	for ; j < len(b); j++ {
		if plainByte[b[j]] != 0 {
			continue
		}
		switch c := b[j]; {
		case c == '"':
			if s.esc {
				return nil, false
			}
			s.i = j + 1
			return b[start:j], true
		case c == '\\':
			if s.esc && j+1 < len(b) && b[j+1] == '"' {
				s.i = j + 2
				return b[start:j], true
			}
			return nil, false
		}
		// a control character or a byte above ASCII
		return nil, false
	}
	return nil, false
}

// specialIn reports whether any of the eight bytes of x is not plain (a
// quote, a backslash, a control character or a byte above ASCII): the
// bit tricks of "has a zero byte" and "has a byte less than n", exact for
// whether any byte is (not which).
func specialIn(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	return (x-ones*0x20)&^x&highs|zero(x^(ones*'"'))|zero(x^(ones*'\\'))|x&highs != 0
}

// plainByte is 1 for the bytes a raw string holds as they are: ASCII but
// for the quote, the backslash and the control characters.
var plainByte = func() (t [256]byte) {
	for c := 0x20; c < 0x80; c++ {
		if c != '"' && c != '\\' {
			t[c] = 1
		}
	}
	return t
}()

// str scans a string or null into *dst, interned through in when not nil.
func (s *jscan) str(dst *string, in *interner) bool {
	if s.null() {
		return true
	}
	v, ok := s.rawString()
	if !ok {
		return false
	}
	if in != nil {
		*dst = in.get(v)
	} else {
		*dst = string(v)
	}
	return true
}

// id is str of an audit ID, cut from in's blocks (idOf).
func (s *jscan) id(dst *string, in *interner) bool {
	if s.null() {
		return true
	}
	v, ok := s.rawString()
	if ok {
		*dst = in.idOf(v)
	}
	return ok
}

// path is str of a requestURI, uninterned, kept as "/" when it starts with
// one (scanAuditEventAs).
func (s *jscan) path(dst *string) bool {
	if s.null() {
		return true
	}
	v, ok := s.rawString()
	if !ok {
		return false
	}
	if len(v) > 0 && v[0] == '/' {
		*dst = "/"
	} else {
		*dst = string(v)
	}
	return true
}

// strings scans an array of strings, or null, into *dst; the array is
// interned as a whole.
func (s *jscan) strings(dst *[]string, in *interner) bool {
	if s.null() {
		return true
	}
	if s.peek() != '[' {
		return false
	}
	start := s.i
	s.i++
	n := 0
	if s.peek() == ']' {
		s.i++
	} else {
		for {
			if _, ok := s.rawString(); !ok {
				return false
			}
			n++
			switch s.peek() {
			case ',':
				s.i++
				continue
			case ']':
				s.i++
			default:
				return false
			}
			break
		}
	}
	raw := s.b[start:s.i]
	if v, ok := in.list(raw); ok {
		*dst = v
		return true
	}
	out := make([]string, 0, n)
	t := jscan{b: raw, i: 1, esc: s.esc}
	for range n {
		t.ws()
		if t.b[t.i] == ',' {
			t.i++
		}
		v, _ := t.rawString()
		out = append(out, in.get(v))
	}
	if len(in.lists) < maxInterned {
		in.lists[string(raw)] = out
	}
	*dst = out
	return true
}

// user scans an audit UserInfo: username and groups.
func (s *jscan) user(name *string, groups *[]string, in *interner, pointer bool) bool {
	if !pointer && s.null() {
		return true
	}
	it := fieldIter{names: userFieldNames[:], depth: 1, n: -1}
	for {
		f, ok := s.nextField(&it)
		switch {
		case !ok:
			return false
		case f < 0:
			return true
		case f == 0:
			ok = s.str(name, in)
		default:
			ok = s.strings(groups, in)
		}
		if !ok {
			return false
		}
	}
}

var userFieldNames = [...]string{"username", "groups"}

var objectRefFieldNames = [...]string{"resource", "namespace", "name", "apiGroup", "apiVersion", "subresource"}

func (s *jscan) objectRef(ev *auditEvent, in *interner) bool {
	if s.null() {
		return true
	}
	// the interner's, reused: the event is read before the next one is
	o := &in.ref
	*o = auditObjectRef{}
	ev.ObjectRef = o
	dst := [...]*string{&o.Resource, &o.Namespace, &o.Name, &o.APIGroup, &o.APIVersion, &o.Subresource}
	it := fieldIter{names: objectRefFieldNames[:], depth: 1, n: -1}
	for {
		f, ok := s.nextField(&it)
		if !ok {
			return false
		}
		if f < 0 {
			return true
		}
		if !s.str(dst[f], in) {
			return false
		}
	}
}

var responseStatusFieldNames = [...]string{"code"}

func (s *jscan) responseStatus(ev *auditEvent, in *interner) bool {
	if s.null() {
		return true
	}
	in.status = auditStatus{}
	ev.ResponseStatus = &in.status
	return s.members(responseStatusFieldNames[:], 1, func(int) bool {
		if s.null() {
			return true
		}
		// a plain integer of at most 9 digits: anything else is left to
		// encoding/json (fractions and exponents are errors for an int)
		s.ws()
		neg := false
		if s.i < len(s.b) && s.b[s.i] == '-' {
			neg = true
			s.i++
		}
		start, v := s.i, 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			v = v*10 + int(s.b[s.i]-'0')
			s.i++
		}
		n := s.i - start
		if n == 0 || n > 9 || (n > 1 && s.b[start] == '0') {
			return false
		}
		if s.i < len(s.b) {
			switch s.b[s.i] {
			case '.', 'e', 'E':
				return false
			}
		}
		if neg {
			v = -v
		}
		ev.ResponseStatus.Code = v
		return true
	})
}

// time scans an RFC 3339 string, or null, as time.Time's UnmarshalJSON
// does; in, if not nil, caches the start of the hour of the last one.
func (s *jscan) time(dst *time.Time, in *interner) bool {
	if s.null() {
		return true
	}
	start := s.i
	v, ok := s.rawString()
	if !ok {
		return false
	}
	var hour *utcHour
	if in != nil {
		hour = &in.hour
	}
	if t, ok := hour.parse(v); ok {
		*dst = t
		return true
	}
	if !s.esc {
		return dst.UnmarshalJSON(s.b[start:s.i]) == nil
	}
	// the quoted text, as time.Time's UnmarshalJSON takes it
	var q [64]byte
	if len(v)+2 > len(q) {
		return false
	}
	q[0] = '"'
	copy(q[1:], v)
	q[len(v)+1] = '"'
	return dst.UnmarshalJSON(q[:len(v)+2]) == nil
}

// parseUTC parses the RFC 3339 times the apiserver writes (UTC, "Z", with
// 1 to 9 digits of fraction or none) as time.Parse(time.RFC3339Nano, v)
// does; any other form, or a field out of range, is not ok and is left to
// time.Time's UnmarshalJSON (which then accepts or refuses it).
func parseUTC(v []byte) (time.Time, bool) { return utctime.Parse(v) }

// utcHour remembers the date of the last time parsed (utcHour.parse): the
// times of a log come day after day.
type utcHour struct{ utctime.Cache }

// parse is parseUTC, with the date's day count from c when not nil.
func (c *utcHour) parse(v []byte) (time.Time, bool) {
	if c == nil {
		return utctime.Parse(v)
	}
	return utctime.ParseCached(&c.Cache, v)
}

// annotations keeps the latency annotations of an object of strings.
func (s *jscan) annotations(dst *map[string]string) bool {
	if s.null() {
		return true
	}
	return s.object(func(key []byte) bool {
		// any string value is accepted by encoding/json, escapes included;
		// only the latency annotations are kept
		var keep string
		switch string(key) {
		case annotationQueueWait, annotationAuthentication, annotationImpersonation, annotationTotal:
			keep = string(key)
		}
		if keep == "" {
			if s.peek() != '"' {
				return false
			}
			return s.skipValue(1)
		}
		var v string
		if !s.str(&v, nil) {
			return false
		}
		if *dst == nil {
			*dst = map[string]string{}
		}
		if _, dup := (*dst)[keep]; dup {
			return false
		}
		(*dst)[keep] = v
		return true
	})
}

// maxDepth bounds the nesting skipValue follows.
const maxDepth = 64

// skipValue scans any JSON value, checking its syntax.
func (s *jscan) skipValue(depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch c := s.peek(); {
	case c == '{':
		return s.object(func([]byte) bool { return s.skipValue(depth + 1) })
	case c == '[':
		s.i++
		if s.peek() == ']' {
			s.i++
			return true
		}
		for {
			if !s.skipValue(depth + 1) {
				return false
			}
			switch s.peek() {
			case ',':
				s.i++
			case ']':
				s.i++
				return true
			default:
				return false
			}
		}
	case c == '"':
		return s.skipString()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	}
	return false
}

func (s *jscan) literal(lit string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return false
	}
	s.i += len(lit)
	return true
}

// skipString scans a string with any escapes, checking them.
func (s *jscan) skipString() bool {
	if s.esc {
		return s.skipEscapedString()
	}
	j := s.i + 1
	for j < len(s.b) {
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if j+1 >= len(s.b) {
				return false
			}
			switch s.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(s.b) {
					return false
				}
				for _, h := range s.b[j+2 : j+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				j += 6
			default:
				return false
			}
		default:
			j++
		}
	}
	return false
}

// skipEscapedString is skipString on a string of a value read escaped:
// its quotes are \", its escapes \\ followed by the escaped character
// (itself escaped when it is a quote or a backslash). A string escape that
// is not one of these (\/, \u, \n... of a character of the string) makes
// it give up, as does a bare quote (the end of the outer string).
func (s *jscan) skipEscapedString() bool {
	b := s.b
	j := s.i + 2
	for j < len(b) {
		c := b[j]
		switch {
		case c == '"' || c < 0x20:
			return false
		case c == '\\':
			if j+1 >= len(b) {
				return false
			}
			switch b[j+1] {
			case '"':
				s.i = j + 2
				return true
			case '/':
				// the string's own \/, a slash
				j += 2
				continue
			case '\\':
			default:
				return false
			}
			// an escape of the event's string: \\ then its character
			if j+2 >= len(b) {
				return false
			}
			switch b[j+2] {
			case '\\':
				if j+3 >= len(b) || (b[j+3] != '"' && b[j+3] != '\\') {
					return false
				}
				j += 4
			case '/', 'b', 'f', 'n', 'r', 't':
				j += 3
			case 'u':
				if j+7 > len(b) {
					return false
				}
				for _, h := range b[j+3 : j+7] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				j += 7
			default:
				return false
			}
		default:
			j++
		}
	}
	return false
}

// number scans a JSON number.
func (s *jscan) number() bool {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		if i = digitsFrom(b, i+1); i < 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i = digitsFrom(b, i); i < 0 {
			return false
		}
	}
	s.i = i
	return true
}

// digitsFrom returns the end of the run of digits at b[i:], -1 if there
// is none.
func digitsFrom(b []byte, i int) int {
	d := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == d {
		return -1
	}
	return i
}

// maxInterned bounds an interner: past it, values are allocated afresh.
const maxInterned = 1 << 16

// interner shares the strings that repeat from record to record (users,
// groups, user agents, verbs, level names), so the records a reader holds
// to restore arrival order cost little beyond their paths and IDs.
type interner struct {
	strs  map[string]string
	lists map[string][]string
	// recent is a direct-mapped cache in front of strs, and recentLists
	// of lists (by their raw JSON): most values are the few that every
	// event repeats (kind, stage, verb, user agent), and a comparison costs
	// less than a map's hash and probe
	recent      [256]string
	recentLists [64]recentList
	// ref and status hold the objectRef and responseStatus of the event
	// last scanned (auditEvent points at them): its reader turns it into a
	// request before it scans the next
	ref    auditObjectRef
	status auditStatus
	// hour caches the hour of the last timestamp scanned
	hour utcHour
	// ids is the block a join's audit IDs are cut from (idOf)
	ids []byte
}

// idBlock is the size of the blocks idOf cuts IDs from: a hundred UUIDs.
const idBlock = 4096

// idOf returns b as a string cut from a block shared with the IDs before
// it: one allocation per block, not per ID. For a join (pathOnly), which
// holds an event's ID only until the httplog line of its request takes it,
// or for the join's slack: a block is freed with the last of its IDs. A
// block is only ever appended to, so the strings cut from it never change.
func (in *interner) idOf(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if cap(in.ids)-len(in.ids) < len(b) {
		in.ids = make([]byte, 0, max(idBlock, len(b)))
	}
	n := len(in.ids)
	in.ids = append(in.ids, b...)
	return unsafe.String(&in.ids[n], len(b))
}

type recentList struct {
	raw  string
	list []string
}

// slot is the cache slot of b.
func slot(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	return (len(b)*31 + int(b[0])*7 + int(b[len(b)-1])*3 + int(b[len(b)/2])) & 255
}

// list returns the list interned for raw, if any.
func (in *interner) list(raw []byte) ([]string, bool) {
	c := &in.recentLists[slot(raw)&63]
	if c.list != nil && c.raw == string(raw) {
		return c.list, true
	}
	v, ok := in.lists[string(raw)]
	if ok {
		c.raw, c.list = string(raw), v
	}
	return v, ok
}

func newInterner() *interner {
	return &interner{strs: map[string]string{}, lists: map[string][]string{}}
}

func (in *interner) get(b []byte) string {
	c := &in.recent[slot(b)]
	if *c == string(b) {
		return *c
	}
	if s, ok := in.strs[string(b)]; ok {
		*c = s
		return s
	}
	s := string(b)
	if len(in.strs) < maxInterned {
		in.strs[s] = s
		*c = s
	}
	return s
}
