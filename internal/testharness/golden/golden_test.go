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

// TestHolds: a phrase missing from want, or present from not, fails; an
// output that holds every wanted phrase and none of the others passes.
func TestHolds(t *testing.T) {
	const out = "0 of its 1 seat in use"
	for _, tt := range []struct {
		want, not []string
		fails     bool
	}{
		{[]string{"1 seat in use"}, []string{"1 seats"}, false},
		{[]string{"2 seats"}, nil, true},
		{nil, []string{"seat in use"}, true},
	} {
		r := &recorder{TB: t}
		Holds(r, "case", out, tt.want, tt.not)
		if r.failed != tt.fails {
			t.Errorf("want %q, not %q: failed %v (%s), want %v", tt.want, tt.not, r.failed, r.msg, tt.fails)
		}
	}
}
