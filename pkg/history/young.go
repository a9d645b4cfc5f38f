package history

import (
	"context"
	"fmt"
	"time"
)

// Started is implemented by a store that tells when it started
// (Prometheus: /api/v1/status/runtimeinfo's startTime).
type Started interface {
	StartTime(ctx context.Context) (time.Time, error)
}

// NoSeriesError is the error of window w in which the store q, named
// store, holds no APF series. When the store started after the window
// began, it is young rather than empty of APF: the error says so, and that
// the history fills in as it scrapes. A store that does not tell its start
// time (or fails to) gets the plain error.
func NoSeriesError(ctx context.Context, q Querier, store string, w Window) error {
	if s, ok := q.(Started); ok {
		if t, err := s.StartTime(ctx); err == nil && !t.IsZero() && t.After(w.Start) && !scrapedBefore(ctx, q, w.Start, t) {
			return &YoungStoreError{msg: fmt.Sprintf("%s started at %s, %s before %s, and has no APF series matching the selector yet: the history fills in as it scrapes the apiservers",
				store, t.UTC().Format(time.RFC3339), w.End.Sub(t).Round(time.Second), w.End.UTC().Format(time.RFC3339))}
		}
	}
	return fmt.Errorf("%s holds no APF series from %s to %s matching the selector", store,
		w.Start.UTC().Format(time.RFC3339), w.End.UTC().Format(time.RFC3339))
}

// YoungStoreError is NoSeriesError's error for a young store: not a
// fault, the history is still to come. Young tells it from other errors
// to a caller that does not import this package (the live view paints it
// as a note, not a warning).
type YoungStoreError struct{ msg string }

func (e *YoungStoreError) Error() string { return e.msg }

// Young reports that the store is young.
func (e *YoungStoreError) Young() bool { return true }

// scrapedBefore reports whether the store holds samples of any scrape
// (the up series every scrape writes) from before it started, from start
// on: a store restarted over its old data is not young. An error counts
// as no.
func scrapedBefore(ctx context.Context, q Querier, start, started time.Time) bool {
	step := max(started.Sub(start)/10, time.Second)
	ss, err := q.QueryRange(ctx, "count(up)", start, started, step)
	if err != nil {
		return false
	}
	for _, s := range ss {
		if len(s.Points) > 0 {
			return true
		}
	}
	return false
}
