package fairqueue

import (
	"math"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// demandIntegrator is engine.Integrator started at simulated time zero,
// with its times in nanoseconds of simulated time instead of time.Time:
// the same arithmetic in the same order (now.Sub(last).Seconds() of two
// times since the epoch is time.Duration(now-last).Seconds()), without
// building a time.Time at every change of a level's seat demand. The
// tests hold it to engine.Integrator.
type demandIntegrator struct {
	last             int64
	x                float64
	elapsed, ix, ixx float64
	min, max         float64
}

func (g *demandIntegrator) update(now int64) {
	dt := time.Duration(now - g.last).Seconds()
	g.last = now
	g.elapsed += dt
	g.ix += g.x * dt
	g.ixx += g.x * g.x * dt
}

// set is engine.Integrator.Set.
func (g *demandIntegrator) set(now int64, x float64) {
	g.update(now)
	g.x = x
	if x < g.min {
		g.min = x
	}
	if x > g.max {
		g.max = x
	}
}

// results is engine.Integrator.Results.
func (g *demandIntegrator) results(now int64) engine.IntegratorResults {
	g.update(now)
	r := engine.IntegratorResults{Duration: g.elapsed, Min: g.min, Max: g.max}
	if g.elapsed <= 0 {
		r.Average, r.Deviation = math.NaN(), math.NaN()
		return r
	}
	r.Average = g.ix / g.elapsed
	variance := g.ixx/g.elapsed - r.Average*r.Average
	if variance >= 0 {
		r.Deviation = math.Sqrt(variance)
	} else {
		r.Deviation = math.NaN()
	}
	return r
}

// reset is engine.Integrator.Reset.
func (g *demandIntegrator) reset(now int64) engine.IntegratorResults {
	r := g.results(now)
	g.elapsed, g.ix, g.ixx = 0, 0, 0
	g.min, g.max = g.x, g.x
	return r
}
