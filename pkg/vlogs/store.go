package vlogs

import (
	"context"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
)

// Describe names the store, for messages.
func (s *Source) Describe() string { return s.Client.Describe() }

// Incidents is PullIncidents for explain's reconstruction (a Source is an
// explain/fromlog Store): the store client pulls the events, fromlog
// reconstructs them.
func (s *Source) Incidents(ctx context.Context, gap, margin time.Duration, classify func(*workload.Request) (string, bool, error)) (workload.Reader, logs.Pull, error) {
	rd, p, err := s.PullIncidents(ctx, gap, margin, classify)
	return rd, p, err
}

// Around is PullAround for explain's reconstruction.
func (s *Source) Around(ctx context.Context, r *workload.Request, margin time.Duration) (workload.Reader, logs.Pull) {
	rd, p := s.PullAround(ctx, r, margin)
	return rd, p
}

// OpenWorkload returns the opener of simulate's workload from a store
// (simulate.Config.Open): when called, it calls open for the source and
// returns every event of its window, pulled in time order, counted into
// pulled.
func OpenWorkload(ctx context.Context, open func() (*Source, error), strict bool, pulled *Pulled) func() (*workload.Files, error) {
	return func() (*workload.Files, error) {
		src, err := open()
		if err != nil {
			return nil, err
		}
		return src.Workload(ctx, strict, pulled), nil
	}
}
