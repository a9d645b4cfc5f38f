package levels

import (
	"math"
	"slices"
	"sort"
	"testing"
)

// TestLessOrdersUnlimitedLevelsBySeats: by utilisation (or seats), the
// levels with a limit come first, fullest first; those without one
// (exempt) after them, busiest first; a level without the figure last;
// ties by name, then instance.
func TestLessOrdersUnlimitedLevelsBySeats(t *testing.T) {
	nan := math.NaN()
	rows := []Row{
		{Name: "exempt-idle", Exempt: true, SeatsInUse: 0, Utilisation: nan},
		{Name: "half", SeatsInUse: 5, CurrentLimit: 10, Utilisation: 0.5},
		{Name: "unknown", SeatsInUse: nan, CurrentLimit: 10, Utilisation: nan},
		{Name: "exempt-busy", Exempt: true, SeatsInUse: 3, Utilisation: nan},
		{Name: "full", Instance: "b", SeatsInUse: 10, CurrentLimit: 10, Utilisation: 1},
		{Name: "full", Instance: "a", SeatsInUse: 10, CurrentLimit: 10, Utilisation: 1},
	}
	want := []string{"full/a", "full/b", "half/", "exempt-busy/", "exempt-idle/", "unknown/"}
	for _, key := range []string{"utilisation", "seats"} {
		got := slices.Clone(rows)
		less := Less(key)
		sort.SliceStable(got, func(i, j int) bool { return less(got[i], got[j]) })
		var names []string
		for _, r := range got {
			names = append(names, r.Name+"/"+r.Instance)
		}
		if !slices.Equal(names, want) {
			t.Errorf("by %s: %v, want %v", key, names, want)
		}
	}
}
