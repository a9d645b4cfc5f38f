package dump

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// realCaptures lists the testdata/dump directories captured from real
// kube-apiservers of 1.28 or later (the e2e with -capture-fixtures, and make
// test-versions CAPTURE=1 for the older releases), idle and under load.
func realCaptures(t *testing.T) []string {
	t.Helper()
	dirs, _ := filepath.Glob("../../testdata/dump/v1.*-*")
	re := regexp.MustCompile(`^v1\.(\d+)\.\d+-(idle|load)$`)
	var out []string
	for _, d := range dirs {
		m := re.FindStringSubmatch(filepath.Base(d))
		if m == nil {
			continue
		}
		if minor, _ := strconv.Atoi(m[1]); minor >= 28 {
			out = append(out, filepath.Base(d))
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d real captures of 1.28+ servers: %v", len(out), out)
	}
	return out
}

// TestRealCaptures parses the dumps captured from real kube-apiservers 1.29
// to 1.37 (idle, and with the load generator queueing apf-load) and checks
// the invariants upstream's dump code guarantees within one body
// (apf_controller_debug.go, the same layout since 1.28).
func TestRealCaptures(t *testing.T) {
	for _, dir := range realCaptures(t) {
		t.Run(dir, func(t *testing.T) {
			pls, err := ParsePriorityLevels(readFixture(t, dir, FilePriorityLevels))
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]bool{}
			for i, r := range pls {
				names[r.Name] = true
				// Sorted by name since 1.27; exempt is a real row since 1.28.
				if i > 0 && pls[i-1].Name >= r.Name {
					t.Errorf("levels not sorted: %s then %s", pls[i-1].Name, r.Name)
				}
				if r.Placeholder || !r.HasCounters {
					t.Errorf("%s: a 1.28+ row has counters and no <none>", r.Name)
				}
				if r.IsIdle != (r.WaitingRequests == 0 && r.ExecutingRequests == 0) {
					t.Errorf("%s: IsIdle=%v with %d waiting, %d executing", r.Name, r.IsIdle, r.WaitingRequests, r.ExecutingRequests)
				}
				if r.ActiveQueues > r.WaitingRequests {
					t.Errorf("%s: %d active queues for %d waiting requests", r.Name, r.ActiveQueues, r.WaitingRequests)
				}
			}
			for _, want := range []string{"exempt", "catch-all", "global-default", "workload-low"} {
				if !names[want] {
					t.Errorf("level %s missing", want)
				}
			}
			qs, err := ParseQueues(readFixture(t, dir, FileQueues))
			if err != nil {
				t.Fatal(err)
			}
			next := map[string]int{}
			for _, q := range qs {
				if q.PriorityLevel == "exempt" || q.PriorityLevel == "catch-all" {
					t.Errorf("queueless level %s has a queue row", q.PriorityLevel)
				}
				if q.Index != next[q.PriorityLevel] {
					t.Errorf("%s: queue %d after %d", q.PriorityLevel, q.Index, next[q.PriorityLevel]-1)
				}
				next[q.PriorityLevel] = q.Index + 1
				if q.SeatsInUse < q.ExecutingRequests || q.InitialSeatsSum < q.PendingRequests {
					t.Errorf("%s/%d: seats below requests: %+v", q.PriorityLevel, q.Index, q)
				}
			}
			reqs, err := ParseRequests(readFixture(t, dir, FileRequests))
			if err != nil {
				t.Fatal(err)
			}
			// The dump request itself is always executing in exempt.
			self := false
			pos := map[[2]interface{}]int{}
			for _, r := range reqs {
				if !r.HasDetails {
					t.Fatalf("no details: %+v", r)
				}
				if r.PriorityLevel == "exempt" && r.APIPath == PathRequests && r.Executing() && r.QueueIndex == -1 {
					self = true
				}
				if r.Executing() == r.StartTime.IsZero() {
					t.Errorf("start time %v for executing=%v", r.StartTime, r.Executing())
				}
				if !r.Executing() {
					k := [2]interface{}{r.PriorityLevel, r.QueueIndex}
					if r.IndexInQueue != pos[k] {
						t.Errorf("%s queue %d: position %d after %d", r.PriorityLevel, r.QueueIndex, r.IndexInQueue, pos[k]-1)
					}
					pos[k] = r.IndexInQueue + 1
				}
			}
			if !self {
				t.Error("the dump_requests request itself is not in the dump")
			}
			if strings.HasSuffix(dir, "-load") && len(pos) == 0 {
				t.Error("the load capture has no waiting request")
			}
		})
	}
}

// TestOlderReleases parses the dumps produced by the flowcontrol code of
// k8s.io/apiserver v0.20.0, v0.26.0 and v0.27.0 run in-process (see
// testdata/dump/inprocess-capture): eight service-account requests held in
// workload-low (executing up to its limit, waiting beyond), one exempt
// request executing. Before 1.28 only waiting requests are dumped.
func TestOlderReleases(t *testing.T) {
	tests := []struct {
		dir          string
		counters     bool // dump_priority_levels has the four counters (1.27+)
		seats        bool // dump_queues has seats (1.26+)
		requestSeats bool // dump_requests has InitialSeats (1.26+)
	}{
		{"v1.20.0-inprocess", false, false, false},
		{"v1.26.0-inprocess", false, true, true},
		{"v1.27.0-inprocess", true, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			pls, err := ParsePriorityLevels(readFixture(t, tt.dir, FilePriorityLevels))
			if err != nil {
				t.Fatal(err)
			}
			var exempt, low *PriorityLevelRow
			for i := range pls {
				switch pls[i].Name {
				case "exempt":
					exempt = &pls[i]
				case "workload-low":
					low = &pls[i]
				}
				if pls[i].HasCounters != tt.counters {
					t.Errorf("%s: HasCounters = %v", pls[i].Name, pls[i].HasCounters)
				}
			}
			if exempt == nil || !exempt.Placeholder {
				t.Errorf("exempt is not a <none> row: %+v", exempt)
			}
			if low == nil || low.WaitingRequests+low.ExecutingRequests != 8 || low.WaitingRequests == 0 || low.IsIdle || low.ActiveQueues == 0 {
				t.Fatalf("workload-low = %+v, want 8 requests, some waiting", low)
			}
			qs, err := ParseQueues(readFixture(t, tt.dir, FileQueues))
			if err != nil {
				t.Fatal(err)
			}
			pending := 0
			for _, q := range qs {
				if q.HasSeats != tt.seats {
					t.Fatalf("queue HasSeats = %v", q.HasSeats)
				}
				if q.PriorityLevel == "workload-low" {
					pending += q.PendingRequests
				}
			}
			if pending != low.WaitingRequests {
				t.Errorf("workload-low queues hold %d requests, the level %d", pending, low.WaitingRequests)
			}
			reqs, err := ParseRequests(readFixture(t, tt.dir, FileRequests))
			if err != nil {
				t.Fatal(err)
			}
			if len(reqs) != low.WaitingRequests {
				t.Fatalf("%d requests dumped, want the %d waiting ones", len(reqs), low.WaitingRequests)
			}
			for _, r := range reqs {
				if r.Executing() || r.PriorityLevel != "workload-low" || r.FlowSchema != "service-accounts" || !strings.HasPrefix(r.UserName, "system:serviceaccount:team-") ||
					r.FlowDistinguisher != r.UserName || r.Verb != "list" || (r.InitialSeats == 1) != tt.requestSeats || r.Seats() != 1 {
					t.Errorf("request = %+v", r)
				}
			}
		})
	}
}
