package main

import (
	"context"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain/fromlog"
	"github.com/kubectl-apf/kubectl-apf/pkg/vlogs"
)

// vlogsStore hands a VictoriaLogs source to explain's reconstruction
// (fromlog.Store): the store client pulls the events, fromlog reconstructs
// them. The commands join the two layers; neither imports the other.
type vlogsStore struct{ src *vlogs.Source }

func (s vlogsStore) Describe() string { return s.src.Client.Describe() }

func (s vlogsStore) Span() (time.Time, time.Time) { return s.src.Span() }

func (s vlogsStore) Incidents(ctx context.Context, gap, margin time.Duration, classify func(*workload.Request) (string, bool, error)) (workload.Reader, fromlog.Pull, error) {
	rd, p, err := s.src.PullIncidents(ctx, gap, margin, classify)
	return rd, p, err
}

func (s vlogsStore) Around(ctx context.Context, r *workload.Request, margin time.Duration) (workload.Reader, fromlog.Pull) {
	rd, p := s.src.PullAround(ctx, r, margin)
	return rd, p
}
