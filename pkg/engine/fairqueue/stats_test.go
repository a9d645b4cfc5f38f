package fairqueue

import (
	"math"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// TestHistogramQuantiles compares the histogram's quantiles with exact
// nearest-rank quantiles of the same samples.
func TestHistogramQuantiles(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for round := 0; round < 50; round++ {
		var h histogram
		n := 1 + r.Intn(5000)
		vals := make([]int64, n)
		for i := range vals {
			switch r.Intn(3) {
			case 0:
				vals[i] = 0 // dispatched at once
			case 1:
				vals[i] = int64(r.ExpFloat64() * float64(time.Millisecond))
			default:
				vals[i] = int64(r.Float64() * float64(15*time.Second))
			}
			h.add(vals[i])
		}
		slices.Sort(vals)
		for _, q := range []float64{0.5, 0.9, 0.99, 1} {
			exact := vals[int(math.Ceil(q*float64(n)))-1]
			got := int64(h.quantile(q))
			if d := math.Abs(float64(got - exact)); d > 0.016*float64(exact)+1 {
				t.Fatalf("n=%d q=%v: histogram %d, exact %d", n, q, got, exact)
			}
		}
		if time.Duration(h.max) != time.Duration(vals[n-1]) {
			t.Fatalf("max %d, want %d", h.max, vals[n-1])
		}
	}
}
