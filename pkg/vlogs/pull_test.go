package vlogs_test

import (
	"context"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/explain/fromlog"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
	"github.com/kubectl-apf/kubectl-apf/pkg/vlogs"
)

// A Source is the store explain's reconstruction pulls from.
var _ fromlog.Store = (*vlogs.Source)(nil)

// reconstructPull pulls the window's incidents from src and reconstructs
// them, as explain 429 --victorialogs does (fromlog.IncidentsStore).
func reconstructPull(ctx context.Context, src *vlogs.Source, gap, margin time.Duration, o reconstruct.Options) (*reconstruct.Result, *vlogs.Pull, error) {
	rd, pull, err := src.PullIncidents(ctx, gap, margin, vlogs.Classify(fromlog.LevelOf(o.Config)))
	if err != nil || rd == nil {
		if err == nil {
			start, end := src.Span()
			return &reconstruct.Result{Start: start, End: end}, pull, nil
		}
		return nil, pull, err
	}
	res, err := reconstruct.RunInstances(rd, o, reconstruct.InstanceOptions{}, nil)
	return res, pull, err
}
