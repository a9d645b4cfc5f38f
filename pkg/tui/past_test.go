package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/kubectl-apf/kubectl-apf/pkg/tui/record"
)

// storePast is a store's past of three frames a second apart before
// fixtureAt (idle, rejecting, busy), naming the instance as a store does.
func storePast(t *testing.T) *Past {
	t.Helper()
	rec := &record.Recording{Header: record.Header{Source: "store", Started: fixtureAt.Add(-3 * time.Second), Interval: time.Second}}
	for i, f := range []fixture{idleFixture(), rejectingFixture(), busyFixture()} {
		f.instance = "127.0.0.1:6443"
		fr, err := record.NewFrame(fixtureAt.Add(time.Duration(i-3)*time.Second), -1, f.capture(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		rec.Frames = append(rec.Frames, fr)
	}
	return &Past{Recording: rec, Incident: "apf-load 11:59:58Z, 14 rejected (queue-full)"}
}

// The live view with a store's past: the sparklines start with the past,
// left steps back through its frames while live refreshes go on unseen,
// and right past its last frame shows live again, with what came meanwhile.
func TestLiveViewStepsThroughThePast(t *testing.T) {
	past := storePast(t)
	loads := 0
	now := fixtureAt
	m := New(Options{Source: &fakeSource{}, Clock: func() time.Time { return now }, Cluster: "apf-local",
		Past: func(ctx context.Context) (*Past, error) { loads++; return past, nil }})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 40})
	m.Update(m.past.load()())
	m.Update(refreshMsg{Refresh: Refresh{At: fixtureAt, Capture: idleFixture().capture(t)}})

	// The rejecting frame's workload-low rejections (0.75/s) are the
	// seed's second point; the live refresh (idle) follows the three of
	// the store.
	h := m.sparkData("workload-low")
	if len(h) != 4 || h[1] != 0.75 || h[3] != 0 {
		t.Fatalf("workload-low sparkline = %v, want the store's three points (the second 0.75/s) and the live one", h)
	}
	frame := content(m)
	if !strings.Contains(frame, "● live") || !strings.Contains(frame, "last incident in the store: apf-load 11:59:58Z") || !strings.Contains(frame, "←/→ history") {
		t.Fatalf("live frame:\n%s", frame)
	}

	if cmd := press(m, "left"); cmd != nil || loads != 1 {
		t.Errorf("left read the past again (%d reads) though it is fresh", loads)
	}
	frame = content(m)
	if !m.inPast() || !strings.Contains(frame, "◀ HISTORY 3/3 from the store · → back to live") || !strings.Contains(frame, "at 11:59:59 (1.0s ago)") {
		t.Fatalf("left does not show the store's last frame:\n%s", frame)
	}
	// A live refresh while the past is shown is kept, not shown.
	m.Update(refreshMsg{Refresh: Refresh{At: fixtureAt.Add(time.Second), Capture: rejectingFixture().capture(t)}})
	if !strings.Contains(content(m), "HISTORY 3/3") || lastShown(m).At != fixtureAt.Add(-time.Second) {
		t.Errorf("a live refresh replaced the past frame shown")
	}
	press(m, "left")
	if l := rowOf(m, "apf-load"); m.past.frame != 1 || l.RejectedTotal != 7 {
		t.Errorf("frame %d shows apf-load rejecting %v/s; want frame 1 at 7/s", m.past.frame, l.RejectedTotal)
	}
	press(m, "left", "h")
	if m.past.frame != 0 || !strings.Contains(content(m), "HISTORY 1/3") {
		t.Errorf("frame %d after going left past the first", m.past.frame)
	}
	press(m, "right", "right", "right")
	frame = content(m)
	if m.inPast() || !strings.Contains(frame, "● live") || strings.Contains(frame, "HISTORY") {
		t.Fatalf("right from the last frame does not return to live:\n%s", frame)
	}
	if l := rowOf(m, "apf-load"); l.RejectedTotal != 7 || lastShown(m).At != fixtureAt.Add(time.Second) {
		t.Errorf("back to live shows %v/s from %s, not the refresh that came meanwhile", l.RejectedTotal, lastShown(m).At)
	}
	if h := m.sparkData("workload-low"); len(h) != 5 || h[4] != 0.75 {
		t.Errorf("live sparkline after the past = %v, want 5 points ending at 0.75", h)
	}
	// Later, left reads the past again and shows its last frame once it
	// has come, not the older past held.
	now = fixtureAt.Add(time.Minute)
	cmd := press(m, "left")
	if cmd == nil || m.inPast() || !strings.Contains(content(m), "reading the recent past from the store") {
		t.Fatalf("left with an old past does not read it again:\n%s", content(m))
	}
	m.Update(cmd())
	if loads != 2 || !m.inPast() || m.past.frame != 2 {
		t.Errorf("after the second read (%d reads) frame %d shown, in the past %v; want the last", loads, m.past.frame, m.inPast())
	}
}

