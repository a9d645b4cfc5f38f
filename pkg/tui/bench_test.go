package tui

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump/render"
	levelsrender "github.com/kubectl-apf/kubectl-apf/pkg/levels/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// largeFixture is a large cluster's state: 12 levels of 128 queues, 10,000
// waiting requests in 600 flows (50 per level, hands of 6 queues), 20
// executing seats per level. variant shifts the counts so consecutive
// refreshes differ.
func largeFixture(variant int) fixture {
	var f fixture
	for l := 0; l < 12; l++ {
		ls := levelSpec{name: fmt.Sprintf("level-%02d", l), nominal: 20, current: 20 + l%3 - 1, execSeats: 20, queues: 128,
			dispatched: float64(100 + l + variant), rejected: map[string]float64{"queue-full": float64((l + variant) % 4), "time-out": float64(l % 2)},
			waits: []float64{0.001, 0.01, 0.1, 0.5, 1, 2, 5}, rejectedCount: 1000 + variant}
		perLevel := 10000 / 12
		if l < 10000%12 {
			perLevel++
		}
		for fl := 0; fl < 50; fl++ {
			hand := make([]int, 6)
			for i := range hand {
				hand[i] = (fl*37 + i*11 + l) % 128
			}
			n := perLevel / 50
			if fl < perLevel%50 {
				n++
			}
			ls.flows = append(ls.flows, flowSpec{fs: fmt.Sprintf("fs-%02d", l), dist: fmt.Sprintf("system:serviceaccount:ns-%d:sa-%d", fl, variant%2),
				user: fmt.Sprintf("system:serviceaccount:ns-%d:sa-%d", fl, variant%2), verb: "list", path: fmt.Sprintf("/api/v1/namespaces/ns-%d/configmaps", fl),
				queues: hand, waiting: n, seats: 1 + fl%3})
		}
		f.levels = append(f.levels, ls)
	}
	return f
}

func TestLargeFixtureShape(t *testing.T) {
	c := largeFixture(0).capture(t)
	s := c.Snapshots[0]
	waiting := 0
	for _, r := range s.RequestDump {
		if !r.Executing() {
			waiting++
		}
	}
	if len(s.PriorityLevelDump) != 12 || len(s.QueueDump) != 12*128 || waiting != 10000 {
		t.Fatalf("large fixture: %d levels, %d queues, %d waiting; want 12, 1536, 10000", len(s.PriorityLevelDump), len(s.QueueDump), waiting)
	}
}

