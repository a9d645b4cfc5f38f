package fairqueue

import (
	"slices"
	"strconv"
)

func flowName(names []string, i int) string {
	if i < len(names) && names[i] != "" {
		return names[i]
	}
	return "flow-" + strconv.Itoa(i)
}

func total(lr *LevelResult) int64 {
	n := lr.Dispatched
	for _, v := range lr.Rejected {
		n += v
	}
	return n
}

// sortFlows orders flows busiest first, then by name, so output is stable.
func sortFlows(fs []LevelResult) {
	slices.SortFunc(fs, func(a, b LevelResult) int {
		ta, tb := total(&a), total(&b)
		if ta != tb {
			if ta > tb {
				return -1
			}
			return 1
		}
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
}
