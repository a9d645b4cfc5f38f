// Package sanitize makes server-supplied strings safe to print on a
// terminal: names, user names and paths come from the cluster, a bundle or a
// log, and may hold escape sequences. It is the one sanitiser of the
// project; every printer calls it.
package sanitize

import "strings"

// Line makes s safe on one terminal line and in one table cell: a tab
// becomes a space, other control characters (escape sequences among them,
// newlines too) become '?'.
func Line(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' {
			return ' '
		}
		if isControl(r) {
			return '?'
		}
		return r
	}, s)
}

// Text is Line for multi-line output: newlines and tabs are kept.
func Text(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if isControl(r) {
			return '?'
		}
		return r
	}, s)
}

// isControl reports C0 and C1 control characters and DEL.
func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0)
}
