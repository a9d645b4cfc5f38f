package testcluster

import (
	"context"
	"strings"
	"testing"
)

// TestStartReportsEarlyExit: a process that dies at start-up (here an "etcd"
// that exits at once) gives an error naming it, after the retries, and no
// panic from the clean-up of the half-started control plane.
func TestStartReportsEarlyExit(t *testing.T) {
	t.Setenv("ETCD_BIN", "/bin/false")
	var progress strings.Builder
	c, err := Start(context.Background(), Options{Dir: t.TempDir(), Progress: &progress})
	if err == nil {
		_ = c.Stop()
		t.Fatal("Start succeeded with an etcd that exits at once")
	}
	if !strings.Contains(err.Error(), "etcd exited during start-up") {
		t.Errorf("error = %v, want it to say etcd exited during start-up", err)
	}
	if got := strings.Count(progress.String(), "trying again with other ports"); got != 2 {
		t.Errorf("%d retries announced, want 2:\n%s", got, progress.String())
	}
}
