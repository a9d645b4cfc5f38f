package tui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
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
		{name: "esc clears the filter", keys: []string{"/", "w", "o", "r", "k", "enter", "esc"}, wantRows: "catch-all exempt global-default leader-election node-high system workload-high workload-low", wantCursor: "catch-all"},
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
			if m.table.cursor != tt.wantCursor {
				t.Errorf("cursor = %q, want %q", m.table.cursor, tt.wantCursor)
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
	byName := map[string]levels.Row{}
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
		borrowed, lent := l.Lending()
		if l.Waiting != tt.waitReq || l.WaitingSeats != tt.waitSeats || l.DispatchedPerSec != tt.disp || l.RejectedTotal != tt.rej ||
			borrowed != tt.borrowed || lent != tt.lent || l.Rejecting() != tt.rejecting || l.Queues != tt.queues {
			t.Errorf("%s: got wait %v/%v disp %v rej %v borrowed %v lent %v rejecting %v queues %d; want %v/%v %v %v %v %v %v %d", tt.level,
				l.Waiting, l.WaitingSeats, l.DispatchedPerSec, l.RejectedTotal, borrowed, lent, l.Rejecting(), l.Queues,
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
	if m.help.shown {
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
