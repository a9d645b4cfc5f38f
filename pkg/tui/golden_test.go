package tui

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/golden"
)

// checkGolden compares got with testdata/frames/<name> (internal/testharness/golden: go
// test ./pkg/tui -update rewrites it).
func checkGolden(t *testing.T, name string, got string) {
	t.Helper()
	golden.AssertString(t, filepath.Join("testdata", "frames", name), got)
}

// fixedModel returns a model showing fixture f at a fixed clock and size,
// as if one refresh had just returned it.
func fixedModel(t *testing.T, f fixture, w, h int, styles *Styles) *Model {
	t.Helper()
	now := fixtureAt.Add(700 * time.Millisecond)
	m := New(Options{Clock: func() time.Time { return now }, Cluster: "apf-local", Styles: styles})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	m.Update(refreshMsg{Refresh: Refresh{At: fixtureAt, Capture: f.capture(t), Requests: 5}})
	return m
}

func TestGoldenFrames(t *testing.T) {
	states := []struct {
		name string
		f    fixture
		keys []string
	}{
		{"idle", idleFixture(), nil},
		{"busy", busyFixture(), []string{":", "w", "o", "r", "k", "l", "o", "a", "d", "-", "l", "enter"}},
		{"rejecting", rejectingFixture(), []string{"s", "s", "s"}},
		{"rejecting-drill", rejectingFixture(), []string{":", "a", "p", "f", "-", "l", "o", "a", "d", "enter", "enter"}},
		{"help", idleFixture(), []string{"?"}},
	}
	sizes := []struct{ w, h int }{{80, 24}, {160, 48}}
	for _, st := range states {
		for _, sz := range sizes {
			name := st.name + "-" + itoa(sz.w) + "x" + itoa(sz.h) + ".golden"
			t.Run(name, func(t *testing.T) {
				m := fixedModel(t, st.f, sz.w, sz.h, nil)
				if st.name == "rejecting" {
					// A history for the sparkline: busy, then rejecting twice.
					m = fixedModel(t, busyFixture(), sz.w, sz.h, nil)
					for i := 0; i < 2; i++ {
						m.Update(refreshMsg{Refresh: Refresh{At: fixtureAt, Capture: st.f.capture(t), Requests: 5}})
					}
				}
				for _, k := range st.keys {
					m.Update(keyPress(k))
				}
				got := m.View().Content
				lines := strings.Split(got, "\n")
				if len(lines) != sz.h {
					t.Errorf("frame has %d lines, want %d", len(lines), sz.h)
				}
				for i, l := range lines {
					if w := ansi.StringWidth(l); w != sz.w {
						t.Errorf("line %d is %d columns wide, want %d: %q", i+1, w, sz.w, l)
					}
				}
				if strings.Contains(got, "\x1b") {
					t.Errorf("plain frame contains an escape sequence")
				}
				checkGolden(t, name, got)
			})
		}
	}
}

// TestColorLayout checks that colour changes no character of a frame: the
// golden frames are plain, and what users see must be the same frame.
func TestColorLayout(t *testing.T) {
	cs := ColorStyles()
	for _, f := range []fixture{idleFixture(), rejectingFixture()} {
		plain := fixedModel(t, f, 160, 48, nil).View().Content
		colored := fixedModel(t, f, 160, 48, &cs).View().Content
		if !strings.Contains(colored, "\x1b[") {
			t.Fatalf("coloured frame has no escape sequence")
		}
		if got := ansi.Strip(colored); got != plain {
			t.Errorf("coloured frame without its escapes differs from the plain frame:\n%s\n---\n%s", got, plain)
		}
	}
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(i)) }

func fmtInt(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for i > 0 {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
	}
	return string(b)
}

// keyPress builds the message a terminal sends for a key name.
func keyPress(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}
