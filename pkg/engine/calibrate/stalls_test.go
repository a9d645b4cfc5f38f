package calibrate

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// stallRecording is an httplog of level "slow": n requests executing for
// 2–3 ms each, of which stalled ones run for long instead, ending at
// offsets drawn by end (from the start of the recording).
func stallRecording(n, stalled int, long time.Duration, end func(i int, rng *rand.Rand) time.Duration) []workload.Request {
	longs := make([]time.Duration, stalled)
	for i := range longs {
		longs[i] = long
	}
	return stallsRecording(n, longs, end)
}

// stallsRecording is stallRecording with the j-th stall longs[j] long.
func stallsRecording(n int, longs []time.Duration, end func(i int, rng *rand.Rand) time.Duration) []workload.Request {
	stalled := len(longs)
	rng := rand.New(rand.NewPCG(3, 9))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var reqs []workload.Request
	for i := range n {
		exec := 2*time.Millisecond + time.Duration(rng.IntN(1000))*time.Microsecond
		at := time.Duration(i) * 37 * time.Millisecond
		if i%(n/stalled) == 0 && i/(n/stalled) < stalled {
			exec = longs[i/(n/stalled)]
			at = end(i, rng) - exec
		}
		reqs = append(reqs, workload.Request{Arrival: start.Add(at), User: "alice", Groups: []string{"load", "system:authenticated"}, UserKnown: true,
			Method: "GET", Verb: "list", URI: "/api/v1/namespaces/ns/configmaps", ServiceTime: exec, HasServiceTime: true, Latency: exec + 200*time.Microsecond,
			InitialSeats: 1, HasSeats: true, Status: 200})
	}
	// the workload must come in arrival order
	for i := 1; i < len(reqs); i++ {
		for j := i; j > 0 && reqs[j].Arrival.Before(reqs[j-1].Arrival); j-- {
			reqs[j], reqs[j-1] = reqs[j-1], reqs[j]
		}
	}
	return reqs
}

func slowLevel(t *testing.T, res *Result) Level {
	t.Helper()
	for _, l := range res.Levels {
		if l.Level == "slow" {
			return l
		}
	}
	t.Fatal("no level slow in the calibration")
	return Level{}
}

// TestStallsTellAServerShortOfCPU derives the stalls of synthetic
// recordings: executions of 90 ms among ones of 2–3 ms are stalls, and
// those that end at one phase of a 100 ms period are a CFS quota's; 15 ms
// executions are not stalls (less than 20 ms above the median), nor are
// too few long ones a shortage of CPU.
func TestStallsTellAServerShortOfCPU(t *testing.T) {
	cfg := config(t, 1)
	anywhere := func(i int, rng *rand.Rand) time.Duration {
		return time.Duration(i)*37*time.Millisecond + 100*time.Millisecond + time.Duration(rng.IntN(100_000))*time.Microsecond
	}
	tests := []struct {
		name       string
		stalled    int
		long       time.Duration
		end        func(int, *rand.Rand) time.Duration
		wantStalls int64
		short      bool
		throttled  bool
	}{
		{"throttled by a quota", 40, 90 * time.Millisecond, endsAtBoundary, 40, true, true},
		{"stalled at random", 40, 90 * time.Millisecond, anywhere, 40, true, false},
		{"too few stalls", 5, 90 * time.Millisecond, endsAtBoundary, 5, false, true},
		{"long, not stalled", 40, 15 * time.Millisecond, anywhere, 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reqs := stallRecording(1000, tt.stalled, tt.long, tt.end)
			res, err := Derive(&sliceReader{reqs: reqs}, Options{Config: cfg, ServerConcurrencyLimit: 6})
			if err != nil {
				t.Fatal(err)
			}
			lv := slowLevel(t, res)
			t.Logf("median %v, %d stalls, %.2f of the execution time, %.2f at one phase", time.Duration(lv.MedianExecution), lv.Stalls, lv.StallShare, lv.StallsAtPeriodStart)
			if m := time.Duration(lv.MedianExecution); m < 2*time.Millisecond || m > 3300*time.Microsecond {
				t.Errorf("median execution %v, the executions took 2–3 ms", m)
			}
			if lv.Stalls != tt.wantStalls {
				t.Errorf("%d stalls, want %d", lv.Stalls, tt.wantStalls)
			}
			if lv.ShortOfCPU != tt.short {
				t.Errorf("short of CPU: %v, want %v", lv.ShortOfCPU, tt.short)
			}
			if tt.wantStalls > 0 && (lv.StallsAtPeriodStart >= params.AtBoundaryThrottled) != tt.throttled {
				t.Errorf("%.2f of the stalls at one phase, want throttled %v", lv.StallsAtPeriodStart, tt.throttled)
			}
		})
	}
}

