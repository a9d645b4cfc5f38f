// Package render prints snapshots (package dump) and APF statistics
// (package metrics) as tables, and hands their rows to package output for
// every other -o format. Printers take a result and an io.Writer and do no
// I/O of their own; every server-supplied string is escaped before it
// reaches a terminal.
package render

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
)

// Flags returns the -o group of the tables printed here, set to format
// ("": the default, table): table, wide, json and yaml, and kubectl's
// printers over the rows (custom-columns, jsonpath, go-template).
func Flags(format string) *output.Flags {
	f := output.NewFlags(true, "table", "wide", "json", "yaml")
	if format != "" {
		f.Output = format
	}
	return f
}

// Print prints rows in the -o format of f (output.Flags.PrintObject): the
// table that table builds (wide with -o wide) for table and wide, the rows
// themselves for json, yaml and kubectl's printers.
//
// No rows print as an empty list ([]), as every other -o json list of the
// project does, never as null.
func Print(w io.Writer, f *output.Flags, rows any, table func(wide bool) *Table) error {
	if v := reflect.ValueOf(rows); v.Kind() == reflect.Slice && v.IsNil() {
		rows = reflect.MakeSlice(v.Type(), 0, 0).Interface()
	}
	return f.PrintObject(w, rows, f.Text(func(w io.Writer) error { return table(f.Wide()).write(w, f.NoHeaders) }))
}

// table is rows of cells under a header, printed as kubectl prints.
type table struct {
	header []string
	rows   [][]string
}

// newTable starts a table with the given columns, after an INSTANCE column
// when the rows come from several apiservers.
func newTable(multi bool, cols ...string) *table {
	t := &table{}
	if multi {
		t.header = append(t.header, "INSTANCE")
	}
	t.header = append(t.header, cols...)
	return t
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer, noHeaders bool) error {
	tw := textfmt.NewKubectlTable(w)
	if !noHeaders {
		fmt.Fprintln(tw, strings.Join(t.header, "\t"))
	}
	for _, r := range t.rows {
		for i := range r {
			r[i] = sanitize.Line(r[i])
		}
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// num formats a number for a table: integers plainly, others with two
// decimals, NaN (no data, or a zero denominator) as "-" (textfmt.Num).
func num(f float64) string { return textfmt.Num(f, 2) }

// pct formats a ratio as a percentage.
func pct(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "-"
	}
	return strconv.FormatFloat(f*100, 'f', 0, 64) + "%"
}

// seconds formats a duration in seconds for a table.
func seconds(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "-"
	}
	if f < 1 {
		return strconv.FormatFloat(f*1000, 'f', 0, 64) + "ms"
	}
	return strconv.FormatFloat(f, 'f', 2, 64) + "s"
}

// jsonFloat is a float that marshals NaN as null (JSON has no NaN).
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

// The table kit, exported for the tables printed beside their models
// (pkg/levels/render).

// Table is a table of cells, with an INSTANCE column when multi.
type Table = table

// NewTable returns a table with the columns cols.
func NewTable(multi bool, cols ...string) *Table { return newTable(multi, cols...) }

// Add appends a row.
func (t *table) Add(cells ...string) { t.add(cells...) }

// Write prints the table.
func (t *table) Write(w io.Writer, noHeaders bool) error { return t.write(w, noHeaders) }

// Num is the cell of a figure.
func Num(f float64) string { return num(f) }

// Pct is the cell of a fraction.
func Pct(f float64) string { return pct(f) }

// Seconds is the cell of a duration in seconds.
func Seconds(f float64) string { return seconds(f) }
