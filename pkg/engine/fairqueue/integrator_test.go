package fairqueue

import (
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// epoch is simulated time zero as a time.Time.
var epoch = time.Unix(0, 0)

// TestDemandIntegratorIsEngines: the simulator's seat-demand integrator
// gives, bit for bit, what engine.Integrator gives over the same changes,
// results and resets, at times from nanoseconds to years apart.
func TestDemandIntegratorIsEngines(t *testing.T) {
	same := func(a, b float64) bool {
		return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
	}
	r := rand.New(rand.NewSource(7))
	for run := range 50 {
		want := engine.NewIntegrator(epoch)
		var got demandIntegrator
		now := int64(0)
		for step := range 2000 {
			switch r.Intn(4) {
			case 0:
				now += r.Int63n(1000)
			case 1:
				now += r.Int63n(int64(10 * time.Second))
			case 2:
				now += r.Int63n(int64(365 * 24 * time.Hour))
			}
			at := epoch.Add(time.Duration(now))
			var a, b engine.IntegratorResults
			switch r.Intn(10) {
			case 0:
				a, b = want.Reset(at), got.reset(now)
			case 1:
				a, b = want.Results(at), got.results(now)
			default:
				x := float64(r.Intn(200))
				if r.Intn(50) == 0 {
					x = r.Float64() * 1e6
				}
				want.Set(at, x)
				got.set(now, x)
				continue
			}
			if !same(a.Duration, b.Duration) || !same(a.Average, b.Average) || !same(a.Deviation, b.Deviation) || !same(a.Min, b.Min) || !same(a.Max, b.Max) {
				t.Fatalf("run %d, step %d at %v: engine %+v, simulator %+v", run, step, time.Duration(now), a, b)
			}
		}
	}
}
