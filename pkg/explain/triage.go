package explain

import (
	"fmt"
	"math"
	"sort"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// Cause kinds of a Triage.
const (
	CauseNoQueues            = "no-queues"
	CauseTooLittleConcurreny = "too-little-concurrency"
	CauseElephantFlow        = "elephant-flow"
	CauseWideRequests        = "wide-requests"
	CauseTimeOuts            = "time-outs"
	CauseNotAPF              = "not-apf"
)

// Triage is the answer of "kubectl apf explain 429".
type Triage struct {
	// Release is the Kubernetes release replayed ("1.31"), ReleaseFrom
	// where it came from; set by the caller.
	Release     string           `json:"release,omitempty"`
	ReleaseFrom string           `json:"releaseFrom,omitempty"`
	Instances   []InstanceTriage `json:"instances"`
}

// InstanceTriage is the triage of one apiserver instance.
type InstanceTriage struct {
	Instance string `json:"instance"`
	// HasRates is true when two scrapes gave rates over Interval; otherwise
	// the counts are totals since the apiserver started.
	HasRates bool     `json:"hasRates"`
	Interval Duration `json:"interval,omitempty"`
	// Levels are the levels with rejections, most rejected first.
	Levels []LevelTriage `json:"levels"`
	// Other429 is the rate (or total) of 429 answers that APF did not
	// produce: apiserver_request_total{code="429"} minus APF's rejections.
	Other429 float64 `json:"other429"`
	// Notes are diagnostics (a missing dump, no metrics, ...).
	Notes []string `json:"notes,omitempty"`
}

// LevelTriage is one rejecting level.
type LevelTriage struct {
	Name          string `json:"name"`
	LimitResponse string `json:"limitResponse,omitempty"`
	// Rejected is by reason: per second with rates, totals otherwise.
	Rejected         map[string]float64 `json:"rejected"`
	CurrentLimit     float64            `json:"currentLimit"`
	NominalLimit     int                `json:"nominalLimit"`
	SeatsInUse       float64            `json:"seatsInUse"`
	Waiting          int                `json:"waiting"`
	Queues           int32              `json:"queues,omitempty"`
	HandSize         int32              `json:"handSize,omitempty"`
	QueueLengthLimit int32              `json:"queueLengthLimit,omitempty"`
	WaitP99          *float64           `json:"waitP99Seconds,omitempty"`
	WaitLimit        Duration           `json:"waitLimit,omitempty"`
	// Flows are the heaviest flows in the request dump.
	Flows []FlowLoad `json:"flows,omitempty"`
	// Causes are the likely causes, with evidence and fix.
	Causes []Cause `json:"causes"`
}

// FlowLoad is one flow's share of a level in the request dump.
type FlowLoad struct {
	FlowSchema    string `json:"flowSchema"`
	Distinguisher string `json:"distinguisher"`
	Waiting       int    `json:"waiting"`
	Executing     int    `json:"executing"`
	Seats         int    `json:"seats"`
	// Hand is the flow's queues (recomputed from its FlowSchema and
	// distinguisher); Full counts those at the queue length limit.
	Hand []int `json:"hand,omitempty"`
	Full int   `json:"full"`
}

// Cause is one likely cause of rejections.
type Cause struct {
	Kind     string `json:"kind"`
	Evidence string `json:"evidence"`
	Fix      string `json:"fix"`
	YAML     string `json:"yaml,omitempty"`
}

// Explain429 triages the rejections visible in each instance's live state
// against the configuration.
func Explain429(c *engine.Config, scl int, requestTimeout time.Duration, lives []*dump.Snapshot) *Triage {
	if scl <= 0 {
		scl = engine.DefaultServerConcurrencyLimit
	}
	if requestTimeout <= 0 {
		requestTimeout = time.Minute
	}
	t := &Triage{Instances: []InstanceTriage{}}
	limits := map[string]engine.LevelLimits{}
	for _, l := range c.Limits(scl) {
		limits[l.Name] = l
	}
	for _, live := range lives {
		t.Instances = append(t.Instances, triageInstance(c, limits, requestTimeout, live))
	}
	return t
}

func triageInstance(c *engine.Config, limits map[string]engine.LevelLimits, requestTimeout time.Duration, live *dump.Snapshot) InstanceTriage {
	it := InstanceTriage{Instance: live.Instance, Levels: []LevelTriage{}}
	prev, cur := live.LatestMetrics()
	if cur == nil {
		it.Notes = append(it.Notes, "no metrics were read: rejections are counted from dump_priority_levels only (totals since the apiserver started)")
	}
	var stats []metrics.LevelStats
	if cur != nil {
		stats = metrics.Levels(prev, cur)
		it.HasRates = len(stats) > 0 && stats[0].HasRates
		if it.HasRates {
			it.Interval = Duration(cur.Time.Sub(prev.Time))
		}
	}
	byName := map[string]metrics.LevelStats{}
	for _, s := range stats {
		byName[s.Name] = s
	}
	rejectedBy := map[string]map[string]float64{}
	apfTotal := 0.0
	switch {
	case it.HasRates:
		for _, s := range stats {
			for reason, v := range s.RejectedPerSec {
				if v > 0 {
					if rejectedBy[s.Name] == nil {
						rejectedBy[s.Name] = map[string]float64{}
					}
					rejectedBy[s.Name][reason] = v
					apfTotal += v
				}
			}
		}
		// Subtract counts, not rates: the counters are whole numbers, and the
		// difference of two rates leaves floating-point dust (1e-15/s) where
		// every 429 came from APF.
		interval := cur.Time.Sub(prev.Time)
		all429 := metrics.Rate(count429(prev), count429(cur), interval) * interval.Seconds()
		apf429 := metrics.Rate(countRejected(prev), countRejected(cur), interval) * interval.Seconds()
		it.Other429 = math.Max(0, math.Round(all429-apf429)) / interval.Seconds()
	case cur != nil:
		for k, v := range cur.SumBy2(metrics.RejectedRequestsTotal, "priority_level", "reason") {
			if v > 0 {
				if rejectedBy[k[0]] == nil {
					rejectedBy[k[0]] = map[string]float64{}
				}
				rejectedBy[k[0]][k[1]] = v
				apfTotal += v
			}
		}
		it.Other429 = math.Max(0, count429(cur)-apfTotal)
	default:
		for _, row := range live.PriorityLevelDump {
			if !row.Placeholder && row.RejectedRequests > 0 {
				rejectedBy[row.Name] = map[string]float64{"any": float64(row.RejectedRequests)}
			}
		}
	}
	names := make([]string, 0, len(rejectedBy))
	for n := range rejectedBy {
		names = append(names, n)
	}
	sum := func(m map[string]float64) float64 {
		s := 0.0
		for _, v := range m {
			s += v
		}
		return s
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := sum(rejectedBy[names[i]]), sum(rejectedBy[names[j]])
		if a != b {
			return a > b
		}
		return names[i] < names[j]
	})
	for _, n := range names {
		it.Levels = append(it.Levels, triageLevel(c, limits[n], requestTimeout, live, n, byName[n], rejectedBy[n]))
	}
	if it.Other429 > 0 {
		unit := "since the apiserver started"
		if it.HasRates {
			unit = "per second"
		}
		it.Notes = append(it.Notes, fmt.Sprintf("%.3g HTTP 429 answers %s did not come from APF (apiserver_request_total{code=\"429\"} minus rejected_requests_total): evictions blocked by a PodDisruptionBudget, a watch cache that is (re)initializing, or another filter", it.Other429, unit))
	}
	return it
}

