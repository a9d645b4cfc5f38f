package testprom

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
)

// Fleet describes synthetic flowcontrol series of many apiservers, written
// in the OpenMetrics text format for "promtool tsdb create-blocks-from
// openmetrics": the known truth the history queries are checked against,
// and the scale benchmark's store.
type Fleet struct {
	// Instances are named apiserver-0:6443, apiserver-1:6443, ...
	Instances int
	// OldNames reports whether instance i is a server from before 1.28,
	// exporting request_concurrency_limit and request_concurrency_in_use
	// instead of nominal_limit_seats and current_executing_seats, and no
	// current, lower or upper limit.
	OldNames func(i int) bool
	// Levels each get one FlowSchema of the same name, a nominal limit of
	// 10 seats and a steady 5 dispatches per second.
	Levels []string
	// Start, End and Interval give the sample times.
	Start, End time.Time
	Interval   time.Duration
	// Incidents are the rejections.
	Incidents []Incident
	// Other429 are 429s APF did not give (apiserver_request_total only).
	Other429 []Incident
	// SeatUtilization, when set, is the time-weighted ratio of seats in use
	// to the limit that the new-name instances' timing histogram
	// priority_level_seat_utilization integrates: it sees the short
	// requests that the current_executing_seats gauge, read once a scrape,
	// misses (a level whose requests take milliseconds reads 0 at every
	// scrape). nil: no such family.
	SeatUtilization func(level string, i int, t time.Time) float64
	// Unanswered are scrapes that read an instance's 429s behind APF's
	// rejections: APF counts a rejection in its filter, and the 429 is
	// counted when the handler returns (the instrumentation around it),
	// so a scrape between the two reads the rejections of the requests
	// whose responses are still being written.
	Unanswered []Lag
}

// Lag is N of instance Instance's 429s not counted yet in its scrapes
// within [From, To].
type Lag struct {
	Instance int
	From, To time.Time
	N        float64
}

// Incident is PerSecond rejections of Level/FlowSchema for Reason on the
// given instances in [Start, End). A rejected_requests_total series exists
// only from its first rejection on, as in kube-apiserver.
type Incident struct {
	Level, FlowSchema, Reason string
	Instances                 []int
	Start, End                time.Time
	PerSecond                 float64
}

// InstanceName names instance i.
func InstanceName(i int) string { return fmt.Sprintf("apiserver-%d:6443", i) }

// count is how many events at perSecond happened in [start, min(t, end)).
func (in Incident) count(t time.Time) float64 {
	if !t.After(in.Start) {
		return 0
	}
	e := t
	if e.After(in.End) {
		e = in.End
	}
	return math.Floor(e.Sub(in.Start).Seconds() * in.PerSecond)
}

func (in Incident) on(i int) bool {
	for _, x := range in.Instances {
		if x == i {
			return true
		}
	}
	return false
}

// Rejected is the truth: how many rejections the incidents with the level
// (every level when "") gave in [from, to), over every instance.
func (f *Fleet) Rejected(level string, from, to time.Time) float64 {
	n := 0.0
	for _, in := range f.Incidents {
		if level == "" || in.Level == level {
			n += float64(len(in.Instances)) * (in.count(to) - in.count(from))
		}
	}
	return n
}

// gaugeSeats is the current_executing_seats every scrape reads: 10 of the
// nominal 10 during an incident of the level on the instance, 2 otherwise.
func (f *Fleet) gaugeSeats(level string, i int, t time.Time) float64 {
	if f.Busy(level, i, t) {
		return 10
	}
	return 2
}

// Busy reports whether an incident of the level holds instance i at t.
func (f *Fleet) Busy(level string, i int, t time.Time) bool {
	for _, in := range f.Incidents {
		if in.Level == level && in.on(i) && !t.Before(in.Start) && t.Before(in.End) {
			return true
		}
	}
	return false
}

