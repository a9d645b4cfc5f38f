package tui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/tui/record"
)

// fakeSource returns its captures in turn (the last one forever), or err.
type fakeSource struct {
	mu       sync.Mutex
	captures []*dump.Capture
	err      error
	calls    int
}

func (f *fakeSource) Capture(ctx context.Context, opts dump.CaptureOptions) (*dump.Capture, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	i := min(f.calls-1, len(f.captures)-1)
	return f.captures[i], nil
}

func (f *fakeSource) Describe() string { return "fake" }

func content(m *Model) string { return m.View().Content }

// lastShown is the refresh or frame the view shows.
func lastShown(m *Model) *Refresh { return m.active().data().last }

func press(m *Model, keys ...string) tea.Cmd {
	var cmd tea.Cmd
	for _, k := range keys {
		_, cmd = m.Update(keyPress(k))
	}
	return cmd
}

// levelNames lists the level names of the rows shown, in order.
func levelNames(m *Model) []string {
	var out []string
	for _, r := range m.rows() {
		out = append(out, r.Name)
	}
	return out
}

func TestFilterJumpSort(t *testing.T) {
	tests := []struct {
		name       string
		keys       []string
		wantRows   string
		wantCursor string
		wantStatus string
	}{
		{name: "no filter", wantRows: "catch-all exempt global-default leader-election node-high system workload-high workload-low", wantCursor: "catch-all"},
		{name: "regex", keys: []string{"/", "w", "o", "r", "k", "enter"}, wantRows: "workload-high workload-low", wantCursor: "workload-high"},
		{name: "inverted", keys: []string{"/", "!", "-", "enter"}, wantRows: "exempt system", wantCursor: "exempt"},
		{name: "anchored", keys: []string{"/", "^", "n", "|", "^", "s", "enter"}, wantRows: "node-high system", wantCursor: "node-high"},
		{name: "bad regex keeps the filter", keys: []string{"/", "w", "o", "r", "k", "enter", "/", "(", "enter"}, wantRows: "workload-high workload-low", wantCursor: "workload-high",
			wantStatus: `filter "work(": missing closing ); filter unchanged`},
		{name: "esc cancels", keys: []string{"/", "w", "esc"}, wantRows: "catch-all exempt global-default leader-election node-high system workload-high workload-low", wantCursor: "catch-all"},
		{name: "backspace", keys: []string{"/", "w", "x", "backspace", "o", "enter"}, wantRows: "workload-high workload-low", wantCursor: "workload-high"},
		{name: "empty filter clears", keys: []string{"/", "s", "y", "s", "enter", "/", "backspace", "backspace", "backspace", "enter"}, wantRows: "catch-all exempt global-default leader-election node-high system workload-high workload-low", wantCursor: "catch-all"},
		{name: "jump by prefix", keys: []string{":", "N", "o", "enter"}, wantRows: "catch-all exempt global-default leader-election node-high system workload-high workload-low", wantCursor: "node-high"},
		{name: "jump by substring", keys: []string{":", "e", "l", "e", "c", "enter"}, wantRows: "catch-all exempt global-default leader-election node-high system workload-high workload-low", wantCursor: "leader-election"},
		{name: "jump clears a filter hiding the level", keys: []string{"/", "w", "o", "r", "k", "enter", ":", "s", "y", "s", "enter"}, wantRows: "catch-all exempt global-default leader-election node-high system workload-high workload-low", wantCursor: "system"},
		{name: "jump to nothing", keys: []string{":", "z", "z", "enter"}, wantRows: "catch-all exempt global-default leader-election node-high system workload-high workload-low", wantCursor: "catch-all", wantStatus: `no priority level matches "zz"`},
		{name: "sort by seats", keys: []string{"s"}, wantRows: "apf-load global-default workload-low system catch-all leader-election node-high workload-high apf-load-reject exempt", wantCursor: "apf-load"},
		{name: "sort by waiting", keys: []string{"s", "s"}, wantRows: "workload-low apf-load global-default apf-load-reject catch-all exempt leader-election node-high system workload-high", wantCursor: "workload-low"},
		{name: "sort by rejected", keys: []string{"s", "s", "s"}, wantRows: "apf-load apf-load-reject workload-low catch-all exempt global-default leader-election node-high system workload-high", wantCursor: "apf-load"},
		{name: "down and up", keys: []string{"down", "down", "down", "up"}, wantRows: "catch-all exempt global-default leader-election node-high system workload-high workload-low", wantCursor: "global-default"},
		{name: "up at the top stays", keys: []string{"up", "k"}, wantRows: "catch-all exempt global-default leader-election node-high system workload-high workload-low", wantCursor: "catch-all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := idleFixture()
			if strings.HasPrefix(tt.name, "sort") {
				f = rejectingFixture()
			}
			m := fixedModel(t, f, 80, 24, nil)
			press(m, tt.keys...)
			_ = content(m)
			if got := strings.Join(levelNames(m), " "); got != tt.wantRows {
				t.Errorf("rows = %s, want %s", got, tt.wantRows)
			}
			if m.cursor != tt.wantCursor {
				t.Errorf("cursor = %q, want %q", m.cursor, tt.wantCursor)
			}
			if m.status != tt.wantStatus {
				t.Errorf("status = %q, want %q", m.status, tt.wantStatus)
			}
			if tt.wantStatus != "" && !strings.Contains(content(m), tt.wantStatus[:20]) {
				t.Errorf("the frame does not show the status %q", tt.wantStatus)
			}
		})
	}
}

