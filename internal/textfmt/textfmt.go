// Package textfmt is the formatting every printer shares: plurals, the
// first line of a message, figures (Num), and the tabwriter setups of the
// tables. It
// imports the standard library alone, so that the pure packages (pkg/dump,
// pkg/explain, pkg/capacity, pkg/engine/...) use it as the commands and the
// renderers do; pkg/output, which brings cli-runtime and client-go, cannot
// be imported by them.
package textfmt

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Plural returns one when n is 1, else many.
func Plural[N ~int | ~int64 | ~uint64](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Count is n and its noun: "1 request", "3 requests".
func Count[N ~int | ~int64 | ~uint64](n N, one, many string) string {
	return fmt.Sprintf("%d %s", n, Plural(n, one, many))
}

// EveryOne is "its 1 seat", "every one of its 3 seats": whose n of a
// noun, each of them, for a phrase such as "… taken".
func EveryOne(whose string, n int, one, many string) string {
	if n == 1 {
		return whose + " 1 " + one
	}
	return fmt.Sprintf("every one of %s %d %s", whose, n, many)
}

// PluralFigure is one when the figure v is present and 1, else many: the
// noun after a figure that may be absent ("1 seat", "- seats").
func PluralFigure(v *float64, one, many string) string {
	if v != nil && *v == 1 {
		return one
	}
	return many
}

// FirstLine is s up to its first newline.
func FirstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// NewTable is the tabwriter of the plugin's own tables: columns two spaces
// apart, no minimum width.
func NewTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

// NewTableRight is NewTable with the cells aligned right (explain's
// figures).
func NewTableRight(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
}

// NewKubectlTable is the tabwriter of kubectl's printers (a minimum width
// of 6, columns three spaces apart), for the tables printed as kubectl
// prints a resource list.
func NewKubectlTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
}

// NewAPIServerDumpTable is the tabwriter the kube-apiserver writes its
// /debug/api_priority_and_fairness dumps with
// (text/tabwriter.NewWriter(w, 8, 0, 1, ' ', 0)), for the dumps this
// writes in the apiserver's own format.
func NewAPIServerDumpTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 8, 0, 1, ' ', 0)
}

// Num formats a figure of a table or a view: "-" when it is absent (NaN)
// or infinite, an integer plainly, anything else with decimals digits
// after the point. It is the printers' one rule for figures; each printer
// names its precision (tables two decimals, the live view one).
func Num(f float64, decimals int) string {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return "-"
	case f == math.Trunc(f) && math.Abs(f) < 1e15:
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'f', decimals, 64)
}

// JoinAnd joins words as a sentence lists them: "a", "a and b", "a, b and c".
func JoinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
