package tui

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
)

// TestProgramSmoke runs the model in a real bubbletea program (teatest):
// the first refresh is drawn in the alternate screen, a second one follows
// at the interval, and q quits and leaves the alternate screen.
func TestProgramSmoke(t *testing.T) {
	src := &fakeSource{captures: []*dump.Capture{idleFixture().capture(t), rejectingFixture().capture(t)}}
	m := New(Options{Source: src, Interval: 500 * time.Millisecond, Clock: func() time.Time { return fixtureAt }})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 30))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte("apf-load-reject"))
	}, teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
	tm.Type("q")
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	final, ok := tm.FinalModel(t).(*Model)
	if !ok || final.live.cur.last == nil || len(final.live.cur.views) != 1 {
		t.Fatalf("final model %T has no refresh", tm.FinalModel(t))
	}
	out, err := io.ReadAll(tm.FinalOutput(t))
	if err != nil {
		t.Fatal(err)
	}
	// The alternate screen is left at exit (DECRST 1049), restoring the
	// user's terminal.
	if !bytes.Contains(out, []byte("\x1b[?1049l")) {
		t.Errorf("the program did not leave the alternate screen; output tail: %q", tail(out, 200))
	}
	if src.calls < 2 {
		t.Errorf("source read %d times, want at least 2 (one refresh per interval)", src.calls)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