// serialRecording is an audit log alone (no execution times) of level
// "slow" served one request at a time, first come first served: requests
// of 2–3 ms arriving three at a time every 20 ms, of which every 25th
// stalls until 70–72 ms into a CFS period, at least 60 ms after it
// started. Each record's latency runs from its arrival to its end (and
// 200 µs of writing the response). withTimes adds each execution's time,
// as httplog would.
func serialRecording(n int, withTimes bool) (reqs []workload.Request, stalled int) {
	rng := rand.New(rand.NewPCG(5, 13))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var free time.Duration
	for i := range n {
		at := time.Duration(i/3) * 20 * ms
		begin := max(at, free)
		exec := 2*ms + time.Duration(rng.IntN(1000))*time.Microsecond
		if i%25 == 0 {
			end := (begin+60*ms-70*ms+params.CFSPeriod-1)/params.CFSPeriod*params.CFSPeriod + 70*ms + time.Duration(rng.IntN(2000))*time.Microsecond
			exec = end - begin
			stalled++
		}
		free = begin + exec
		reqs = append(reqs, workload.Request{Arrival: start.Add(at), User: "alice", Groups: []string{"load", "system:authenticated"}, UserKnown: true,
			Method: "GET", Verb: "list", URI: "/api/v1/namespaces/ns/configmaps", Latency: free - at + 200*time.Microsecond,
			InitialSeats: 1, HasSeats: true, Status: 200, ServiceTime: exec, HasServiceTime: withTimes})
		if !withTimes {
			reqs[i].ServiceTime = 0
		}
	}
	return reqs, stalled
}

// TestStallsOfAOneSeatLevelFromTheAuditLogAlone: on a level of one seat,
// each execution starts when it arrived or when the one before it ended,
// so that the audit log's ends tell the executions' times, and the stalls
// a CFS quota's throttling leaves, as httplog's execution times do. On a
// level of more seats the ends do not tell which execution waited for
// which, and none is read.
func TestStallsOfAOneSeatLevelFromTheAuditLogAlone(t *testing.T) {
	for _, withTimes := range []bool{true, false} {
		reqs, stalled := serialRecording(2000, withTimes)
		res, err := Derive(&sliceReader{reqs: reqs}, Options{Config: config(t, 1), ServerConcurrencyLimit: 6})
		if err != nil {
			t.Fatal(err)
		}
		lv := slowLevel(t, res)
		t.Logf("with execution times %v: median %v, %d stalls of %d, %.2f at one phase", withTimes, time.Duration(lv.MedianExecution), lv.Stalls, stalled, lv.StallsAtPeriodStart)
		if m := time.Duration(lv.MedianExecution); m < 2*ms || m > 3300*time.Microsecond {
			t.Errorf("with execution times %v: median execution %v, the executions took 2–3 ms", withTimes, m)
		}
		if lv.Stalls != int64(stalled) {
			t.Errorf("with execution times %v: %d stalls, want %d", withTimes, lv.Stalls, stalled)
		}
		if lv.StallsAtPeriodStart < params.AtBoundaryThrottled {
			t.Errorf("with execution times %v: %.2f of the stalls at one phase, want a quota's throttling", withTimes, lv.StallsAtPeriodStart)
		}
	}
	reqs, _ := serialRecording(2000, false)
	res, err := Derive(&sliceReader{reqs: reqs}, Options{Config: config(t, 5), ServerConcurrencyLimit: 6})
	if err != nil {
		t.Fatal(err)
	}
	if lv := slowLevel(t, res); lv.Stalls != 0 || lv.MedianExecution != 0 {
		t.Errorf("a level of more than one seat: median %v and %d stalls read from the audit log alone", time.Duration(lv.MedianExecution), lv.Stalls)
	}
}
