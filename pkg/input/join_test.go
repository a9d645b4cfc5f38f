package input

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// refJoin is the join as it was written first, by lookups of the pending
// map alone (its eviction looks every audit ID up, taken or not): the
// reference that Join must equal, duplicate audit IDs included, once its
// requests are sorted by arrival (a joined request takes its audit event's
// arrival where that is earlier).
type refJoin struct {
	logs, audits workload.Reader
	slack        time.Duration
	pending      map[string]identity
	order        []string
	head         workload.Request
	haveHead     bool
	auditDone    bool
	stats        workload.JoinStats
}

func (j *refJoin) Next(r *workload.Request) error {
	if err := j.logs.Next(r); err != nil {
		if errors.Is(err, io.EOF) {
			j.stats.AuditOnly += int64(len(j.pending))
			j.pending, j.order = nil, nil
			if j.haveHead {
				j.stats.AuditOnly++
				j.haveHead = false
			}
			for !j.auditDone {
				var a workload.Request
				switch err := j.audits.Next(&a); {
				case errors.Is(err, io.EOF):
					j.auditDone = true
				case err != nil:
					return err
				default:
					j.stats.AuditOnly++
				}
			}
		}
		return err
	}
	for !j.auditDone {
		if !j.haveHead {
			err := j.audits.Next(&j.head)
			if errors.Is(err, io.EOF) {
				j.auditDone = true
				break
			}
			if err != nil {
				return err
			}
			j.haveHead = true
		}
		if j.head.Arrival.After(r.Arrival.Add(j.slack)) {
			break
		}
		if a := &j.head; a.AuditID != "" {
			j.pending[a.AuditID] = identity{arrival: a.Arrival, latency: a.Latency, user: a.User, instance: a.Instance, groups: a.Groups,
				queueWait: a.QueueWait, preAPF: a.PreAPF, total: a.TotalLatency, hasQueueWait: a.HasQueueWait, hasLatencies: a.HasLatencyAnnotations}
			j.order = append(j.order, a.AuditID)
		}
		j.haveHead = false
	}
	for len(j.order) > 0 {
		a, ok := j.pending[j.order[0]]
		if ok && !a.arrival.Before(r.Arrival.Add(-j.slack)) {
			break
		}
		if ok {
			delete(j.pending, j.order[0])
			j.stats.AuditOnly++
		}
		j.order = j.order[1:]
	}
	if a, ok := j.pending[r.AuditID]; ok && r.AuditID != "" {
		delete(j.pending, r.AuditID)
		if a.arrival.Before(r.Arrival) && !a.arrival.Before(r.Arrival.Add(-j.slack)) {
			if r.Arrival.Sub(a.arrival) > time.Microsecond {
				j.stats.Earlier++
			}
			r.Arrival = a.arrival
		}
		if end := a.arrival.Add(a.latency); !end.Before(r.Arrival) {
			r.AuditLatency, r.HasAuditLatency = end.Sub(r.Arrival), true
		}
		r.User, r.Groups, r.UserKnown = a.user, a.groups, true
		r.QueueWait, r.HasQueueWait = a.queueWait, a.hasQueueWait
		r.PreAPF, r.TotalLatency, r.HasLatencyAnnotations = a.preAPF, a.total, a.hasLatencies
		r.Instance = a.instance
		j.stats.Matched++
	} else {
		j.stats.Unmatched++
	}
	return nil
}

// TestJoinAsReference joins random httplog and audit streams whose audit
// IDs come from a small pool (duplicates, IDs taken and then seen again,
// empty IDs, events arriving long before or after their line) and checks
// that Join yields the requests and counts of refJoin.
func TestJoinAsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(44, 4))
	base := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	stream := func(n, ids int, spread time.Duration, audit bool) []workload.Request {
		rs := make([]workload.Request, n)
		at := base
		for i := range rs {
			at = at.Add(time.Duration(rng.ExpFloat64() * float64(spread)))
			id := ""
			if rng.IntN(20) > 0 {
				id = fmt.Sprintf("id-%d", rng.IntN(ids))
			}
			rs[i] = workload.Request{Arrival: at, AuditID: id, URI: "/api/v1/pods", Source: workload.Where{Name: "join", Line: int64(i + 1)}}
			if audit {
				rs[i].User, rs[i].Groups = fmt.Sprintf("u%d", i), []string{"g"}
				rs[i].Instance = fmt.Sprintf("i%d", rng.IntN(3))
				rs[i].QueueWait, rs[i].HasQueueWait = time.Duration(i), i%2 == 0
				rs[i].PreAPF, rs[i].TotalLatency, rs[i].HasLatencyAnnotations = time.Duration(2*i), time.Duration(3*i), i%3 == 0
				rs[i].Latency = time.Duration(rng.Int64N(int64(spread)))
			}
		}
		return rs
	}
	// rounds whose joined requests the audit events' arrivals put out of
	// the httplog's order
	reordered := 0
	for round := range 300 {
		ids := 1 + rng.IntN(200)
		spread := time.Duration(1+rng.IntN(3000)) * time.Millisecond
		logs := stream(rng.IntN(400), ids, spread, false)
		audits := stream(rng.IntN(400), ids, time.Duration(float64(spread)*(0.5+rng.Float64())), true)
		slack := time.Duration(1+rng.IntN(20)) * time.Second
		// the inputs read as they are, and through prefetch, whose audit
		// events the join takes by reference (workload.RefReader)
		for _, ahead := range []bool{false, true} {
			want := &refJoin{logs: &sliceReader{logs}, audits: &sliceReader{audits}, slack: slack, pending: map[string]identity{}}
			var stats workload.JoinStats
			var lr, ar workload.Reader = &sliceReader{logs}, &sliceReader{audits}
			if ahead {
				lp, ap := workload.Prefetch(lr), workload.Prefetch(ar)
				defer lp.Close()
				defer ap.Close()
				lr, ar = lp, ap
			}
			got := Join(lr, ar, slack, &stats)
			var wants []workload.Request
			for {
				var w workload.Request
				if err := want.Next(&w); err != nil {
					if !errors.Is(err, io.EOF) {
						t.Fatal(err)
					}
					break
				}
				wants = append(wants, w)
			}
			if !slices.IsSortedFunc(wants, func(a, b workload.Request) int { return a.Arrival.Compare(b.Arrival) }) {
				reordered++
			}
			slices.SortStableFunc(wants, func(a, b workload.Request) int { return a.Arrival.Compare(b.Arrival) })
			for i := 0; ; i++ {
				var g workload.Request
				gerr := got.Next(&g)
				if i == len(wants) {
					if !errors.Is(gerr, io.EOF) {
						t.Fatalf("round %d (prefetched %v): request %d after the %d wanted (error %v)", round, ahead, i, len(wants), gerr)
					}
					break
				}
				if gerr != nil {
					t.Fatalf("round %d (prefetched %v), request %d of %d: error %v", round, ahead, i, len(wants), gerr)
				}
				if !reflect.DeepEqual(g, wants[i]) {
					t.Fatalf("round %d (prefetched %v), request %d:\n got %+v\nwant %+v", round, ahead, i, g, wants[i])
				}
			}
			if stats != want.stats {
				t.Fatalf("round %d (prefetched %v): stats %+v, want %+v", round, ahead, stats, want.stats)
			}
		}
	}
	if reordered == 0 {
		t.Fatal("no round's audit arrivals put its requests out of the httplog's order: the test does not exercise the join's reordering")
	}
	t.Logf("%d of 600 joins reordered", reordered)
}

