package reconstruct

import "testing"

// TestOneElephant: a flow behind half of the crowded rejections is an
// elephant; the demo cluster's six equal users (the most, 633 of 1,737)
// are not.
func TestOneElephant(t *testing.T) {
	for _, c := range []struct {
		crowded, top int64
		want         bool
	}{{1737, 633, false}, {100, 50, true}, {100, 49, false}, {10, 10, true}, {0, 0, false}} {
		if got := oneElephant(c.crowded, c.top); got != c.want {
			t.Errorf("oneElephant(%d, %d) = %v, want %v", c.crowded, c.top, got, c.want)
		}
	}
	if f, n := topFlow(map[int32]int64{3: 5, 1: 5, 2: 4}); f != 1 || n != 5 {
		t.Errorf("topFlow: %d, %d; want the lowest of the tie, 1, 5", f, n)
	}
}
