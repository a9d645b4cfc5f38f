package history

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// MergedInstance names the one "instance" of answers summed over every
// apiserver (Query.PerInstance false).
const MergedInstance = "all apiservers"

// InstanceScrapes is what a store says one apiserver instance (or all of
// them, MergedInstance) looked like at each evaluation time: a pair of
// scrapes per time, in the form "top levels" and the live view compute from
// (metrics.Levels).
type InstanceScrapes struct {
	Instance string
	// Times are the evaluation times, oldest first; Pairs[i] belongs to
	// Times[i].
	Times []time.Time
	Pairs [][2]*metrics.Scrape
}

// utilSum and utilCount tag the seat utilization's sum and count in a
// Scrapes query.
const (
	utilSum   = "seat_utilization_sum"
	utilCount = "seat_utilization_count"
	// utilBelowFull is its bucket le="0.99": the time not full
	utilBelowFull = "seat_utilization_below_full"
)

// levelGauges are the gauges of the level table, by canonical name.
var levelGauges = []string{metrics.NominalLimitSeats, metrics.CurrentLimitSeats, metrics.CurrentExecutingSeats,
	metrics.CurrentInqueueRequests, metrics.CurrentInqueueSeats, metrics.CurrentExecutingRequests}

// Scrapes asks the store, in one query, for every level's gauges at each
// time of [start, end] (every step) and the increase of its counters and
// wait histogram over the rateWindow before, and turns each time's answer
// into a pair of scrapes rateWindow apart whose counters grow by that
// increase: metrics.Levels then gives the rates the store computed. The
// families renamed since 1.20 come back under their current names.
func Scrapes(ctx context.Context, q Querier, query Query, start, end time.Time, step, rateWindow time.Duration) ([]InstanceScrapes, error) {
	if rateWindow <= 0 {
		return nil, fmt.Errorf("the rate window must be positive")
	}
	l := []string{LabelLevel}
	var t Tagged
	for _, g := range levelGauges {
		t.Add(g, query.Gauge(g, l))
	}
	t.Add(familyDispatched, query.Count(familyDispatched, l, rateWindow))
	t.Add(familyRejected, query.Count(familyRejected, []string{LabelLevel, LabelReason}, rateWindow))
	t.Add(metrics.RequestWaitDurationSecond, query.Buckets(metrics.RequestWaitDurationSecond, l, rateWindow))
	// the seat utilization's sum and count over the window: its mean, the
	// seats' use over the interval (the live view's bar), which the gauges
	// at one instant miss between bursts
	t.Add(utilSum, query.Increase(metrics.SeatUtilization+"_sum", l, rateWindow))
	t.Add(utilCount, query.Increase(metrics.SeatUtilization+"_count", l, rateWindow))
	// and the time below 99%: FULL, the share of the interval it was full
	t.Add(utilBelowFull, query.Increase(metrics.SeatUtilization+"_bucket", l, rateWindow, `le="0.99"`))
	ans, err := q.QueryRange(ctx, t.String(), start, end, step)
	if err != nil {
		return nil, fmt.Errorf("querying the priority levels: %w", err)
	}
	type cell struct {
		inst string
		t    int64
	}
	cells := map[cell]map[string][]*dto.Metric{}
	hists := map[cell]map[string]*dto.Histogram{}
	utils := map[cell]map[string]*dto.Histogram{}
	for _, s := range ans {
		fam := s.Labels[LabelSeries]
		inst := MergedInstance
		if query.PerInstance {
			inst = s.Labels[query.instance()]
		}
		var labels []*dto.LabelPair
		for _, n := range []string{LabelLevel, LabelReason} {
			if v, ok := s.Labels[n]; ok {
				labels = append(labels, &dto.LabelPair{Name: proto.String(n), Value: proto.String(v)})
			}
		}
		for _, p := range s.Points {
			if math.IsNaN(p.V) {
				continue
			}
			c := cell{inst, p.T.UnixMilli()}
			if fam == utilSum || fam == utilCount || fam == utilBelowFull {
				if utils[c] == nil {
					utils[c] = map[string]*dto.Histogram{}
				}
				h := utils[c][s.Labels[LabelLevel]]
				if h == nil {
					h = &dto.Histogram{SampleSum: proto.Float64(0), SampleCount: proto.Uint64(0)}
					utils[c][s.Labels[LabelLevel]] = h
				}
				n := uint64(math.Round(math.Max(0, p.V)))
				switch fam {
				case utilSum:
					h.SampleSum = proto.Float64(math.Max(0, p.V))
				case utilCount:
					h.SampleCount = proto.Uint64(n)
				default:
					h.Bucket = []*dto.Bucket{{UpperBound: proto.Float64(0.99), CumulativeCount: proto.Uint64(n)}}
				}
				continue
			}
			if fam == metrics.RequestWaitDurationSecond {
				le, err := strconv.ParseFloat(s.Labels["le"], 64)
				if err != nil {
					continue
				}
				if hists[c] == nil {
					hists[c] = map[string]*dto.Histogram{}
				}
				h := hists[c][s.Labels[LabelLevel]]
				if h == nil {
					h = &dto.Histogram{SampleSum: proto.Float64(0)}
					hists[c][s.Labels[LabelLevel]] = h
				}
				n := uint64(math.Round(math.Max(0, p.V)))
				if math.IsInf(le, 1) {
					h.SampleCount = proto.Uint64(n)
				}
				h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(le), CumulativeCount: proto.Uint64(n)})
				continue
			}
			if cells[c] == nil {
				cells[c] = map[string][]*dto.Metric{}
			}
			m := &dto.Metric{Label: labels}
			v := p.V
			if fam == familyDispatched || fam == familyRejected {
				m.Counter = &dto.Counter{Value: proto.Float64(math.Max(0, v))}
			} else {
				m.Gauge = &dto.Gauge{Value: proto.Float64(v)}
			}
			cells[c][fam] = append(cells[c][fam], m)
		}
	}
	byInst := map[string]*InstanceScrapes{}
	var keys []cell
	for c := range cells {
		keys = append(keys, c)
	}
	for c := range hists {
		if cells[c] == nil {
			keys = append(keys, c)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].inst != keys[j].inst {
			return keys[i].inst < keys[j].inst
		}
		return keys[i].t < keys[j].t
	})
	var order []string
	for _, c := range keys {
		at := time.UnixMilli(c.t).UTC()
		cur := &metrics.Scrape{Time: at, Families: map[string]*dto.MetricFamily{}}
		for fam, ms := range cells[c] {
			typ := dto.MetricType_GAUGE
			if fam == familyDispatched || fam == familyRejected {
				typ = dto.MetricType_COUNTER
			}
			cur.Families[fam] = &dto.MetricFamily{Name: proto.String(fam), Type: typ.Enum(), Metric: ms}
		}
		if hs := hists[c]; len(hs) > 0 {
			mf := &dto.MetricFamily{Name: proto.String(metrics.RequestWaitDurationSecond), Type: dto.MetricType_HISTOGRAM.Enum()}
			lvls := make([]string, 0, len(hs))
			for lvl := range hs {
				lvls = append(lvls, lvl)
			}
			sort.Strings(lvls)
			for _, lvl := range lvls {
				h := hs[lvl]
				sort.Slice(h.Bucket, func(i, j int) bool { return h.Bucket[i].GetUpperBound() < h.Bucket[j].GetUpperBound() })
				mf.Metric = append(mf.Metric, &dto.Metric{Label: []*dto.LabelPair{{Name: proto.String(LabelLevel), Value: proto.String(lvl)}}, Histogram: h})
			}
			cur.Families[metrics.RequestWaitDurationSecond] = mf
		}
		if us := utils[c]; len(us) > 0 && cells[c] != nil {
			mf := &dto.MetricFamily{Name: proto.String(metrics.SeatUtilization), Type: dto.MetricType_HISTOGRAM.Enum()}
			for _, lvl := range slices.Sorted(maps.Keys(us)) {
				mf.Metric = append(mf.Metric, &dto.Metric{Label: []*dto.LabelPair{{Name: proto.String(LabelLevel), Value: proto.String(lvl)}}, Histogram: us[lvl]})
			}
			cur.Families[metrics.SeatUtilization] = mf
		}
		prev := &metrics.Scrape{Time: at.Add(-rateWindow), Families: map[string]*dto.MetricFamily{}}
		is := byInst[c.inst]
		if is == nil {
			is = &InstanceScrapes{Instance: c.inst}
			byInst[c.inst] = is
			order = append(order, c.inst)
		}
		is.Times = append(is.Times, at)
		is.Pairs = append(is.Pairs, [2]*metrics.Scrape{prev, cur})
	}
	out := make([]InstanceScrapes, len(order))
	for i, inst := range order {
		out[i] = *byInst[inst]
	}
	return out, nil
}

