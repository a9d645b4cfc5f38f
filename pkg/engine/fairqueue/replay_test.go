package fairqueue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
)

const testdata = "../../../testdata/workload"

func levelByName(res *fairqueue.Result, name string) fairqueue.LevelResult {
	for _, l := range res.Levels {
		if l.Name == name {
			return l
		}
	}
	return fairqueue.LevelResult{Name: name + " (absent)"}
}

func TestReplayJSONLWithDefaults(t *testing.T) {
	f, err := os.Open(filepath.Join(testdata, "workload.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var fatesSeen []string
	rep, err := fairqueue.Replay(input.NewJSONLReader(f, "w", input.Options{}, nil),
		fairqueue.ReplayConfig{Config: engine.DefaultConfig()}, nil,
		fairqueue.ReplayOptions{OnOutcome: func(w *workload.Request, o *fairqueue.Outcome) {
			fatesSeen = append(fatesSeen, w.URI+"="+o.Reason.String())
		}})
	if err != nil {
		t.Fatal(err)
	}
	// alice lists in global-default, the service account creates in
	// workload-low, the anonymous /healthz keeps its recorded probes/exempt
	for name, want := range map[string]int64{"global-default": 1, "workload-low": 1, "exempt": 1, "catch-all": 0} {
		if got := levelByName(&rep.Result, name); got.Dispatched != want {
			t.Errorf("%s dispatched %d, want %d", name, got.Dispatched, want)
		}
	}
	if rep.Workload.Records != 3 || rep.Workload.UnknownIdentity != 1 || rep.Workload.EstimatedSeats != 2 {
		t.Errorf("workload stats %+v", rep.Workload)
	}
	if len(fatesSeen) != 3 {
		t.Errorf("OnOutcome saw %v, want 3 outcomes", fatesSeen)
	}
}

// flood writes a JSONL workload: n requests from one user in one second, plus
// a trickle from another user.
func flood(n int) string {
	var b strings.Builder
	for i := range n {
		user := "alice"
		if i%10 == 0 {
			user = "bob"
		}
		fmt.Fprintf(&b, `{"offset":%g,"user":%q,"groups":["system:authenticated"],"verb":"get","path":"/api/v1/namespaces/default/configmaps/c%d","serviceTime":"200ms"}`+"\n", float64(i)/float64(n), user, i)
	}
	return b.String()
}

func squeezedGlobalDefault() *engine.Config {
	var pls []*flowcontrolv1.PriorityLevelConfiguration
	for _, pl := range engine.DefaultPriorityLevels() {
		pl = pl.DeepCopy()
		if pl.Name == "global-default" {
			one, zero := int32(1), int32(0)
			pl.Spec.Limited.NominalConcurrencyShares = &one
			pl.Spec.Limited.LendablePercent = &zero
			pl.Spec.Limited.BorrowingLimitPercent = &zero
			pl.Spec.Limited.LimitResponse.Queuing.QueueLengthLimit = 5
		}
		pls = append(pls, pl)
	}
	return engine.NewConfig(engine.DefaultFlowSchemas(), pls)
}

func TestReplayWhatIf(t *testing.T) {
	rep, err := fairqueue.Replay(input.NewJSONLReader(strings.NewReader(flood(3000)), "flood", input.Options{}, nil),
		fairqueue.ReplayConfig{Config: engine.DefaultConfig()},
		&fairqueue.ReplayConfig{Config: squeezedGlobalDefault()},
		fairqueue.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before, after := levelByName(&rep.Result, "global-default"), levelByName(rep.After, "global-default")
	t.Logf("before: %d dispatched, rejected %v, p99 wait %.3fs; after: %d dispatched, rejected %v, p99 wait %.3fs", before.Dispatched, before.Rejected, before.WaitP99Seconds, after.Dispatched, after.Rejected, after.WaitP99Seconds)
	tot := func(l fairqueue.LevelResult) int64 { return l.Dispatched + sum(l.Rejected) }
	if tot(before) != 3000 || tot(after) != 3000 {
		t.Fatalf("every request must be accounted for: before %+v, after %+v", before, after)
	}
	// 3000 requests of 200 ms in 1 s need ~600 seats: the default level
	// borrows up to its upper limit but still rejects some; one share and no
	// borrowing (ceil(600*1/226) = 3 seats) rejects far more
	if sum(after.Rejected) <= sum(before.Rejected) || after.Rejected["queue-full"] == 0 {
		t.Errorf("squeezing global-default should reject more: before %v, after %v", before.Rejected, after.Rejected)
	}
	if len(after.Flows) != 2 || !strings.HasPrefix(after.Flows[0].Name, "global-default/alice") {
		t.Errorf("after flows %+v, want alice then bob", after.Flows)
	}
	// the JSON shape the simulate command promises
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var shape struct {
		Levels []struct {
			Name           *string          `json:"name"`
			Dispatched     *int64           `json:"dispatched"`
			Rejected       map[string]int64 `json:"rejected"`
			WaitP99Seconds *float64         `json:"waitP99Seconds"`
		} `json:"levels"`
		After *struct {
			Levels []json.RawMessage `json:"levels"`
		} `json:"after"`
	}
	if err := json.Unmarshal(b, &shape); err != nil {
		t.Fatal(err)
	}
	if len(shape.Levels) == 0 || shape.Levels[0].Name == nil || shape.Levels[0].Dispatched == nil || shape.Levels[0].Rejected == nil || shape.Levels[0].WaitP99Seconds == nil || shape.After == nil || len(shape.After.Levels) != len(shape.Levels) {
		t.Errorf("JSON lacks levels[].name/dispatched/rejected/waitP99Seconds or after: %s", b[:min(len(b), 400)])
	}
}

func TestReplayHTTPLogJoinedWithAudit(t *testing.T) {
	fs, err := input.OpenFiles([]string{filepath.Join(testdata, "httplog-v1.37.log"), filepath.Join(testdata, "audit.jsonl")}, input.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	rep, err := fairqueue.Replay(fs, fairqueue.ReplayConfig{Config: engine.DefaultConfig()}, nil, fairqueue.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// alice → global-default; the service account → workload-low; bob
	// (impersonated, no groups) matches nothing and falls back to catch-all;
	// the two unknown identities keep catch-all and kube-scheduler's
	// workload-high
	want := map[string]int64{"global-default": 1, "workload-low": 1, "catch-all": 2, "workload-high": 1}
	for name, n := range want {
		l := levelByName(&rep.Result, name)
		if l.Dispatched+sum(l.Rejected) != n {
			t.Errorf("%s: %d requests, want %d", name, l.Dispatched+sum(l.Rejected), n)
		}
	}
	if rep.Workload.RecordedRejections != 1 || rep.Workload.UnknownIdentity != 2 {
		t.Errorf("workload stats %+v", rep.Workload)
	}
	// five requests with a recorded status; the recorded 429 was not
	// predicted (nothing else was running)
	var n, onlyRecorded int64
	for _, a := range rep.Agreement {
		n += a.BothRejected + a.OnlyPredicted + a.OnlyRecorded + a.BothServed
		onlyRecorded += a.OnlyRecorded
		if a.Level == "workload-low" && (a != fairqueue.LevelAgreement{Level: "workload-low", OnlyRecorded: 1} || a.Fraction() != 0) {
			t.Errorf("workload-low agreement %+v", a)
		}
	}
	if n != 5 || onlyRecorded != 1 {
		t.Errorf("agreement %+v: want 5 requests, 1 recorded-only rejection", rep.Agreement)
	}
}

// TestBorrowingRaisesTheLimit runs a level at 1 seat whose borrowing pass
// (every 10 s of simulated time) raises it to 5, and checks the demand
// statistics the pass receives.
func TestBorrowingRaisesTheLimit(t *testing.T) {
	var got []engine.SeatDemandStats
	level := fairqueue.LevelConfig{Name: "q", Queues: 1, HandSize: 1, QueueLengthLimit: 100, ConcurrencyLimit: 1}
	var starts []time.Duration
	sim, err := fairqueue.NewSimulator([]fairqueue.LevelConfig{level}, fairqueue.Options{
		DefaultWaitLimit: time.Minute,
		OnOutcome:        func(o *fairqueue.Outcome) { starts = append(starts, o.Start) },
		Borrow: func(st []engine.SeatDemandStats) []int {
			got = append(got, st[0])
			return []int{5}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var reqs []fairqueue.Request
	for i := range 10 {
		reqs = append(reqs, fairqueue.Request{ID: int64(i), InitialSeats: 1, ServiceTime: 25 * time.Second})
	}
	if _, err := sim.Run(&sliceSource{reqs: reqs}); err != nil {
		t.Fatal(err)
	}
	// 1 runs at 0; at 10 s the limit becomes 5 and 4 more start
	want := "[0s 10s 10s 10s 10s 25s 35s 35s 35s 35s]"
	if fmt.Sprint(starts) != want {
		t.Errorf("starts %v, want %s", starts, want)
	}
	// first period: 1 executing + 9 waiting = 10 seats demanded throughout
	if len(got) == 0 || got[0].HighWatermark != 10 || got[0].Avg != 10 || got[0].StdDev != 0 {
		t.Errorf("first period stats %+v, want high watermark 10, avg 10, stddev 0", got)
	}
}

// FuzzReplayJSONL replays arbitrary JSONL workloads against the defaults:
// no panic, and every replayed record is accounted for exactly once.
func FuzzReplayJSONL(f *testing.F) {
	b, err := os.ReadFile(filepath.Join(testdata, "workload.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(flood(50)))
	f.Add([]byte(`{"offset":"0s","user":"u","verb":"create","path":"/api/v1/namespaces/x/pods","serviceTime":"1s","initialSeats":1000,"finalSeats":1000000,"additionalLatency":"1h"}` + "\n" +
		`{"offset":"0s","verb":"get","path":"/api/v1/namespaces/x/pods/p/log"}`))
	cfg := engine.DefaultConfig()
	f.Fuzz(func(t *testing.T, in []byte) {
		rep, err := fairqueue.Replay(input.NewJSONLReader(bytes.NewReader(in), "fuzz", input.Options{}, nil),
			fairqueue.ReplayConfig{Config: cfg}, nil, fairqueue.ReplayOptions{})
		if err != nil {
			return // bad input is reported, not replayed
		}
		var n int64
		for _, l := range rep.Levels {
			n += l.Dispatched + sum(l.Rejected)
		}
		if want := rep.Workload.Records - rep.Workload.Bypassed - rep.Workload.Skipped; n != want {
			t.Fatalf("%d outcomes for %d replayable records (%+v)", n, want, rep.Workload)
		}
	})
}

// overheadReader gives every request a queued overhead, as a calibration
// does.
type overheadReader struct {
	r  workload.Reader
	oh time.Duration
}

func (o overheadReader) Next(w *workload.Request) error {
	err := o.r.Next(w)
	w.QueuedOverhead = o.oh
	return err
}

// TestReplaySpeed: a server at speed 2 replays a workload as the server
// at speed 1 replays the same workload with every execution and queued
// overhead halved, and not as it replays the workload unchanged.
func TestReplaySpeed(t *testing.T) {
	replay := func(svc string, oh time.Duration, speed float64) fairqueue.LevelResult {
		t.Helper()
		src := overheadReader{input.NewJSONLReader(strings.NewReader(strings.ReplaceAll(flood(3000), `"200ms"`, `"`+svc+`"`)), "flood", input.Options{}, nil), oh}
		rep, err := fairqueue.Replay(src, fairqueue.ReplayConfig{Config: engine.DefaultConfig()},
			&fairqueue.ReplayConfig{Config: squeezedGlobalDefault(), Speed: speed}, fairqueue.ReplayOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return levelByName(rep.After, "global-default")
	}
	fast := replay("200ms", 40*time.Millisecond, 2)
	halved := replay("100ms", 20*time.Millisecond, 1)
	slow := replay("200ms", 40*time.Millisecond, 1)
	if !reflect.DeepEqual(fast, halved) {
		t.Errorf("at speed 2:\n%+v\nwith the times halved:\n%+v", fast, halved)
	}
	if sum(fast.Rejected) >= sum(slow.Rejected) {
		t.Errorf("twice as fast a server should reject fewer: %v at speed 2, %v at 1", fast.Rejected, slow.Rejected)
	}
	if recorded := replay("200ms", 40*time.Millisecond, 0); !reflect.DeepEqual(recorded, slow) {
		t.Errorf("speed 0 is the recorded server's: %+v, not %+v", recorded, slow)
	}
}

// stretchReader gives every request the stretch a calibration read it ran
// under in the recording.
type stretchReader struct {
	r       workload.Reader
	stretch float64
}

func (s stretchReader) Next(w *workload.Request) error {
	err := s.r.Next(w)
	w.RecordedStretch = s.stretch
	return err
}

// TestReplayUnstretch: a replay with Unstretch runs each request for its
// execution over the stretch it was recorded under, before its speed, as
// the same replay of the workload with the executions so divided does;
// a replay without it keeps the recorded executions, and so does the
// compiled replay of the same workload.
func TestReplayUnstretch(t *testing.T) {
	src := func(svc string, stretch float64) workload.Reader {
		return stretchReader{input.NewJSONLReader(strings.NewReader(strings.ReplaceAll(flood(3000), `"200ms"`, `"`+svc+`"`)), "flood", input.Options{}, nil), stretch}
	}
	replay := func(svc string, stretch float64, unstretch bool, speed float64) fairqueue.LevelResult {
		t.Helper()
		rep, err := fairqueue.Replay(src(svc, stretch), fairqueue.ReplayConfig{Config: engine.DefaultConfig()},
			&fairqueue.ReplayConfig{Config: squeezedGlobalDefault(), Unstretch: unstretch, Speed: speed}, fairqueue.ReplayOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return levelByName(rep.After, "global-default")
	}
	unstretched := replay("200ms", 2, true, 2)
	divided := replay("50ms", 0, false, 1)
	kept := replay("200ms", 2, false, 1)
	if !reflect.DeepEqual(unstretched, divided) {
		t.Errorf("unstretched by 2 at speed 2:\n%+v\nwith the times quartered:\n%+v", unstretched, divided)
	}
	if plain := replay("200ms", 0, false, 1); !reflect.DeepEqual(kept, plain) {
		t.Errorf("without Unstretch the recorded stretch changed the replay:\n%+v\n%+v", kept, plain)
	}
	if sum(unstretched.Rejected) >= sum(kept.Rejected) {
		t.Errorf("executions a quarter as long should be rejected less: %v unstretched, %v kept", unstretched.Rejected, kept.Rejected)
	}
	// the compiled replay reads the same stretch
	c, err := fairqueue.Compile(src("200ms", 2), fairqueue.ReplayConfig{Config: engine.DefaultConfig()}, fairqueue.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crep, err := c.Replay(context.Background(), fairqueue.ReplayConfig{Config: squeezedGlobalDefault(), Unstretch: true, Speed: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := levelByName(&crep.Result, "global-default"); !reflect.DeepEqual(got, unstretched) {
		t.Errorf("the compiled replay unstretched differs:\n%+v\n%+v", got, unstretched)
	}
}

// TestReplay429sExecuteAsTheirOwnLevel: in a change, a recorded 429 runs
// for the running mean of its own level's executions. A workload that
// names no level (an audit log, which has no apf_pl) put every record
// under "", so its 429s ran for the mean of every request recorded so
// far, exempt ones included: a /metrics scrape of 825 ms at a load's
// start gave a one-seat level's first 429s 54 ms each where its LISTs
// took 6 (crowded-30-seed18), and the change that queued them predicted
// 92 429s for the re-runs' 58. The exempt request's time must not reach
// the limited level, with the level named or not.
func TestReplay429sExecuteAsTheirOwnLevel(t *testing.T) {
	workloadOf := func(exempt string, named bool) string {
		level := func(l string) string {
			if !named {
				return ""
			}
			return fmt.Sprintf(`,"priorityLevel":%q`, l)
		}
		var b strings.Builder
		// an exempt scrape at the start, then a burst of alice's GETs
		// the recorded server rejected, then her executed ones
		fmt.Fprintf(&b, `{"offset":0,"user":"admin","groups":["system:masters"],"verb":"get","path":"/metrics","serviceTime":%q%s}`+"\n", exempt, level("exempt"))
		for i := range 20 {
			fmt.Fprintf(&b, `{"offset":%g,"user":"alice","groups":["system:authenticated"],"verb":"get","path":"/api/v1/namespaces/default/configmaps/c%d","status":429%s}`+"\n", 0.01+float64(i)/1000, i, level("global-default"))
		}
		for i := range 20 {
			fmt.Fprintf(&b, `{"offset":%g,"user":"alice","groups":["system:authenticated"],"verb":"get","path":"/api/v1/namespaces/default/configmaps/d%d","serviceTime":"5ms"%s}`+"\n", 0.5+float64(i)/100, i, level("global-default"))
		}
		return b.String()
	}
	replay := func(exempt string, named bool) fairqueue.LevelResult {
		t.Helper()
		rep, err := fairqueue.Replay(input.NewJSONLReader(strings.NewReader(workloadOf(exempt, named)), "w", input.Options{}, nil),
			fairqueue.ReplayConfig{Config: squeezedGlobalDefault()}, &fairqueue.ReplayConfig{Config: engine.DefaultConfig()}, fairqueue.ReplayOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return levelByName(rep.After, "global-default")
	}
	for _, named := range []bool{true, false} {
		short, long := replay("1ms", named), replay("800ms", named)
		if !reflect.DeepEqual(short, long) {
			t.Errorf("named %v: the exempt scrape's time reached global-default's 429s:\nwith 1 ms:   %+v\nwith 800 ms: %+v", named, short, long)
		}
	}
	if named, unnamed := replay("800ms", true), replay("800ms", false); !reflect.DeepEqual(named, unnamed) {
		t.Errorf("the level named and not:\n%+v\n%+v", named, unnamed)
	}
}