// MeanSeats is the truth: the mean seats in use of the level over (from,
// to], summed over the instances, each from its seat utilization (times
// the limit of 10) where it exports one, else from its gauge, as sampled.
func (f *Fleet) MeanSeats(level string, from, to time.Time) float64 {
	total := 0.0
	for i := 0; i < f.Instances; i++ {
		var sum, n float64
		last := f.Start
		for t := f.Start; !t.After(f.End); t = t.Add(f.Interval) {
			d := t.Sub(last).Seconds()
			last = t
			if !t.After(from) || t.After(to) {
				continue
			}
			if f.SeatUtilization != nil && (f.OldNames == nil || !f.OldNames(i)) {
				sum, n = sum+10*d*f.SeatUtilization(level, i, t), n+d
			} else {
				sum, n = sum+f.gaugeSeats(level, i, t), n+1
			}
		}
		if n > 0 {
			total += sum / n
		}
	}
	return total
}

type om struct {
	w *bufio.Writer
}

func (o *om) family(name, typ string) {
	fmt.Fprintf(o.w, "# TYPE %s %s\n", name, typ)
}

func (o *om) sample(name string, labels []string, v float64, t time.Time) {
	o.w.WriteString(name)
	o.w.WriteByte('{')
	for i := 0; i+1 < len(labels); i += 2 {
		if i > 0 {
			o.w.WriteByte(',')
		}
		o.w.WriteString(labels[i])
		o.w.WriteString(`="`)
		o.w.WriteString(labels[i+1])
		o.w.WriteByte('"')
	}
	o.w.WriteString("} ")
	o.w.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	o.w.WriteByte(' ')
	o.w.WriteString(strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64))
	o.w.WriteByte('\n')
}

