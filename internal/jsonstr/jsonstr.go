// Package jsonstr decodes JSON strings as encoding/json decodes them into
// a Go string, without encoding/json: the one unquoter of the readers
// (pkg/input's wrappers, pkg/vlogs's rows).
package jsonstr

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Append decodes the JSON string whose contents start at b[i] (past its
// opening quote), appends them to dst and returns the index past its
// closing quote. The decoding is encoding/json's: the escapes resolved,
// a \u escape of a lone surrogate and each byte of invalid UTF-8 replaced
// by U+FFFD. ok is false, as encoding/json fails, on an escape JSON does
// not allow, a control character, or a string b ends in.
func Append(dst, b []byte, i int) (end int, out []byte, ok bool) {
	j, out, ok := decode(dst, b, i)
	if !ok || j >= len(b) {
		return 0, out, false
	}
	return j + 1, out, true
}

// AppendContents appends to dst the decoded contents s of a JSON string
// (its bytes between the quotes), as Append decodes them; ok is false
// when s is not the contents of a JSON string.
func AppendContents(dst, s []byte) ([]byte, bool) {
	j, out, ok := decode(dst, s, 0)
	return out, ok && j == len(s)
}

// decode decodes from b[i] up to the first unescaped quote or the end of
// b, and returns where it stopped. The contents are written byte by byte
// into room made once (a string decodes to no more bytes than it has, but
// for invalid UTF-8, whose U+FFFD makes more room): a string carrying an
// event has an escape every few bytes, too often for copies by runs to
// pay.
func decode(dst, b []byte, i int) (int, []byte, bool) {
	w := len(dst)
	if need := w + len(b) - i; cap(dst) < need {
		nd := make([]byte, w, need+need/4)
		copy(nd, dst)
		dst = nd
	}
	out := dst[:cap(dst)]
	for i < len(b) {
		c := b[i]
		switch {
		case c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\':
			out[w] = c
			w++
			i++
			continue
		case c == '"':
			return i, out[:w], true
		case c < 0x20:
			return i, out[:w], false
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				// U+FFFD is 3 bytes in the room of 1
				out = room(out, w, utf8.UTFMax+len(b)-i)
				w += utf8.EncodeRune(out[w:], r)
			} else {
				w += copy(out[w:], b[i:i+n])
			}
			i += n
			continue
		}
		if i+1 >= len(b) {
			return i, out[:w], false
		}
		switch e := b[i+1]; e {
		case '"', '\\', '/':
			out[w] = e
		case 'b':
			out[w] = '\b'
		case 'f':
			out[w] = '\f'
		case 'n':
			out[w] = '\n'
		case 'r':
			out[w] = '\r'
		case 't':
			out[w] = '\t'
		case 'u':
			r, ok := hex4(b[i+2:])
			if !ok {
				return i, out[:w], false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				// a pair is one rune; a lone surrogate is U+FFFD, and
				// the escape after it is read on its own
				r2 := rune(-1)
				if i+6 <= len(b) && b[i] == '\\' && b[i+1] == 'u' {
					if v, ok := hex4(b[i+2:]); ok {
						r2 = v
					}
				}
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					i += 6
					r = d
				} else {
					r = utf8.RuneError
				}
			}
			w += utf8.EncodeRune(out[w:], r)
			continue
		default:
			return i, out[:w], false
		}
		w++
		i += 2
	}
	return i, out[:w], true
}

// room returns out, grown when it has less than need bytes past w.
func room(out []byte, w, need int) []byte {
	if len(out)-w >= need {
		return out
	}
	n := make([]byte, w+need+need/4)
	copy(n, out[:w])
	return n
}

// hex4 is the rune of the 4 hexadecimal digits b starts with.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	return r, true
}
