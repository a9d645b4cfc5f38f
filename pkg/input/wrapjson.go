package input

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/kubectl-apf/kubectl-apf/internal/jsonstr"
)

// This file holds the JSON pieces the wrapped formats share: a fast skip
// over a string, the unescaping of a string (an audit event carried as a
// string by CloudWatch, a log pipeline or a docker log), one pass over an
// object's top-level keys, and a streaming splitter that yields the
// elements of the array of records inside a JSON document (a CloudWatch
// export, a JSON array, an Elasticsearch answer) without decoding them.

// stringEnd returns the index just past the closing quote of the string
// that starts at b[i] (a quote), or -1 when b ends first. Escapes are not
// checked here (jsonstr checks them).
func stringEnd(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		// an escaped quote has an odd run of backslashes before it
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
}

// field is the raw value of one key of an object: a string's contents
// (between the quotes, escapes unresolved) or any other value's bytes.
type field struct {
	raw   []byte
	isStr bool
	set   bool
	// plain: raw is a string's text, escapes already resolved (a CSV cell)
	plain bool
	// decoded: raw, still escaped, holds the audit event an escEvent holds
	decoded bool
}

// escEvent is the audit event of a record that carries it as a string,
// decoded where it stands (scanEscapedEvent) instead of unescaped first.
type escEvent struct {
	in *interner
	ev auditEvent
	// used: a field of the record holds ev
	used bool
	// lazy: the record's message may stay escaped (no split line is
	// pending, whose pieces are joined unescaped)
	lazy bool
}

// unescapeField appends to buf the unescaped contents of a string field
// (whose closing quote follows raw), as scanFields would have unescaped
// it, and returns buf and them.
func unescapeField(v field, buf []byte) ([]byte, []byte, bool) {
	from := len(buf)
	_, nb, ok := jsonstr.Append(buf, v.raw[:len(v.raw)+1], 0)
	return nb, nb[from:], ok
}

// text returns the field as a string (escapes resolved), "" when it is
// not a string.
func (f field) text() string {
	if !f.set || !f.isStr {
		return ""
	}
	if f.plain || bytes.IndexByte(f.raw, '\\') < 0 {
		return string(f.raw)
	}
	b, _ := jsonstr.AppendContents(nil, f.raw)
	return string(b)
}

// topFields scans the object b and fills out[i] with the value of the key
// names[i]. Other keys are skipped. It reports false when b is not an
// object (syntax errors inside skipped strings are not seen).
func topFields(b []byte, names []string, out []field) bool {
	_, ok := scanFields(b, names, out, 0, nil)
	return ok
}

// scanFields is topFields that also returns where the object ends in b
// (what follows is not looked at), and unescapes the string values of the
// keys whose bit is set in unq into *buf as it finds their end, in one
// pass (their fields are plain).
func scanFields(b []byte, names []string, out []field, unq uint64, buf *[]byte) (int, bool) {
	return scanFieldsDec(b, names, out, unq, buf, nil)
}

// scanFieldsDec is scanFields that first tries to decode the first value
// to unescape as an audit event, escaped, into dec (when not nil): that
// field is then left escaped, and decoded. Where the decoding gives up, the
// value is unescaped as scanFields does.
func scanFieldsDec(b []byte, names []string, out []field, unq uint64, buf *[]byte, dec *escEvent) (int, bool) {
	s := jscan{b: b}
	if s.peek() != '{' {
		return 0, false
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return s.i, true
	}
	for {
		if s.peek() != '"' {
			return 0, false
		}
		e := stringEnd(s.b, s.i)
		if e < 0 {
			return 0, false
		}
		key := s.b[s.i+1 : e-1]
		s.i = e
		if s.peek() != ':' {
			return 0, false
		}
		s.i++
		idx := -1
		for k, n := range names {
			if string(key) == n {
				idx = k
				break
			}
		}
		start := s.peek()
		var f field
		switch {
		case start == '"' && idx >= 0 && unq&(1<<idx) != 0 && !out[idx].set:
			if dec != nil && !dec.used {
				if e, ok := scanEscapedEvent(s.b, s.i+1, &dec.ev, dec.in); ok {
					dec.used = true
					f = field{raw: s.b[s.i+1 : e-1], isStr: true, set: true, decoded: true}
					s.i = e
					break
				}
			}
			from := len(*buf)
			e, nb, ok := jsonstr.Append(*buf, s.b, s.i+1)
			if !ok {
				return 0, false
			}
			*buf = nb
			f = field{raw: nb[from:len(nb):len(nb)], isStr: true, set: true, plain: true}
			s.i = e
		case start == '"':
			e := stringEnd(s.b, s.i)
			if e < 0 {
				return 0, false
			}
			f = field{raw: s.b[s.i+1 : e-1], isStr: true, set: true}
			s.i = e
		default:
			from := s.i
			if !s.skipValue(1) {
				return 0, false
			}
			f = field{raw: s.b[from:s.i], set: true}
		}
		if idx >= 0 && !out[idx].set {
			out[idx] = f
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return s.i, true
		default:
			return 0, false
		}
	}
}

