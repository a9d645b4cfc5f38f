package history

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
	rejrender "github.com/kubectl-apf/kubectl-apf/pkg/rejections/render"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func TestParseTime(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Time
		wantErr string
	}{
		{in: "now", want: now},
		{in: "-2h", want: now.Add(-2 * time.Hour)},
		{in: "2h ago", want: now.Add(-2 * time.Hour)},
		{in: "1d12h ago", want: now.Add(-36 * time.Hour)},
		{in: "-1w", want: now.Add(-7 * 24 * time.Hour)},
		{in: "2026-11-23T03:10:00Z", want: time.Date(2026, 11, 23, 3, 10, 0, 0, time.UTC)},
		{in: "2026-11-23T03:10:00+01:00", want: time.Date(2026, 11, 23, 2, 10, 0, 0, time.UTC)},
		{in: "", wantErr: "empty time"},
		{in: "yesterday", wantErr: "neither RFC 3339"},
		{in: "-2x", wantErr: "unknown unit"},
		{in: "--2h", wantErr: "want a number and a unit"},
		{in: "2026-11-23 03:10", wantErr: "neither RFC 3339"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTime(tt.in, now)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseTime(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !got.Equal(tt.want) {
				t.Fatalf("ParseTime(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30m", 30 * time.Minute, true},
		{"24h", 24 * time.Hour, true},
		{"30d", 30 * 24 * time.Hour, true},
		{"1.5d", 36 * time.Hour, true},
		{"1h30m", 90 * time.Minute, true},
		{"10m0s", 10 * time.Minute, true}, // what a time.Duration prints
		{"500ms", 500 * time.Millisecond, true},
		{"", 0, false},
		{"d", 0, false},
		{"5", 0, false},
		{"99999999999999w", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v (ok %v)", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"now", "-2h", "2h ago", "1d12h ago", "2026-11-23T03:10:00Z", "1.5w", "-9999999999999999d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTime(s, now)
		if err == nil && got.After(now) && !strings.Contains(s, "T") {
			t.Errorf("ParseTime(%q) = %v, after now without an absolute time", s, got)
		}
	})
}

func TestResolveWindow(t *testing.T) {
	w, err := WindowOptions{Since: 24 * time.Hour, Until: "-1h", ScrapeInterval: 30 * time.Second}.Resolve(now)
	if err != nil || !w.End.Equal(now.Add(-time.Hour)) || !w.Start.Equal(now.Add(-25*time.Hour)) || w.Step != 10*time.Minute {
		t.Errorf("24h until -1h: %+v, %v", w, err)
	}
	w, err = WindowOptions{At: "-5m", ScrapeInterval: time.Second}.Resolve(now)
	if err != nil || !w.Start.Equal(w.End) || !w.End.Equal(now.Add(-5*time.Minute)) {
		t.Errorf("at -5m: %+v, %v", w, err)
	}
	for _, o := range []WindowOptions{{At: "-1h", Until: "-2h"}, {Since: time.Hour, Until: "+1h"}, {Until: "2099-01-01T00:00:00Z"}} {
		if _, err := o.Resolve(now); err == nil {
			t.Errorf("%+v: want an error", o)
		}
	}
}

func TestAutoStep(t *testing.T) {
	tests := []struct {
		d, scrape, want time.Duration
	}{
		{10 * time.Minute, time.Second, 5 * time.Second},
		{time.Hour, 30 * time.Second, time.Minute},
		{24 * time.Hour, 30 * time.Second, 10 * time.Minute},
		{30 * 24 * time.Hour, 30 * time.Second, 3 * time.Hour},
		{time.Minute, 15 * time.Second, 30 * time.Second},
	}
	for _, tt := range tests {
		if got := AutoStep(tt.d, tt.scrape); got != tt.want {
			t.Errorf("AutoStep(%v, %v) = %v, want %v", tt.d, tt.scrape, got, tt.want)
		}
	}
}

func TestParseSelector(t *testing.T) {
	tests := []struct{ in, want, wantErr string }{
		{in: "", want: ""},
		{in: `cluster="prod"`, want: `cluster="prod"`},
		{in: `{cluster="prod", job=~"api.*"}`, want: `cluster="prod",job=~"api.*"`},
		{in: `a!="x",b!~"y"`, want: `a!="x",b!~"y"`},
		{in: `cluster=prod`, wantErr: "double quotes"},
		{in: `cluster="prod"}`, wantErr: "separated by commas"},
		{in: `cluster`, wantErr: "needs ="},
		{in: `="x"`, wantErr: "want label matchers"},
		{in: `a="x" or up`, wantErr: "separated by commas"},
		{in: `a="unterminated`, wantErr: "not a quoted string"},
		// The rule files and dashboards of "monitoring" take these too.
		{in: "", want: ""},
		{in: ` { job = "apiserver" , cluster=~"prod-.*", } `, want: `job="apiserver",cluster=~"prod-.*"`},
		{in: "job=\"apiserver\",\tenv=\"x\"", want: `job="apiserver",env="x"`},
		{in: `a!="x\"y", b!~"\\d"`, want: `a!="x\"y",b!~"\\d"`},
		{in: `job="apiserver" env="x"`, wantErr: "separated by commas"},
		{in: `{job="apiserver"`, wantErr: "must close with }"},
		{in: `__name__="up"`, wantErr: "the metric names are chosen by kubectl apf"},
		{in: `job='apiserver'`, wantErr: "double quotes"},
		{in: `job="a\qb"`, wantErr: "not a quoted string"},
		{in: `1job="x"`, wantErr: "want label matchers"},
	}
	for _, tt := range tests {
		got, err := ParseSelector(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseSelector(%q) = %q, %v; want an error with %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseSelector(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// FuzzParseSelector: whatever is accepted comes back in a form that is
// accepted again unchanged (so it goes into every query, rule and dashboard
// as is), and cannot close the selector's braces.
func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{`cluster="prod"`, `{a=~"x",b!="y\"}"}`, `a="x"} or vector(1) or {b="`, "a=\"\\u00e9\"",
		`{a=~"x", b!="y\"z",}`, `a="\\"`, `{`, `a="`, ","} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSelector(s)
		if err != nil {
			return
		}
		again, err := ParseSelector(got)
		if err != nil || again != got {
			t.Fatalf("ParseSelector(%q) = %q, which parses to %q, %v", s, got, again, err)
		}
		depth := 0
		inQuote, esc := false, false
		for _, r := range got {
			switch {
			case esc:
				esc = false
			case inQuote && r == '\\':
				esc = true
			case r == '"':
				inQuote = !inQuote
			case !inQuote && (r == '{' || r == '}' || r == '(' || r == ')' || r == ' '):
				depth++
			}
		}
		if depth != 0 || inQuote {
			t.Fatalf("ParseSelector(%q) = %q leaves a brace, parenthesis or space outside quotes", s, got)
		}
	})
}

func TestQueries(t *testing.T) {
	q := Query{Selector: `cluster="prod"`, InstanceLabel: "pod"}
	got := q.Gauge("apiserver_flowcontrol_nominal_limit_seats", []string{LabelLevel}, `priority_level="a"`)
	want := `sum by (priority_level) (sum by (priority_level, pod) (apiserver_flowcontrol_nominal_limit_seats{cluster="prod",priority_level="a"})` +
		` or sum by (priority_level, pod) (apiserver_flowcontrol_request_concurrency_limit{cluster="prod",priority_level="a"}))`
	if got != want {
		t.Errorf("Gauge:\n got %s\nwant %s", got, want)
	}
	q.PerInstance = true
	got = q.Count("x_total", []string{LabelLevel}, 90*time.Second)
	want = `sum by (priority_level, pod) ((increase(x_total{cluster="prod"}[1m30s]) + (min_over_time(x_total{cluster="prod"}[1m30s]) unless max_over_time(x_total{cluster="prod"}[10m] offset 1m30s)))` +
		` or increase(x_total{cluster="prod"}[1m30s]) or (min_over_time(x_total{cluster="prod"}[1m30s]) unless max_over_time(x_total{cluster="prod"}[10m] offset 1m30s)))`
	if got != want {
		t.Errorf("Count:\n got %s\nwant %s", got, want)
	}
	got = Query{}.Quantile(0.99, "h", []string{LabelLevel}, time.Minute)
	// The classic buckets, or the native histogram where a label set has
	// none (issue 47: Kubernetes 1.36's native histograms, not counted twice).
	if want = `(histogram_quantile(0.99, sum by (priority_level, le) (increase(h_bucket[1m]))) or histogram_quantile(0.99, sum by (priority_level) (increase(h[1m]))))`; got != want {
		t.Errorf("Quantile:\n got %s\nwant %s", got, want)
	}
	got = q.Quantile(0.5, "h", []string{LabelLevel}, time.Minute)
	if want = `(histogram_quantile(0.5, sum by (priority_level, le, pod) (increase(h_bucket{cluster="prod"}[1m]))) or histogram_quantile(0.5, sum by (priority_level, pod) (increase(h{cluster="prod"}[1m]))))`; got != want {
		t.Errorf("Quantile per instance:\n got %s\nwant %s", got, want)
	}
	var tg Tagged
	tg.Add("a", "up")
	tg.Add("b", "down")
	if got, want := tg.String(), `label_replace(up, "apf_series", "a", "", "") or label_replace(down, "apf_series", "b", "", "")`; got != want {
		t.Errorf("Tagged:\n got %s\nwant %s", got, want)
	}
	for d, want := range map[time.Duration]string{30 * 24 * time.Hour: "30d", 90 * time.Minute: "1h30m", 1500 * time.Millisecond: "1s500ms", 0: "1ms"} {
		if got := promDuration(d); got != want {
			t.Errorf("promDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func series(step time.Duration, vs ...float64) Series {
	s := Series{}
	for i, v := range vs {
		s.Points = append(s.Points, Point{T: now.Add(time.Duration(i) * step), V: v})
	}
	return s
}

func TestBursts(t *testing.T) {
	step := 10 * time.Second
	got := Bursts(series(step, 0, 3, 4, 0, 0, 0, 0, 2, math.NaN(), 0, 1), step, 30*time.Second)
	if len(got) != 2 {
		t.Fatalf("want 2 bursts (a gap of 40s > 30s splits), got %+v", got)
	}
	if !got[0].Start.Equal(now) || !got[0].End.Equal(now.Add(2*step)) || got[0].Count != 7 {
		t.Errorf("first burst: %+v", got[0])
	}
	if !got[1].Start.Equal(now.Add(6*step)) || !got[1].End.Equal(now.Add(10*step)) || got[1].Count != 3 {
		t.Errorf("second burst (merged over a 30s gap): %+v", got[1])
	}
	if b := Bursts(series(step, 0, 0, math.NaN()), step, step); len(b) != 0 {
		t.Errorf("no rejections: %+v", b)
	}
}

func TestChanges(t *testing.T) {
	step := time.Second
	// The counter exists at the zoom's start: its first value is no change.
	first, last, ok := changes(series(step, 5, 5, 6, 6, 9, 9), now)
	if !ok || !first.Equal(now.Add(2*step)) || !last.Equal(now.Add(4*step)) {
		t.Errorf("existing counter: %v %v %v", first, last, ok)
	}
	// A series born after the zoom's start grows from zero at its first
	// point.
	s := series(step, 4, 4, 7)
	for i := range s.Points {
		s.Points[i].T = s.Points[i].T.Add(3 * step)
	}
	first, last, ok = changes(s, now)
	if !ok || !first.Equal(now.Add(3*step)) || !last.Equal(now.Add(5*step)) {
		t.Errorf("born counter: %v %v %v", first, last, ok)
	}
	// A reset is not a rejection.
	if _, _, ok := changes(series(step, 5, 5, 0, 0), now); ok {
		t.Errorf("a reset counted as a change")
	}
}

func TestDiagnose(t *testing.T) {
	tests := []struct {
		name    string
		reasons map[string]float64
		peaks   map[string]float64
		want    string
	}{
		{"no queues", map[string]float64{ReasonConcurrencyLimit: 10}, map[string]float64{StateSeats: 1, StateCurrent: 1}, rejections.CauseNoQueues},
		{"one flow: an outlier queue, short waits", map[string]float64{ReasonQueueFull: 100},
			map[string]float64{StateSeats: 10, StateCurrent: 10, StateQueueP50: 1, StateQueueP99: 50, StateWaitP99: 0.5}, rejections.CauseElephantFlow},
		{"short of seats: waits at the limit", map[string]float64{ReasonTimeOut: 30, ReasonQueueFull: 10},
			map[string]float64{StateSeats: 10, StateCurrent: 10, StateQueueP50: 40, StateQueueP99: 50, StateWaitP99: 14}, rejections.CauseTooLittleConcurrency},
		{"short of seats: every queue long", map[string]float64{ReasonQueueFull: 100},
			map[string]float64{StateSeats: 10, StateCurrent: 10, StateQueueP50: 20, StateQueueP99: 50, StateWaitP99: 2}, rejections.CauseTooLittleConcurrency},
		{"an outlier but waits at the limit", map[string]float64{ReasonQueueFull: 100},
			map[string]float64{StateQueueP50: 1, StateQueueP99: 50, StateWaitP99: 14.5}, rejections.CauseTooLittleConcurrency},
		{"nothing to go on", map[string]float64{ReasonQueueFull: 1}, map[string]float64{}, rejections.CauseUnclear},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			total := 0.0
			for _, v := range tt.reasons {
				total += v
			}
			inc := &Incident{Level: "l", Rejected: total, Reasons: tt.reasons, State: LevelState{Peaks: tt.peaks}}
			d := Diagnose(inc, 15*time.Second)
			if d.Kind != tt.want {
				t.Errorf("Diagnose = %s (%s, %q), want %s", d.Kind, d.Summary, d.Evidence, tt.want)
			}
			// the schema joins the facts with "; ", and the text splits
			// them there (pkg/rejections/render)
			for _, e := range d.Evidence {
				if strings.Contains(e, "; ") {
					t.Errorf("a fact holds the separator of the schema's evidence: %q", e)
				}
			}
		})
	}
}

func TestPointJSON(t *testing.T) {
	p := Point{T: now, V: math.NaN()}
	b, err := p.MarshalJSON()
	if err != nil || string(b) != `{"t":"2026-11-23T12:00:00Z","v":null}` {
		t.Fatalf("%s %v", b, err)
	}
	var back Point
	if err := back.UnmarshalJSON(b); err != nil || !back.T.Equal(now) || !math.IsNaN(back.V) {
		t.Errorf("round trip: %+v %v", back, err)
	}
}

// TestNumWhole: a count or a rate above 100 prints in full, never in
// exponent form (issue 47: "1.53e+03").
func TestNumWhole(t *testing.T) {
	for in, want := range map[float64]string{1533: "1533", 1533.3: "1533", 0.25: "0.25", 12.345: "12.3"} {
		if got := num(in); got != want {
			t.Errorf("num(%v) = %q, want %q", in, got, want)
		}
	}
}

// startedQuerier is a store that tells when it started and holds nothing.
type startedQuerier struct {
	start time.Time
	err   error
	// up: the store holds scrapes from before it started (restarted over
	// its data).
	up bool
}

func (q startedQuerier) QueryRange(_ context.Context, expr string, start, _ time.Time, _ time.Duration) ([]Series, error) {
	if q.up && expr == "count(up)" {
		return []Series{{Points: []rejections.Point{{T: start, V: 3}}}}, nil
	}
	return nil, nil
}
func (q startedQuerier) StartTime(context.Context) (time.Time, error) { return q.start, q.err }

// TestNoSeriesErrorYoungStore: a store that started after the window's
// start is young, and the error says the history fills as it scrapes
// (issue 47: the live view's first frame read as an error).
func TestNoSeriesErrorYoungStore(t *testing.T) {
	w := Window{Start: now.Add(-30 * time.Minute), End: now}
	young := NoSeriesError(context.Background(), startedQuerier{start: now.Add(-40 * time.Second)}, "http://prom:9090", w).Error()
	if !strings.Contains(young, "http://prom:9090 started at 2026-11-23T11:59:20Z, 40s before 2026-11-23T12:00:00Z, and has no APF series matching the selector yet: the history fills in as it scrapes") {
		t.Errorf("young store: %s", young)
	}
	for name, q := range map[string]Querier{
		"old store":       startedQuerier{start: now.Add(-time.Hour)},
		"restarted store": startedQuerier{start: now.Add(-40 * time.Second), up: true},
		"start unknown":   startedQuerier{err: context.DeadlineExceeded},
		"no start at all": emptyQuerier{},
	} {
		if got := NoSeriesError(context.Background(), q, "s", w).Error(); got != "s holds no APF series from 2026-11-23T11:30:00Z to 2026-11-23T12:00:00Z matching the selector" {
			t.Errorf("%s: %s", name, got)
		}
	}
}

type emptyQuerier struct{}

func (emptyQuerier) QueryRange(context.Context, string, time.Time, time.Time, time.Duration) ([]Series, error) {
	return nil, nil
}

// TestSchemaText: a store's incident, in the schema, prints with its
// series drawn over the time they cover and each fact of its diagnosis on a
// line of its own, as the store's report itself did.
func TestSchemaText(t *testing.T) {
	from, step := now.Add(-5*time.Minute), 30*time.Second
	var pts []Point
	for i := range 21 {
		pts = append(pts, Point{T: from.Add(time.Duration(i) * step), V: float64(i % 3)})
	}
	inc := &Incident{Level: "l", Start: now, End: now.Add(step), Rejected: 40, Reasons: map[string]float64{ReasonTimeOut: 30, ReasonQueueFull: 10},
		State: LevelState{From: from, To: from.Add(20 * step), Step: step, Series: map[string]Series{StateSeats: {Points: pts}},
			Peaks: map[string]float64{StateSeats: 10, StateCurrent: 10, StateWaitP99: 14}}}
	inc.Diagnosis = Diagnose(inc, 15*time.Second)
	rep := &Report{Start: from, End: now.Add(time.Hour), Step: step, Rejected: map[string]float64{"l": 40}, Incidents: []Incident{*inc}}
	var b strings.Builder
	if err := rejrender.WriteText(&b, rep.Schema(rejections.Source{Kind: rejections.SourcePrometheus}), rejrender.Options{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	want := []string{"  11:55:00 … 12:05:00, 30s a point\n", "  reasons:      time-out 30, queue-full 10\n"}
	for _, e := range inc.Diagnosis.Evidence {
		want = append(want, "\n                - "+e+"\n")
	}
	if len(inc.Diagnosis.Evidence) < 2 {
		t.Fatalf("want several facts to split, have %q", inc.Diagnosis.Evidence)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%q missing from\n%s", w, out)
		}
	}
}

// FuzzParseDuration: a duration read is never negative nor longer than
// maxDuration, and a string written twice reads as twice the duration or
// as too long: the sum of its terms never wraps around (2000000h2000000h
// read as -1124095h34m before the overflow check of time.ParseDuration's
// units).
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"30d", "1w2d", "1d12h", "1.5h", "90s", "2000000h", "1000000h1d", "500ms", "1e3d", "0d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if d < 0 || d > maxDuration {
			t.Fatalf("ParseDuration(%q) = %v", s, d)
		}
		if d2, err := ParseDuration(s + s); err == nil && d2 != 2*d {
			t.Fatalf("ParseDuration(%q) = %v, of it twice %v", s, d, d2)
		}
	})
}

func TestParseDurationTooLong(t *testing.T) {
	for _, s := range []string{"2000000h2000000h", "2000000h2000000h2000000h", "100000w", "1000000h1000000h1000000h1000000h1000000h"} {
		if d, err := ParseDuration(s); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", s, d)
		}
	}
}
