package tui

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/kubectl-apf/kubectl-apf/pkg/tui/record"
)

func TestReplay(t *testing.T) {
	var buf bytes.Buffer
	w, err := record.NewWriter(&buf, record.Header{Source: "test", Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range []fixture{idleFixture(), busyFixture(), rejectingFixture()} {
		fr, err := record.NewFrame(fixtureAt.Add(time.Duration(i)*time.Second), 5, f.capture(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(fr); err != nil {
			t.Fatal(err)
		}
	}
	fr, _ := record.NewFrame(fixtureAt.Add(3*time.Second), 2, nil, errors.New("connection refused"))
	if err := w.Write(fr); err != nil {
		t.Fatal(err)
	}
	rec, err := record.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	m := New(Options{Replay: rec, Clock: func() time.Time { return fixtureAt }})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 40})
	m.Init()
	_, cmd := m.Update(frameMsg{i: 0})
	if cmd == nil || !strings.Contains(content(m), "REPLAY 1/4") || strings.Contains(content(m), "shown every") {
		t.Fatalf("replay does not start playing:\n%s", content(m))
	}
	press(m, "right", "right")
	frame := content(m)
	if !m.replay.paused || !strings.Contains(frame, "REPLAY 3/4 (paused)") || !strings.Contains(frame, "apf-load") || !strings.Contains(frame, "at 12:00:02") {
		t.Errorf("right does not step to frame 3:\n%s", frame)
	}
	// The sparkline of frame 3 holds frames 1 to 3: blank, blank, full.
	if got := m.replay.cur.history[m.instance+"\x00workload-low"]; fmt.Sprint(got) != "[0 0 0.75]" {
		t.Errorf("history at frame 3 = %v", got)
	}
	press(m, "right")
	if frame := content(m); !strings.Contains(frame, "REPLAY 4/4 (paused)") || !strings.Contains(frame, "this refresh failed when recorded: connection refused") || !strings.Contains(frame, "apf-load") {
		t.Errorf("a failed refresh frame:\n%s", frame)
	}
	press(m, "right", "left", "left", "h")
	if m.replay.frame != 0 {
		t.Errorf("frame = %d after right, left, left, h; want 0", m.replay.frame)
	}
	if _, cmd := m.Update(frameMsg{gen: m.replay.gen - 1, i: 3}); cmd != nil || m.replay.frame != 0 {
		t.Error("a frame tick of an older generation moved the replay")
	}
	// + slows the replay down; p resumes it from the next frame.
	press(m, "+")
	// the header keeps the recording's step, and says how often a frame is
	// shown (the watch of make demo's read "step 1s" for scrapes 2 s apart)
	if frame := content(m); !strings.Contains(frame, "step 1s · shown every 2s") || !strings.Contains(frame, "REPLAY 1/4 (paused)") {
		t.Errorf("+ in a paused replay:\n%s", frame)
	}
	cmd = press(m, "p")
	if cmd == nil || m.replay.paused {
		t.Fatal("p does not resume the replay")
	}
	if msg, ok := cmd().(frameMsg); !ok || msg.i != 1 || msg.gen != m.replay.gen {
		t.Errorf("p resumes with %#v, want frame 1 of the current generation", cmd())
	}
}
