package metrics

import (
	"math"
	"time"
)

// Executions are the executions of one priority level that APF measured
// between two scrapes (RequestExecutionSeconds, its regular requests):
// how many ended, and their time in all.
type Executions struct {
	Count int64
	Sum   time.Duration
}

// ExecutionsBetween returns, per priority level, the executions of its
// regular requests (a watch's initialisation left out) that ended between
// prev and cur. None when prev lacks the histogram (a level
// without a series in prev had no execution before it); a level is left
// out where its count or sum went down (the server restarted in
// between), or its sum is not a number.
func ExecutionsBetween(prev, cur *Scrape) map[string]Executions {
	if prev == nil || cur == nil || !cur.Time.After(prev.Time) || prev.Families[RequestExecutionSeconds] == nil {
		return nil
	}
	regular := func(l map[string]string) bool { return l["type"] != "watch" }
	p := prev.HistogramsBy(RequestExecutionSeconds, "priority_level", regular)
	c := cur.HistogramsBy(RequestExecutionSeconds, "priority_level", regular)
	var out map[string]Executions
	for level, h := range c {
		ph := p[level]
		if ph == nil {
			// a level no request of had ended in before prev: its series
			// exists from its first observation on
			ph = &Histogram{}
		}
		n, s := h.Count-ph.Count, h.Sum-ph.Sum
		if level == "" || n < 0 || s < 0 || math.IsNaN(s) || math.IsInf(s, 0) {
			continue
		}
		if out == nil {
			out = map[string]Executions{}
		}
		out[level] = Executions{Count: int64(math.Round(n)), Sum: time.Duration(s * float64(time.Second))}
	}
	return out
}
