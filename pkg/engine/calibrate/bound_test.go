package calibrate

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// crowded records the shape of the crowded server: a 1-seat level
// that served about 1,050 requests of about 1.2 ms each in 14.6 s, where the
// level never queued for long, but a third of the requests spent pre (from
// preMin, up to 100 ms more) in the filters ahead of APF (authentication
// waiting for a CPU). With annotate, those slower than 500 ms carry the
// audit annotations the apiserver writes on them (authentication,
// apf-queue-wait when they queued, total), as a joined httplog + audit
// record does; without, only httplog's latency − apf_execution_time holds
// that time.
func crowded(seed uint64, preMin time.Duration, annotate bool) []workload.Request {
	rng := rand.New(rand.NewPCG(seed, 11))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type req struct{ at, pre, exec, end time.Duration }
	var rs []req
	for at := time.Duration(0); at < 14600*time.Millisecond; at += time.Duration(rng.ExpFloat64() * float64(14*time.Millisecond)) {
		r := req{at: at, exec: time.Duration(900+rng.IntN(600)) * time.Microsecond}
		if rng.IntN(3) == 0 {
			r.pre = preMin + time.Duration(rng.IntN(100))*time.Millisecond
		}
		rs = append(rs, r)
	}
	// the level's one seat serves them in the order they reach APF
	order := make([]int, len(rs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return int(rs[i].at + rs[i].pre - rs[j].at - rs[j].pre) })
	var free time.Duration
	for _, i := range order {
		free = max(rs[i].at+rs[i].pre, free) + rs[i].exec
		rs[i].end = free
	}
	var reqs []workload.Request
	for _, r := range rs {
		user := []string{"alice", "bob", "carol", "dave"}[rng.IntN(4)]
		w := workload.Request{Arrival: start.Add(r.at), User: user, Groups: []string{"load", "system:authenticated"}, UserKnown: true,
			Method: "GET", Verb: "list", URI: "/api/v1/namespaces/ns/configmaps", ServiceTime: r.exec, HasServiceTime: true, InitialSeats: 1, HasSeats: true,
			Status: 200, Latency: r.end - r.at + 100*time.Microsecond}
		if annotate && w.Latency > 500*time.Millisecond {
			w.HasLatencyAnnotations, w.TotalLatency, w.PreAPF = true, w.Latency, r.pre
			if q := r.end - r.exec - r.at - r.pre; q > 0 {
				w.QueueWait, w.HasQueueWait = q, true
			}
		}
		reqs = append(reqs, w)
		if rng.IntN(20) == 0 {
			// exempt requests, dispatched on arrival, tell the lag ahead of APF
			reqs = append(reqs, workload.Request{Arrival: start.Add(r.at), User: "admin", Groups: []string{"system:masters", "system:authenticated"}, UserKnown: true,
				Method: "GET", Verb: "get", URI: "/api/v1/namespaces/default", ServiceTime: time.Millisecond, HasServiceTime: true, InitialSeats: 1, HasSeats: true,
				Status: 200, Latency: time.Millisecond + 200*time.Microsecond})
		}
	}
	return reqs
}

// seatTimeOf returns, per non-exempt level of cfg, the seat time the
// prepared records imply (Σ seats × (execution + queued overhead), over
// the executed ones), and the union of the times those records were in the
// server (arrival to arrival + latency). It reads the records as the replay
// does, after Apply, and classifies them itself.
func seatTimeOf(t *testing.T, cfg *engine.Config, src workload.Reader) (implied, busy map[string]time.Duration) {
	t.Helper()
	implied, busy = map[string]time.Duration{}, map[string]time.Duration{}
	spans := map[string][][2]time.Duration{}
	var first time.Time
	for {
		var w workload.Request
		if err := src.Next(&w); err != nil {
			break
		}
		if first.IsZero() {
			first = w.Arrival
		}
		er, err := engine.ParseRequest(w.Method, w.URI, engine.Identity{User: w.User, Groups: w.Groups})
		if err != nil {
			t.Fatal(err)
		}
		c := cfg.Classify(er)
		if c.PriorityLevel.Name == "exempt" || w.Status == 429 || !w.HasServiceTime {
			continue
		}
		l := c.PriorityLevel.Name
		implied[l] += time.Duration(max(w.InitialSeats, 1)) * (w.ServiceTime + w.QueuedOverhead)
		a := w.Arrival.Sub(first)
		spans[l] = append(spans[l], [2]time.Duration{a, a + max(w.Latency, w.ServiceTime)})
	}
	for l, ss := range spans {
		slices.SortFunc(ss, func(x, y [2]time.Duration) int { return int(x[0] - y[0]) })
		var end time.Duration = -1
		var from time.Duration
		for _, s := range ss {
			if s[0] > end {
				if end >= 0 {
					busy[l] += end - from
				}
				from, end = s[0], s[1]
			}
			end = max(end, s[1])
		}
		busy[l] += end - from
	}
	return implied, busy
}

