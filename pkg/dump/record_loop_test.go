package dump

import (
	"context"
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestWatchLoop drives Record's loop (dump bundle --watch) with a fake clock: a
// scrape every interval, a failed scrape warned about and not counted,
// the end when the duration has passed, and Ctrl-C (the context) ending it
// early.
func TestWatchLoop(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	t.Run("ends after the duration", func(t *testing.T) {
		clk := clocktesting.NewFakeClock(start)
		// handled is told once the loop has done with a tick: after it
		// warned or told its progress, which reads the clock. Told from
		// the scrape instead, the test stepped the clock before the
		// loop read it, and a slow machine saw the first scrape at 10s
		handled := make(chan struct{})
		calls := 0
		scrape := func(context.Context) error {
			calls++
			if calls == 2 {
				return errors.New("connection refused")
			}
			return nil
		}
		var warned []error
		var elapsed []time.Duration
		done := make(chan int)
		go func() {
			done <- watchLoop(context.Background(), clk, 22*time.Second, 5*time.Second, scrape,
				func(err error) { warned = append(warned, err); handled <- struct{}{} },
				func(n int, e time.Duration) { elapsed = append(elapsed, e); handled <- struct{}{} })
		}()
		for range 4 { // 5s, 10s, 15s, 20s
			waitForWaiters(t, clk)
			clk.Step(5 * time.Second)
			<-handled
		}
		waitForWaiters(t, clk)
		clk.Step(2 * time.Second) // 22s: the end, before the next tick
		n := <-done
		if n != 3 || len(warned) != 1 {
			t.Fatalf("%d scrapes counted, %d warnings; want 3 of 4 (one failed) and 1 warning", n, len(warned))
		}
		want := []time.Duration{5 * time.Second, 15 * time.Second, 20 * time.Second}
		for i, e := range elapsed {
			if e != want[i] {
				t.Errorf("progress %d at %v, want %v", i, e, want[i])
			}
		}
	})
	t.Run("Ctrl-C ends it", func(t *testing.T) {
		clk := clocktesting.NewFakeClock(start)
		ctx, cancel := context.WithCancel(context.Background())
		handled := make(chan struct{})
		done := make(chan int)
		go func() {
			done <- watchLoop(ctx, clk, time.Hour, time.Second, func(context.Context) error { return nil },
				func(error) {}, func(int, time.Duration) { handled <- struct{}{} })
		}()
		for range 3 {
			waitForWaiters(t, clk)
			clk.Step(time.Second)
			<-handled
		}
		cancel()
		if n := <-done; n != 3 {
			t.Fatalf("%d scrapes, want 3", n)
		}
	})
}

// waitForWaiters waits until the loop has set its ticker and timer on the
// fake clock (it has started); a tick stepped while the loop is between
// two selects waits in the ticker's channel.
func waitForWaiters(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	for range 10000 {
		if clk.HasWaiters() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the loop never waited on the clock")
}
