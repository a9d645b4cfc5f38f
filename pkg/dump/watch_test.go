package dump

import (
	"context"
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// TestWatch: the first capture takes the rate window's two scrapes, later
// ones one scrape each, paired with the previous capture's of the same
// instance; once without Every; an interrupted watch ends without error
// and a failing capture or print ends it with that error.
func TestWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	stepped := make(chan struct{})
	go func() {
		defer close(stepped)
		for ctx.Err() == nil {
			if clk.HasWaiters() {
				clk.Step(time.Second)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var asked []time.Duration
	var scrapes []*metrics.Scrape
	capture := func(_ context.Context, o CaptureOptions) (*Capture, error) {
		asked = append(asked, o.MetricsInterval)
		var ms []*metrics.Scrape
		for range 1 + min(o.MetricsInterval, 1) {
			ms = append(ms, &metrics.Scrape{Time: time.Unix(int64(len(scrapes)), 0)})
			scrapes = append(scrapes, ms[len(ms)-1])
		}
		return &Capture{Snapshots: []*Snapshot{{Instance: "a", Metrics: ms}, {Instance: "b"}}}, nil
	}
	var seen [][]*metrics.Scrape
	each := func(i int, c *Capture) error {
		seen = append(seen, c.Snapshots[0].Metrics)
		if len(c.Snapshots[1].Metrics) != 0 {
			t.Errorf("capture %d: an instance without metrics got %d scrapes", i, len(c.Snapshots[1].Metrics))
		}
		if i == 2 {
			cancel()
		}
		return nil
	}
	o := WatchOptions{Capture: CaptureOptions{Parts: PartMetrics, MetricsInterval: 2 * time.Second}, Every: time.Second, Clock: clk}
	if err := Watch(ctx, o, capture, each); err != nil {
		t.Fatalf("an interrupted watch: %v", err)
	}
	<-stepped
	if len(asked) != 3 || asked[0] != 2*time.Second || asked[1] != 0 || asked[2] != 0 {
		t.Fatalf("metrics intervals asked %v, want [2s 0 0]", asked)
	}
	// scrapes: 0 and 1 (the first capture's pair), 2, 3
	want := [][]*metrics.Scrape{{scrapes[0], scrapes[1]}, {scrapes[1], scrapes[2]}, {scrapes[2], scrapes[3]}}
	for i := range want {
		if len(seen[i]) != 2 || seen[i][0] != want[i][0] || seen[i][1] != want[i][1] {
			t.Errorf("capture %d: scrapes %v, want %v", i, seen[i], want[i])
		}
	}

	// once: one capture, its scrapes as read
	asked, scrapes, seen = nil, nil, nil
	o.Every = 0
	if err := Watch(context.Background(), o, capture, func(i int, c *Capture) error { return each(i+10, c) }); err != nil || len(asked) != 1 || len(seen[0]) != 2 {
		t.Errorf("once: err %v, %d captures, %d scrapes", err, len(asked), len(seen[0]))
	}

	// errors end the watch
	boom := errors.New("boom")
	failing := func(context.Context, CaptureOptions) (*Capture, error) { return nil, boom }
	o.Every = time.Second
	if err := Watch(context.Background(), o, failing, each); !errors.Is(err, boom) {
		t.Errorf("a failing capture: %v", err)
	}
	if err := Watch(context.Background(), o, capture, func(int, *Capture) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("a failing print: %v", err)
	}
}
