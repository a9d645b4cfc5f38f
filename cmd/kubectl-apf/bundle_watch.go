package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
	"k8s.io/utils/clock"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
)

// bundleWatchHelp is added to dump bundle's help.
const bundleWatchHelp = `

--watch DURATION records the next incident: the bundle's capture (objects,
the three debug dumps and a /metrics scrape of every instance) is taken at
the start, then every instance's /metrics is scraped every --interval, and
at the end (DURATION later, or at Ctrl-C) the capture is taken again; a
progress line on stderr counts the scrapes, the time and the bundle's size.
The bundle holds every scrape (metrics-0.txt, metrics-1.txt, ... per
instance), the objects and dumps of the end, and the dumps of the start as
start-dump_*.txt. Every command that reads a bundle reads it (the latest
two scrapes give the rates), and simulate reads the CPU evidence of the two
scrapes that bracket the window it replays, so the bundle is evidence for
any window inside it: replay the minutes of the incident with simulate's
window of its logs. The scrapes are held in memory until the bundle is
written (about 100 kB each per instance): a watch of hours wants an
--interval of 10s or more.`

// startDumpPrefix names the start's debug dumps in a --watch bundle.
const startDumpPrefix = "start-"

// watchProgress is the progress line of dump bundle --watch: on a
// terminal it is rewritten in place at every scrape, otherwise a line is
// printed at each of the first ten scrapes, then about once a minute.
type watchProgress struct {
	w        io.Writer
	terminal bool
	total    time.Duration
	every    int
	printed  bool
}

func newWatchProgress(w io.Writer, total, interval time.Duration) *watchProgress {
	p := &watchProgress{w: w, total: total, every: max(1, int(time.Minute/max(interval, time.Millisecond)))}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.terminal, p.every = true, 1
	}
	return p
}

// update shows the bundle's scrapes (per instance, the start's included)
// after the n-th of the watch.
func (p *watchProgress) update(n, scrapes, instances int, elapsed time.Duration, size int64) {
	if n > 10 && n%p.every != 0 {
		return
	}
	line := fmt.Sprintf("watching %d apiserver %s: %d %s, %v of %v, %s (Ctrl-C ends it and writes the bundle)",
		instances, textfmt.Plural(instances, "instance", "instances"), scrapes, textfmt.Plural(scrapes, "scrape", "scrapes"), elapsed.Round(time.Second), p.total, fmtBytes(size))
	if p.terminal {
		fmt.Fprintf(p.w, "\r\x1b[K%s", line)
		p.printed = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// done ends the line in place on a terminal.
func (p *watchProgress) done() {
	if p.terminal && p.printed {
		fmt.Fprintln(p.w)
	}
}

// fmtBytes renders a size as "512 B", "1.2 MB".
func fmtBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f kB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
}

// watchLoop calls scrape every interval of clk until d has passed since
// it began or ctx ends (Ctrl-C), and progress after each scrape with the
// number taken and the time since the start. A scrape's error is warned
// about through warn and the loop goes on (an instance may fail for a
// moment); the loop never fails.
func watchLoop(ctx context.Context, clk clock.WithTicker, d, interval time.Duration, scrape func(context.Context) error, warn func(error), progress func(n int, elapsed time.Duration)) int {
	start := clk.Now()
	ticker := clk.NewTicker(interval)
	defer ticker.Stop()
	end := clk.NewTimer(d)
	defer end.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return n
		case <-end.C():
			return n
		case <-ticker.C():
			if err := scrape(ctx); err != nil {
				if ctx.Err() != nil {
					return n
				}
				warn(err)
				continue
			}
			n++
			progress(n, clk.Since(start))
		}
	}
}

// watchCapture merges the captures of a --watch: the start's, each
// scrape's metrics, and the end's.
type watchCapture struct {
	c *dump.Capture
	// next is the index of each instance's next scrape
	next map[string]int
	// unknown are the instances a later capture found that the start's
	// did not (their scrapes are not kept)
	unknown map[string]bool
}

func newWatchCapture(start *dump.Capture) *watchCapture {
	w := &watchCapture{c: start, next: map[string]int{}, unknown: map[string]bool{}}
	for _, s := range start.Snapshots {
		for k := range s.Raw {
			if strings.HasPrefix(k, "dump_") {
				s.Raw[startDumpPrefix+k] = s.Raw[k]
			}
		}
		for dump.HasMetrics(s, w.next[s.Instance]) {
			w.next[s.Instance]++
		}
	}
	return w
}

