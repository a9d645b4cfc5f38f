package dump

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/utils/clock"
)

// StartDumpPrefix names the start's debug dumps in a bundle recorded by
// Record (dump bundle --watch).
const StartDumpPrefix = "start-"

// PartialSuffix names the bundle directory Record writes as it goes when
// the bundle is a tarball; the tarball is written from it at the end.
const PartialSuffix = ".partial"

// RecordOptions are the values of a recording (dump bundle --watch).
type RecordOptions struct {
	// To is the bundle: a directory, written in place, or a FILE.tar.gz,
	// recorded into To+PartialSuffix and written from it at the end.
	To string
	// Duration is how long the recording runs; a scrape of every
	// instance's /metrics is taken every Interval.
	Duration, Interval time.Duration
	// Keep, when positive, keeps only the scrapes of the last Keep of
	// each instance (SpoolOptions.Keep): a flight recorder, run until an
	// incident has passed.
	Keep time.Duration
	// Clock times the scrapes and stamps the bundle.
	Clock clock.WithTicker
	// Redactor, when not nil, redacts every capture before it is written.
	Redactor *Redactor
	// Manifest is the bundle's manifest; Record sets CreatedAt.
	Manifest Manifest
}

// RecordEvents are what a recording tells as it goes; a nil function is
// not called.
type RecordEvents struct {
	// Notes are the start capture's notes.
	Notes func(notes []string)
	// Spooling says a tarball is recorded into dir first.
	Spooling func(dir string)
	// Missed is called once per instance, at its first missed scrape.
	Missed func(f InstanceError)
	// Failed is a scrape that failed as a whole; the recording goes on.
	Failed func(err error)
	// Progress follows the n-th scrape: the bundle's scrapes per
	// instance (the start's included), its instances, the time since the
	// start and its size on disk.
	Progress func(n, scrapes, instances int, elapsed time.Duration, size int64)
	// Done is called when the scrapes end, before the end's capture.
	Done func()
}

// Recorded is what a recording wrote.
type Recorded struct {
	// Instances are the start's instances, each with Scrapes scrapes.
	Instances, Scrapes int
	// EndFailures are the instances missing from the end's capture.
	EndFailures []InstanceError
	// Unknown are the instances that appeared during the recording and
	// are not in the bundle.
	Unknown []string
	// Leftover is the spool directory that was written but could not be
	// removed, with the error; empty when there is none.
	Leftover    string
	LeftoverErr error
}

// CaptureAnswered captures src and fails when no instance answered,
// naming each instance's failure.
func CaptureAnswered(ctx context.Context, src Source, opts CaptureOptions) (*Capture, error) {
	c, err := src.Capture(ctx, opts)
	if err != nil {
		return nil, err
	}
	if len(c.Snapshots) == 0 {
		msg := "no apiserver instance answered"
		for _, f := range c.Failures {
			msg += "; " + f.Instance + ": " + f.Error()
		}
		return nil, fmt.Errorf("reading %s: %s", src.Describe(), msg)
	}
	return c, nil
}