// Float is a float64 that encodes NaN as JSON null.
type Float float64

// MarshalJSON writes null for NaN and infinities.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

// LevelWindow is one priority level over a window: "top levels --since".
type LevelWindow struct {
	Name string `json:"name"`
	// Instance is the apiserver instance, or MergedInstance.
	Instance string `json:"instance"`
	// NominalLimit and the current limit's range in the window.
	NominalLimit    Float `json:"nominalLimit"`
	CurrentLimitMin Float `json:"currentLimitMin"`
	CurrentLimitMax Float `json:"currentLimitMax"`
	// SeatsInUseAvg is the mean seats in use (meanSeats); SeatsInUseMax the
	// most a sample read, NaN where that is below the mean (the samples
	// missed the peak).
	SeatsInUseAvg Float `json:"seatsInUseAvg"`
	SeatsInUseMax Float `json:"seatsInUseMax"`
	WaitingMax    Float `json:"waitingRequestsMax"`
	// Dispatched counts the requests dispatched in the window; Rejected the
	// rejections by reason.
	Dispatched     Float              `json:"dispatched"`
	Rejected       map[string]float64 `json:"rejected"`
	RejectedTotal  float64            `json:"rejectedTotal"`
	WaitP99Seconds Float              `json:"waitP99Seconds"`
}