func triageLevel(c *engine.Config, l engine.LevelLimits, requestTimeout time.Duration, live *dump.Snapshot, name string, st metrics.LevelStats, rejected map[string]float64) LevelTriage {
	lt := LevelTriage{Name: name, Rejected: rejected, NominalLimit: l.NominalCL, CurrentLimit: st.CurrentLimit, SeatsInUse: st.SeatsInUse, Causes: []Cause{}}
	if st.Name == "" {
		lt.CurrentLimit = float64(l.NominalCL)
	}
	if !math.IsNaN(st.WaitP99) && st.Name != "" {
		v := st.WaitP99
		lt.WaitP99 = &v
	}
	pl := c.PriorityLevels[name]
	var q *flowcontrolv1.QueuingConfiguration
	if pl != nil && pl.Spec.Limited != nil {
		lt.LimitResponse = string(pl.Spec.Limited.LimitResponse.Type)
		if pl.Spec.Limited.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue {
			q = pl.Spec.Limited.LimitResponse.Queuing
			lt.Queues, lt.HandSize, lt.QueueLengthLimit = q.Queues, q.HandSize, q.QueueLengthLimit
		}
	}
	// The default wait limit; a request with a shorter ?timeout= has less.
	lt.WaitLimit = Duration(min(requestTimeout/4, time.Minute))
	rows := queuesOf(live, name)
	full := map[int]bool{}
	for i, r := range rows {
		lt.Waiting += r.PendingRequests
		if q != nil && int32(r.PendingRequests) >= q.QueueLengthLimit {
			full[i] = true
		}
	}
	lt.Flows = flowLoads(c, live, name, full)
	share := func(x float64) string { return fmt.Sprintf("%v of %v seats in use", x, lt.CurrentLimit) }

	if pl == nil {
		lt.Causes = append(lt.Causes, missingLevelCause(live))
		return lt
	}
	if rejected[ReasonConcurrencyLimit] > 0 {
		lt.Causes = append(lt.Causes, Cause{Kind: CauseNoQueues,
			Evidence: fmt.Sprintf("%s has limitResponse Reject (no queues): every request beyond its %v seats gets 429 at once; %s", name, lt.CurrentLimit, share(lt.SeatsInUse)),
			Fix:      fmt.Sprintf("move the rejected clients to a queuing level with a FlowSchema of their own (see 'kubectl apf explain request' for one of them), or give %s queues and more nominalConcurrencyShares", name)})
	}
	var top *FlowLoad
	if len(lt.Flows) > 0 {
		top = &lt.Flows[0]
	}
	if rejected[ReasonQueueFull] > 0 || rejected["any"] > 0 {
		elephant := top != nil && lt.Waiting > 1 && top.Waiting*2 >= lt.Waiting && len(lt.Flows) > 0
		if elephant {
			e := Cause{Kind: CauseElephantFlow,
				Evidence: fmt.Sprintf("flow %s/%q holds %d of the %d waiting requests of %s and fills %d of its %d queues %v (queue length limit %d): every flow dealt those queues is rejected with it",
					top.FlowSchema, top.Distinguisher, top.Waiting, lt.Waiting, name, top.Full, len(top.Hand), top.Hand, lt.QueueLengthLimit)}
			fs := findFlowSchema(c, top.FlowSchema)
			switch {
			case fs != nil && fs.Spec.DistinguisherMethod == nil:
				e.Fix = fmt.Sprintf("FlowSchema %s has no distinguisherMethod, so all its clients are one flow: set distinguisherMethod ByUser (or ByNamespace), or isolate the heavy client with a FlowSchema and level of its own", top.FlowSchema)
			default:
				e.Fix = fmt.Sprintf("isolate the heavy client %q with a FlowSchema of lower matchingPrecedence and a level of its own (kubectl apf explain request --user-name ... prints ready YAML), or raise queues/handSize of %s so fewer flows share its queues", top.Distinguisher, name)
			}
			lt.Causes = append(lt.Causes, e)
		} else {
			ev := fmt.Sprintf("%s; %d requests wait across %d flows: the level is saturated by many clients rather than one", share(lt.SeatsInUse), lt.Waiting, len(lt.Flows))
			if lt.Waiting == 0 {
				ev = fmt.Sprintf("%s and no request waits in the dump: the rejections come in bursts that fill the %d-seat level and its queues of %d faster than they drain", share(lt.SeatsInUse), l.NominalCL, lt.QueueLengthLimit)
			}
			lt.Causes = append(lt.Causes, Cause{Kind: CauseTooLittleConcurreny,
				Evidence: ev,
				Fix:      fmt.Sprintf("raise nominalConcurrencyShares of %s (or its borrowingLimitPercent, or lendablePercent of idle levels), or the queueLengthLimit of %d for bursts; 'kubectl apf capacity --set %s.shares=N' shows the effect", name, lt.QueueLengthLimit, name)})
		}
	}
	if w := wideRequests(live, name); w != "" {
		lt.Causes = append(lt.Causes, Cause{Kind: CauseWideRequests, Evidence: w,
			Fix: "paginate LISTs (?limit=500), read from the watch cache (?resourceVersion=0) or use informers; wide requests take several seats each"})
	}
	if rejected[ReasonTimeOut] > 0 {
		ev := fmt.Sprintf("requests waited in %s longer than their wait limit (%v by default, a quarter of the request deadline)", name, time.Duration(lt.WaitLimit))
		if lt.WaitP99 != nil {
			ev += fmt.Sprintf("; p99 wait %.3gs", *lt.WaitP99)
		}
		lt.Causes = append(lt.Causes, Cause{Kind: CauseTimeOuts, Evidence: ev,
			Fix: fmt.Sprintf("give %s more concurrency so queues drain faster; clients with a short ?timeout= (kubectl --request-timeout) get a shorter wait limit", name)})
	}
	return lt
}

