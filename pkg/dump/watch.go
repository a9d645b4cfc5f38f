package dump

import (
	"context"
	"time"

	"k8s.io/utils/clock"

	"github.com/kubectl-apf/kubectl-apf/internal/ctxsleep"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// WatchOptions are the captures of a command that prints once or, with
// --watch, again every interval ("top levels", "top flows").
type WatchOptions struct {
	// Capture are the first capture's options; the later ones take one
	// /metrics scrape (MetricsInterval 0), paired with the previous
	// capture's.
	Capture CaptureOptions
	// Every is the time between two captures; 0 captures once.
	Every time.Duration
	// Clock waits between captures.
	Clock clock.Clock
}

// Watch calls capture, then each with the capture and its number (from
// 0), once or, with Every, until ctx ends or each fails. From the second
// capture of a watch on, each instance's rates come from its scrape and
// the previous capture's (Snapshot.Metrics is the pair), so the apiserver
// is scraped once per interval. An interrupted watch ends without error.
func Watch(ctx context.Context, o WatchOptions, capture func(context.Context, CaptureOptions) (*Capture, error), each func(i int, c *Capture) error) error {
	opts := o.Capture
	prev := map[string]*metrics.Scrape{}
	for i := 0; ; i++ {
		if i == 1 {
			opts.MetricsInterval = 0
		}
		c, err := capture(ctx, opts)
		if err != nil {
			return err
		}
		if o.Every > 0 {
			PairScrapes(prev, c.Snapshots)
		}
		if err := each(i, c); err != nil || o.Every <= 0 {
			return err
		}
		if err := ctxsleep.Sleep(ctx, o.Clock, o.Every); err != nil {
			if ctx.Err() != nil {
				return nil // interrupted: a normal end of --watch
			}
			return err
		}
	}
}

// PairScrapes gives each snapshot with metrics the pair of prev's scrape
// of its instance (when there is one) and its own last scrape, and
// records that last scrape in prev for the next capture.
func PairScrapes(prev map[string]*metrics.Scrape, snaps []*Snapshot) {
	for _, s := range snaps {
		if len(s.Metrics) > 0 {
			cur := s.Metrics[len(s.Metrics)-1]
			if p := prev[s.Instance]; p != nil {
				s.Metrics = []*metrics.Scrape{p, cur}
			}
			prev[s.Instance] = cur
		}
	}
}