// Record records a bundle from src, writing each capture as it arrives
// (Spool): the start's capture (its dumps kept beside the end's as
// StartDumpPrefix+name), a /metrics scrape every Interval until Duration
// has passed or ctx ends (Ctrl-C), then the end's capture. Only one
// capture is held at a time, so a recording of any length runs in the
// same memory.
func Record(ctx context.Context, src Source, o RecordOptions, ev RecordEvents) (Recorded, error) {
	var rec Recorded
	dir := o.To
	tarball := IsTarball(o.To)
	if tarball {
		dir = o.To + PartialSuffix
		if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
			return rec, fmt.Errorf("%s exists, the bundle of a watch that did not finish (--from reads it); move it away or choose another --to", dir)
		}
	} else if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return rec, fmt.Errorf("bundle directory %s exists and is not empty; choose a new path", dir)
	}
	start, err := CaptureAnswered(ctx, src, CaptureOptions{Parts: PartAll})
	if err != nil {
		return rec, err
	}
	call(ev.Notes, start.Notes)
	if err := o.redact(start); err != nil {
		return rec, err
	}
	// the start's dumps, redacted, are kept beside the end's
	for _, s := range start.Snapshots {
		for k := range s.Raw {
			if strings.HasPrefix(k, "dump_") {
				s.Raw[StartDumpPrefix+k] = s.Raw[k]
			}
		}
	}
	rec.Instances = len(start.Snapshots)
	m := o.Manifest
	m.CreatedAt = o.Clock.Now().UTC()
	sp, err := CreateSpool(dir, start, m, SpoolOptions{Compress: tarball, Keep: o.Keep})
	if err != nil {
		return rec, err
	}
	start = nil // on disk: not held through the recording
	if tarball {
		call(ev.Spooling, dir)
	}
	n, err := o.scrapes(ctx, src, sp, ev)
	if ev.Done != nil {
		ev.Done()
	}
	rec.Scrapes = sp.Scrapes()
	if err != nil {
		return rec, fmt.Errorf("%w (the %d scrapes written before it are in %s)", err, sp.Scrapes(), dir)
	}
	// Ctrl-C ended the recording: the end's capture still runs, on a
	// context of its own
	endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	end, err := src.Capture(endCtx, CaptureOptions{Parts: PartAll})
	if err != nil {
		return rec, fmt.Errorf("the end of the watch (%d scrapes taken; the bundle without the end is in %s): %w", n, dir, err)
	}
	if err := o.redact(end); err != nil {
		return rec, err
	}
	createdAt := o.Clock.Now().UTC()
	if err := sp.Finish(end, createdAt); err != nil {
		return rec, err
	}
	if tarball {
		if err := WriteTarballFrom(dir, o.To, createdAt); err != nil {
			return rec, fmt.Errorf("%w (the bundle is whole in %s)", err, dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			rec.Leftover, rec.LeftoverErr = dir, err
		}
	}
	rec.Scrapes, rec.EndFailures, rec.Unknown = sp.Scrapes(), end.Failures, sp.Unknown()
	return rec, nil
}

// scrapes runs the recording's loop: a /metrics capture every Interval,
// each added to sp. It returns the number taken, and an error only when
// one cannot be written (the disk, not the cluster: the recording cannot
// go on).
func (o RecordOptions) scrapes(ctx context.Context, src Source, sp *Spool, ev RecordEvents) (int, error) {
	warned := map[string]bool{}
	loopCtx, stop := context.WithCancel(ctx)
	defer stop()
	var writeErr error
	scrape := func(ctx context.Context) error {
		c, err := src.Capture(ctx, CaptureOptions{Parts: PartMetrics})
		if err != nil {
			return err
		}
		for _, f := range c.Failures {
			if !warned[f.Instance] {
				warned[f.Instance] = true
				call(ev.Missed, f)
			}
		}
		if err := o.redact(c); err != nil {
			return err
		}
		if err := sp.AddScrapes(c); err != nil {
			writeErr = err
			stop()
			return err
		}
		return nil
	}
	n := watchLoop(loopCtx, o.Clock, o.Duration, o.Interval, scrape,
		func(err error) { call(ev.Failed, err) },
		func(n int, elapsed time.Duration) {
			if ev.Progress != nil {
				ev.Progress(n, sp.Scrapes(), len(sp.m.Instances), elapsed, sp.Size())
			}
		})
	return n, writeErr
}

// redact redacts c when the recording redacts.
func (o RecordOptions) redact(c *Capture) error {
	if o.Redactor == nil {
		return nil
	}
	return o.Redactor.RedactCapture(c)
}

// call calls f with v when f is not nil.
func call[T any](f func(T), v T) {
	if f != nil {
		f(v)
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
