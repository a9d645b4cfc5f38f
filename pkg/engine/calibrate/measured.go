package calibrate

import (
	"fmt"
	"slices"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// The measured-executions check. An audit log alone records no execution
// time: the calibration estimates each (from a one-seat level's ends,
// placed back to back, or from the latency less the replay's own wait,
// averaged per kind of request, then held to the seat time the recording
// allows). The server measured those executions:
// apiserver_flowcontrol_request_execution_seconds, observed where
// httplog's apf_execution_time is, sums per level to httplog's figure to
// the microsecond (a kept crowded recording: 11.837069 s for tiny's 620
// executions from both). When the metrics' scrapes hold it, the
// executions of the workload that ended between them are counted, and
// where they are the ones APF counted (to within MeasuredCountTolerance,
// and the executions that ended while a scrape at either end gathered its
// figures, which either count may hold) the time the replay gives them is
// set beside the time APF measured.
//
// The replay keeps the estimates: scaling them to APF's time was tried on
// the kept recordings (docs/simulate.md, the measured executions) and
// made no figure better. On a one-seat level the time the estimates hold
// beyond APF's is the server's between one execution and the next, which
// the level's overhead then took back; on noisy-pages-heavy it made the
// audit log's fit what httplog's executions give, 1.8% too many
// dispatches. The CPU evidence's model reads them at APF's time
// (RuleMeasured, measuredRatios): it refused an audit log alone because
// the executions' time in all and their concurrency rested on estimates,
// and APF's measure is that time.

// Measured is what APF measured of one level's executions between the
// metrics' scrapes, beside what the replay gives the same ones.
type Measured struct {
	// Executions and Time are what APF measured: the executions that
	// ended between the scrapes at Scrapes, and their time in all.
	Executions int64     `json:"executions"`
	Time       Duration  `json:"time"`
	Scrapes    TimeRange `json:"scrapes"`
	// Logged are the workload's executions of the level that ended
	// between the scrapes; Recorded the time of those whose execution it
	// records (httplog), Estimated the calibration's estimates of the
	// others (as recorded, before a CPU model takes its stretch out).
	Logged int64 `json:"logged"`
	// Gathering are the workload's executions that ended while the
	// scrape at either end gathered its figures (Evidence.
	// ExecutionsGathering): APF counted those at the first scrape among
	// Logged or not, those at the last one beyond Logged or not. A
	// store's scrapes on a busy server take a few hundred milliseconds.
	// nil where the scrapes do not tell how long they took (a bundle's).
	Gathering *[2]int64 `json:"gathering,omitempty"`
	Recorded  Duration  `json:"recorded,omitempty"`
	Estimated Duration  `json:"estimated"`
	// Ratio is the mean execution the replay gives the logged ones,
	// (Recorded + Estimated) / Logged, over APF's, Time / Executions
	// (the time in all's ratio where the counts agree, as they do but
	// for the executions of the scrapes' gathering); 0 when the workload's
	// executions are not APF's, and Why then says why.
	Ratio float64 `json:"ratio,omitempty"`
	Why   string  `json:"why,omitempty"`
	// Replay, where the workload holds fewer executions than APF counted
	// (a window cut inside the scrapes'), is the window to replay for the
	// check: the scrapes' own.
	Replay *TimeRange `json:"replay,omitempty"`
}

// tally is what the check counted of one level's executions that ended
// between the metrics' scrapes: how many, and their recorded and
// estimated execution time (ns).
type tally struct {
	logged        int64
	gathering     [2]int64
	recorded, est float64
}

// measuredExecutions is the measured-executions check: it reads the
// workload as the calibration prepares it for the replay (Apply) and sets
// Level.Measured for each level with estimated executions that ended
// between the metrics' scrapes.
func measuredExecutions(r *Result, in *inputs) error {
	ex, mw, took := in.opts.Executions, in.opts.ExecutionsWindow, in.opts.ExecutionsGathering
	if mw.IsZero() {
		mw = in.opts.MetricsWindow
	}
	if !r.Enabled || len(ex) == 0 || mw.IsZero() {
		return nil
	}
	src, err := in.open()
	if err != nil {
		return err
	}
	tallies := map[string]*tally{}
	err = r.readApplied(src, "calibration", func(a *applied, w *workload.Request) {
		x := &a.x
		if _, ok := ex[x.level]; !a.ok || !ok || x.exempt || x.rejected || !x.hasExec {
			return
		}
		// x.exec is the execution as recorded or estimated, before a CPU
		// model takes its stretch or stalls out for the replay to place
		end := w.Arrival.Add(max(w.Latency, x.exec))
		if end.Before(mw.From) || end.After(mw.To.Add(took[1])) {
			return
		}
		t := tallies[x.level]
		if t == nil {
			t = &tally{}
			tallies[x.level] = t
		}
		if end.After(mw.To) {
			// while the last scrape gathered: APF's count may hold it
			t.gathering[1]++
			return
		}
		if end.Before(mw.From.Add(took[0])) {
			t.gathering[0]++
		}
		t.logged++
		if x.execFrom == fromRecord {
			t.recorded += float64(x.exec)
		} else {
			t.est += float64(x.exec)
		}
	})
	if err != nil {
		return err
	}
	levels := make([]string, 0, len(tallies))
	for l := range tallies {
		levels = append(levels, l)
	}
	slices.Sort(levels)
	for _, level := range levels {
		t, m := tallies[level], ex[level]
		lv := r.level(level)
		if lv == nil || t.est <= 0 || t.logged < int64(r.params.MinEvidence) {
			continue
		}
		lv.Measured = &Measured{Executions: m.Count, Time: Duration(m.Sum), Scrapes: mw, Logged: t.logged, Recorded: Duration(t.recorded), Estimated: Duration(t.est)}
		if took != [2]time.Duration{} {
			lv.Measured.Gathering = &t.gathering
		}
		// APF's count holds the logged executions but those that ended
		// while the first scrape gathered, and may hold those that ended
		// while the last one did
		tol := r.params.MeasuredCountTolerance * float64(m.Count)
		low, high := float64(t.logged-t.gathering[0])-tol, float64(t.logged+t.gathering[1])+tol
		switch {
		case float64(m.Count) < low || float64(m.Count) > high:
			gathering := lv.Measured.GatheringSaid()
			if gathering != "" {
				gathering = " (" + gathering + ")"
			}
			lv.Measured.Why = fmt.Sprintf("APF measured %d executions of the level between the scrapes, the workload holds %d that ended between them%s: not the same requests", m.Count, t.logged, gathering)
			if t.logged < m.Count {
				// a window cut inside the scrapes' where no two lie
				// inside it: the scrapes count executions the workload
				// does not hold
				lv.Measured.Replay = &TimeRange{From: mw.From, To: mw.To}
			}
		case m.Sum <= 0 || m.Count <= 0:
			lv.Measured.Why = "APF measured no execution time"
		default:
			lv.Measured.Ratio = (t.recorded + t.est) / float64(t.logged) / (float64(m.Sum) / float64(m.Count))
		}
	}
	return nil
}

// GatheringSaid says how many of the logged executions ended while the
// scrapes at either end gathered their figures (Gathering); "" where the
// scrapes tell no time of their own.
func (m *Measured) GatheringSaid() string {
	if m == nil || m.Gathering == nil {
		return ""
	}
	return fmt.Sprintf("%d of them ended while the first scrape gathered, %d more while the last did", m.Gathering[0], m.Gathering[1])
}

// measuredRatios returns, by the level indices of ids, the ratio of an
// audit log's estimated executions to the time APF measured for them
// (Measured.Ratio), for the levels whose estimates it is not below (0
// for the others), and those levels' names, sorted: the CPU evidence's
// model reads their executions at APF's time (RuleMeasured). None where
// the model runs without the rule.
func (r *Result) measuredRatios(ids map[string]int32) (map[int32]float64, []string) {
	if !r.params.runs(RuleMeasured) {
		return nil, nil
	}
	var out map[int32]float64
	var names []string
	for _, lv := range r.Levels {
		id, ok := ids[lv.Level]
		if m := lv.Measured; !ok || m == nil || m.Ratio < 1 {
			continue
		}
		if out == nil {
			out = map[int32]float64{}
		}
		out[id] = lv.Measured.Ratio
		names = append(names, lv.Level)
	}
	slices.Sort(names)
	return out, names
}