// meanSeats is the seats in use of each level over the window d before the
// evaluation, summed by level (and instance with PerInstance): per
// instance, the time-weighted mean of its seat utilization (the timing
// ratio histogram priority_level_seat_utilization, which sees every
// request, however short) times its mean current limit, else the mean of
// the current_executing_seats gauge sampled every res, which misses the
// requests that run between two samples (make demo's apf-load-reject,
// requests of milliseconds, read 0 seats over half an hour of them).
func meanSeats(query Query, d, res time.Duration) string {
	qi := query
	qi.PerInstance = true
	l := []string{LabelLevel}
	ratio := "(" + qi.Increase(metrics.SeatUtilization+"_sum", l, d) + " / " + qi.Increase(metrics.SeatUtilization+"_count", l, d) + ")"
	integrated := "(" + ratio + " * " + AvgOver(qi.Gauge(metrics.CurrentLimitSeats, l), d, res) + ")"
	return query.by(l...) + "(" + integrated + " or " + AvgOver(qi.Gauge(metrics.CurrentExecutingSeats, l), d, res) + ")"
}

// LevelsOverWindow asks the store, in one instant query at the window's
// end, for each level over the window: limits, seats in use (mean and peak,
// by subqueries at the window's step), peak waiting requests, dispatched
// and rejected counts and the queue wait p99. Sorted by rejections, then
// name.
func LevelsOverWindow(ctx context.Context, q Querier, query Query, w Window) ([]LevelWindow, error) {
	d := w.Duration()
	if d <= 0 || w.Step <= 0 {
		return nil, fmt.Errorf("the window must have a positive length and step (--since, --step)")
	}
	l := []string{LabelLevel}
	// The gauges are sampled every second (coarser over a long window, at
	// most 10,000 samples), not once a step: a burst between two steps'
	// instants is a peak too (see detail).
	res := min(w.Step, max(time.Second, d/10000))
	var t Tagged
	t.Add("nominal", query.Gauge(metrics.NominalLimitSeats, l))
	cur := query.Gauge(metrics.CurrentLimitSeats, l)
	t.Add("curmin", MinOver(cur, d, res))
	t.Add("curmax", MaxOver(cur, d, res))
	seats := query.Gauge(metrics.CurrentExecutingSeats, l)
	t.Add("seatsavg", meanSeats(query, d, res))
	t.Add("seatsmax", MaxOver(seats, d, res))
	t.Add("waitmax", MaxOver(query.Gauge(metrics.CurrentInqueueRequests, l), d, res))
	t.Add("dispatched", query.ExactCount(familyDispatched, l, d))
	t.Add("rejected", query.ExactCount(familyRejected, []string{LabelLevel, LabelReason}, d))
	t.Add("waitp99", query.Quantile(0.99, metrics.RequestWaitDurationSecond, l, d))
	ans, err := q.QueryRange(ctx, t.String(), w.End, w.End, w.Step)
	if err != nil {
		return nil, fmt.Errorf("querying the priority levels over the window: %w", err)
	}
	rows := map[string]*LevelWindow{}
	get := func(s Series) *LevelWindow {
		inst := MergedInstance
		if query.PerInstance {
			inst = s.Labels[query.instance()]
		}
		k := inst + "\x00" + s.Labels[LabelLevel]
		r := rows[k]
		if r == nil {
			nan := Float(math.NaN())
			r = &LevelWindow{Name: s.Labels[LabelLevel], Instance: inst, Rejected: map[string]float64{}, NominalLimit: nan,
				CurrentLimitMin: nan, CurrentLimitMax: nan, SeatsInUseAvg: nan, SeatsInUseMax: nan, WaitingMax: nan, Dispatched: nan, WaitP99Seconds: nan}
			rows[k] = r
		}
		return r
	}
	for _, s := range ans {
		if len(s.Points) == 0 || s.Labels[LabelLevel] == "" {
			continue
		}
		v := s.Points[len(s.Points)-1].V
		r := get(s)
		switch s.Labels[LabelSeries] {
		case "nominal":
			r.NominalLimit = Float(v)
		case "curmin":
			r.CurrentLimitMin = Float(v)
		case "curmax":
			r.CurrentLimitMax = Float(v)
		case "seatsavg":
			r.SeatsInUseAvg = Float(v)
		case "seatsmax":
			r.SeatsInUseMax = Float(v)
		case "waitmax":
			r.WaitingMax = Float(v)
		case "dispatched":
			r.Dispatched = Float(math.Round(v))
		case "rejected":
			if c := math.Round(v); c > 0 {
				r.Rejected[s.Labels[LabelReason]] += c
				r.RejectedTotal += c
			}
		case "waitp99":
			r.WaitP99Seconds = Float(v)
		}
	}
	out := make([]LevelWindow, 0, len(rows))
	for _, r := range rows {
		if float64(r.SeatsInUseAvg) == 0 && math.IsNaN(float64(r.SeatsInUseMax)) {
			// no gauge series, and a mean of none, which the seat
			// utilization would have seen: none at most
			r.SeatsInUseMax = 0
		}
		if float64(r.SeatsInUseMax) < float64(r.SeatsInUseAvg) {
			// the samples missed the peak the seat utilization integrates
			// (make demo's apf-load-reject: requests of milliseconds, a peak
			// of 0 beside a mean of 0.005): not known
			r.SeatsInUseMax = Float(math.NaN())
		}
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.RejectedTotal != b.RejectedTotal {
			return a.RejectedTotal > b.RejectedTotal
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Instance < b.Instance
	})
	return out, nil
}
