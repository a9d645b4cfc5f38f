// Package docs holds the checks that docs/architecture.md names every package
// of the module, and every package's imports in its "may import" cell.
package docs

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/kubectl-apf/kubectl-apf"

// tableRows returns, for each package named in the first column of the
// "Who owns what" table, the line that names it.
func tableRows(t *testing.T, doc string) map[string]int {
	t.Helper()
	rows := map[string]int{}
	tableLines(t, doc, func(line int, cols []string) {
		for _, m := range packageName.FindAllStringSubmatch(cols[1], -1) {
			if prev, dup := rows[m[1]]; dup {
				t.Errorf("%s:%d: %s already has a row, on line %d", doc, line, m[1], prev)
			}
			rows[m[1]] = line
		}
	})
	return rows
}

// packageName is a package named in a cell.
var packageName = regexp.MustCompile("`([^`]+)`")

// tableLines calls fn with the columns of each row of the "Who owns what"
// table, split at "|" (cols[1] is the first column), and its line.
func tableLines(t *testing.T, doc string, fn func(line int, cols []string)) {
	t.Helper()
	f, err := os.Open(doc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inTable := false
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if strings.HasPrefix(text, "## ") {
			inTable = text == "## Who owns what"
			continue
		}
		if !inTable || !strings.HasPrefix(text, "| ") || strings.HasPrefix(text, "|---") {
			continue
		}
		fn(line, strings.Split(text, "|"))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestEveryPackageHasARow fails when a package of the module has no row in
// the architecture document's "Who owns what" table, and when a row names a
// package that does not exist, so the table cannot drift from the code.
func TestEveryPackageHasARow(t *testing.T) {
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	rows := tableRows(t, "architecture.md")
	if len(rows) == 0 {
		t.Fatal(`architecture.md: no package in the first column of the "Who owns what" table`)
	}
	var missing []string
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		if _, ok := rows[rel]; !ok {
			missing = append(missing, rel)
		}
		delete(rows, rel)
	}
	if len(missing) > 0 {
		t.Errorf("docs/architecture.md: no row in \"Who owns what\" for %s: add one (what it owns, what it may import)", strings.Join(missing, ", "))
	}
	var stale []string
	for p, line := range rows {
		stale = append(stale, p+" (line "+strconv.Itoa(line)+")")
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("docs/architecture.md names packages that do not exist: %s: remove or rename the rows", strings.Join(stale, ", "))
	}
}
