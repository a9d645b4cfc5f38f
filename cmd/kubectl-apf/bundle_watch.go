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
window of its logs.

Each scrape is written to disk as it arrives, and the watch holds one at a
time, so a watch of any length runs in the same memory (a day at 5s is
17,280 scrapes, about 100 kB each per instance on disk). The bundle is
whole at every scrape: a directory --to is written in place, and a
FILE.tar.gz is recorded into FILE.tar.gz.partial/, a bundle directory the
tarball is written from at the end and that is then removed. Ctrl-C or
SIGTERM ends the watch with the end's capture; if the watch is killed,
--from reads the directory it left, with every scrape taken before. A
command reading the bundle back loads every scrape it holds, so read a
long watch with a machine that has the memory for it.`

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

// runWatch records the bundle of --watch, writing each capture as it
// arrives (dump.Spool): into --to itself when it is a directory, else
// into --to.partial, a bundle directory of its own from which the tarball
// is written at the end. Only one capture is held at a time.
func (o *BundleOptions) runWatch(ctx context.Context) error {
	clk, ok := o.ClockOrReal().(clock.WithTicker)
	if !ok {
		return fmt.Errorf("--watch needs a clock with a ticker")
	}
	var red *dump.Redactor
	if o.Redact {
		key, err := o.redactKey()
		if err != nil {
			return err
		}
		red = dump.NewRedactor(key)
	}
	dir := o.To
	tarball := dump.IsTarball(o.To)
	if tarball {
		dir = o.To + partialSuffix
		if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
			return fmt.Errorf("%s exists, the bundle of a watch that did not finish (--from reads it); move it away or choose another --to", dir)
		}
	} else if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("bundle directory %s exists and is not empty; choose a new path", dir)
	}
	start, err := captureOrFail(ctx, o.Source, dump.CaptureOptions{Parts: dump.PartAll}, "")
	if err != nil {
		return err
	}
	printNotes(o.ErrOut, start.Notes)
	if red != nil {
		if err := red.RedactCapture(start); err != nil {
			return err
		}
	}
	// the start's dumps, redacted, are kept beside the end's
	for _, s := range start.Snapshots {
		for k := range s.Raw {
			if strings.HasPrefix(k, "dump_") {
				s.Raw[startDumpPrefix+k] = s.Raw[k]
			}
		}
	}
	instances := len(start.Snapshots)
	sp, err := dump.CreateSpool(dir, start, o.manifest(clk.Now()))
	if err != nil {
		return err
	}
	start = nil // on disk: not held through the watch
	if tarball {
		fmt.Fprintf(o.ErrOut, "recording into %s (a bundle at every scrape, which --from reads if the watch is killed; %s is written from it at the end)\n", sanitize.Line(dir), sanitize.Line(o.To))
	}
	progress := newWatchProgress(o.ErrOut, o.Watch, o.Interval)
	warned := map[string]bool{}
	loopCtx, stop := context.WithCancel(ctx)
	defer stop()
	var writeErr error
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
		if red != nil {
			if err := red.RedactCapture(c); err != nil {
				return err
			}
		}
		if err := sp.AddScrapes(c); err != nil {
			// the disk, not the cluster: the watch cannot go on
			writeErr = err
			stop()
			return err
		}
		return nil
	}
	n := watchLoop(loopCtx, clk, o.Watch, o.Interval, scrape,
		func(err error) { fmt.Fprintf(o.ErrOut, "\nwarning: a scrape failed: %s\n", sanitize.Line(err.Error())) },
		func(n int, elapsed time.Duration) {
			progress.update(n, sp.Scrapes(), instances, elapsed, sp.Size())
		})
	progress.done()
	if writeErr != nil {
		return fmt.Errorf("%w (the %d scrapes written before it are in %s)", writeErr, sp.Scrapes(), dir)
	}
	// Ctrl-C ended the watch: the end's capture still runs, on a context
	// of its own
	endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	end, err := o.Source.Capture(endCtx, dump.CaptureOptions{Parts: dump.PartAll})
	if err != nil {
		return fmt.Errorf("the end of the watch (%d scrapes taken; the bundle without the end is in %s): %w", n, dir, err)
	}
	if red != nil {
		if err := red.RedactCapture(end); err != nil {
			return err
		}
	}
	createdAt := clk.Now().UTC()
	if err := sp.Finish(end, createdAt); err != nil {
		return err
	}
	if tarball {
		if err := dump.WriteTarballFrom(dir, o.To, createdAt); err != nil {
			return fmt.Errorf("%w (the bundle is whole in %s)", err, dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(o.ErrOut, "warning: %s is written, but %s could not be removed: %s\n", sanitize.Line(o.To), sanitize.Line(dir), sanitize.Line(err.Error()))
		}
	}
	for _, f := range end.Failures {
		fmt.Fprintf(o.ErrOut, "warning: apiserver %s is not in the end's capture: %s\n", sanitize.Line(f.Instance), sanitize.Line(f.Error()))
	}
	for _, inst := range sp.Unknown() {
		fmt.Fprintf(o.ErrOut, "note: apiserver %s appeared during the watch and is not in the bundle\n", sanitize.Line(inst))
	}
	fmt.Fprintf(o.ErrOut, "wrote %s: %d apiserver instance(s), %d /metrics scrapes each\n", sanitize.Line(o.To), instances, sp.Scrapes())
	return nil
}

// partialSuffix names the directory a --watch into a tarball writes as
// it goes.
const partialSuffix = ".partial"
