package recording

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
)

// Alone is the executions of one priority level's requests that ran with
// no other request executing (exempt ones aside): their median execution
// time and how many there were. Nothing the configuration sets stretches
// them, so they say how fast the machine ran the server: the same load
// executes alone in the same time under any configuration, unless the
// machine itself ran faster or slower.
type Alone struct {
	Median time.Duration `json:"median"`
	N      int           `json:"n"`
}

// MinAlone is the fewest executions alone, in each of two runs, a level's
// speed is compared on.
const MinAlone = 30

// execution is one served request's execution in a run's httplog: its
// level, and its kind of request (kindOf).
type execution struct {
	start, end  time.Time
	level, kind string
}

// kindOf names a request's kind for AtOnce: its verb, path and query, a
// continue token's value dropped (the pages of one LIST are one kind).
// The level is not in it: a change moves requests between levels, and
// what a kind costs does not follow its level.
func kindOf(verb, uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return verb + " " + uri
	}
	q := u.Query()
	if q.Has("continue") {
		q.Set("continue", "*")
	}
	u.RawQuery = q.Encode()
	return verb + " " + u.String()
}

// readExecutions reads the executions of logFile from byte offset from, in
// the order they started: the served requests with an apf_execution_time,
// 429s, watches and exempt requests aside.
func readExecutions(logFile string, from int64) ([]execution, error) {
	f, err := os.Open(logFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, err
	}
	var execs []execution
	r := input.NewHTTPLogReader(bufio.NewReader(f), logFile, input.Options{Lenient: true}, nil)
	var w workload.Request
	for {
		err := r.Next(&w)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if !w.HasServiceTime || w.PriorityLevel == "" || w.PriorityLevel == "exempt" || w.Status == 429 || strings.EqualFold(w.Verb, "WATCH") {
			continue
		}
		end := w.Arrival.Add(w.Latency)
		execs = append(execs, execution{start: end.Add(-w.ServiceTime), end: end, level: w.PriorityLevel, kind: kindOf(w.Verb, w.URI)})
	}
	slices.SortFunc(execs, func(a, b execution) int { return a.start.Compare(b.start) })
	return execs, nil
}

// alone is each level's executions alone (Alone) of execs, in the order
// they started: those no other overlapped.
func alone(execs []execution) map[string]Alone {
	took := map[string][]time.Duration{}
	var lastEnd time.Time // the latest end of the executions before i
	for i, e := range execs {
		alone := !lastEnd.After(e.start) && (i+1 == len(execs) || !execs[i+1].start.Before(e.end))
		if alone {
			took[e.level] = append(took[e.level], e.end.Sub(e.start))
		}
		if e.end.After(lastEnd) {
			lastEnd = e.end
		}
	}
	out := map[string]Alone{}
	for l, ds := range took {
		slices.Sort(ds)
		out[l] = Alone{Median: ds[len(ds)/2], N: len(ds)}
	}
	return out
}

// atOnce is the executions of execs, in the order they started, by kind of
// request and by how many executed at once over each: the time every
// execution (itself included) overlapped it, over its own time, rounded.
// A key is "KIND @N" (kindOf). The executions of one kind at one number
// at once take the same time under any configuration on a server that
// shares its cores with nothing the configuration sets, unless the
// machine ran faster or slower: AtOnce extends Alone (N = 1, nearly) to a
// change that runs more at once.
func atOnce(execs []execution) map[string]Alone {
	var longest time.Duration
	for _, e := range execs {
		longest = max(longest, e.end.Sub(e.start))
	}
	took := map[string][]time.Duration{}
	for i, e := range execs {
		d := e.end.Sub(e.start)
		if d <= 0 {
			continue
		}
		// the executions that may overlap e started at most longest
		// before it, and before it ended
		var overlap time.Duration
		for j := sort.Search(i, func(j int) bool { return !execs[j].start.Before(e.start.Add(-longest)) }); j < len(execs) && execs[j].start.Before(e.end); j++ {
			// from the later start to the earlier end, from e's start
			if o := min(d, execs[j].end.Sub(e.start)) - max(0, execs[j].start.Sub(e.start)); o > 0 {
				overlap += o
			}
		}
		key := fmt.Sprintf("%s @%d", e.kind, int(math.Round(float64(overlap)/float64(d))))
		took[key] = append(took[key], d)
	}
	out := map[string]Alone{}
	for k, ds := range took {
		slices.Sort(ds)
		out[k] = Alone{Median: ds[len(ds)/2], N: len(ds)}
	}
	return out
}