// addScrapes appends the metrics of c to each instance's scrapes.
func (w *watchCapture) addScrapes(c *dump.Capture) {
	for _, s := range c.Snapshots {
		base := w.snapshot(s.Instance)
		if base == nil {
			w.unknown[s.Instance] = true
			continue
		}
		for i := 0; dump.HasMetrics(s, i); i++ {
			j := w.next[s.Instance]
			dump.MoveMetrics(s, i, base, j)
			w.next[s.Instance] = j + 1
		}
	}
}

// finish takes the end's capture: its scrape is the last, and its
// objects, version and dumps replace the start's (kept as start-*).
func (w *watchCapture) finish(c *dump.Capture) error {
	for _, s := range c.Snapshots {
		base := w.snapshot(s.Instance)
		if base == nil {
			w.unknown[s.Instance] = true
			continue
		}
		for k, v := range s.Raw {
			if !strings.HasPrefix(k, "metrics-") {
				base.Raw[k] = v
			}
		}
		base.CapturedAt = s.CapturedAt
	}
	w.addScrapes(c)
	w.c.Failures = append(w.c.Failures, c.Failures...)
	for _, s := range w.c.Snapshots {
		if err := s.ParseRaw(); err != nil {
			return fmt.Errorf("%s: %w", s.Instance, err)
		}
	}
	return nil
}

func (w *watchCapture) snapshot(instance string) *dump.Snapshot {
	for _, s := range w.c.Snapshots {
		if s.Instance == instance {
			return s
		}
	}
	return nil
}

// size is the bytes the bundle's files hold so far.
func (w *watchCapture) size() int64 {
	var n int64
	for _, s := range w.c.Snapshots {
		for _, v := range s.Raw {
			n += int64(len(v))
		}
	}
	return n
}

// scrapes is the fewest scrapes an instance holds.
func (w *watchCapture) scrapes() int {
	least := -1
	for _, s := range w.c.Snapshots {
		if n := w.next[s.Instance]; least < 0 || n < least {
			least = n
		}
	}
	return max(least, 0)
}

// runWatch records the bundle of --watch.
func (o *BundleOptions) runWatch(ctx context.Context) (*dump.Capture, error) {
	clk, ok := o.ClockOrReal().(clock.WithTicker)
	if !ok {
		return nil, fmt.Errorf("--watch needs a clock with a ticker")
	}
	start, err := captureOrFail(ctx, o.Source, dump.CaptureOptions{Parts: dump.PartAll}, "")
	if err != nil {
		return nil, err
	}
	printNotes(o.ErrOut, start.Notes)
	w := newWatchCapture(start)
	progress := newWatchProgress(o.ErrOut, o.Watch, o.Interval)
	warned := map[string]bool{}
	scrape := func(ctx context.Context) error {
		c, err := o.Source.Capture(ctx, dump.CaptureOptions{Parts: dump.PartMetrics})
		if err != nil {
			return err
		}
		for _, f := range c.Failures {
			if !warned[f.Instance] {
				warned[f.Instance] = true
				fmt.Fprintf(o.ErrOut, "\nwarning: apiserver %s missed a scrape: %s\n", sanitize.Line(f.Instance), sanitize.Line(f.Error()))
			}
		}
		w.addScrapes(c)
		return nil
	}
	n := watchLoop(ctx, clk, o.Watch, o.Interval, scrape,
		func(err error) { fmt.Fprintf(o.ErrOut, "\nwarning: a scrape failed: %s\n", sanitize.Line(err.Error())) },
		func(n int, elapsed time.Duration) {
			progress.update(n, w.scrapes(), len(start.Snapshots), elapsed, w.size())
		})
	progress.done()
	// Ctrl-C ended the watch: the end's capture still runs, on a context
	// of its own
	endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	end, err := o.Source.Capture(endCtx, dump.CaptureOptions{Parts: dump.PartAll})
	if err != nil {
		return nil, fmt.Errorf("the end of the watch (%d scrapes taken): %w", n, err)
	}
	if err := w.finish(end); err != nil {
		return nil, err
	}
	for inst := range w.unknown {
		fmt.Fprintf(o.ErrOut, "note: apiserver %s appeared during the watch and is not in the bundle\n", sanitize.Line(inst))
	}
	return w.c, nil
}
