package engine

import (
	"math"
	"math/rand"
	"testing"
	"time"

	fq "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing"
	testingclock "k8s.io/utils/clock/testing"
)

// TestIntegratorIsUpstreams: Integrator, its times offsets from an origin,
// gives bit for bit what upstream's integrator (fairqueuing/integrator.go)
// gives on a clock set to the same instants, over the same changes,
// results and resets, at times from nanoseconds to a year apart.
func TestIntegratorIsUpstreams(t *testing.T) {
	same := func(a, b float64) bool {
		return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
	}
	origin := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewSource(7))
	for run := range 50 {
		clk := testingclock.NewFakePassiveClock(origin)
		want := fq.NewNamedIntegrator(clk, "level")
		var got Integrator
		now := time.Duration(0)
		for step := range 2000 {
			switch r.Intn(8) {
			case 0, 1:
				now += time.Duration(r.Int63n(1000))
			case 2, 3, 4:
				now += time.Duration(r.Int63n(int64(10 * time.Second)))
			case 5:
				if r.Intn(10) == 0 {
					now += time.Duration(r.Int63n(int64(365 * 24 * time.Hour)))
				}
			}
			clk.SetTime(origin.Add(now))
			var a fq.IntegratorResults
			var b IntegratorResults
			switch r.Intn(10) {
			case 0:
				a, b = want.Reset(), got.Reset(now)
			case 1:
				a, b = want.GetResults(), got.Results(now)
			default:
				x := float64(r.Intn(200))
				if r.Intn(50) == 0 {
					x = r.Float64() * 1e6
				}
				want.Set(x)
				got.Set(now, x)
				continue
			}
			if !same(a.Duration, b.Duration) || !same(a.Average, b.Average) || !same(a.Deviation, b.Deviation) || !same(a.Min, b.Min) || !same(a.Max, b.Max) {
				t.Fatalf("run %d, step %d at %v: upstream %+v, engine %+v", run, step, now, a, b)
			}
		}
	}
}
