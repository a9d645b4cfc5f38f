package output

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type row struct {
	Name    string `json:"name"`
	Waiting int    `json:"waitingRequests"`
}

var rows = []row{{"workload-low", 3}, {"evil\x1b[31m", 0}}

func printOut(t *testing.T, f *Flags, v any) string {
	t.Helper()
	if err := f.Validate(); err != nil {
		t.Fatalf("-o %s: %v", f.Output, err)
	}
	var b bytes.Buffer
	if err := f.Print(&b, v); err != nil {
		t.Fatalf("-o %s: %v", f.Output, err)
	}
	return b.String()
}

func TestListFormats(t *testing.T) {
	tmpl := filepath.Join(t.TempDir(), "t.tmpl")
	if err := os.WriteFile(tmpl, []byte(`{{range .items}}{{.name}};{{end}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ output, want string }{
		{`jsonpath={.items[*].name}`, "workload-low evil?[31m"},
		{`jsonpath={range .items[*]}{.name}={.waitingRequests}{"\n"}{end}`, "workload-low=3\nevil?[31m=0\n"},
		{`go-template={{range .items}}{{.name}} {{.waitingRequests}}{{"\n"}}{{end}}`, "workload-low 3\nevil?[31m 0\n"},
		{"go-template-file=" + tmpl, "workload-low;evil?[31m;"},
		{"custom-columns=LEVEL:.name,WAITING:.waitingRequests,MISSING:.nope", "LEVEL          WAITING   MISSING\nworkload-low   3         <none>\nevil?[31m      0         <none>\n"},
		{"name", "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/workload-low\nprioritylevelconfiguration.flowcontrol.apiserver.k8s.io/evil?[31m\n"},
	}
	for _, tt := range tests {
		f := NewFlags(true, "table", "json")
		f.Name = PriorityLevelName
		f.Output = tt.output
		if got := printOut(t, f, rows); got != tt.want {
			t.Errorf("-o %s:\ngot  %q\nwant %q", tt.output, got, tt.want)
		}
	}
	f := NewFlags(true, "table")
	f.Output, f.NoHeaders = "custom-columns=L:.name", true
	if got := printOut(t, f, rows[:1]); got != "workload-low\n" {
		t.Errorf("--no-headers custom-columns = %q", got)
	}
}

func TestObjectFormats(t *testing.T) {
	f := NewFlags(false, "", "json")
	f.Output = "jsonpath={.name}"
	if got := printOut(t, f, rows[0]); got != "workload-low" {
		t.Errorf("jsonpath on an object = %q", got)
	}
	if own, ok := (&Flags{own: []string{"", "json"}}).Own(); !ok || own != "" {
		t.Errorf("default -o = %q, %v", own, ok)
	}
}

func TestBadOutput(t *testing.T) {
	tests := []struct {
		list    bool
		output  string
		wantErr string
	}{
		{false, "wide", `--output must be one of '' (or table), json, jsonpath=..., jsonpath-file=..., go-template=..., go-template-file=...; not "wide"`},
		{false, "custom-columns=A:.a", "--output must be one of"},
		{false, "name", "--output must be one of"},
		{true, "name", "--output must be one of"}, // no Name function
		{true, "jsonpath", "--output jsonpath needs a template"},
		{true, "custom-columns=A", `--output custom-columns: "A" is not HEADER:.field`},
		{true, "custom-columns=A:{.a", "--output custom-columns: column \"A\":"},
	}
	for _, tt := range tests {
		f := NewFlags(tt.list, "", "json")
		f.Output = tt.output
		err := f.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
			t.Errorf("-o %s: err = %v, want one line containing %q", tt.output, err, tt.wantErr)
		}
	}
	// A template that does not parse or fails is one line too.
	for _, o := range []string{"jsonpath={.items[", "go-template={{.nope", "go-template={{index .items 9}}", "jsonpath-file=/nonexistent"} {
		f := NewFlags(true, "table")
		f.Output = o
		err := f.Print(&bytes.Buffer{}, rows)
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("-o %s: err = %q, want one line", o, err)
		}
	}
}

// TestHumanFormatNames: ” and table name the human format of every
// command, reports (”) and tables alike (-o table once failed on explain
// and capacity, -o ” on simulate).
func TestHumanFormatNames(t *testing.T) {
	for _, own := range [][]string{{"", "json", "yaml"}, {"table", "json", "yaml"}, {"table", "wide", "json", "yaml"}} {
		for _, o := range []string{"", "table"} {
			f := NewFlags(false, own...)
			f.Output = o
			got, ok := f.Own()
			if err := f.Validate(); err != nil || !ok || got != own[0] {
				t.Errorf("own %q, -o %q: Own() = %q, %v; Validate() = %v; want %q", own, o, got, ok, err, own[0])
			}
		}
	}
}

// TestPrintObject: one dispatch for every command. The command's own
// writers win; json and yaml otherwise print the value (HTML characters
// escaped in JSON, keys sorted in YAML, as kubectl prints); the rest go
// through the template printers.
func TestPrintObject(t *testing.T) {
	v := map[string]any{"name": "a<b", "waitingRequests": 2}
	text := func(w io.Writer) error { _, err := io.WriteString(w, "TEXT\n"); return err }
	doc := Document(func() ([]byte, error) { return []byte("DOC\n"), nil })
	tests := []struct {
		own    []string
		output string
		ws     func(f *Flags) Writers
		want   string
	}{
		{[]string{"", "json", "yaml"}, "", func(f *Flags) Writers { return f.Text(text) }, "TEXT\n"},
		{[]string{"", "json", "yaml"}, "table", func(f *Flags) Writers { return f.Text(text) }, "TEXT\n"},
		{[]string{"table", "wide", "json"}, "wide", func(f *Flags) Writers { return f.Text(text) }, "TEXT\n"},
		{[]string{"", "json", "yaml"}, "json", func(f *Flags) Writers { return f.Text(text) }, "{\n  \"name\": \"a\\u003cb\",\n  \"waitingRequests\": 2\n}\n"},
		{[]string{"", "json", "yaml"}, "yaml", func(f *Flags) Writers { return f.Text(text) }, "name: a<b\nwaitingRequests: 2\n"},
		{[]string{"", "json", "yaml"}, "jsonpath={.waitingRequests}", func(f *Flags) Writers { return f.Text(text) }, "2"},
		{[]string{"json"}, "json", func(*Flags) Writers { return Writers{"json": doc} }, "DOC\n"},
		{[]string{"", "json", "prometheusrule"}, "prometheusrule", func(*Flags) Writers { return Writers{"": doc, "prometheusrule": doc} }, "DOC\n"},
	}
	for _, tt := range tests {
		f := NewFlags(false, tt.own...)
		f.Output = tt.output
		if err := f.Validate(); err != nil {
			t.Fatalf("own %q -o %q: %v", tt.own, tt.output, err)
		}
		var b bytes.Buffer
		if err := f.PrintObject(&b, v, tt.ws(f)); err != nil {
			t.Fatalf("own %q -o %q: %v", tt.own, tt.output, err)
		}
		if b.String() != tt.want {
			t.Errorf("own %q -o %q:\ngot  %q\nwant %q", tt.own, tt.output, b.String(), tt.want)
		}
	}
	// An own format without a writer is the command's bug, reported, not a
	// silent empty output.
	f := NewFlags(false, "", "prometheusrule")
	f.Output = "prometheusrule"
	if err := f.PrintObject(&bytes.Buffer{}, v, Writers{}); err == nil || err.Error() != "-o prometheusrule has no printer" {
		t.Errorf("missing writer: err = %v", err)
	}
}

// TestWide: only -o wide, of a command that prints a wide table, asks for
// it; the human format by either name does not.
func TestWide(t *testing.T) {
	for _, tt := range []struct {
		own  []string
		o    string
		want bool
	}{
		{[]string{"table", "wide", "json"}, "wide", true},
		{[]string{"table", "wide", "json"}, "", false},
		{[]string{"table", "wide", "json"}, "table", false},
		{[]string{"table", "wide", "json"}, "json", false},
		{[]string{"table", "json"}, "wide", false},
	} {
		f := NewFlags(true, tt.own...)
		f.Output = tt.o
		if got := f.Wide(); got != tt.want {
			t.Errorf("own %q, -o %q: Wide() = %v, want %v", tt.own, tt.o, got, tt.want)
		}
	}
}

// FuzzTemplates: whatever -o jsonpath, go-template or custom-columns a
// user writes, Validate and Print answer or give one line of error, and
// never panic (the templates are kubectl's printers and client-go's
// jsonpath, run on the plugin's own records).
func FuzzTemplates(f *testing.F) {
	for _, s := range []string{"{.items[*].name}", `{range .items[*]}{.name}{"\n"}{end}`, "{range}{end}{end}", "{.items[?(@.waitingRequests>1)].name}", "{{range .items}}{{.name}}{{end}}",
		`{{template "x"}}`, `{{define "x"}}{{template "x"}}{{end}}{{template "x"}}`, "L:.name,W:.waitingRequests", "L:{.items[0:-1:0]}", "{..}", "{.items[-9999999999]}", `{{index .items 99}}`} {
		for _, kind := range []uint8{0, 1, 2} {
			f.Add(kind, s)
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, spec string) {
		fl := NewFlags(true, "table", "json")
		fl.Output = []string{"jsonpath", "go-template", "custom-columns"}[int(kind)%3] + "=" + spec
		err := fl.Validate()
		if err == nil {
			var b bytes.Buffer
			err = fl.Print(&b, rows)
		}
		if err != nil && strings.Contains(strings.TrimSpace(err.Error()), "\n") {
			t.Fatalf("-o %s: the error is not one line: %q", fl.Output, err)
		}
	})
}