// TestJoinTakesTheAuditArrival: a request whose httplog line was written
// 100 ms after its latency was measured (a goroutine stalled on a server
// short of CPU) arrives by its line's time less its latency after a
// request that came in 50 ms after it. Joined, it takes its audit event's
// requestReceivedTimestamp (the time httplog's latency is measured from)
// and comes first; its latency stays the line's, and its audit latency
// runs to its audit event's ResponseComplete stage.
func TestJoinTakesTheAuditArrival(t *testing.T) {
	line := func(at, latency, id string) string {
		return `I1121 ` + at + `       1 httplog.go:134] "HTTP" verb="GET" URI="/api/v1/namespaces/default/pods/p" latency="` + latency +
			`" userAgent="kubectl/v1.37.1" audit-ID="` + id + `" srcIP="127.0.0.1:53422" apf_pl="global-default" apf_fs="global-default" apf_iseats=1 apf_fseats=0 apf_additionalLatency="0s" apf_execution_time="1ms" resp=200` + "\n"
	}
	event := func(received, stage, id string) string {
		return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"` + id + `","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/pods/p","verb":"get","user":{"username":"alice","groups":["system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"kubectl/v1.37.1","objectRef":{"resource":"pods","namespace":"default","name":"p","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-21T` + received + `Z","stageTimestamp":"2026-11-21T` + stage + `Z"}` + "\n"
	}
	// a: received 14:15:10.000, its audit event stamped 40 ms later, its
	// latency 50 ms, its line written at 10.150; b: received 10.050,
	// stamped, answered and logged at 10.080
	logs := line("14:15:10.080000", "30ms", "b") + line("14:15:10.150000", "50ms", "a")
	audits := event("14:15:10.000000", "14:15:10.040000", "a") + event("14:15:10.050000", "14:15:10.080000", "b")
	opts := Options{Year: 2026}
	var stats workload.JoinStats
	j := Join(NewHTTPLogReader(strings.NewReader(logs), "log", opts, nil), NewAuditReader(strings.NewReader(audits), "audit", opts, nil), 0, &stats)
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, "2026-11-21T"+s+"Z")
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	want := []struct {
		id                    string
		arrival               time.Time
		latency, auditLatency time.Duration
	}{{"a", at("14:15:10"), 50 * time.Millisecond, 40 * time.Millisecond}, {"b", at("14:15:10.05"), 30 * time.Millisecond, 30 * time.Millisecond}}
	for i, w := range want {
		var r workload.Request
		if err := j.Next(&r); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if r.AuditID != w.id || !r.Arrival.Equal(w.arrival) || r.Latency != w.latency || !r.UserKnown {
			t.Errorf("request %d: %s arrived %s, latency %s (user known %v); want %s at %s, %s", i, r.AuditID, r.Arrival.Format(time.StampMicro), r.Latency, r.UserKnown, w.id, w.arrival.Format(time.StampMicro), w.latency)
		}
		if !r.HasAuditLatency || r.AuditLatency != w.auditLatency {
			t.Errorf("request %d: audit latency %s (known %v), want %s", i, r.AuditLatency, r.HasAuditLatency, w.auditLatency)
		}
	}
	if err := j.Next(&workload.Request{}); !errors.Is(err, io.EOF) {
		t.Fatalf("after the two requests: %v, want EOF", err)
	}
	if want := (workload.JoinStats{Matched: 2, Earlier: 1}); stats != want {
		t.Errorf("stats %+v, want %+v", stats, want)
	}
}