// BenchmarkRefresh measures one refresh of the view on the large state:
// parse (the bodies of the three dumps and two /metrics scrapes, through
// the same parsers as a live capture), compute, render a 160x48 frame. It
// compares, in the same run, the parse alone and "kubectl apf top levels"
// plus "top flows" printing the same state as tables. "share" times one
// refresh by phase and reports the refresh's CPU time, the parse's share
// of it and the parse against encoding/csv splitting the same dumps.
func BenchmarkRefresh(b *testing.B) {
	files := largeFixture(0).files(b)
	parse := func(b *testing.B) *dump.Capture {
		c, _, err := dump.CaptureFromFiles(files, dump.CaptureOptions{Parts: dump.PartAll})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			parse(b)
		}
	})
	b.Run("compute-render", func(b *testing.B) {
		// What the view adds to the parse: compute and render, on a parsed
		// capture (a new one each time, as rates need distinct snapshots).
		caps := make([]*dump.Capture, 8)
		for i := range caps {
			caps[i] = parse(b)
		}
		m := New(Options{Clock: func() time.Time { return fixtureAt }})
		m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
		m.table.cursor = "level-05"
		b.ReportAllocs()
		defer cpuPerOp(b)()
		i := 0
		for b.Loop() {
			m.Update(refreshMsg{Refresh: Refresh{At: fixtureAt, Capture: caps[i%len(caps)], Requests: 5}})
			_ = m.Render()
			i++
		}
	})
	for _, drill := range []bool{false, true} {
		name := "tui"
		if drill {
			name = "tui-drilldown"
		}
		b.Run(name, func(b *testing.B) {
			m := New(Options{Clock: func() time.Time { return fixtureAt }})
			m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
			m.Update(refreshMsg{Refresh: Refresh{At: fixtureAt, Capture: parse(b), Requests: 5}})
			m.table.cursor = "level-05"
			m.drill.open = drill
			b.ReportAllocs()
			defer cpuPerOp(b)()
			for b.Loop() {
				c := parse(b)
				m.Update(refreshMsg{Refresh: Refresh{At: fixtureAt, Capture: c, Requests: 5}})
				_ = m.Render()
			}
		})
	}
	b.Run("share", func(b *testing.B) {
		// One refresh timed by phase, beside the naive alternative to the
		// parse: encoding/csv splitting the same three dumps into trimmed
		// cells (no types, no checks, no defence against the commas of
		// user names). The ratios are of the same run.
		m := New(Options{Clock: func() time.Time { return fixtureAt }})
		m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
		m.Update(refreshMsg{Refresh: Refresh{At: fixtureAt, Capture: parse(b), Requests: 5}})
		m.table.cursor = "level-05"
		var parseCPU, viewCPU, csvCPU time.Duration
		b.ReportAllocs()
		for b.Loop() {
			t0 := cpuTime()
			c := parse(b)
			t1 := cpuTime()
			m.Update(refreshMsg{Refresh: Refresh{At: fixtureAt, Capture: c, Requests: 5}})
			_ = m.Render()
			t2 := cpuTime()
			csvCells(b, files)
			t3 := cpuTime()
			parseCPU, viewCPU, csvCPU = parseCPU+t1-t0, viewCPU+t2-t1, csvCPU+t3-t2
		}
		n := float64(b.N)
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
		b.ReportMetric(ms(parseCPU+viewCPU), "refresh-cpu-ms/op")
		b.ReportMetric(ms(parseCPU), "parse-cpu-ms/op")
		b.ReportMetric(float64(parseCPU)/float64(parseCPU+viewCPU), "parse-share")
		b.ReportMetric(ms(csvCPU), "csv-cpu-ms/op")
		b.ReportMetric(float64(parseCPU)/float64(csvCPU), "parse/csv")
	})
	b.Run("tables", func(b *testing.B) {
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			c := parse(b)
			if err := levelsrender.PrintTopLevels(io.Discard, render.Flags(""), c.Snapshots, "", "name"); err != nil {
				b.Fatal(err)
			}
			if err := render.PrintTopFlows(io.Discard, render.Flags(""), c.Snapshots, "", 20); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// csvCells splits the three dumps of files with encoding/csv, trimming
// the padding: the naive alternative to their parse.
func csvCells(b *testing.B, files map[string][]byte) int {
	n := 0
	for _, f := range []string{dump.FilePriorityLevels, dump.FileQueues, dump.FileRequests} {
		r := csv.NewReader(bytes.NewReader(files["instance-0/"+f]))
		r.FieldsPerRecord, r.LazyQuotes, r.ReuseRecord = -1, true, true
		for {
			rec, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range rec {
				_ = strings.TrimSpace(c)
				n++
			}
		}
	}
	return n
}

// cpuPerOp reports the process's CPU time (user and system, every thread,
// the garbage collector included) per operation: on a shared, loaded
// machine wall time per op says more about the neighbours than about the
// code. Call as defer cpuPerOp(b)().
func cpuPerOp(b *testing.B) func() {
	start := cpuTime()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuTime()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRefreshMemory runs b.N refreshes of the large state through one
// model (three alternating states, so the history and the previous
// snapshots change) and reports the live heap after the first 100 and after
// the last: flat memory means the two agree. Run it with
// -benchtime=10000x for ten thousand refreshes.
func BenchmarkRefreshMemory(b *testing.B) {
	var files []map[string][]byte
	for v := 0; v < 3; v++ {
		files = append(files, largeFixture(v).files(b))
	}
	m := New(Options{Clock: func() time.Time { return fixtureAt }})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	heap := func() float64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return float64(ms.HeapAlloc) / (1 << 20)
	}
	// b.N is not known inside a b.Loop loop: sample at fixed counts.
	samples := map[int]float64{}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c, _, err := dump.CaptureFromFiles(files[i%3], dump.CaptureOptions{Parts: dump.PartAll})
		if err != nil {
			b.Fatal(err)
		}
		m.Update(refreshMsg{Refresh: Refresh{At: fixtureAt.Add(time.Duration(i) * time.Second), Capture: c, Requests: 5}})
		_ = m.Render()
		i++
		if i == 100 || i == 1000 || i == 5000 {
			samples[i] = heap()
		}
	}
	for _, n := range []int{100, 1000, 5000} {
		if h, ok := samples[n]; ok {
			b.ReportMetric(h, fmt.Sprintf("heapMB@%d", n))
		}
	}
	b.ReportMetric(heap(), "heapMB@end")
	// The model must be live when the heap is measured.
	runtime.KeepAlive(m)
}

// BenchmarkParseParts splits the parse of the large state by body, to show
// where a refresh's time goes (the parsers are package dump's and
// package metrics').
func BenchmarkParseParts(b *testing.B) {
	files := largeFixture(0).files(b)
	parts := []struct {
		name  string
		parse func([]byte) error
	}{
		{"requests", func(body []byte) error { _, err := dump.ParseRequests(body); return err }},
		{"queues", func(body []byte) error { _, err := dump.ParseQueues(body); return err }},
		{"levels", func(body []byte) error { _, err := dump.ParsePriorityLevels(body); return err }},
		{"metrics", func(body []byte) error { _, _, err := metrics.ParseAPF(bytes.NewReader(body), fixtureAt); return err }},
	}
	file := map[string]string{"requests": dump.FileRequests, "queues": dump.FileQueues, "levels": dump.FilePriorityLevels, "metrics": dump.MetricsFile(1)}
	for _, p := range parts {
		body := files["instance-0/"+file[p.name]]
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			defer cpuPerOp(b)()
			for b.Loop() {
				if err := p.parse(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