// Served is one priority level's executions over a run (as
// readExecutions reads them): how many, the time from the first one's
// start to the last one's end, and the time they took in all. They say
// what the server served a second and how many it ran at once: a change
// that runs a level more at once serves more a second only where the
// machine gives it the time, which the run tells and a prediction from
// the recording cannot.
type Served struct {
	N    int           `json:"n"`
	Span time.Duration `json:"span"`
	Busy time.Duration `json:"busy"`
}

// String gives the executions a second, how many ran at once on average,
// and their mean: "180/s, 2.76 at once, 15.4ms each".
func (s Served) String() string {
	if s.N == 0 || s.Span <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f/s, %.2f at once, %v each", float64(s.N)/s.Span.Seconds(), float64(s.Busy)/float64(s.Span), (s.Busy / time.Duration(s.N)).Round(100*time.Microsecond))
}

// served is each level's Served of execs, in the order they started: a
// level's first is its earliest start.
func served(execs []execution) map[string]Served {
	first, last := map[string]time.Time{}, map[string]time.Time{}
	out := map[string]Served{}
	for _, e := range execs {
		s := out[e.level]
		if s.N == 0 {
			first[e.level] = e.start
		}
		if e.end.After(last[e.level]) {
			last[e.level] = e.end
		}
		s.N++
		s.Busy += e.end.Sub(e.start)
		out[e.level] = s
	}
	for l, s := range out {
		s.Span = last[l].Sub(first[l])
		out[l] = s
	}
	return out
}

// ReadExecutions reads kube-apiserver's httplog logFile from byte offset
// from (the run's lines) into r: each level's executions alone (Alone),
// all its executions (Served), and the executions by kind and number at
// once (AtOnce): the served requests, watches and exempt requests aside,
// each from its line's completion back over apf_execution_time.
func (r *Run) ReadExecutions(logFile string, from int64) error {
	execs, err := readExecutions(logFile, from)
	if err != nil {
		return err
	}
	r.Alone, r.Served, r.AtOnce = alone(execs), served(execs), atOnce(execs)
	return nil
}

// SameSpeed says whether run met the machine's speed rec met: for every
// level with MinAlone executions alone in both, the median of run's
// within 0.8–1.25 of rec's (the band SameServer holds the server's CPU
// to). It returns nil when they agree or nothing can be compared, else
// what differs.
func SameSpeed(rec, run Run) error {
	if diff := speedDiff(rec, run); len(diff) > 0 {
		return fmt.Errorf("the machine ran at another speed than in the recorded run: %s", strings.Join(diff, "; "))
	}
	return nil
}

// speedDiff is SameSpeed's differences, one per level.
func speedDiff(rec, run Run) []string {
	var diff []string
	for _, l := range slices.Sorted(maps.Keys(rec.Alone)) {
		a, b := rec.Alone[l], run.Alone[l]
		if a.N < MinAlone || b.N < MinAlone {
			continue
		}
		if !sameWithin(float64(b.Median) / float64(a.Median)) {
			diff = append(diff, fmt.Sprintf("%s's requests executing alone took %s (median of %d), in the recorded run %s (of %d)",
				l, b.Median.Round(10*time.Microsecond), b.N, a.Median.Round(10*time.Microsecond), a.N))
		}
	}
	return diff
}

// sameWithin says whether a run's figure at ratio to the recorded run's is
// the same server's: within 0.8–1.25 (SameServer's CPU, SameSpeed's
// executions alone).
func sameWithin(ratio float64) bool { return ratio >= 0.8 && ratio <= 1.25 }