// objectKeys lists the top-level keys of the object b (at most max), for
// a message that names what an input holds.
func objectKeys(b []byte, max int) []string {
	var keys []string
	s := jscan{b: b}
	if s.peek() != '{' {
		return nil
	}
	s.i++
	for len(keys) < max {
		if s.peek() != '"' {
			break
		}
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
		if s.peek() == '"' {
			e := stringEnd(s.b, s.i)
			if e < 0 {
				break
			}
			s.i = e
		} else if !s.skipValue(1) {
			break
		}
		if s.peek() != ',' {
			break
		}
		s.i++
	}
	return keys
}

// docStream yields, one by one, the records of a JSON document read from
// r: the elements of a top-level array, or of the array under one of the
// keys of a top-level object (CloudWatch's "events", Event Hubs' and
// Azure storage's "records", an Elasticsearch answer's "hits"."hits"). An
// element's bytes are valid until the next call.
type docStream struct {
	r      io.Reader
	buf    []byte
	pos    int // next byte to read
	eof    bool
	rerr   error
	max    int
	line   int64 // records yielded
	name   string
	path   []string // the keys that lead to the array, for messages
	state  int
	arrays [][]string // the key paths of the arrays of records
	depth  int        // nesting of the objects entered on the way
	// topArray: the document is an array of records itself
	topArray bool
	// pending: a record was returned and the separator after it is
	// still to be read (reading it may move the buffer, and with it the
	// record, so it waits for the next call)
	pending bool
}

const (
	docStart = iota
	docInArray
	docDone
	// docBare: the document is one object, a record itself
	docBare
)

// recordArrays are the key paths, from the top-level object, of the
// arrays of records a document may hold.
var recordArrays = [][]string{{"events"}, {"records"}, {"hits", "hits"}, {"resourceLogs"}, {"results"}}

func newDocStream(r io.Reader, name string, maxBytes int) *docStream {
	return &docStream{r: r, buf: make([]byte, 0, 256<<10), name: name, max: maxBytes, arrays: recordArrays}
}

// fill reads more input after compacting the consumed bytes.
func (d *docStream) fill() bool {
	if d.eof {
		return false
	}
	if d.pos > 0 {
		n := copy(d.buf, d.buf[d.pos:])
		d.buf, d.pos = d.buf[:n], 0
	}
	if len(d.buf) == cap(d.buf) {
		if cap(d.buf) >= d.max {
			d.rerr = fmt.Errorf("%s: a record longer than the limit of %d bytes", d.name, d.max)
			d.eof = true
			return false
		}
		nb := make([]byte, len(d.buf), min(2*cap(d.buf), d.max))
		copy(nb, d.buf)
		d.buf = nb
	}
	n, err := d.r.Read(d.buf[len(d.buf):cap(d.buf)])
	d.buf = d.buf[:len(d.buf)+n]
	if err != nil {
		d.eof = true
		if !errors.Is(err, io.EOF) {
			d.rerr = fmt.Errorf("reading %s: %w", d.name, err)
		}
	}
	return n > 0 || !d.eof
}

// peekByte skips white space and returns the next byte, reading more as
// needed; 0 at the end.
func (d *docStream) peekByte() byte {
	for {
		for d.pos < len(d.buf) {
			switch c := d.buf[d.pos]; c {
			case ' ', '\t', '\n', '\r':
				d.pos++
			default:
				return c
			}
		}
		if !d.fill() {
			return 0
		}
	}
}

// value returns the bytes of the next JSON value (an object, array,
// string or scalar), reading as much as it spans.
func (d *docStream) value() ([]byte, error) {
	if d.peekByte() == 0 {
		return nil, d.cut("a value")
	}
	start := d.pos
	i := d.pos
	depth := 0
	for {
		if i >= len(d.buf) {
			off := i - start
			d.pos = start
			if !d.fill() {
				return nil, d.cut("a record")
			}
			start = d.pos
			i = start + off
			continue
		}
		c := d.buf[i]
		switch c {
		case '"':
			e := stringEnd(d.buf, i)
			if e < 0 {
				off := i - start
				d.pos = start
				if !d.fill() {
					return nil, d.cut("a string")
				}
				start = d.pos
				i = start + off
				continue
			}
			i = e
			if depth == 0 {
				d.pos = i
				return d.buf[start:i], nil
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				d.pos = i
				return d.buf[start:i], nil
			}
			depth--
			if depth == 0 {
				d.pos = i + 1
				return d.buf[start:d.pos], nil
			}
		case ',', ':', ' ', '\t', '\n', '\r':
			if depth == 0 {
				d.pos = i
				return d.buf[start:i], nil
			}
		}
		i++
	}
}

