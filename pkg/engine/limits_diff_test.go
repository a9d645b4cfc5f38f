package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fcmetrics "k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var registerMetrics sync.Once

// publishedLimits reads the limit gauges the upstream controller published,
// keyed by metric name then priority level ("" for seat_fair_frac).
func publishedLimits(t testing.TB) map[string]map[string]float64 {
	t.Helper()
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	out := map[string]map[string]float64{}
	for _, mf := range mfs {
		name := mf.GetName()
		switch name {
		case "apiserver_flowcontrol_nominal_limit_seats", "apiserver_flowcontrol_lower_limit_seats",
			"apiserver_flowcontrol_upper_limit_seats", "apiserver_flowcontrol_current_limit_seats",
			"apiserver_flowcontrol_seat_fair_frac":
		default:
			continue
		}
		out[name] = map[string]float64{}
		for _, m := range mf.GetMetric() {
			pl := ""
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "priority_level" {
					pl = lp.GetValue()
				}
			}
			out[name][pl] = m.GetGauge().GetValue()
		}
	}
	return out
}

// genLimitLevels draws levels for the limit arithmetic: wide share and
// percentage ranges, exempt with shares (so exempt's reservation squeezes
// the others), and sometimes no mandatory objects.
func genLimitLevels(r *rand.Rand) []*flowcontrolv1.PriorityLevelConfiguration {
	pls := genPriorityLevels(r)
	for _, pl := range pls {
		if e := pl.Spec.Exempt; e != nil && r.IntN(2) == 0 {
			e.NominalConcurrencyShares = i32(int32(r.IntN(300)))
			e.LendablePercent = i32(int32(r.IntN(101)))
		}
	}
	return pls
}

// TestLimitsDifferential compares Limits and the idle borrowing pass with the
// gauges the real controller publishes (nominal, lower, upper and current
// limit seats, seat_fair_frac) and with its GetMaxSeats.
func TestLimitsDifferential(t *testing.T) {
	registerMetrics.Do(fcmetrics.Register)
	n := 150
	if testing.Short() {
		n = 15
	}
	r := rand.New(rand.NewPCG(5, 8))
	branches := map[string]int{}
	levels := 0
	for c := 0; c < n; c++ {
		pls := genLimitLevels(r)
		serverCL := pick(r, []int{1, 7, 50, 600, 600, 3000, 10000})
		sentinel := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "sentinel"}}
		sentinel.Spec.MatchingPrecedence = 5000
		sentinel.Spec.PriorityLevelConfiguration.Name = "catch-all"
		u := startUpstream(t, []*flowcontrolv1.FlowSchema{sentinel}, pls, serverCL)
		got := ComputeLimits(pls, serverCL)
		cur := AllocateCurrentLimits(got, nil, nil, serverCL)
		branches[cur.Branch]++
		pub := publishedLimits(t)
		for _, l := range got {
			levels++
			check := func(metric string, want float64, gotV float64) {
				t.Helper()
				v, ok := pub["apiserver_flowcontrol_"+metric][l.Name]
				if !ok {
					t.Fatalf("config %d: upstream published no %s for %s", c, metric, l.Name)
				}
				if v != gotV {
					t.Fatalf("config %d (serverCL %d), level %s: %s engine %v, upstream %v\nlevels: %s", c, serverCL, l.Name, metric, gotV, v, dumpPLs(pls))
				}
			}
			check("nominal_limit_seats", 0, float64(l.NominalCL))
			check("lower_limit_seats", 0, float64(l.LowerCL))
			check("upper_limit_seats", 0, float64(l.UpperCL))
			check("current_limit_seats", 0, float64(cur.CurrentCL[l.Name]))
			if ms := u.ctl.GetMaxSeats(l.Name); ms != l.MaxSeats {
				t.Fatalf("config %d, level %s: MaxSeats %d, upstream %d", c, l.Name, l.MaxSeats, ms)
			}
		}
		// Upstream sums the targets in map iteration order, which Go
		// randomises, so seat_fair_frac varies in its last bits from run to
		// run of the same server; compare to 1e-12 relative.
		if ff := pub["apiserver_flowcontrol_seat_fair_frac"][""]; math.Abs(ff-cur.FairFrac) > 1e-12*math.Max(1, math.Abs(ff)) {
			t.Fatalf("config %d: seat_fair_frac engine %v, upstream %v", c, cur.FairFrac, ff)
		}
		u.Stop()
	}
	t.Logf("%d configurations, %d levels: nominal, lower, upper, current limits, max seats identical to upstream, seat_fair_frac within 1e-12; borrowing branches %v", n, levels, branches)
	if !testing.Short() && len(branches) < 2 {
		t.Errorf("the generator reached only the borrowing branches %v", branches)
	}
}

func ExampleComputeLimits() {
	for _, l := range ComputeLimits(DefaultPriorityLevels(), DefaultServerConcurrencyLimit) {
		fmt.Println(l.Name, l.NominalCL, l.LowerCL, l.UpperCL, l.MaxSeats)
	}
	// Output:
	// catch-all 13 13 613 0
	// exempt 0 0 600 0
	// global-default 49 24 649 8
	// leader-election 25 25 625 4
	// node-high 98 73 698 15
	// system 74 50 674 12
	// workload-high 98 49 698 15
	// workload-low 245 24 845 37
}