// TestCalibrationFitsTheRecordedSeatTime: on the crowded shape, the hold
// that the saturated time alone gives (latency − execution read as queue
// wait) would hold the level's one seat longer than it was busy; the
// calibration refuses it, says so, and the seat time its holds imply fits
// in the time the level was busy. The replay of the recorded configuration
// then dispatches the recorded count within 10%.
func TestCalibrationFitsTheRecordedSeatTime(t *testing.T) {
	cfg := config(t, 1)
	const scl = 6
	reqs := crowded(1, 50*time.Millisecond, false)
	res, err := Derive(&sliceReader{reqs: reqs}, Options{Config: cfg, ServerConcurrencyLimit: scl})
	if err != nil {
		t.Fatal(err)
	}
	lv := res.level("slow")
	if lv == nil {
		t.Fatal("no calibration of the level slow")
	}
	t.Logf("%d requests; slow: overhead %v (%s, %d dispatches from a queue over %v saturated), hold %v, busy %v; refused: %+v", len(reqs), time.Duration(lv.Overhead), lv.Source, lv.Dispatches, time.Duration(lv.SaturatedTime), time.Duration(lv.HoldTime), time.Duration(lv.BusyTime), lv.Refused)
	if lv.Refused == nil || lv.Refused.Check != "seat time" || lv.Refused.Overhead <= lv.Overhead {
		t.Errorf("slow: the estimate was not refused by the seat-time check: %+v", lv.Refused)
	} else if want := fmt.Sprintf("more than the %.3g its %d %s gave over the %.3gs it had a request in the server", float64(lv.SeatLimit)*time.Duration(lv.BusyTime).Seconds(), lv.SeatLimit, seatWord(lv.SeatLimit), time.Duration(lv.BusyTime).Seconds()); !strings.HasSuffix(lv.Refused.Why, want) {
		t.Errorf("slow: the refusal says %q, want it to end %q", lv.Refused.Why, want)
	}
	implied, busy := seatTimeOf(t, cfg, res.Apply(&sliceReader{reqs: reqs}))
	t.Logf("implied seat time %v, busy %v", implied["slow"], busy["slow"])
	if busy["slow"] == 0 || implied["slow"] > busy["slow"] {
		t.Errorf("slow: the calibrated holds imply %v of seat time, more than its 1 seat over the %v it was busy", implied["slow"], busy["slow"])
	}
	rc := fairqueue.ReplayConfig{Config: cfg, ServerConcurrencyLimit: scl, NoBorrowing: true}
	for i := 0; ; i++ {
		fit := NewFit(0, DefaultParams())
		rep, err := fairqueue.Replay(res.Apply(&sliceReader{reqs: reqs}), rc, nil, fairqueue.ReplayOptions{OnOutcome: fit.Observe})
		if err != nil {
			t.Fatal(err)
		}
		if !res.CheckDispatches(fit.Result(rep.Levels), i < 3) {
			break
		}
	}
	lv = res.level("slow")
	t.Logf("dispatches recorded %d, replayed %d", lv.RecordedDispatches, lv.ReplayedDispatches)
	if d := float64(lv.ReplayedDispatches - lv.RecordedDispatches); lv.RecordedDispatches == 0 || d > 0.1*float64(lv.RecordedDispatches) || -d > 0.1*float64(lv.RecordedDispatches) {
		t.Errorf("slow: the replay dispatched %d requests, the recording %d", lv.ReplayedDispatches, lv.RecordedDispatches)
	}
}