// flowLoads groups the dumped requests of a level by flow, heaviest first.
func flowLoads(c *engine.Config, live *dump.Snapshot, level string, full map[int]bool) []FlowLoad {
	type key struct{ fs, d string }
	m := map[key]*FlowLoad{}
	for _, r := range live.RequestDump {
		if r.PriorityLevel != level {
			continue
		}
		k := key{r.FlowSchema, r.FlowDistinguisher}
		f := m[k]
		if f == nil {
			f = &FlowLoad{FlowSchema: r.FlowSchema, Distinguisher: r.FlowDistinguisher}
			m[k] = f
		}
		if r.Executing() {
			f.Executing++
		} else {
			f.Waiting++
		}
		f.Seats += max(r.InitialSeats, 1)
	}
	out := make([]FlowLoad, 0, len(m))
	for _, f := range m {
		if pl := c.PriorityLevels[level]; pl != nil && pl.Spec.Limited != nil && pl.Spec.Limited.LimitResponse.Queuing != nil &&
			pl.Spec.Limited.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue {
			qc := pl.Spec.Limited.LimitResponse.Queuing
			if d, err := engine.NewDealer(int(qc.Queues), int(qc.HandSize)); err == nil {
				// The hash of apf_controller.go:hashFlowID; a single queue gets hash 0.
				h := uint64(0)
				if qc.Queues > 1 {
					h = engine.HashFlowID(f.FlowSchema, f.Distinguisher)
				}
				f.Hand = d.DealIntoHand(h, nil)
				for _, q := range f.Hand {
					if full[q] {
						f.Full++
					}
				}
			}
		}
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Waiting != out[j].Waiting {
			return out[i].Waiting > out[j].Waiting
		}
		if out[i].Seats != out[j].Seats {
			return out[i].Seats > out[j].Seats
		}
		if out[i].FlowSchema != out[j].FlowSchema {
			return out[i].FlowSchema < out[j].FlowSchema
		}
		return out[i].Distinguisher < out[j].Distinguisher
	})
	if len(out) > 5 {
		out = out[:5]
	}
	return out
}

