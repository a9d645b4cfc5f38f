package dump

import (
	"math"
	"testing"
	"time"
)

// The v1.27.4-idle and v1.27.4-load fixtures are real dumps of a kube-apiserver
// v1.27.4 binary built from its Go module (hack/kube-old, README there): idle,
// then with six load users sending LIST bursts at the one-seat apf-load level.
// v1.27 is the last release of the pre-1.28 layouts: 10-column levels sorted
// by name, an exempt "<none>" row in the levels and queues dumps
// (apf_controller_debug.go v0.27.4: dumpPriorityLevels, dumpQueues: queues ==
// nil), and waiting requests only, without StartTime (dumpRequests). Every
// expected value below was read off the fixture files by hand.

// levelsOf parses a fixture's dump_priority_levels and indexes it by name,
// failing on duplicates or unsorted rows (1.27 sorts plNames).
func levelsOf(t *testing.T, dir string) ([]PriorityLevelRow, map[string]PriorityLevelRow) {
	t.Helper()
	pls, err := ParsePriorityLevels(readFixture(t, dir, FilePriorityLevels))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]PriorityLevelRow{}
	for i, r := range pls {
		if i > 0 && pls[i-1].Name >= r.Name {
			t.Errorf("levels not sorted: %s then %s", pls[i-1].Name, r.Name)
		}
		byName[r.Name] = r
	}
	return pls, byName
}

func TestV1274Levels(t *testing.T) {
	defaults := []string{"catch-all", "exempt", "global-default", "leader-election", "node-high", "system", "workload-high", "workload-low"}
	for _, tt := range []struct {
		dir   string
		names []string
	}{
		{"v1.27.4-idle", defaults},
		{"v1.27.4-load", append([]string{"apf-load"}, defaults...)},
	} {
		t.Run(tt.dir, func(t *testing.T) {
			pls, byName := levelsOf(t, tt.dir)
			if len(pls) != len(tt.names) {
				t.Fatalf("%d levels, want %d (%v)", len(pls), len(tt.names), tt.names)
			}
			for i, want := range tt.names {
				if pls[i].Name != want {
					t.Errorf("level %d = %s, want %s", i, pls[i].Name, want)
				}
			}
			// The exempt level has no QueueSet in 1.27: every cell but the name
			// is "<none>", which must not read as an idle level with zero counts.
			ex := byName["exempt"]
			if !ex.Placeholder {
				t.Errorf("exempt is not a placeholder: %+v", ex)
			}
			if ex.IsIdle || ex.ActiveQueues != 0 || ex.WaitingRequests != 0 || ex.DispatchedRequests != 0 || len(ex.Extra) != 0 {
				t.Errorf("placeholder exempt has values: %+v", ex)
			}
			for _, r := range pls {
				if r.Name == "exempt" {
					continue
				}
				if r.Placeholder || !r.HasCounters || r.IsQuiescing || len(r.Extra) != 0 {
					t.Errorf("%s: want a 10-column row with counters: %+v", r.Name, r)
				}
				if r.Name == "apf-load" {
					continue
				}
				// Only exempt admin requests reached the server besides the load:
				// every default Limited level is idle with zero counters.
				if !r.IsIdle || r.ActiveQueues != 0 || r.WaitingRequests != 0 || r.ExecutingRequests != 0 ||
					r.DispatchedRequests != 0 || r.RejectedRequests != 0 || r.TimedoutRequests != 0 || r.CancelledRequests != 0 {
					t.Errorf("%s: want idle and zero: %+v", r.Name, r)
				}
			}
		})
	}

	// apf-load,          6,            false,  false,       18,              1,                 22,                 374,              0,                0
	_, byName := levelsOf(t, "v1.27.4-load")
	got := byName["apf-load"]
	want := PriorityLevelRow{Name: "apf-load", ActiveQueues: 6, WaitingRequests: 18, ExecutingRequests: 1,
		HasCounters: true, DispatchedRequests: 22, RejectedRequests: 374}
	if got.Name != want.Name || got.Placeholder || got.ActiveQueues != want.ActiveQueues || got.IsIdle || got.IsQuiescing ||
		got.WaitingRequests != want.WaitingRequests || got.ExecutingRequests != want.ExecutingRequests || !got.HasCounters ||
		got.DispatchedRequests != want.DispatchedRequests || got.RejectedRequests != want.RejectedRequests ||
		got.TimedoutRequests != 0 || got.CancelledRequests != 0 {
		t.Errorf("apf-load = %+v, want %+v", got, want)
	}
}

