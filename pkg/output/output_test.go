package output

import (
	"bytes"
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
		{true, "custom-columns=A:{.a", "--output custom-columns: column A:"},
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
// command, reports (”) and tables alike (issue 17: -o table failed on
// explain and capacity, -o ” on simulate).
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
