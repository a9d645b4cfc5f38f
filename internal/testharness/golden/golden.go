// Package golden compares test output with golden files. It declares the
// -update flag of every test binary that imports it: with -update, Assert
// rewrites the golden file instead of comparing, so that
//
//	make golden
//
// (go test -update over every package that imports this one) rewrites them
// all after a deliberate change of output. Review the diff like code.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aymanbagabas/go-udiff"
)

// The flag is declared only when no other package of the test binary has
// declared it already: github.com/charmbracelet/x/exp/golden (imported by
// teatest) declares an -update flag of its own, and is initialised first.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files instead of comparing with them")
	}
}

// Update reports whether the test binary runs with -update.
func Update() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// Assert compares got with the golden file at path (relative to the test's
// package directory) and fails t with a unified diff when they differ. With
// -update it writes got to path instead, creating the directory.
func Assert(t testing.TB, path string, got []byte) {
	t.Helper()
	if Update() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file: %v (go test -update creates it; review it like code)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (review, then rewrite with go test -update):\n%s", path,
			udiff.Unified(path, "got", visible(string(want)), visible(string(got))))
	}
}

// AssertString is Assert for a string.
func AssertString(t testing.TB, path, got string) {
	t.Helper()
	Assert(t, path, []byte(got))
}

// visible quotes the lines that hold control characters (escape sequences
// of terminal frames, a carriage return) so that the diff prints readably.
func visible(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.IndexFunc(l, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) >= 0 {
			lines[i] = strconv.Quote(l)
		}
	}
	return strings.Join(lines, "\n")
}

// Holds checks an output against the phrases it must hold (want) and those
// it must not (not), for tests that pin sentences rather than a whole
// golden file; name says which case failed.
func Holds(t testing.TB, name, got string, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s: the output lacks %q:\n%s", name, w, got)
		}
	}
	for _, n := range not {
		if strings.Contains(got, n) {
			t.Errorf("%s: the output holds %q:\n%s", name, n, got)
		}
	}
}
