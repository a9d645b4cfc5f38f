package reconstruct

import (
	"math"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

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

// TestTopHolder: the summary's seat holder is a client by name, its rows
// under several user agents summed (make demo's load-8 held 95% under its
// Go client and the rest under kubectl: "load-8 held 95%" read as if
// someone else held the rest); the largest sum wins, not the largest row.
func TestTopHolder(t *testing.T) {
	held := []rejections.ClientShare{
		{User: "a", UserAgent: "x", Share: 0.40},
		{User: "b", UserAgent: "x", Share: 0.35},
		{User: "b", UserAgent: "kubectl", Share: 0.20},
		{User: "a", UserAgent: "kubectl", Share: 0.05},
	}
	if name, share := topHolder(held); name != "b" || math.Abs(share-0.55) > 1e-9 {
		t.Errorf("topHolder = %s %.2f, want b 0.55", name, share)
	}
	if name, _ := topHolder(nil); name != "" {
		t.Errorf("topHolder(nil) = %q, want none", name)
	}
}
