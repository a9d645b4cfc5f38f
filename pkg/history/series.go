package history

import (
	"context"
	"math"
	"sort"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// Point is one value of a series at one time, NaN without a value (a
// quantile without observations); its JSON is the explain 429 schema's.
type Point = rejections.Point

// Series is one answer series of a range query: its labels and points,
// oldest first.
type Series struct {
	Labels map[string]string `json:"labels"`
	Points []Point           `json:"points"`
}

// Querier asks a Prometheus-compatible store. pkg/promfetch implements it
// over the HTTP API; tests use an in-memory one.
type Querier interface {
	// QueryRange evaluates expr at start, start+step, ... up to end (a
	// single evaluation when start equals end) and returns the series.
	QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]Series, error)
}

// split partitions tagged answers by LabelSeries.
func split(ss []Series) map[string][]Series {
	out := map[string][]Series{}
	for _, s := range ss {
		n := s.Labels[LabelSeries]
		out[n] = append(out[n], s)
	}
	return out
}

// at returns the value of s at t (NaN when absent).
func (s Series) at(t time.Time) float64 {
	i := sort.Search(len(s.Points), func(i int) bool { return !s.Points[i].T.Before(t) })
	if i < len(s.Points) && s.Points[i].T.Equal(t) {
		return s.Points[i].V
	}
	return math.NaN()
}

// sum adds the series point by point (a missing point counts as 0).
func sum(ss []Series) Series {
	m := map[int64]float64{}
	for _, s := range ss {
		for _, p := range s.Points {
			if !math.IsNaN(p.V) {
				m[p.T.UnixMilli()] += p.V
			}
		}
	}
	out := Series{Labels: map[string]string{}}
	for t, v := range m {
		out.Points = append(out.Points, Point{T: time.UnixMilli(t).UTC(), V: v})
	}
	sort.Slice(out.Points, func(i, j int) bool { return out.Points[i].T.Before(out.Points[j].T) })
	return out
}

// maxIn is the largest value of s in [from, to]; NaN without points.
func (s Series) maxIn(from, to time.Time) float64 {
	hi := math.NaN()
	for _, p := range s.Points {
		if p.T.Before(from) || p.T.After(to) || math.IsNaN(p.V) {
			continue
		}
		if math.IsNaN(hi) || p.V > hi {
			hi = p.V
		}
	}
	return hi
}
