package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAheadClock: the clock moved ahead reads the real clock plus its
// offset, and Since counts from it.
func TestAheadClock(t *testing.T) {
	c := aheadClock{d: 365 * 24 * time.Hour}
	before := time.Now()
	now := c.Now()
	if d := now.Sub(before); d < c.d || d > c.d+time.Hour {
		t.Errorf("Now is %v after the real clock, want %v", d, c.d)
	}
	if s := c.Since(before); s < c.d {
		t.Errorf("Since(the real now) = %v, want at least %v", s, c.d)
	}
}

// TestVLogsRequestWindowFromClock: explain request --victorialogs looks for
// the audit ID in the window before --victorialogs-until, or before the
// Options' clock (and a minute past it) without one, never before
// time.Now.
func TestVLogsRequestWindowFromClock(t *testing.T) {
	now := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		since      time.Duration
		until      string
		start, end time.Time
		err        string
	}{
		{"default", 7 * 24 * time.Hour, "", now.Add(-7 * 24 * time.Hour), now.Add(time.Minute), ""},
		{"absolute until", 2 * time.Hour, "2026-11-23T22:30:00Z", time.Date(2026, 11, 23, 20, 30, 0, 0, time.UTC), time.Date(2026, 11, 23, 22, 30, 0, 0, time.UTC), ""},
		{"relative until", time.Hour, "-1h", now.Add(-2 * time.Hour), now.Add(-time.Hour), ""},
		{"future", time.Hour, "2031-05-06T09:00:00Z", time.Time{}, time.Time{}, "in the future"},
		{"garbage", time.Hour, "yesterday", time.Time{}, time.Time{}, "--victorialogs-until"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := vlogsRequestFlags{Since: tc.since, Until: tc.until}
			v.URL = "http://127.0.0.1:9428"
			v.Timeout = time.Minute
			src, err := v.source(now)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !src.Start.Equal(tc.start) || !src.End.Equal(tc.end) {
				t.Errorf("window %s – %s, want %s – %s", src.Start, src.End, tc.start, tc.end)
			}
		})
	}
}

// TestOneClock: the production code reads the time of day only through a
// clock it is given (state.Options.Clock, which newOptions sets to the
// process's clock): no time.Now, time.Since or time.Until outside the
// process's clock itself and the defaults of a nil Clock. A call elsewhere
// would escape the clock-ahead run (make test-clock-ahead) and tie a
// command to today's date.
func TestOneClock(t *testing.T) {
	allowed := map[string]bool{
		"cmd/kubectl-apf/clock.go": true, // the process's clock
		"pkg/load/store.go":        true, // StoreOptions with no Clock
		"pkg/tui/model.go":         true, // tui.Options with no Clock
	}
	if c := newOptions(nil, 0).Clock; c == nil {
		t.Error("newOptions leaves the Options without a clock")
	}
	root := filepath.Join("..", "..")
	var files int
	for _, dir := range []string{"cmd", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			files++
			timePkg := ""
			for _, imp := range f.Imports {
				if imp.Path.Value == `"time"` {
					timePkg = "time"
					if imp.Name != nil {
						timePkg = imp.Name.Name
					}
				}
			}
			if timePkg == "" {
				return nil
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == timePkg && (sel.Sel.Name == "Now" || sel.Sel.Name == "Since" || sel.Sel.Name == "Until") && !allowed[rel] {
					t.Errorf("%s reads the time of day with time.%s: take it from the Options' Clock", rel, sel.Sel.Name)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 100 {
		t.Fatalf("read %d files of cmd and pkg: the walk missed the tree", files)
	}
}