func (d *docStream) cut(what string) error {
	if d.rerr != nil {
		return d.rerr
	}
	return fmt.Errorf("%s: the JSON document ends inside %s (cut short?)", d.name, what)
}

// next returns the next record, io.EOF after the last.
func (d *docStream) next() ([]byte, error) {
	if err := d.separator(); err != nil {
		return nil, err
	}
	for {
		switch d.state {
		case docDone:
			if d.peekByte() == 0 {
				if d.rerr != nil {
					return nil, d.rerr
				}
				return nil, io.EOF
			}
			// another document follows
			d.state, d.path, d.depth = docStart, nil, 0
		case docStart:
			if err := d.start(); err != nil {
				return nil, err
			}
		case docBare:
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			d.state = docDone
			d.line++
			return v, nil
		case docInArray:
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			d.pending = true
			d.line++
			return v, nil
		}
	}
}

// separator reads what follows the record returned last: a comma, or the
// end of the array.
func (d *docStream) separator() error {
	if !d.pending {
		return nil
	}
	d.pending = false
	return d.afterRecord()
}

// nextWith is next for a record read by scan, which is given the rest of
// the buffer and returns how much of it the record took (false when it is
// not a record it reads, or does not end within the buffer): one pass over
// a record instead of two. Where scan fails on the buffer, next's splitter
// takes the record (reading as much as it spans) and scan is called on it
// alone; ok says whether that read it.
func (d *docStream) nextWith(scan func(b []byte) (int, bool)) (rec []byte, ok bool, err error) {
	if err := d.separator(); err != nil {
		return nil, false, err
	}
	for d.state != docInArray && d.state != docBare {
		if d.state == docDone {
			if d.peekByte() == 0 {
				if d.rerr != nil {
					return nil, false, d.rerr
				}
				return nil, false, io.EOF
			}
			d.state, d.path, d.depth = docStart, nil, 0
		}
		if err := d.start(); err != nil {
			return nil, false, err
		}
	}
	// a record of an array is followed by a separator; a bare one ends
	// its document
	bare := d.state == docBare
	if bare {
		d.state = docDone
	}
	if d.peekByte() == '{' {
		rest := d.buf[d.pos:]
		if n, ok := scan(rest); ok {
			d.pos += n
			d.pending = !bare
			d.line++
			return rest[:n], true, nil
		}
	}
	v, err := d.value()
	if err != nil {
		return nil, false, err
	}
	_, ok = scan(v)
	d.pending = !bare
	d.line++
	return v, ok, nil
}

// start reads the start of a document: an array of records, an object
// that holds one (entered), or an object that is a record itself (bare:
// an audit event, a log entry or a pipeline's record laid over several
// lines, or written one after the other).
func (d *docStream) start() error {
	switch d.peekByte() {
	case '[':
		d.pos++
		d.state = docInArray
		d.topArray = true
		if d.peekByte() == ']' {
			d.pos++
			d.state = docDone
		}
		return nil
	case '{':
		if d.holdsRecords() {
			return d.enter(nil)
		}
		d.state = docBare
		return nil
	case 0:
		return d.cut("the document")
	}
	return fmt.Errorf("%s: not a JSON document: it starts with %q", d.name, clip(d.buf[d.pos:min(len(d.buf), d.pos+40)], 40))
}