func TestComputeRows(t *testing.T) {
	iv := ComputeInstance(nil, rejectingFixture().capture(t).Snapshots[0])
	byName := map[string]LevelRow{}
	for _, l := range iv.Levels {
		byName[l.Name] = l
	}
	// Hand-computed from the fixture: apf-load has 6+6+5 waiting requests
	// of one seat, 14 queue-full rejections over the 2 s between scrapes,
	// 6 dispatches; workload-low borrowed 2 seats (current 6, nominal 4)
	// and its 18 requests of 3 seats and 4 of 1 wait 58 seats.
	tests := []struct {
		level                                         string
		waitReq, waitSeats, disp, rej, borrowed, lent float64
		rejecting                                     bool
		queues                                        int
	}{
		{"apf-load", 17, 17, 3, 7, 0, 0, true, 8},
		{"apf-load-reject", 0, 0, 0, 2.5, 0, 0, true, 0},
		{"workload-low", 22, 58, 12, 0.75, 2, 0, true, 128},
		{"node-high", 0, 0, 0, 0, 0, 1, false, 64},
		{"exempt", 0, 0, 2, 0, 0, 0, false, 0},
	}
	for _, tt := range tests {
		l, ok := byName[tt.level]
		if !ok {
			t.Fatalf("no row for %s", tt.level)
		}
		if l.WaitingRequests != tt.waitReq || l.WaitingSeats != tt.waitSeats || l.DispatchedPS != tt.disp || l.RejectedTotal != tt.rej ||
			l.Borrowed != tt.borrowed || l.Lent != tt.lent || l.Rejecting != tt.rejecting || l.Queues != tt.queues {
			t.Errorf("%s: got wait %v/%v disp %v rej %v borrowed %v lent %v rejecting %v queues %d; want %v/%v %v %v %v %v %v %d", tt.level,
				l.WaitingRequests, l.WaitingSeats, l.DispatchedPS, l.RejectedTotal, l.Borrowed, l.Lent, l.Rejecting, l.Queues,
				tt.waitReq, tt.waitSeats, tt.disp, tt.rej, tt.borrowed, tt.lent, tt.rejecting, tt.queues)
		}
	}
	// Queue 5 of apf-load holds load-1 and load-2: a collision.
	qs := Queues(iv.Snapshot, "apf-load")
	if len(qs) != 8 || qs[5].Waiting != 6 || qs[0].ExecSeats != 1 {
		t.Errorf("apf-load queues = %+v", qs)
	}
	w := Waiting(iv.Snapshot, "apf-load")
	if len(w) != 17 || w[0].Age < w[len(w)-1].Age || w[0].User == "" {
		t.Errorf("waiting requests not oldest first with details: first %+v last %+v", w[0], w[len(w)-1])
	}
}

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

