package tui

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
)

func TestPauseRefreshInterval(t *testing.T) {
	src := &fakeSource{captures: []*dump.Capture{idleFixture().capture(t)}}
	now := fixtureAt
	m := New(Options{Source: src, Clock: func() time.Time { return now }})
	cmd := m.Init()
	if !m.live.fetching || cmd == nil {
		t.Fatal("Init does not start a refresh")
	}
	// Run the fetch command directly (the batch's first element).
	msg := m.live.fetch()()
	m.Update(msg)
	if m.live.fetching || m.live.cur.last == nil {
		t.Fatal("the refresh was not applied")
	}
	gen := m.live.gen
	press(m, "p")
	if !m.live.paused || !strings.Contains(content(m), "PAUSED") {
		t.Error("p does not pause")
	}
	if _, cmd := m.Update(tickMsg{gen: gen}); cmd != nil {
		t.Error("a stale tick refreshes while paused")
	}
	if cmd := press(m, "p"); m.live.paused || cmd == nil || !m.live.fetching {
		t.Error("p does not resume with an immediate refresh")
	}
	m.Update(m.live.fetch()())
	if cmd := press(m, "r"); cmd == nil || !m.live.fetching {
		t.Error("r does not refresh")
	}
	if cmd := press(m, "r"); cmd != nil {
		t.Error("r starts a second refresh while one is running")
	}
	m.Update(m.live.fetch()())
	for _, tt := range []struct {
		key  string
		want time.Duration
	}{{"+", 5 * time.Second}, {"+", 10 * time.Second}, {"-", 5 * time.Second}, {"-", 2 * time.Second}, {"-", time.Second}, {"-", 500 * time.Millisecond}, {"-", 500 * time.Millisecond}} {
		press(m, tt.key)
		if m.live.interval != tt.want {
			t.Errorf("after %s interval = %s, want %s", tt.key, m.live.interval, tt.want)
		}
	}
	if !strings.Contains(content(m), "every 500ms") {
		t.Error("the header does not show the interval")
	}
	if src.calls != 3 {
		t.Errorf("source read %d times, want 3", src.calls)
	}
}

func TestDisconnectedBackoffReconnect(t *testing.T) {
	now := fixtureAt
	src := &fakeSource{captures: []*dump.Capture{idleFixture().capture(t)}}
	m := New(Options{Source: src, Clock: func() time.Time { return now }, Requests: func() int64 { return int64(src.calls * 5) }})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 30})
	m.Update(m.live.fetch()())
	if !strings.Contains(content(m), "load 5 req/refresh") {
		t.Errorf("the header does not show the load:\n%s", content(m))
	}
	src.err = errors.New("Get \"https://127.0.0.1:6443/version\": dial tcp 127.0.0.1:6443: connect: connection refused")
	var delays []time.Duration
	for i := 0; i < 6; i++ {
		now = now.Add(time.Second)
		m.Update(m.live.fetch()())
		delays = append(delays, m.live.retryAt.Sub(now))
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	if fmt.Sprint(delays) != fmt.Sprint(want) {
		t.Errorf("backoff = %v, want %v", delays, want)
	}
	frame := content(m)
	for _, s := range []string{"DISCONNECTED", "connection refused", "retry 7 in 30s", "showing data from 6.0s ago", "workload-low"} {
		if !strings.Contains(frame, s) {
			t.Errorf("disconnected frame lacks %q:\n%s", s, frame)
		}
	}
	src.err = nil
	now = now.Add(time.Second)
	m.Update(m.live.fetch()())
	if frame := content(m); strings.Contains(frame, "DISCONNECTED") || !strings.Contains(frame, "● live") {
		t.Errorf("no reconnection:\n%s", frame)
	}
	now = now.Add(20 * time.Second)
	if frame := content(m); !strings.Contains(frame, "STALE") || !strings.Contains(frame, "no refresh for 20s") {
		t.Errorf("no stale state after 20 s without a refresh:\n%s", frame)
	}
}

// Over a bundle the view says when it was captured, never "live" or STALE,
// nor a refresh interval and an age it does not have (it is read once).
func TestBundleState(t *testing.T) {
	dir := t.TempDir()
	if err := dump.WriteBundle(dir+"/b", idleFixture().capture(t), dump.Manifest{CreatedAt: fixtureAt}); err != nil {
		t.Fatal(err)
	}
	now := fixtureAt.Add(time.Hour)
	m := New(Options{Source: &dump.BundleSource{Path: dir + "/b"}, Clock: func() time.Time { return now }})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	m.Update(m.live.fetch()())
	frame := content(m)
	if !strings.Contains(frame, "● bundle captured 2026-11-21 12:00:00Z") || strings.Contains(frame, "STALE") || !strings.Contains(frame, "workload-low") ||
		strings.Contains(frame, "every ") || strings.Contains(frame, "updated ") {
		t.Errorf("bundle frame:\n%s", frame)
	}
	// nothing refreshes: no pause, refresh or interval in the footer, and
	// p does not pause
	m.Update(keyPress("p"))
	if frame := content(m); strings.Contains(frame, "p pause") || strings.Contains(frame, "r refresh") || strings.Contains(frame, "interval") || strings.Contains(frame, "PAUSED") {
		t.Errorf("bundle frame after p:\n%s", frame)
	}
}

// A live refresh reads /metrics once: rates come from the previous
// refresh's scrape, kept (alone) across refreshes.
func TestRatesAcrossRefreshes(t *testing.T) {
	only := func(keep int) *dump.Capture {
		c := rejectingFixture().capture(t)
		s := c.Snapshots[0]
		s.Metrics = s.Metrics[keep : keep+1]
		return c
	}
	m := New(Options{Clock: func() time.Time { return fixtureAt }})
	m.Update(refreshMsg{Refresh: Refresh{At: fixtureAt, Capture: only(0)}})
	if l := rowOf(m, "apf-load"); l.HasRates {
		t.Fatalf("rates from a single scrape: %+v", l)
	}
	m.Update(refreshMsg{Refresh: Refresh{At: fixtureAt, Capture: only(1)}})
	if l := rowOf(m, "apf-load"); !l.HasRates || l.RejectedTotal != 7 || l.DispatchedPerSec != 3 {
		t.Errorf("apf-load after two one-scrape refreshes: rates %v rejected %v/s dispatched %v/s; want 7 and 3", l.HasRates, l.RejectedTotal, l.DispatchedPerSec)
	}
	if prev := m.live.prevSnaps["https://127.0.0.1:6443"]; prev == nil || prev.Raw != nil || len(prev.Metrics) != 1 {
		t.Errorf("the previous refresh is kept whole, not as its scrape: %+v", prev)
	}
}

func rowOf(m *Model, level string) levels.Row {
	for _, l := range m.view().Levels {
		if l.Name == level {
			return l
		}
	}
	return levels.Row{}
}