// wideRequests describes requests of several seats in the dump, "" if none.
func wideRequests(live *dump.Snapshot, level string) string {
	n, wide, maxSeats := 0, 0, 0
	for _, r := range live.RequestDump {
		if r.PriorityLevel != level {
			continue
		}
		n++
		if r.InitialSeats > 1 {
			wide++
		}
		maxSeats = max(maxSeats, r.InitialSeats)
	}
	if wide == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d dumped requests take more than one seat (up to %d)", wide, n, maxSeats)
}

func findFlowSchema(c *engine.Config, name string) *flowcontrolv1.FlowSchema {
	for _, fs := range c.FlowSchemas {
		if fs.Name == name {
			return fs
		}
	}
	return nil
}

// count429 sums apiserver_request_total{code="429"}, which counts APF's
// rejections (epmetrics.RecordDroppedRequest) and every other 429.
// countRejected sums apiserver_flowcontrol_rejected_requests_total.
func countRejected(s *metrics.Scrape) float64 {
	t := 0.0
	for _, v := range s.SumBy2(metrics.RejectedRequestsTotal, "priority_level", "reason") {
		t += v
	}
	return t
}

func count429(s *metrics.Scrape) float64 {
	t := 0.0
	for _, smp := range s.Samples(metrics.FamilyRequestTotal) {
		if smp.Labels["code"] == "429" {
			t += smp.Value
		}
	}
	return t
}