// WriteOpenMetrics writes the fleet's series, each family's series
// together and each series' samples in time order.
func (f *Fleet) WriteOpenMetrics(out io.Writer) error {
	o := &om{w: bufio.NewWriterSize(out, 1<<20)}
	old := func(i int) bool { return f.OldNames != nil && f.OldNames(i) }
	const p = "apiserver_flowcontrol_"
	base := func(i int, extra ...string) []string {
		return append([]string{"instance", InstanceName(i), "job", "apiserver"}, extra...)
	}
	times := func(each func(t time.Time)) {
		for t := f.Start; !t.After(f.End); t = t.Add(f.Interval) {
			each(t)
		}
	}
	// gauge writes a family of every instance (both), of the new ones only
	// (newNames), or of the old ones only.
	gauge := func(name string, newNames, both bool, v func(level string, i int, t time.Time) float64) {
		o.family(p+name, "gauge")
		for i := 0; i < f.Instances; i++ {
			if !both && old(i) == newNames {
				continue
			}
			for _, l := range f.Levels {
				times(func(t time.Time) { o.sample(p+name, base(i, "priority_level", l), v(l, i, t), t) })
			}
		}
	}
	ten := func(string, int, time.Time) float64 { return 10 }
	seats := f.gaugeSeats
	gauge("nominal_limit_seats", true, false, ten)
	gauge("request_concurrency_limit", false, false, ten)
	gauge("current_limit_seats", true, false, ten)
	gauge("lower_limit_seats", true, false, func(string, int, time.Time) float64 { return 5 })
	gauge("upper_limit_seats", true, false, func(string, int, time.Time) float64 { return 20 })
	gauge("current_executing_seats", true, false, seats)
	gauge("request_concurrency_in_use", false, false, seats)
	gauge("current_inqueue_requests", true, true, func(l string, i int, t time.Time) float64 {
		if f.Busy(l, i, t) {
			return 50
		}
		return 0
	})

	if f.SeatUtilization != nil {
		// a timing ratio histogram: its count grows by the seconds passed,
		// its sum by the ratio times them, its bucket le="0.99" by those
		// seconds when the level was not full (+Inf is the count)
		o.family(p+"priority_level_seat_utilization", "histogram")
		for i := 0; i < f.Instances; i++ {
			if old(i) {
				continue
			}
			for _, l := range f.Levels {
				var sum, count, below float64
				last := f.Start
				times(func(t time.Time) {
					d := t.Sub(last).Seconds()
					r := f.SeatUtilization(l, i, t)
					sum, count, last = sum+d*r, count+d, t
					if r <= 0.99 {
						below += d
					}
					o.sample(p+"priority_level_seat_utilization_bucket", base(i, "priority_level", l, "phase", "executing", "le", "0.99"), below, t)
					o.sample(p+"priority_level_seat_utilization_bucket", base(i, "priority_level", l, "phase", "executing", "le", "+Inf"), count, t)
					o.sample(p+"priority_level_seat_utilization_count", base(i, "priority_level", l, "phase", "executing"), count, t)
					o.sample(p+"priority_level_seat_utilization_sum", base(i, "priority_level", l, "phase", "executing"), sum, t)
				})
			}
		}
	}
	o.family(p+"dispatched_requests", "counter")
	for i := 0; i < f.Instances; i++ {
		for _, l := range f.Levels {
			times(func(t time.Time) {
				o.sample(p+"dispatched_requests_total", base(i, "priority_level", l, "flow_schema", l), math.Floor(t.Sub(f.Start).Seconds()*5), t)
			})
		}
	}
	o.family(p+"rejected_requests", "counter")
	for _, in := range f.Incidents {
		for _, i := range in.Instances {
			times(func(t time.Time) {
				if t.Before(in.Start) {
					return // no series before the first rejection
				}
				o.sample(p+"rejected_requests_total", base(i, "priority_level", in.Level, "flow_schema", in.FlowSchema, "reason", in.Reason), in.count(t), t)
			})
		}
	}
	o.family("apiserver_request", "counter")
	for i := 0; i < f.Instances; i++ {
		times(func(t time.Time) {
			n := 0.0
			for _, in := range append(append([]Incident{}, f.Incidents...), f.Other429...) {
				if in.on(i) {
					n += in.count(t)
				}
			}
			for _, l := range f.Unanswered {
				if l.Instance == i && !t.Before(l.From) && !t.After(l.To) {
					n -= l.N
				}
			}
			o.sample("apiserver_request_total", base(i, "code", "429", "verb", "LIST"), n, t)
		})
	}
	// The queue wait: 5 requests a second, all waiting under 5 ms, except
	// during an incident where they wait 1 to 2 s.
	o.family(p+"request_wait_duration_seconds", "histogram")
	les := []string{"0.005", "0.1", "1", "2", "+Inf"}
	for i := 0; i < f.Instances; i++ {
		for _, l := range f.Levels {
			var fast, slow float64
			last := f.Start
			times(func(t time.Time) {
				d := t.Sub(last).Seconds() * 5
				if f.Busy(l, i, t) {
					slow += d
				} else {
					fast += d
				}
				last = t
				for k, le := range les {
					v := fast
					if k >= 3 {
						v = fast + slow
					}
					o.sample(p+"request_wait_duration_seconds_bucket", base(i, "priority_level", l, "flow_schema", l, "execute", "true", "le", le), math.Floor(v), t)
				}
				o.sample(p+"request_wait_duration_seconds_count", base(i, "priority_level", l, "flow_schema", l, "execute", "true"), math.Floor(fast+slow), t)
				o.sample(p+"request_wait_duration_seconds_sum", base(i, "priority_level", l, "flow_schema", l, "execute", "true"), math.Floor(fast)*0.001+math.Floor(slow)*1.5, t)
			})
		}
	}
	o.w.WriteString("# EOF\n")
	return o.w.Flush()
}

// CreateBlocks writes the fleet to a file in dir and turns it into TSDB
// blocks in dataDir with promtool (built by hack/bin.sh). It returns the
// size of the OpenMetrics file.
func (f *Fleet) CreateBlocks(ctx context.Context, dir, dataDir string) (int64, error) {
	path := dir + "/fleet.om"
	file, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	if err := f.WriteOpenMetrics(file); err != nil {
		file.Close()
		return 0, err
	}
	st, _ := file.Stat()
	if err := file.Close(); err != nil {
		return 0, err
	}
	defer os.Remove(path)
	promtool, err := testcluster.Binary("promtool")
	if err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, promtool, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=1000h", path, dataDir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("promtool tsdb create-blocks-from openmetrics: %w\n%s", err, lastLines(string(out), 20))
	}
	return st.Size(), nil
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