func TestV1274Queues(t *testing.T) {
	// Queue counts of the default levels (bootstrap/default.go v0.27.4); Reject
	// catch-all has a QueueSet of no queues, hence no row at all; exempt one
	// "<none>" row.
	counts := map[string]int{"leader-election": 16, "node-high": 64, "system": 64, "workload-high": 128, "workload-low": 128, "global-default": 128, "exempt": 1}
	for _, dir := range []string{"v1.27.4-idle", "v1.27.4-load"} {
		t.Run(dir, func(t *testing.T) {
			qs, err := ParseQueues(readFixture(t, dir, FileQueues))
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int{}
			for k, v := range counts {
				want[k] = v
			}
			if dir == "v1.27.4-load" {
				want["apf-load"] = 8
			}
			got := map[string]int{}
			next := map[string]int{}
			for _, q := range qs {
				got[q.PriorityLevel]++
				if q.PriorityLevel == "exempt" {
					if !q.Placeholder || q.Index != 0 || q.PendingRequests != 0 || q.NextDispatchR != 0 || len(q.Extra) != 0 {
						t.Errorf("exempt queue row is not a clean placeholder: %+v", q)
					}
					continue
				}
				if q.Placeholder || !q.HasSeats || len(q.Extra) != 0 {
					t.Errorf("%s/%d: want a 9-column row: %+v", q.PriorityLevel, q.Index, q)
				}
				// Levels come in map order, but each level's queues in index order.
				if q.Index != next[q.PriorityLevel] {
					t.Errorf("%s: queue %d after %d", q.PriorityLevel, q.Index, next[q.PriorityLevel]-1)
				}
				next[q.PriorityLevel] = q.Index + 1
				if q.PriorityLevel != "apf-load" && (q.PendingRequests != 0 || q.ExecutingRequests != 0 || q.NextDispatchR != 0 || q.TotalWorkSum != 0) {
					t.Errorf("%s/%d: want an untouched queue: %+v", q.PriorityLevel, q.Index, q)
				}
			}
			if len(got) != len(want) {
				t.Errorf("levels with queue rows: %v, want %v", got, want)
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: %d queue rows, want %d", k, got[k], v)
				}
			}
		})
	}

	qs, err := ParseQueues(readFixture(t, "v1.27.4-load", FileQueues))
	if err != nil {
		t.Fatal(err)
	}
	// apf-load,          0,      3,               0,                 0,          0.10380962ss,  3,               3,           0.00900000ss
	// ...
	// apf-load,          6,      2,               1,                 1,          0.10214070ss,  2,               2,           0.00600000ss
	type q struct {
		pending, executing, seats int
		nextR                     float64
		initial, max              int
		work                      float64
	}
	want := []q{
		{3, 0, 0, 0.10380962, 3, 3, 0.009},
		{3, 0, 0, 0.10504811, 3, 3, 0.009},
		{3, 0, 0, 0.10847557, 3, 3, 0.009},
		{3, 0, 0, 0.10811142, 3, 3, 0.009},
		{0, 0, 0, 0, 0, 0, 0},
		{3, 0, 0, 0.10092945, 3, 3, 0.009},
		{2, 1, 1, 0.10214070, 2, 2, 0.006},
		{0, 0, 0, 0, 0, 0, 0},
	}
	var got []q
	for _, r := range qs {
		if r.PriorityLevel == "apf-load" {
			got = append(got, q{r.PendingRequests, r.ExecutingRequests, r.SeatsInUse, r.NextDispatchR, r.InitialSeatsSum, r.MaxSeatsSum, r.TotalWorkSum})
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d apf-load queues, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.pending != w.pending || g.executing != w.executing || g.seats != w.seats || g.initial != w.initial || g.max != w.max ||
			math.Abs(g.nextR-w.nextR) > 1e-9 || math.Abs(g.work-w.work) > 1e-9 {
			t.Errorf("apf-load queue %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestV1274Requests(t *testing.T) {
	// Idle: a header with the detail columns and no row. The admin's own dump
	// request is exempt and, before 1.28, exempt requests are not dumped.
	idle, err := ParseRequests(readFixture(t, "v1.27.4-idle", FileRequests))
	if err != nil {
		t.Fatal(err)
	}
	if len(idle) != 0 {
		t.Errorf("idle dump has %d requests: %+v", len(idle), idle)
	}

	reqs, err := ParseRequests(readFixture(t, "v1.27.4-load", FileRequests))
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 17 {
		t.Fatalf("%d requests, want the 17 rows of the fixture", len(reqs))
	}
	// Rows per queue, as in the file (and as dump_queues counted them).
	perQueue := map[int]int{}
	for _, r := range reqs {
		perQueue[r.QueueIndex]++
		if r.PriorityLevel != "apf-load" || r.FlowSchema != "apf-load" || r.Executing() || !r.StartTime.IsZero() || !r.HasDetails ||
			r.FlowDistinguisher != r.UserName || r.Verb != "list" || r.APIPath != "/api/v1/namespaces/apf-load/configmaps" ||
			r.Namespace != "apf-load" || r.Name != "" || r.APIVersion != "v1" || r.Resource != "configmaps" || r.SubResource != "" ||
			r.InitialSeats != 1 || r.FinalSeats != 0 || r.AdditionalLatency != 0 || r.Seats() != 1 || len(r.Extra) != 0 {
			t.Errorf("request = %+v", r)
		}
		if r.ArriveTime.Year() != 2026 || r.ArriveTime.Location() != time.UTC {
			t.Errorf("arrive time %v", r.ArriveTime)
		}
	}
	wantPerQueue := map[int]int{0: 3, 1: 3, 2: 3, 3: 3, 5: 3, 6: 2}
	for k, v := range wantPerQueue {
		if perQueue[k] != v {
			t.Errorf("queue %d: %d requests, want %d", k, perQueue[k], v)
		}
	}
	if len(perQueue) != len(wantPerQueue) {
		t.Errorf("requests in queues %v, want %v", perQueue, wantPerQueue)
	}

	// First and an 8-digit-nanosecond row, cell by cell:
	// apf-load, apf-load, 0, 0, load-2, 2026-11-21T16:42:17.672572167Z, 1, 0, 0s, load-2, list, ...
	// apf-load, apf-load, 0, 2, load-1, 2026-11-21T16:42:17.86775648Z,  1, 0, 0s, load-1, list, ...
	for _, tt := range []struct {
		i, queue, pos int
		user, arrive  string
	}{
		{0, 0, 0, "load-2", "2026-11-21T16:42:17.672572167Z"},
		{2, 0, 2, "load-1", "2026-11-21T16:42:17.86775648Z"},
		{16, 6, 1, "load-2", "2026-11-21T16:42:17.968812629Z"},
	} {
		r := reqs[tt.i]
		if r.QueueIndex != tt.queue || r.IndexInQueue != tt.pos || r.UserName != tt.user || !r.ArriveTime.Equal(mustTime(tt.arrive)) {
			t.Errorf("row %d = queue %d pos %d user %s arrive %s, want %d %d %s %s", tt.i, r.QueueIndex, r.IndexInQueue, r.UserName,
				r.ArriveTime.Format(time.RFC3339Nano), tt.queue, tt.pos, tt.user, tt.arrive)
		}
	}
}

// TestV1274MatchesInProcessLayout checks that the in-process v0.27.0 capture
// (testdata/dump/inprocess-capture) and the real v1.27.4 binary produce the
// same layout, as the parser sees it.
func TestV1274MatchesInProcessLayout(t *testing.T) {
	real, err := ParsePriorityLevels(readFixture(t, "v1.27.4-load", FilePriorityLevels))
	if err != nil {
		t.Fatal(err)
	}
	inproc, err := ParsePriorityLevels(readFixture(t, "v1.27.0-inprocess", FilePriorityLevels))
	if err != nil {
		t.Fatal(err)
	}
	layout := func(rows []PriorityLevelRow) (placeholders, counters int) {
		for _, r := range rows {
			if r.Placeholder {
				placeholders++
			} else if r.HasCounters {
				counters++
			}
		}
		return
	}
	rp, rc := layout(real)
	ip, ic := layout(inproc)
	if rp != 1 || ip != 1 || rc != len(real)-1 || ic != len(inproc)-1 {
		t.Errorf("real: %d placeholders, %d rows with counters of %d; in-process: %d, %d of %d", rp, rc, len(real), ip, ic, len(inproc))
	}
}