// SpeedComparable says whether the re-runs of w can be held to SameSpeed:
// on a server with no CPU quota, or one of a core or more, always. Under
// less than one core, a request executing alone still waits for the quota
// the requests before it used up, so its time follows the configuration
// where the change lets more run at once (starved's 3 seats: its re-runs'
// executions alone took 0.78-1.82 times the recorded median, over thirteen
// full runs); a change that leaves every level's concurrency as recorded
// (KeepsConcurrency: starved's longer queues, 0.73-1.29 of the recordings
// made at the machine's usual speed) leaves them the machine's speed.
func SpeedComparable(sc Scenario, w WhatIf) bool {
	if q := sc.CPU.APIServer; q == 0 || q >= 1 {
		return true
	}
	return KeepsConcurrency(sc, w.Change)
}

// Speed is how fast the machine ran runs against rec, the speed a
// prediction for them is made at (kubectl apf simulate --server-speed): for
// each run, over the levels with MinAlone executions alone in both, the
// mean of the ratios rec's median / run's median, each level weighted by
// the fewer of its two counts, in logs; then the runs' geometric mean. It
// is 1 when no level can be compared, and ok says whether any could.
func Speed(rec Run, runs []Run) (speed float64, ok bool) {
	return speedOver(rec, runs, func(r Run) map[string]Alone { return r.Alone })
}

// SpeedAtOnce is Speed over AtOnce instead of Alone: each kind of request
// at each number at once that MinAlone executions of both runs had. A
// change that runs a level more at once leaves few executions alone, but
// one at three at once took as long before the change as after on the
// same machine. It holds where the executions at once share the cores
// alike under any configuration: a server with no CPU quota (RerunSpeed).
func SpeedAtOnce(rec Run, runs []Run) (speed float64, ok bool) {
	return speedOver(rec, runs, func(r Run) map[string]Alone { return r.AtOnce })
}

// RerunSpeed is the machine's speed over the re-runs of w against rec, as
// the what-if checks hold a prediction to it, and how it was measured; ok
// is false where it cannot be told. A change that leaves every level's
// concurrency as recorded (KeepsConcurrency): the executions alone
// (Speed), the same executions with nothing beside them. A change that
// runs more or fewer at once leaves few alone: on a server with no CPU
// quota, the executions at the same number at once (SpeedAtOnce); under a
// quota, an execution at once waits for what the others used of it, which
// the change moves, and nothing tells the machine's speed.
func RerunSpeed(sc Scenario, w WhatIf, rec Run, runs []Run) (speed float64, how string, ok bool) {
	if KeepsConcurrency(sc, w.Change) {
		if sp, ok := Speed(rec, runs); ok {
			return sp, fmt.Sprintf("their executions alone took %.2f of its time, recording.Speed", 1/sp), true
		}
	}
	if sc.CPU.APIServer == 0 {
		if sp, ok := SpeedAtOnce(rec, runs); ok {
			return sp, fmt.Sprintf("their executions of each kind at each number at once took %.2f of its time, recording.SpeedAtOnce", 1/sp), true
		}
	}
	return 1, "", false
}

// speedOver is Speed over the executions of, by key.
func speedOver(rec Run, runs []Run, of func(Run) map[string]Alone) (speed float64, ok bool) {
	var sum float64
	n := 0
	for _, run := range runs {
		var s, w float64
		theirs := of(run)
		for l, a := range of(rec) {
			b := theirs[l]
			if a.N < MinAlone || b.N < MinAlone || a.Median <= 0 || b.Median <= 0 {
				continue
			}
			k := float64(min(a.N, b.N))
			s += k * math.Log(float64(a.Median)/float64(b.Median))
			w += k
		}
		if w > 0 {
			sum += s / w
			n++
		}
	}
	if n == 0 {
		return 1, false
	}
	return math.Exp(sum / float64(n)), true
}
