// Package output is the one -o flag group of every command, in the way of
// kubectl's genericclioptions.PrintFlags. A command prints its own formats
// (table, wide, text, json, yaml: unchanged byte for byte); the others come
// from k8s.io/cli-runtime's printers over the same JSON the command writes
// for -o json:
//
//   - jsonpath=TEMPLATE and jsonpath-file=FILE (printers.JSONPathPrinter);
//   - go-template=TEMPLATE and go-template-file=FILE (printers.GoTemplatePrinter);
//   - for lists of records, custom-columns=HEADER:.field,... and name.
//
// A list is given to the templates as kubectl gives one, {"kind": "List",
// "items": [...]}, so "-o jsonpath={.items[*].name}" reads as it does with
// kubectl. Everything printed by a template is made safe for a terminal
// (sanitize.Text).
//
// PrintObject is the one place a command's -o is dispatched: JSON (WriteJSON)
// and YAML (WriteYAML) of the command's value unless the command writes a
// document of its own in that format, the command's writers for its other own
// formats, and the printers above for the rest.
package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
)

// PriorityLevelName is -o name of a record whose "name" or "level" is a
// priority level, as kubectl prints the object's name.
func PriorityLevelName(item map[string]any) string {
	n, ok := item["name"].(string)
	if !ok {
		n, _ = item["level"].(string)
	}
	return "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/" + n
}

// Flags is the -o group of one command.
type Flags struct {
	// Output is the -o value.
	Output string
	// NoHeaders drops the header of tables and custom columns.
	NoHeaders bool

	own  []string
	list bool
	// Name returns the name of one record for -o name; nil: no -o name.
	Name func(item map[string]any) string
}

// NewFlags returns the group of a command that prints the formats own
// itself; own[0] is the default ("" for a text report). list says the
// output is a list of records (custom-columns and, with Name, name).
func NewFlags(list bool, own ...string) *Flags {
	f := &Flags{own: own, list: list}
	if len(own) > 0 {
		f.Output = own[0]
	}
	return f
}

// AddFlags registers -o (and --no-headers for lists).
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&f.Output, "output", "o", f.Output, "Output format: one of "+strings.Join(f.formats(), ", ")+".")
	if f.list {
		fs.BoolVar(&f.NoHeaders, "no-headers", f.NoHeaders, "Do not print the table header.")
	}
}

// formats lists the accepted -o values for messages and help.
func (f *Flags) formats() []string {
	var out []string
	for _, o := range f.own {
		switch o {
		case "":
			o = "'' (or table)"
		case "table":
			o = "table (or '')"
		}
		out = append(out, o)
	}
	out = append(out, "jsonpath=...", "jsonpath-file=...", "go-template=...", "go-template-file=...")
	if f.list {
		out = append(out, "custom-columns=...")
		if f.Name != nil {
			out = append(out, "name")
		}
	}
	return out
}

// Own returns the -o value when the command prints it itself. ” and table
// both name a command's human format, whichever it calls it, so that every
// command takes the same -o values (a report has no table, a table no ”).
func (f *Flags) Own() (string, bool) {
	if (f.Output == "" || f.Output == "table") && len(f.own) > 0 && (f.own[0] == "" || f.own[0] == "table") {
		return f.own[0], true
	}
	if f.Output == "" && len(f.own) > 0 {
		return f.own[0], true
	}
	for _, o := range f.own {
		if f.Output == o {
			return o, true
		}
	}
	return "", false
}

// Wide reports whether -o asks for the command's wide table.
func (f *Flags) Wide() bool {
	own, ok := f.Own()
	return ok && own == "wide"
}

// Validate checks -o.
func (f *Flags) Validate() error {
	if _, ok := f.Own(); ok {
		return nil
	}
	kind, arg, hasArg := strings.Cut(f.Output, "=")
	switch kind {
	case "jsonpath", "jsonpath-file", "go-template", "go-template-file":
	case "custom-columns":
		if !f.list {
			return f.bad()
		}
		if _, err := parseColumns(arg); err != nil {
			return err
		}
	case "name":
		if f.Name == nil || hasArg {
			return f.bad()
		}
		return nil
	default:
		return f.bad()
	}
	if !hasArg || arg == "" {
		return fmt.Errorf("--output %s needs a template: -o %s=TEMPLATE", kind, kind)
	}
	return nil
}

func (f *Flags) bad() error {
	return fmt.Errorf("--output must be one of %s; not %q", strings.Join(f.formats(), ", "), f.Output)
}

// Writers maps the -o formats a command prints itself to their writers.
type Writers map[string]func(io.Writer) error

// Text returns the writers of a command whose own formats other than json
// and yaml (its text report or table, and wide) are all printed by text,
// which reads the format from the flags when it has several.
func (f *Flags) Text(text func(io.Writer) error) Writers {
	ws := Writers{}
	for _, o := range f.own {
		if o != "json" && o != "yaml" {
			ws[o] = text
		}
	}
	return ws
}

