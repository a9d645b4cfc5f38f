package calibrate

import (
	"fmt"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// A calibration must never contradict the recording it was read from. Two
// checks hold it to that, and an estimate that breaks either is refused
// (Level.Refused) for what the recording does support:
//
//   - seat time: the seats a level's executed requests held as calibrated
//     (Σ seats × (execution + overhead), the overhead counted on every
//     dispatch, as if each came from a queue) cannot exceed the seats the
//     level could hold (its upper limit, borrowing included) over the time
//     it had a request in the server (the union of arrival to end, from the
//     recorded latencies). An overhead that would break it is scaled down
//     until the seat time fits (bound);
//   - dispatches: the replay of the recorded configuration dispatches each
//     level's requests within DispatchTolerance of the recorded count
//     (requests less 429s). When it dispatches fewer, the hold is too long:
//     the overhead is scaled so that the replay's throughput meets the
//     recorded one (CheckDispatches), and the replay is run again. When
//     the CFS model's level dispatches more, the model's CPU per work,
//     which the process's CPU reads from below, is raised towards 1 until
//     it dispatches as many (fitPerWork).
//
// The first check needs no replay and catches the grossest estimates (an
// overhead read from a waiting time that also holds the filters ahead of
// APF); the second catches the rest.

// Refusal is an estimate the recording contradicts, and what replaced it.
type Refusal struct {
	// Overhead is the estimate refused; Level.Overhead is what replaced it.
	Overhead Duration `json:"overhead"`
	// Check is the check it broke.
	Check Check `json:"check"`
	// Why says how the estimate contradicts the recording.
	Why string `json:"why"`
	// ExecutionScale, when not 0, is the factor the execution times
	// estimated from an audit log alone were scaled by: with no overhead
	// at all they held more seat time than the recording allows.
	ExecutionScale float64 `json:"executionScale,omitempty"`
	// Dispatched, when not 0, is the factor the dispatch check scaled
	// those execution times by after that (it is in ExecutionScale):
	// filling the seat time is the most they can hold, and the replay
	// dispatched fewer than the server did.
	Dispatched float64 `json:"dispatched,omitempty"`
}

// seatTime is what the seat-time check reads of one level: per time window
// of the arrivals, the seats of the level's executed requests and their
// seats × execution, and the union of the times they were in the server.
type seatTime struct {
	// params are the calibration's thresholds
	params *Params
	// Σ seats, Σ seats × execution (ns), Σ seats × estimated execution
	win       map[int64]*[3]float64
	busy      span
	noLatency int64
	// cap is the most seats the level holds (seatLimit), 0 unknown: a
	// request wider than its level runs alone and holds the level's
	// seats, not its own width, for its time (queueset.go,
	// canAccommodateSeatsLocked lets it in when nothing executes)
	cap int
}

func (s *seatTime) add(x *obs) {
	if x.latency <= 0 {
		// a synthetic record: when it left the server is unknown
		s.noLatency++
		return
	}
	if s.win == nil {
		s.win = map[int64]*[3]float64{}
		s.busy.params = s.params
	}
	k := int64(x.arrival / s.params.Window)
	w := s.win[k]
	if w == nil {
		w = new([3]float64)
		s.win[k] = w
	}
	seats := x.seats
	if s.cap > 0 {
		seats = min(seats, uint64(s.cap))
	}
	w[0] += float64(seats)
	w[1] += float64(seats) * float64(x.exec)
	if x.execFrom != fromRecord {
		w[2] += float64(seats) * float64(x.exec)
	}
	s.busy.add(x.arrival, x.arrival+max(x.latency, x.exec))
}

// implied returns the seat time of the level's executed requests under the
// calibration (ns), and the part that is their recorded or estimated
// execution alone.
func (r *Result) implied(level string, s *seatTime) (implied, exec, estimated float64) {
	for k, w := range s.win {
		exec += w[1]
		estimated += w[2]
		implied += w[1] + w[0]*float64(r.OverheadAt(level, time.Duration(k)*r.params.Window))
	}
	return implied, exec, estimated
}

// seatCap is seatLimit of a level with limits, 0 for one without.
func seatCap(limits map[string]engine.LevelLimits, level string) int {
	if lim, ok := limits[level]; ok && !lim.Exempt {
		return seatLimit(lim)
	}
	return 0
}

// seatLimit is the most seats a level of the recorded configuration could
// hold: its upper limit, borrowing included.
func seatLimit(lim engine.LevelLimits) int {
	return max(lim.UpperCL, lim.NominalCL)
}

// bound applies the seat-time check to the levels which selects, and
// caps the overhead of those the recording contradicts.
//
// With scaleExec (rebound, which reads what Apply yields), execution times
// estimated from an audit log alone that hold too much seat time even
// without an overhead are scaled down too.
func (r *Result) bound(sts map[string]*seatTime, limits map[string]engine.LevelLimits, which func(*Level) bool, scaleExec bool) {
	if !r.Enabled {
		return
	}
	for i := range r.Levels {
		lv := &r.Levels[i]
		s := sts[lv.Level]
		lim, known := limits[lv.Level]
		if !which(lv) || !known || lim.Exempt || s == nil {
			continue
		}
		s.busy.close()
		if s.noLatency > 0 || s.busy.total <= 0 {
			continue
		}
		seats := seatLimit(lim)
		capacity := float64(seats) * float64(s.busy.total)
		implied, exec, estimated := r.implied(lv.Level, s)
		lv.BusyTime, lv.SeatLimit, lv.ImpliedSeatTime = Duration(s.busy.total), seats, Duration(implied)
		if implied <= capacity {
			continue
		}
		was := lv.Overhead
		if lv.Refused != nil {
			was = lv.Refused.Overhead
		}
		ref := &Refusal{Overhead: was, Check: CheckSeatTime, Why: fmt.Sprintf(
			"with it, its executed requests would hold %.3g seat-seconds, more than the %.3g its %d %s gave over the %.3gs it had a request in the server",
			time.Duration(implied).Seconds(), time.Duration(capacity).Seconds(), seats, seatWord(seats), s.busy.total.Seconds())}
		if implied > exec {
			f := max(0, (capacity-exec)/(implied-exec))
			r.scale(lv, f)
			lv.ImpliedSeatTime = Duration(max(capacity, exec))
		}
		if scaleExec && exec > capacity && estimated > 0 {
			// the estimated executions alone hold too much: what the
			// recording supports is their share of what is left
			f := max(0, (capacity-(exec-estimated))/estimated)
			if r.execScale == nil {
				r.execScale = map[string]float64{}
			}
			if old, ok := r.execScale[lv.Level]; ok {
				f *= old
			}
			r.execScale[lv.Level] = f
			ref.ExecutionScale = f
			lv.ImpliedSeatTime = Duration(capacity)
		}
		lv.Refused = ref
	}
}

// scale multiplies the overhead of level lv by f, overall and in every time
// window, and keeps it the level's own from then on.
func (r *Result) scale(lv *Level, f float64) {
	w := map[int64]time.Duration{}
	for k := range r.windows[lv.Level] {
		w[k] = time.Duration(f * float64(r.OverheadAt(lv.Level, time.Duration(k)*r.params.Window)))
	}
	o := time.Duration(f * float64(r.levelOverhead(lv.Level)))
	r.windows[lv.Level] = w
	r.overhead[lv.Level] = o
	if r.capped == nil {
		r.capped = map[string]bool{}
	}
	r.capped[lv.Level] = true
	lv.Overhead = Duration(o)
	for j := range lv.Windows {
		lv.Windows[j].Overhead = Duration(f * float64(lv.Windows[j].Overhead))
	}
	if lv.Seats > 0 {
		lv.HoldTime = lv.MeanExecution + lv.Overhead
	}
}

// CheckDispatches applies the dispatch check to the fit of a replay of the
// recorded configuration (NewFit, Fit.Result). It records each level's
// recorded and replayed dispatches, and, for a level the replay dispatched
// too few of while the calibration gave it an overhead, refuses that
// overhead for the one under which the replay's throughput would meet the
// recorded one (its hold scaled by replayed / recorded dispatches; none
// when that is not enough), unless refuse is false; for the CFS model's
// level, it fits the model's CPU per work to the recorded dispatches
// (fitPerWork). It returns whether it
// changed an overhead: the replay should then be run again.
func (r *Result) CheckDispatches(fit []LevelFit, refuse bool) bool {
	if r == nil || !r.Enabled {
		return false
	}
	changed := false
	for _, f := range fit {
		lv := r.level(f.Level)
		if lv == nil || lv.Source == SourceNone {
			continue
		}
		rec, rep := f.Requests-f.Recorded, f.Requests-f.Predicted
		lv.RecordedDispatches, lv.ReplayedDispatches = rec, rep
		lv.Dispatch = dispatchVerdict(r.params, rec, rep)
		if excess, ok := r.cfsExcess(lv.Level, rec, rep); refuse && ok && (r.fitPerWork(excess) || r.fitCost(excess)) {
			changed = true
			continue
		}
		if es, ok := r.execScale[lv.Level]; ok && refuse && lv.Refused != nil && rec >= int64(r.params.MinEvidence) && float64(rep) < (1-r.params.ScaledDispatchTolerance)*float64(rec) {
			// its throughput meets the recorded one with each hold
			// shorter by the replay's shortfall
			g := float64(rep) / float64(rec)
			r.execScale[lv.Level] = es * g
			lv.Refused.ExecutionScale = es * g
			lv.Refused.Dispatched = max(lv.Refused.Dispatched, 1) * g
			changed = true
			continue
		}
		if !refuse || rec < int64(r.params.MinEvidence) || float64(rep) >= (1-r.params.DispatchTolerance)*float64(rec) || lv.Overhead <= 0 {
			continue
		}
		exec := float64(lv.MeanExecution)
		if lv.Seats == 0 {
			exec = 0
		}
		hold := exec + float64(lv.Overhead)
		want := hold * float64(rep) / float64(rec)
		scale := 0.0
		if want > exec {
			scale = (want - exec) / float64(lv.Overhead)
		}
		was := lv.Overhead
		if lv.Refused != nil {
			was = lv.Refused.Overhead
		}
		r.scale(lv, scale)
		lv.Refused = &Refusal{Overhead: was, Check: CheckDispatches, Why: fmt.Sprintf(
			"with it, the replay of the recorded configuration dispatched %d of its requests, the server %d (more than %.0f%% fewer)", rep, rec, 100*r.params.DispatchTolerance)}
		changed = true
	}
	return changed
}

// dispatchVerdict holds a replay's dispatches of a level to the recorded
// count, within DispatchTolerance of it in both directions, where the
// server dispatched MinEvidence or more (below, one request is more than
// the tolerance).
func dispatchVerdict(params *Params, rec, rep int64) DispatchVerdict {
	switch {
	case rec < int64(params.MinEvidence):
		return DispatchUnchecked
	case float64(rep) > (1+params.DispatchTolerance)*float64(rec):
		return DispatchTooMany
	case float64(rep) < (1-params.DispatchTolerance)*float64(rec):
		return DispatchTooFew
	}
	return DispatchHeld
}

// level returns the calibration of the named level, nil when it has none.
func (r *Result) level(name string) *Level {
	for i := range r.Levels {
		if r.Levels[i].Level == name {
			return &r.Levels[i]
		}
	}
	return nil
}

// rebound applies the seat-time check again to what Apply yields from src
// (the workload Derive read): an audit log alone has its execution times
// estimated per kind of request from the last derivation, which the check
// at derivation time could not see yet.
func (r *Result) rebound(src workload.Reader) error {
	if !r.Enabled {
		return nil
	}
	sts := map[string]*seatTime{}
	limits := r.prep.limits
	err := r.readApplied(src, "calibration", func(a *applied, w *workload.Request) {
		x := a.x
		if !a.ok || x.exempt || x.rejected || !x.hasExec {
			return
		}
		x.exec = w.ServiceTime
		s := sts[x.level]
		if s == nil {
			s = &seatTime{params: r.params, cap: seatCap(limits, x.level)}
			sts[x.level] = s
		}
		s.add(&x)
	})
	if err != nil {
		return err
	}
	r.bound(sts, limits, func(*Level) bool { return true }, true)
	return nil
}

func seatWord(n int) string {
	if n == 1 {
		return "seat"
	}
	return "seats"
}
