package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// TestBundleTo: the bundle's path is --to; the -o of earlier releases still
// writes it, with a warning on stderr, and the two together are an error.
func TestBundleTo(t *testing.T) {
	dir := t.TempDir()
	streams, _, _ := testStreams("")
	o := NewBundleOptions(genericclioptions.NewConfigFlags(false), streams)
	o.Source = &staticSource{t: t, now: time.Date(2026, 11, 21, 15, 0, 0, 0, time.UTC)}
	o.To = filepath.Join(dir, "source")
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}

	const deprecated = "warning: -o/--output as the bundle's path is deprecated and will be removed; use --to "
	for _, tt := range []struct {
		flag, out string
		warn      bool
	}{
		{"--to", "to", false},
		{"-o", "o", true},
		{"--output", "output.tar.gz", true},
	} {
		path := filepath.Join(dir, tt.out)
		streams, _, errb := testStreams("")
		if code := run([]string{"dump", "bundle", "--from", o.To, tt.flag, path}, streams); code != 0 {
			t.Fatalf("dump bundle %s: exit %d: %s", tt.flag, code, errb)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("dump bundle %s %s wrote nothing: %v", tt.flag, path, err)
		}
		if got := strings.Contains(errb.String(), deprecated+path+"\n"); got != tt.warn {
			t.Errorf("dump bundle %s: deprecation warning %v, want %v; stderr:\n%s", tt.flag, got, tt.warn, errb)
		}
		// What was written reads back.
		streams2, out, errb2 := testStreams("")
		if code := run([]string{"dump", "levels", "--from", path}, streams2); code != 0 || !strings.Contains(out.String(), "apf-load") {
			t.Errorf("dump levels --from %s: exit %d\n%s%s", path, code, out, errb2)
		}
	}

	streams, _, errb := testStreams("")
	if code := run([]string{"dump", "bundle", "--from", o.To, "--to", filepath.Join(dir, "a"), "-o", filepath.Join(dir, "b")}, streams); code != 1 ||
		errb.String() != "error: --to and the deprecated -o both name where the bundle goes; give --to only\n" {
		t.Errorf("--to with -o: exit %d, stderr %q", code, errb)
	}
	// -o is hidden from the help, which shows --to.
	streams, out, _ := testStreams("")
	run([]string{"dump", "bundle", "--help"}, streams)
	if help := out.String(); !strings.Contains(help, "--to ") || strings.Contains(help, "--output") {
		t.Errorf("dump bundle --help:\n%s", help)
	}
}