func TestInstancesTab(t *testing.T) {
	a := idleFixture()
	a.instance = "https://10.0.0.1:6443"
	b := rejectingFixture()
	b.instance = "https://10.0.0.2:6443"
	c := &dump.Capture{Snapshots: []*dump.Snapshot{a.capture(t).Snapshots[0], b.capture(t).Snapshots[0]},
		Failures: []dump.InstanceError{{Instance: "https://10.0.0.3:6443", Message: "connection refused"}}}
	m := New(Options{Clock: func() time.Time { return fixtureAt }})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	m.Update(refreshMsg{Refresh: Refresh{At: fixtureAt, Capture: c, Requests: -1}})
	frame := content(m)
	if !strings.Contains(frame, "10.0.0.1:6443 [1/3, tab]") || strings.Contains(frame, "apf-load") || !strings.Contains(frame, "! https://10.0.0.3:6443: connection refused") {
		t.Errorf("first instance frame:\n%s", frame)
	}
	press(m, "tab")
	if frame := content(m); !strings.Contains(frame, "10.0.0.2:6443 [2/3, tab]") || !strings.Contains(frame, "apf-load") {
		t.Errorf("second instance frame:\n%s", frame)
	}
	press(m, "tab")
	if m.instance != a.instance {
		t.Errorf("tab does not cycle back: %s", m.instance)
	}
}

func TestDrillDownAndHelp(t *testing.T) {
	m := fixedModel(t, rejectingFixture(), 120, 40, nil)
	press(m, ":", "a", "p", "f", "-", "l", "o", "a", "d", "enter", "enter")
	frame := content(m)
	for _, s := range []string{"apf-load on https://127.0.0.1:6443 · 3 flows · 17 waiting requests", "load-1", "/api/v1/namespaces/apf-load/conf", "0,2,5"} {
		if !strings.Contains(frame, s) {
			t.Errorf("drill-down lacks %q:\n%s", s, frame)
		}
	}
	press(m, "esc")
	if strings.Contains(content(m), "esc back") {
		t.Error("esc does not leave the drill-down")
	}
	press(m, "?")
	if !strings.Contains(content(m), "filter levels (regex, !inverts)") {
		t.Error("? does not show the help")
	}
	press(m, "x")
	if m.showHelp {
		t.Error("a key does not close the help")
	}
	if cmd := press(m, "q"); cmd == nil || fmt.Sprintf("%T", cmd()) != "tea.QuitMsg" {
		t.Error("q does not quit")
	}
}

func TestEscapesAreSanitised(t *testing.T) {
	f := rejectingFixture()
	f.levels[len(f.levels)-2].flows[0].user = "evil\x1b[2Juser"
	m := fixedModel(t, f, 160, 48, nil)
	press(m, ":", "a", "p", "f", "-", "l", "o", "a", "d", "enter", "enter")
	if frame := content(m); strings.Contains(frame, "\x1b") {
		t.Errorf("a server-supplied escape reached the terminal:\n%q", frame)
	}
}

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
	if cmd == nil || !strings.Contains(content(m), "REPLAY 1/4") {
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
	if frame := content(m); !strings.Contains(frame, "step 2s") || !strings.Contains(frame, "REPLAY 1/4 (paused)") {
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

// Over a bundle the view says when it was captured, never "live" or STALE.
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
	if !strings.Contains(frame, "● bundle captured 2026-11-21 12:00:00Z") || strings.Contains(frame, "STALE") || !strings.Contains(frame, "workload-low") {
		t.Errorf("bundle frame:\n%s", frame)
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
	if l := rowOf(m, "apf-load"); !l.HasRates || l.RejectedTotal != 7 || l.DispatchedPS != 3 {
		t.Errorf("apf-load after two one-scrape refreshes: rates %v rejected %v/s dispatched %v/s; want 7 and 3", l.HasRates, l.RejectedTotal, l.DispatchedPS)
	}
	if prev := m.live.prevSnaps["https://127.0.0.1:6443"]; prev == nil || prev.Raw != nil || len(prev.Metrics) != 1 {
		t.Errorf("the previous refresh is kept whole, not as its scrape: %+v", prev)
	}
}

func rowOf(m *Model, level string) LevelRow {
	for _, l := range m.view().Levels {
		if l.Name == level {
			return l
		}
	}
	return LevelRow{}
}