// Left before the past has come waits for it; a store that fails says so
// in the header and left asks again.
func TestLiveViewPastLateOrFailing(t *testing.T) {
	past := storePast(t)
	var fail error = errors.New("querying http://prom:9090: connection refused")
	m := New(Options{Source: &fakeSource{}, Clock: func() time.Time { return fixtureAt },
		Past: func(context.Context) (*Past, error) {
			if fail != nil {
				return nil, fail
			}
			return past, nil
		}})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 40})
	m.Update(refreshMsg{Refresh: Refresh{At: fixtureAt, Capture: idleFixture().capture(t)}})
	// A failed read is tried again after a while, until one succeeds.
	if _, retry := m.Update(m.past.load()()); retry == nil {
		t.Error("a failed first read of the past is not tried again")
	}
	if _, stale := m.Update(pastTickMsg{gen: m.past.gen - 1}); stale != nil {
		t.Error("a tick of an older read read the past again")
	}
	_, again := m.Update(pastTickMsg{gen: m.past.gen})
	if again == nil {
		t.Fatal("the retry does not read the past")
	}
	m.Update(again())
	if frame := content(m); !strings.Contains(frame, "! history from the store: querying http://prom:9090: connection refused") || !strings.Contains(frame, "● live") {
		t.Fatalf("a failing store:\n%s", frame)
	}
	if h := m.sparkData("workload-low"); len(h) != 1 {
		t.Errorf("sparkline %v without a past, want the live point", h)
	}
	fail = nil
	cmd := press(m, "left")
	if cmd == nil || m.inPast() || !strings.Contains(content(m), "reading the recent past from the store") {
		t.Fatalf("left without a past does not ask the store again:\n%s", content(m))
	}
	if _, refresh := m.Update(cmd()); refresh == nil {
		t.Error("after a read, the past is not read again later")
	}
	if !m.inPast() || m.past.frame != 2 || strings.Contains(content(m), "! history") || !strings.Contains(content(m), "a store holds no queues") {
		t.Errorf("the past read after left is not shown (frame %d):\n%s", m.past.frame, content(m))
	}

	// The first live refresh came before the past: the seed stops there,
	// so the sparkline after returning holds the store's frames before it.
	press(m, "right")
	if h := m.sparkData("workload-low"); len(h) != 4 || h[1] != 0.75 {
		t.Errorf("sparkline %v", h)
	}
}

// While the past is shown the live view goes on behind it: p, + and -
// act on the live refreshes, and the past's header keeps the store's step.
func TestPaceKeysWhileInThePast(t *testing.T) {
	past := storePast(t)
	m := New(Options{Source: &fakeSource{}, Clock: func() time.Time { return fixtureAt },
		Past: func(context.Context) (*Past, error) { return past, nil }})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 40})
	m.Update(m.past.load()())
	m.Update(refreshMsg{Refresh: Refresh{At: fixtureAt, Capture: idleFixture().capture(t)}})
	press(m, "left", "p", "+")
	if frame := content(m); !m.inPast() || !strings.Contains(frame, "step 1s") || strings.Contains(frame, "PAUSED") {
		t.Fatalf("p and + in the past:\n%s", frame)
	}
	if !m.live.paused || m.live.interval != 5*time.Second {
		t.Errorf("p and + in the past: live paused %v every %s; want paused every 5s", m.live.paused, m.live.interval)
	}
	press(m, "right")
	if frame := content(m); !strings.Contains(frame, "every 5s") || !strings.Contains(frame, "● PAUSED") {
		t.Errorf("back to live after p and +:\n%s", frame)
	}
}

// youngErr is the error of a store that just started (history's
// YoungStoreError, told by its Young method).
type youngErr struct{}

func (youngErr) Error() string {
	return "http://prom:9090 started at 2026-11-23T11:59:20Z, 40s before 2026-11-23T12:00:00Z, and has no APF series matching the selector yet: the history fills in as it scrapes the apiservers"
}
func (youngErr) Young() bool { return true }

// TestLiveViewPastYoungStore: the first frame of a cold demo, whose store
// has just started, says the history fills in, as a note and not a
// warning ("!") (issue 47).
func TestLiveViewPastYoungStore(t *testing.T) {
	m := New(Options{Source: &fakeSource{}, Clock: func() time.Time { return fixtureAt },
		Past: func(context.Context) (*Past, error) { return nil, fmt.Errorf("reading the store: %w", youngErr{}) }})
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 40})
	m.Update(refreshMsg{Refresh: Refresh{At: fixtureAt, Capture: idleFixture().capture(t)}})
	m.Update(m.past.load()())
	frame := content(m)
	if strings.Contains(frame, "! history from the store") || !strings.Contains(frame, "history from the store: reading the store: http://prom:9090 started at") {
		t.Fatalf("a young store:\n%s", frame)
	}
}
