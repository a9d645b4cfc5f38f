package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msg = fmt.Sprintf(format, args...)
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

func TestAssert(t *testing.T) {
	if Update() {
		t.Skip("compares only")
	}
	path := filepath.Join(t.TempDir(), "out.txt")
	if err := os.WriteFile(path, []byte("a\nb\n\x1b[1mc\x1b[0m\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	same := &recorder{TB: t}
	Assert(same, path, []byte("a\nb\n\x1b[1mc\x1b[0m\n"))
	if same.failed {
		t.Errorf("equal output failed: %s", same.msg)
	}

	diff := &recorder{TB: t}
	AssertString(diff, path, "a\nB\n\x1b[1mc\x1b[0m\n")
	if !diff.failed {
		t.Fatal("different output passed")
	}
	for _, want := range []string{"-b\n", "+B\n", " \"\\x1b[1mc\\x1b[0m\"\n"} {
		if !strings.Contains(diff.msg, want) {
			t.Errorf("diff lacks %q:\n%s", want, diff.msg)
		}
	}

	missing := &recorder{TB: t}
	Assert(missing, filepath.Join(t.TempDir(), "none"), nil)
	if !missing.failed || !strings.Contains(missing.msg, "-update") {
		t.Errorf("a missing golden file should fail and name -update: %q", missing.msg)
	}
}
