// Package ctxsleep holds the one helper that both the fetcher's metrics
// sampling (pkg/fetch) and top --watch (cmd/kubectl-apf) need from a
// k8s.io/utils/clock.Clock: a sleep that a cancelled context ends early.
package ctxsleep

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Sleep waits d on clk, or until ctx is done, and then returns ctx.Err().
// With a fake clock (k8s.io/utils/clock/testing) the wait ends when the test
// steps the clock past d.
func Sleep(ctx context.Context, clk clock.Clock, d time.Duration) error {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}