// PrintObject prints v, the command's answer, in the -o format: a format the
// command prints itself by its writer in own, else json and yaml with
// WriteJSON and WriteYAML, else through kubectl's printers (Print).
func (f *Flags) PrintObject(w io.Writer, v any, own Writers) error {
	format, ok := f.Own()
	if !ok {
		return f.Print(w, v)
	}
	if write, ok := own[format]; ok {
		return write(w)
	}
	switch format {
	case "json":
		return WriteJSON(w, v)
	case "yaml":
		return WriteYAML(w, v)
	}
	// The command declared a format it has no writer for: a bug, not input.
	return fmt.Errorf("-o %s has no printer", format)
}

// Document is the writer of a document a command encodes itself in one of
// its own formats (a rule file, a dashboard), whose bytes are its contract
// with another program.
func Document(encode func() ([]byte, error)) func(io.Writer) error {
	return func(w io.Writer) error {
		b, err := encode()
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
}

// WriteJSON writes v as -o json prints it: indented by two spaces, with a
// final newline.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// WriteYAML writes v as -o yaml prints it: the YAML of its JSON, keys sorted,
// as kubectl prints objects (sigs.k8s.io/yaml).
func WriteYAML(w io.Writer, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding YAML: %w", err)
	}
	_, err = w.Write(b)
	return err
}

// Print prints v (what -o json prints) in a format the command does not
// print itself.
func (f *Flags) Print(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var data any
	if err := json.Unmarshal(b, &data); err != nil {
		return err
	}
	obj, ok := data.(map[string]any)
	if !ok {
		items, _ := data.([]any)
		if items == nil {
			items = []any{}
		}
		obj = map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
	}
	var buf bytes.Buffer
	if err := f.print(&buf, obj); err != nil {
		return err
	}
	_, err = io.WriteString(w, sanitize.Text(buf.String()))
	return err
}

func (f *Flags) print(w io.Writer, obj map[string]any) error {
	kind, arg, _ := strings.Cut(f.Output, "=")
	if strings.HasSuffix(kind, "-file") {
		b, err := os.ReadFile(arg)
		if err != nil {
			return fmt.Errorf("--output %s: %w", kind, err)
		}
		kind, arg = strings.TrimSuffix(kind, "-file"), string(b)
	}
	u := &unstructured.Unstructured{Object: obj}
	switch kind {
	case "jsonpath", "go-template":
		var p printers.ResourcePrinter
		var err error
		if kind == "jsonpath" {
			p, err = printers.NewJSONPathPrinter(arg)
		} else {
			p, err = printers.NewGoTemplatePrinter([]byte(arg))
		}
		if err == nil {
			err = p.PrintObj(u, w)
		}
		if err != nil {
			return fmt.Errorf("--output %s: %s", kind, textfmt.FirstLine(strings.TrimSpace(err.Error())))
		}
		return nil
	case "custom-columns":
		cols, err := parseColumns(arg)
		if err != nil {
			return err
		}
		return printColumns(w, cols, items(obj), f.NoHeaders)
	case "name":
		for _, it := range items(obj) {
			if m, ok := it.(map[string]any); ok {
				fmt.Fprintln(w, f.Name(m))
			}
		}
		return nil
	}
	return f.bad()
}

func items(obj map[string]any) []any {
	it, _ := obj["items"].([]any)
	return it
}

type column struct {
	header string
	path   *jsonpath.JSONPath
}

// parseColumns parses HEADER:.field,HEADER:{.field} as kubectl's
// custom-columns does.
func parseColumns(spec string) ([]column, error) {
	if spec == "" {
		return nil, fmt.Errorf("--output custom-columns needs columns: -o custom-columns=NAME:.name,WAITING:.waitingRequests")
	}
	var cols []column
	for _, part := range strings.Split(spec, ",") {
		h, expr, ok := strings.Cut(part, ":")
		if !ok || h == "" || expr == "" {
			return nil, fmt.Errorf("--output custom-columns: %q is not HEADER:.field", part)
		}
		if !strings.HasPrefix(expr, "{") {
			expr = "{" + expr + "}"
		}
		p := jsonpath.New(h).AllowMissingKeys(true)
		if err := p.Parse(expr); err != nil {
			return nil, fmt.Errorf("--output custom-columns: column %q: %s", h, textfmt.FirstLine(strings.TrimSpace(err.Error())))
		}
		cols = append(cols, column{header: h, path: p})
	}
	return cols, nil
}

func printColumns(w io.Writer, cols []column, items []any, noHeaders bool) error {
	tw := textfmt.NewKubectlTable(w)
	if !noHeaders {
		hs := make([]string, len(cols))
		for i, c := range cols {
			hs[i] = c.header
		}
		fmt.Fprintln(tw, strings.Join(hs, "\t"))
	}
	for _, it := range items {
		cells := make([]string, len(cols))
		for i, c := range cols {
			var b bytes.Buffer
			if err := c.path.Execute(&b, it); err != nil {
				return fmt.Errorf("--output custom-columns: column %q: %s", c.header, textfmt.FirstLine(strings.TrimSpace(err.Error())))
			}
			cells[i] = b.String()
			if cells[i] == "" {
				cells[i] = "<none>"
			}
			cells[i] = sanitize.Line(cells[i])
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}