// TestDispatchTimesFromTheFiltersAnnotations: when the requests slowed
// ahead of APF carry the audit annotations of the filters (a joined
// httplog + audit record slower than 500 ms), their dispatch is read from
// them, not from latency − execution: the level shows none of the
// saturated time the same records without annotations show, and the
// calibration has nothing to refuse.
func TestDispatchTimesFromTheFiltersAnnotations(t *testing.T) {
	cfg := config(t, 1)
	const scl = 6
	for _, annotate := range []bool{false, true} {
		reqs := crowded(2, 600*time.Millisecond, annotate)
		res, err := Derive(&sliceReader{reqs: reqs}, Options{Config: cfg, ServerConcurrencyLimit: scl})
		if err != nil {
			t.Fatal(err)
		}
		lv := res.level("slow")
		var annotated int
		for _, w := range reqs {
			if w.HasLatencyAnnotations {
				annotated++
			}
		}
		// the counts are those of the last Apply's reading
		src := res.Apply(&sliceReader{reqs: reqs})
		for src.Next(&workload.Request{}) == nil {
		}
		var fromAnnotations int64
		if res.DispatchTimes != nil {
			fromAnnotations = res.DispatchTimes.Annotated
		}
		t.Logf("annotated %v: %d of %d records annotated, %d dispatch times from the annotations; slow: overhead %v (%s), %d dispatches from a queue over %v; refused %+v",
			annotate, annotated, len(reqs), fromAnnotations, time.Duration(lv.Overhead), lv.Source, lv.Dispatches, time.Duration(lv.SaturatedTime), lv.Refused)
		if !annotate {
			if lv.Refused == nil {
				t.Errorf("without annotations: latency − execution holds the time ahead of APF, yet no estimate was refused")
			}
			continue
		}
		if annotated == 0 || fromAnnotations != int64(annotated) {
			t.Errorf("%d records annotated, %d dispatch times read from the annotations", annotated, fromAnnotations)
		}
		if lv.Refused != nil || lv.Overhead > Duration(time.Millisecond) {
			t.Errorf("with annotations: overhead %v, refused %+v; the recorded server held a seat for the execution alone", time.Duration(lv.Overhead), lv.Refused)
		}
	}
}

// TestSeatTimeOfWideRequests: a request wider than its level runs alone
// (canAccommodateSeatsLocked lets it in when nothing executes) and holds
// the level, not its width, for its time. The demo's Reject level of 1
// seat ran LISTs of 10 seats one after another: the check counted 10
// seat-seconds a second of a 1-seat level, refused the audit log's
// execution times and scaled them to 0.10 of APF's measure of them, and
// the replay dispatched 98 where the server dispatched 56.
func TestSeatTimeOfWideRequests(t *testing.T) {
	params := DefaultParams()
	lim := engine.LevelLimits{Name: "r", NominalCL: 1, UpperCL: 1}
	for _, tt := range []struct {
		cap      int
		refused  bool
		implied  time.Duration
		describe string
	}{
		{cap: seatCap(map[string]engine.LevelLimits{"r": lim}, "r"), implied: 200 * time.Millisecond, describe: "capped at the level's seat"},
		{cap: 0, refused: true, describe: "uncapped, as the check was"},
	} {
		s := &seatTime{params: &params, cap: tt.cap}
		// 20 LISTs of 10 seats, 10 ms each, back to back
		for i := range 20 {
			at := time.Duration(i) * 10 * time.Millisecond
			s.add(&obs{level: "r", arrival: at, latency: 10 * time.Millisecond, exec: 10 * time.Millisecond, seats: 10, hasExec: true, execFrom: fromEnds})
		}
		r := &Result{params: &params}
		r.Enabled, r.Levels = true, []Level{{Level: "r"}}
		r.bound(map[string]*seatTime{"r": s}, map[string]engine.LevelLimits{"r": lim}, func(*Level) bool { return true }, true)
		lv := r.Levels[0]
		if got := lv.Refused != nil; got != tt.refused {
			t.Errorf("%s: refused %v (%+v), want %v", tt.describe, got, lv.Refused, tt.refused)
		}
		if tt.implied > 0 && time.Duration(lv.ImpliedSeatTime) != tt.implied {
			t.Errorf("%s: implied seat time %v, want %v", tt.describe, time.Duration(lv.ImpliedSeatTime), tt.implied)
		}
	}
}