// holdsRecords reports whether the object at the reader's position holds
// an array of records (one of d.arrays) rather than being a record. Its
// first keys tell most; otherwise the object is read whole (up to the
// limit of a record, without consuming it) and its keys looked at. An
// object longer than a record is taken for a document of records.
func (d *docStream) holdsRecords() bool {
	// the first keys, up to the first whose value is an array or an
	// object: that one may lead to the records
	if keys := objectKeysLoose(d.buf[d.pos:], 8); len(keys) > 0 {
		s := jscan{b: d.buf[d.pos:]}
		last := keys[len(keys)-1]
		// the value of the last key seen starts after its colon
		if i := bytes.Index(s.b, []byte(`"`+last+`"`)); i >= 0 {
			s.i = i + len(last) + 2
			if s.peek() == ':' {
				s.i++
				if c := s.peek(); c == '[' || c == '{' {
					for _, a := range d.arrays {
						if a[0] == last && (len(a) == 1) == (c == '[') {
							return true
						}
					}
				}
			}
		}
	}
	end, ok := d.span()
	if !ok {
		return true
	}
	obj := d.buf[d.pos:end]
	for _, a := range d.arrays {
		v := obj
		for i, k := range a {
			var f [1]field
			if !topFields(v, []string{k}, f[:]) || !f[0].set || f[0].isStr || len(f[0].raw) == 0 {
				break
			}
			v = f[0].raw
			if i == len(a)-1 && v[0] == '[' {
				return true
			}
		}
	}
	return false
}

// span returns the end of the object or array at the reader's position,
// reading more input as needed without consuming any; false when it does
// not end within the limit of a record, or the input ends first.
func (d *docStream) span() (int, bool) {
	i, depth := d.pos, 0
	for {
		if i >= len(d.buf) {
			if d.eof || d.pos == 0 && len(d.buf) == cap(d.buf) && cap(d.buf) >= d.max {
				return 0, false
			}
			shift := d.pos
			if !d.fill() {
				return 0, false
			}
			i -= shift
			continue
		}
		switch d.buf[i] {
		case '"':
			e := stringEnd(d.buf, i)
			if e < 0 {
				if d.eof || d.pos == 0 && len(d.buf) == cap(d.buf) && cap(d.buf) >= d.max {
					return 0, false
				}
				shift := d.pos
				if !d.fill() {
					return 0, false
				}
				i -= shift
				continue
			}
			i = e
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth <= 0 {
				return i + 1, true
			}
		}
		i++
	}
}

// afterRecord consumes the comma or the bracket after a record.
func (d *docStream) afterRecord() error {
	switch d.peekByte() {
	case ',':
		d.pos++
	case ']':
		d.pos++
		return d.leave()
	default:
		return d.cut("the array of records")
	}
	return nil
}

// enter walks the object at the reader's position, at key path prefix,
// until the array of records (state docInArray) or the object's end.
func (d *docStream) enter(prefix []string) error {
	d.pos++ // {
	d.depth++
	d.path = prefix
	return d.members()
}

// members reads the members of the object entered last, from the next
// key, until an array of records begins or the document's top-level
// object ends.
func (d *docStream) members() error {
	for {
		switch d.peekByte() {
		case '}':
			d.pos++
			d.depth--
			if d.depth == 0 {
				d.state = docDone
				return nil
			}
			// a nested object on the way ends: go on in its parent
			d.path = d.path[:len(d.path)-1]
			continue
		case ',':
			d.pos++
			continue
		case '"':
		default:
			return d.cut("an object")
		}
		kv, err := d.value()
		if err != nil {
			return err
		}
		key := field{raw: kv[1 : len(kv)-1], isStr: true, set: true}.text()
		if d.peekByte() != ':' {
			return d.cut("an object")
		}
		d.pos++
		path := append(append([]string(nil), d.path...), key)
		isArray, isPrefix := false, false
		for _, a := range d.arrays {
			if pathEq(a, path) {
				isArray = true
			} else if len(a) > len(path) && pathEq(a[:len(path)], path) {
				isPrefix = true
			}
		}
		switch c := d.peekByte(); {
		case isArray && c == '[':
			d.pos++
			d.path = path
			d.state = docInArray
			if d.peekByte() == ']' {
				d.pos++
				return d.leave()
			}
			return nil
		case isPrefix && c == '{':
			d.pos++
			d.depth++
			d.path = path
			continue
		}
		if _, err := d.value(); err != nil {
			return err
		}
	}
}

// leave ends the document after its array of records: what follows it
// (CloudWatch's searchedLogStreams and nextToken, an answer's
// aggregations) is skipped, holding no records. Another document may
// follow (pages of an export written one after the other).
func (d *docStream) leave() error {
	d.state = docDone
	if d.topArray {
		d.topArray = false
		return nil
	}
	for d.depth > 0 {
		switch d.peekByte() {
		case '}':
			d.pos++
			d.depth--
		case ',':
			d.pos++
		case '"':
			if _, err := d.value(); err != nil {
				return err
			}
			if d.peekByte() != ':' {
				return d.cut("an object")
			}
			d.pos++
			if _, err := d.value(); err != nil {
				return err
			}
		default:
			return d.cut("the document")
		}
	}
	return nil
}

func pathEq(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
