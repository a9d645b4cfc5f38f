package docs

import (
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// guarded are the libraries a package imports only where its "may import"
// cell names them: the cell's word, and the import paths it stands for.
// Other libraries (the standard library, k8s.io/api and apimachinery,
// sigs.k8s.io/yaml, k8s.io/utils) are free.
var guarded = []struct{ name, prefix string }{
	{"client-go", "k8s.io/client-go/"},
	{"cli-runtime", "k8s.io/cli-runtime/"},
	{"cobra", "github.com/spf13/cobra"},
	{"bubbletea", "charm.land/bubbletea/"},
	{"bubbles", "charm.land/bubbles/"},
	{"lipgloss", "charm.land/lipgloss/"},
	{"x/ansi", "github.com/charmbracelet/x/ansi"},
	{"client_golang", "github.com/prometheus/client_golang/"},
	{"k8s.io/kubernetes", "k8s.io/kubernetes/"},
}

// freeWords are the words of "may import" cells that describe a free
// library rather than name a package: they are allowed and checked for
// nothing.
var freeWords = map[string]bool{"flowcontrol": true}

// cell is one row's "may import" column, for each package of its first
// column.
type cell struct {
	line int
	text string
}

// tableCells returns the "may import" cell of each package of the "Who owns
// what" table.
func tableCells(t *testing.T, doc string) map[string]cell {
	t.Helper()
	cells := map[string]cell{}
	tableLines(t, doc, func(line int, cols []string) {
		if len(cols) < 5 {
			t.Errorf("%s:%d: a row has three columns", doc, line)
			return
		}
		for _, m := range packageName.FindAllStringSubmatch(cols[1], -1) {
			cells[m[1]] = cell{line: line, text: strings.TrimSpace(cols[3])}
		}
	})
	return cells
}

// allowance is what a cell allows.
type allowance struct {
	everything bool            // "everything but the harnesses"
	harnesses  bool            // "the harnesses": every package under internal/testharness
	packages   map[string]bool // module packages, relative to the module
	libraries  map[string]bool // names of guarded
}

var (
	parenthesised = regexp.MustCompile(`\([^()]*\)`)
	listPrefix    = regexp.MustCompile(`^(test only|test and demo only)\b[;,]?\s*`)
)

// parseCell reads a "may import" cell: names separated by commas or
// semicolons, each a package's path past pkg/, internal/ or
// internal/testharness/ (or enough of its tail to name it alone), a word of
// guarded or freeWords, or a library's import path; "**pure**" and "—" add
// nothing, "no X" forbids (the purity tests check it), parentheses are
// comments, "test only" says who may import the package, not what it
// imports.
func parseCell(text string, pkgs []string) (allowance, []string) {
	a := allowance{packages: map[string]bool{}, libraries: map[string]bool{}}
	var problems []string
	text = strings.NewReplacer("**", "", "`", "").Replace(text)
	for parenthesised.MatchString(text) {
		text = parenthesised.ReplaceAllString(text, "")
	}
	text = listPrefix.ReplaceAllString(strings.TrimSpace(text), "")
	for _, item := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ';' }) {
		item = strings.TrimSpace(item)
		switch {
		case item == "" || item == "—" || item == "pure" || strings.HasPrefix(item, "no "):
			continue
		case item == "everything but the harnesses":
			a.everything = true
			continue
		case item == "the harnesses":
			a.harnesses = true
			continue
		}
		word := strings.Fields(item)[0]
		word = strings.TrimSuffix(word, "'s")
		if g := guardedName(word); g != "" {
			a.libraries[g] = true
			continue
		}
		if freeWords[word] || strings.Contains(strings.SplitN(word, "/", 2)[0], ".") {
			continue
		}
		switch got := resolve(word, pkgs); len(got) {
		case 0:
			problems = append(problems, word+" names no package of the module")
		case 1:
			a.packages[got[0]] = true
		default:
			problems = append(problems, word+" is ambiguous ("+strings.Join(got, ", ")+"): write more of its path")
		}
	}
	return a, problems
}

func guardedName(word string) string {
	for _, g := range guarded {
		if g.name == word {
			return g.name
		}
	}
	return ""
}

// resolve finds the module packages a cell's word names: pkg/WORD,
// internal/WORD or internal/testharness/WORD, else the packages whose path
// ends in /WORD.
func resolve(word string, pkgs []string) []string {
	var exact, tail []string
	for _, p := range pkgs {
		switch {
		case p == "pkg/"+word || p == "internal/"+word || p == "internal/testharness/"+word:
			exact = append(exact, p)
		case strings.HasSuffix(p, "/"+word):
			tail = append(tail, p)
		}
	}
	if len(exact) > 0 {
		return exact
	}
	return tail
}

// TestEveryImportIsAllowed fails when a package imports (in its non-test
// files, directly) a package of the module or a guarded library that its
// "may import" cell in docs/architecture.md does not name, and when a cell
// names something that is not there, so the third column cannot drift from
// the code either.
func TestEveryImportIsAllowed(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	imports := map[string][]string{}
	var pkgs []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		rel := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
		pkgs = append(pkgs, rel)
		imports[rel] = f[1:]
	}
	sort.Strings(pkgs)
	cells := tableCells(t, "architecture.md")
	checked := 0
	for _, p := range pkgs {
		c, ok := cells[p]
		if !ok {
			continue // TestEveryPackageHasARow reports it
		}
		a, problems := parseCell(c.text, pkgs)
		for _, pr := range problems {
			t.Errorf("docs/architecture.md:%d (%s): %s", c.line, p, pr)
		}
		var bad []string
		for _, imp := range imports[p] {
			if !allowed(a, imp) {
				bad = append(bad, strings.TrimPrefix(imp, module+"/"))
			}
		}
		if len(bad) > 0 {
			t.Errorf("docs/architecture.md:%d: %s imports %s, which its \"may import\" cell (%q) does not name: fix the import or the cell", c.line, p, strings.Join(bad, ", "), c.text)
		}
		checked++
	}
	if checked < 20 {
		t.Fatalf("checked only %d packages against their cells", checked)
	}
}

// allowed reports whether a, a package's cell, allows it to import imp.
func allowed(a allowance, imp string) bool {
	if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
		harness := strings.HasPrefix(rel, "internal/testharness/")
		return a.packages[rel] || (a.everything && !harness) || (a.harnesses && harness)
	}
	if a.everything {
		return true
	}
	for _, g := range guarded {
		if strings.HasPrefix(imp, g.prefix) {
			return a.libraries[g.name]
		}
	}
	return true
}
